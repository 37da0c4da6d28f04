"""The base every layer may read: configuration, YAML sources with line numbers, the one
JSON-Schema path (`json_schema`, `schema_refs`), the one wording of validation errors
(`validation`), the one description of tools for prompts (`tool_text`), redaction of secrets,
did-you-mean names, hostnames, installation folders, missing extras and the fenced fast paths
(`speed`).

Nothing here imports a layer above it (import-linter's package contract orders these modules
too: `config` > `sources | json_schema` > `validation | schema_refs | tool_text` > the rest).
This package imports nothing eagerly: each module is imported directly.
"""
