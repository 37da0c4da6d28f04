"""Declaring MCP servers: `MCPServerConfig` and the `mcp_servers:` section of a YAML file.

One entry says how to reach a server (stdio: `command`, `args`, `env`, `cwd`; streamable HTTP:
`url`, `headers`) and how its tools join an agent (`prefix`, `allow` / `deny` globs, guard
`effect_tags`, which tools are `idempotent` and may be retried after a crash, timeouts).

`env` and `headers` usually hold secrets, so every value of theirs is one: masked in `repr()`,
never quoted by a validation error (pydantic errors are re-worded without the offending input),
and registered for redaction by value (`_base.redact.register_secret`) the moment an entry is
validated, so whatever the server or a tool echoes of it (its stderr in a start failure, a tool
error, a log notification) is masked in every error, event and log. A file can reference the
environment (`Authorization: "Bearer ${API_TOKEN}"`) instead of holding the secret itself; the
variable's value is registered on its own too. Settings that are not secret belong in `args`.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..._base.config import ConfigError
from ..._base.redact import REDACTED, redact_text, redact_url, register_secret
from ..._base.validation import describe_validation
from ._auth import MCPAuthConfig
from ._revision import ProtocolChoice
from ._tasks import TaskMode

_PREFIX_RE = re.compile(r"^[a-zA-Z0-9_-]*$")
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_STDIO_ONLY = ("args", "env", "cwd")
_DEFAULT_TAGS_KEY = "default"


class MCPConfigError(ConfigError):
    """An `mcp_servers` entry is invalid; each problem names the server and the key."""


def _matches(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


class MCPServerConfig(BaseModel):
    """How to reach one MCP server and how its tools are exposed to an agent.

    Tool-name globs (`allow`, `deny`, `effect_tags`, `idempotent`) match the server's own tool
    names, before `prefix` is added.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    name: str = ""
    """How logs and errors name the server; defaults to the command's or the URL's host name."""
    transport: Literal["stdio", "http"] | None = None
    """Inferred: "stdio" with `command`, "http" (streamable HTTP) with `url`."""
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    """Added to the SDK's minimal inherited environment (PATH, HOME, ...), not to all of ours."""
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    auth: MCPAuthConfig | None = None
    """OAuth 2.1 with the server (HTTP only; see `tools.mcp._auth`): `auth: {}` logs in through a
    browser once (`jianmu-like mcp login`) and registers the client itself."""
    protocol: ProtocolChoice = "auto"
    """The MCP revision to speak (`tools.mcp._revision`): "auto" 2026-07-28 when the server offers
    it, the `initialize` handshake of earlier revisions otherwise; "legacy" only the handshake;
    "2026-07-28" only that revision."""
    prefix: str = ""
    """Prepended to every tool name (e.g. "github_") so two servers' tools cannot collide."""
    allow: list[str] | None = None
    """Only tools matching one of these globs are exposed (None: all)."""
    deny: list[str] = Field(default_factory=list)
    """Tools matching one of these globs are never exposed (wins over `allow`)."""
    effect_tags: dict[str, list[str]] = Field(default_factory=dict)
    """Tool glob -> guard effect tags (a tool gets those of every matching glob); the key
    "default" applies to tools no glob matches. A plain list tags every tool."""
    idempotent: bool | list[str] = False
    """Tools that may safely run twice: retried once after the server crashed during a call."""
    parallel_safe: bool = True
    connect_timeout: float = Field(30.0, gt=0)
    """Seconds to start the server (or reach it) and complete the MCP handshake."""
    call_timeout: float = Field(60.0, gt=0)
    """Seconds one tool call may take before it fails as an observation; a call whose server
    reports progress gets this long again after each report (an inactivity bound)."""
    max_call_duration: float = Field(600.0, gt=0)
    """Seconds a call that keeps reporting progress may take in all."""
    roots: list[str] = Field(default_factory=list)
    """Folders (paths or `file://` URIs) the client offers a server that asks for its roots
    (`roots/list`); relative paths are resolved against the working directory."""
    sampling: Literal["deny", "allow", "ask"] = "deny"
    """Whether the server may ask the agent's model for completions (`sampling/createMessage`):
    never, always, or when a person accepts each request (the pending requests of the human
    channel, like elicitations); their tokens count in the run's usage and budget (see
    `tools.mcp._sampling`; a `sampling_policy` on the provider may decide instead of allow/ask)."""
    sampling_max_tokens: int = Field(1024, gt=0)
    """The most tokens one sampling request may ask for (a larger `maxTokens` is capped)."""
    sampling_models: list[str] = Field(default_factory=list)
    """Models (on the answering client's server) that may answer the server's sampling requests:
    the request's model hints choose among them (the first hint that is part of a model's name),
    else the first answers. Empty: the client's own model (the agent's)."""
    elicitation: Literal["decline", "ask"] = "decline"
    """"ask": the server may ask the user for input mid-call (`elicitation/create`); requests
    wait for `MCPToolProvider.respond` (or a handler) at most `elicitation_timeout` seconds."""
    elicitation_timeout: float = Field(300.0, gt=0)
    max_open_elicitations: int = Field(4, ge=1)
    """Questions of this server open at once (elicitations and `sampling: ask` requests); more
    are refused with an MCP error the server reads, so one call cannot bury a person in them."""
    max_log_events: int = Field(50, ge=0)
    """Log notifications of one tool call that become `mcp.log` events and log lines; the rest
    are counted, and one last event says how many were dropped (see `tools.mcp._bounds`)."""
    progress_interval: float = Field(0.5, ge=0)
    """At most one `tool.progress` event per call in this many seconds: reports in between are
    coalesced to the latest, sent when the interval has passed or the call ends."""
    tasks: TaskMode = "auto"
    """Which calls run as MCP tasks (create, poll, fetch the result, cancel when abandoned), on a
    server that offers them: "auto" the tools that require it, "always" also those that allow it
    (`taskSupport: optional`), "never" none (a tool that requires it is then not offered)."""
    resources: bool = True
    """Offer the server's resources to the model through a `read_resource` tool (when the server
    has any); Python code can always read them (`MCPToolProvider.read_resource`)."""
    subscribe: list[str] = Field(default_factory=list)
    """Resource URIs to subscribe to once connected (`resources/subscribe`, servers that offer
    it): when one changes, the `read_resource` tool's description says so at the agent's next
    model call, until the model reads it again."""
    max_output_chars: int | None = Field(None, ge=100)
    """The most characters of one of this server's results the model reads (None: the agent's
    limit); longer results are cut by their shape (`tools._truncation`)."""

    @field_validator("env", "headers", mode="before")
    @classmethod
    def _scalars_as_text(cls, value: Any) -> Any:
        """YAML turns `PORT: 8080` into an int; a subprocess environment needs text."""
        if isinstance(value, Mapping):
            return {k: v if isinstance(v, str) or v is None else str(v) for k, v in value.items()}
        return value

    @field_validator("effect_tags", mode="before")
    @classmethod
    def _tags_list_means_all(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"*": [value]}
        if isinstance(value, list | tuple):
            return {"*": list(value)}
        if isinstance(value, Mapping):
            return {k: [v] if isinstance(v, str) else v for k, v in value.items()}
        return value

    @field_validator("prefix")
    @classmethod
    def _check_prefix(cls, value: str) -> str:
        if not _PREFIX_RE.match(value):
            raise ValueError("may only contain letters, digits, '_' and '-'")
        return value

    @model_validator(mode="after")
    def _check_transport(self) -> MCPServerConfig:
        transport = self.transport
        if transport is None:
            if self.command and self.url:
                raise ValueError("give either `command` (stdio) or `url` (http), not both")
            if not self.command and not self.url:
                raise ValueError("give `command` (a stdio server) or `url` (a streamable HTTP server)")
            transport = "stdio" if self.command else "http"
        if transport == "stdio":
            if not self.command:
                raise ValueError("transport 'stdio' needs `command`")
            if self.url or self.headers or self.auth:
                raise ValueError("`url`, `headers` and `auth` only apply to transport 'http'")
        else:
            if not self.url:
                raise ValueError("transport 'http' needs `url`")
            if not self.url.startswith(("http://", "https://")):
                raise ValueError("`url` must start with http:// or https://")
            given = [key for key in ("command", *_STDIO_ONLY) if getattr(self, key)]
            if given:
                raise ValueError(f"{', '.join(given)} only apply to transport 'stdio'")
            if self.auth is not None and any(key.lower() == "authorization" for key in self.headers):
                raise ValueError("give `auth` (OAuth) or an Authorization header, not both")
        name = self.name or self._default_name(transport)
        self._register_secrets(name)
        # Frozen model: fill the derived values in place once, during validation.
        object.__setattr__(self, "transport", transport)
        object.__setattr__(self, "name", name)
        return self

    def _register_secrets(self, name: str) -> None:
        """Every `env` and `headers` value is a secret (see the module): masked by value in every
        error, event and log from now on, also when the server or a tool quotes it. A header's
        credential after its scheme (`Bearer <token>`, `Basic <...>`) is registered on its own too."""
        for key, value in self.env.items():
            register_secret(value, source=f"mcp_servers.{name}.env.{key}")
        for key, value in self.headers.items():
            register_secret(value, source=f"mcp_servers.{name}.headers.{key}")
            scheme, _, credential = value.strip().partition(" ")
            if credential and scheme.isalpha():
                register_secret(credential, source=f"mcp_servers.{name}.headers.{key}")

    def _default_name(self, transport: str) -> str:
        if transport == "stdio":
            return os.path.basename(self.command or "") or "mcp"
        host = re.sub(r"^https?://([^/@]*@)?", "", self.url or "").split("/")[0]
        return host or "mcp"

    # -- what the provider asks ------------------------------------------------------------

    def exposes(self, tool: str) -> bool:
        """Whether the server's tool `tool` is offered to the model (allow, then deny)."""
        if self.allow is not None and not _matches(tool, self.allow):
            return False
        return not _matches(tool, self.deny)

    def effect_tags_for(self, tool: str) -> frozenset[str]:
        tags: set[str] = set()
        matched = False
        for pattern, values in self.effect_tags.items():
            if pattern != _DEFAULT_TAGS_KEY and fnmatch.fnmatchcase(tool, pattern):
                tags.update(values)
                matched = True
        if not matched:
            tags.update(self.effect_tags.get(_DEFAULT_TAGS_KEY, ()))
        return frozenset(tags)

    def is_idempotent(self, tool: str) -> bool:
        if isinstance(self.idempotent, bool):
            return self.idempotent
        return _matches(tool, self.idempotent)

    def root_uris(self) -> list[tuple[str, str | None]]:
        """`roots` as `(file:// URI, name)` pairs, the way `roots/list` answers."""
        pairs: list[tuple[str, str | None]] = []
        for root in self.roots:
            if "://" in root:
                pairs.append((root, root.rstrip("/").rsplit("/", 1)[-1] or None))
            else:
                path = Path(root).expanduser().resolve()
                pairs.append((path.as_uri(), path.name or None))
        return pairs

    def describe(self) -> str:
        """The server's target for messages: the command line or the URL, secrets masked."""
        if self.transport == "stdio":
            target = " ".join([self.command or "", *self.args])
        else:
            target = redact_url(self.url or "")  # no user:password@, no ?token=...
        return redact_text(target)

    def __repr_args__(self) -> Any:
        for key, value in super().__repr_args__():
            if key in ("env", "headers") and isinstance(value, dict):
                yield key, {k: REDACTED for k in value}
            elif key == "url" and isinstance(value, str):
                yield key, redact_url(value)
            elif key in ("args", "command") and value:
                yield key, _redact_value(value)
            else:
                yield key, value


def _redact_value(value: Any) -> Any:
    """Mask key-looking substrings of a string or each string of a list."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, list):
        return [redact_text(v) if isinstance(v, str) else v for v in value]
    return value


# -- reading the `mcp_servers:` section -----------------------------------------------------


def _expand_env(value: str, where: str) -> str:
    def lookup(match: re.Match[str]) -> str:
        found = os.environ.get(match.group(1))
        if found is None:
            raise MCPConfigError(f"{where}: environment variable {match.group(1)} is not set")
        register_secret(found, source=f"{where} (${{{match.group(1)}}})")  # alone, not only in its value
        return found

    return _ENV_REF.sub(lookup, value)


def parse_mcp_servers(data: Any) -> list[MCPServerConfig]:
    """Validate a `mcp_servers:` section: a list of entries, or a mapping name -> entry.

    `${NAME}` in `env` and `headers` values is replaced by that environment variable. Every
    problem is reported at once, naming the entry and the key but never a value.
    """
    if data is None:
        return []
    items: list[tuple[str, Any, str | None]]
    if isinstance(data, Mapping):
        items = [(str(name), entry, str(name)) for name, entry in data.items()]
    elif isinstance(data, list | tuple):
        items = [(f"#{index}", entry, None) for index, entry in enumerate(data)]
    else:
        raise MCPConfigError(f"mcp_servers must be a list or a mapping, got {type(data).__name__}")
    configs: list[MCPServerConfig] = []
    problems: list[str] = []
    for label, entry, key_name in items:
        if isinstance(entry, MCPServerConfig):
            configs.append(entry)
            continue
        if not isinstance(entry, Mapping):
            problems.append(f"server {label}: must be a mapping, got {type(entry).__name__}")
            continue
        fields = dict(entry)
        label = f"server {fields.get('name') or key_name or label!s}"
        if key_name is not None and fields.setdefault("name", key_name) != key_name:
            problems.append(f"{label}: name: differs from its key {key_name!r}")
            continue
        try:
            for section in ("env", "headers"):
                if isinstance(fields.get(section), Mapping):
                    fields[section] = {
                        k: _expand_env(v, f"{label}: {section}.{k}") if isinstance(v, str) else v
                        for k, v in fields[section].items()
                    }
            configs.append(MCPServerConfig.model_validate(fields))
        except MCPConfigError as exc:
            problems.extend(exc.problems)
        except ValidationError as exc:
            # never quote an input: env and headers values may be secrets
            problems.extend(
                f"{label}: {line}" for line in describe_validation(exc, model=MCPServerConfig, inputs=False)
            )
    seen: set[str] = set()
    for config in configs:
        if config.name in seen:
            problems.append(f"server {config.name}: name: used by two servers; give each a unique `name`")
        seen.add(config.name)
    if problems:
        raise MCPConfigError(problems)
    return configs
