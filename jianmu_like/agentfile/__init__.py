"""Agent files: agents and trees declared in YAML (`presets/*.yaml`), read with line-accurate errors.

The modules are imported directly (`agentfile.loader`, `agentfile.spec`, `agentfile.yaml_source`):
the configuration reads YAML through `yaml_source` too, so this package imports nothing eagerly.
"""
