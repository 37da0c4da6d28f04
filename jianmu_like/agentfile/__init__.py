"""Agent files: agents and trees declared in YAML (`presets/*.yaml`), read with line-accurate errors.

The modules are imported directly (`agentfile._loader`, `agentfile._spec`): this package imports
nothing eagerly. YAML with line numbers lives below it in `jianmu_like._base.sources`, which the process
configuration reads its file through too.
"""
