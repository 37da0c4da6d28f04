"""Framework configuration: built-in defaults, then a YAML file, then environment overrides.

`get_config()` is what the node and preset configs (`ReActConfig`, ...) and `ModelClient.resolve()`
read their defaults from. The file is `$JIANMU_CONFIG` (the CLI's `--config`), else
`./jianmu.yaml`, else the user's `~/.config/jianmu_like/jianmu.yaml` (`configs/jianmu.yaml` is
documentation only); environment variables named `JIANMU__SECTION__KEY` (e.g.
`JIANMU__LLM__TEMPERATURE=0.2`) override single keys.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ByteSize, ConfigDict, Field, SecretStr, ValidationError, field_validator

from .hostnames import parse_authority
from .redact import redact_url, register_secret
from .sources import SourceError, YamlDocument, describe_errors, in_line_order, load_yaml


class ConfigError(SourceError):
    """The configuration file or an override is invalid; each problem names where and why."""

    def __init__(self, problems: list[str] | str) -> None:
        super().__init__([problems] if isinstance(problems, str) else problems)


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


ToolProtocol = Literal["native", "json", "text", "auto"]
"""How tools reach a model: native function calling, `json` or `text` (described in the prompt,
for servers without function calling), `auto` (native, JSON when the server rejects tools).
Declared once here (the configuration's vocabulary); `models._tool_protocol` implements it."""


class ProviderEntryConfig(_Section):
    """Overrides one entry of the provider table (`models._named_providers.PROVIDERS`), or adds
    a provider name of its own: where its OpenAI-compatible endpoint listens, which variable
    holds its key. A key left out keeps the table's value."""

    base_url: str | None = None
    api_key_env: str | None = None
    """The environment variable holding the key (never the key itself); null: none needed."""


class ModelsConfig(_Section):
    default: str | None = None
    """Model used when nothing more specific is configured; None: the model the server at
    `provider.base_url` serves (its probe, `/v1/models`; gpt-4o-mini on api.openai.com), or
    the embedded local model when no server is configured."""
    react: str | None = None
    """Model for ReAct agents; falls back to `default`."""
    local_backend: Literal["xllamacpp", "llama_cpp_python"] = "xllamacpp"
    """llama.cpp binding of the embedded local model (`local/<name>`); see models/local_backends."""
    tool_protocol: ToolProtocol = "native"
    """How tools reach OpenAI-compatible models: native function calling, `json` or `text` (in
    the prompt, for servers without it), or `auto` (native, JSON when the server rejects tools)."""
    providers: dict[str, ProviderEntryConfig] = Field(default_factory=dict)
    """Provider name -> overrides of its entry for `provider:model` names (see guides/models)."""


DEFAULT_MAX_TOKENS = 1024
"""Reply length limit sent when none is configured: a tool call or an answer of a few hundred
words fits, and a model that rambles (a small local one) stops within seconds, not minutes.
It is also the room the context guard keeps for a reply (`context.reserve_tokens`)."""


Temperature = Annotated[float, Field(ge=0.0, le=2.0)]
"""Sampling temperature: 0 (the most likely tokens) to 2."""
TopP = Annotated[float, Field(gt=0.0, le=1.0)]
"""Nucleus sampling: the smallest set of tokens whose probabilities add up to this (0 < p <= 1)."""
Positive = Annotated[int, Field(ge=1)]
"""A count of at least 1 (`max_tokens`, `top_k`)."""
Seconds = Annotated[float, Field(gt=0.0)]
"""A duration in seconds, above 0."""
OutputChars = Annotated[int, Field(ge=100)]
"""The most characters of one tool result the model reads (at least 100: a cut result keeps a
note saying how much there was)."""


class ModelSettings(BaseModel):
    """How one model call samples and how long it may take: each setting with its bounds,
    declared once. The configuration file's `llm:` section (`LLMConfig`), an agent file's `llm:`
    (`agentfile._spec.LLMSpec`) and the Python configs of the model-calling nodes
    (`nodes._settings.ModelCallConfig`, so `ReActConfig`) are this model, each with its own
    defaults: an out-of-bounds value is refused the same way wherever it is written. None here:
    not set (the configuration's value, or the server's own)."""

    model_config = ConfigDict(extra="forbid")

    temperature: Temperature | None = None
    max_tokens: Positive | None = None
    """Length limit of one reply; None: the server's own (unbounded on llama.cpp)."""
    top_p: TopP | None = None
    top_k: Positive | None = None
    timeout: Seconds | None = None
    """Seconds for one model call attempt, a streamed reply included from the request to its
    last chunk."""
    stream: bool | None = None
    """Stream the model's answer (emits `text.delta` events)."""


class LLMConfig(ModelSettings):
    """The configuration file's `llm:` section: the model settings with their defaults."""

    model_config = _Section.model_config

    temperature: Temperature = 0.0
    max_tokens: Positive | None = DEFAULT_MAX_TOKENS
    timeout: Seconds = 60.0
    max_budget_tokens: int | None = Field(None, gt=0)
    """Total tokens one ReAct run may spend before it is aborted (None: unlimited)."""
    stream: bool = False


class LimitsConfig(_Section):
    max_iterations: int = Field(10, gt=0)
    max_tool_failures: int | None = Field(3, gt=0)
    """A ReAct run stops (termination `tool_failures`) after this many failed tool calls in a
    row; None: never."""
    max_rounds: None = Field(None, exclude=True, repr=False)
    """Removed: nothing read it (a round is one model call, which `max_iterations` caps); a file
    that still sets it gets an error saying so rather than a setting that does nothing."""

    @field_validator("max_rounds", mode="before")
    @classmethod
    def _removed(cls, value: Any) -> None:
        if value is not None:
            raise ValueError(
                "max_rounds was removed (it never limited anything): each ReAct iteration is one "
                "model round, so limits.max_iterations caps both; delete the key"
            )
        return None


NON_ANSWERS: tuple[str, ...] = (
    "I don't know",
    "I do not know",
    "I dont know",
    "don't know",
    "no idea",
    "I have no idea",
    "我不知道",
    "不知道",
    "不清楚",
    "我不清楚",
    "Ich weiß nicht",
    "Ich weiss nicht",
    "Weiß ich nicht",
    "keine Ahnung",
    "Je ne sais pas",
    "No lo sé",
    "No sé",
    "Non lo so",
    "Não sei",
    "わかりません",
    "分かりません",
    "知りません",
    "모르겠습니다",
    "Не знаю",
)
"""A bare "I don't know" in the languages users most often ask in (the default list)."""


class AnswerCheckConfig(_Section):
    """The answer-quality check of a ReAct loop: a final answer that is empty, too short, a bare
    "I don't know", or a repeat of an earlier answer of the conversation is re-asked with a
    corrective message."""

    enabled: bool = True
    min_chars: int = Field(1, ge=1)
    """Shorter answers (after stripping whitespace) are re-asked."""
    reject_repeats: bool = True
    """Re-ask an answer equal to an earlier answer of the conversation (answers shorter than
    20 characters, like "4" or "yes", may legitimately repeat and are never rejected as such)."""
    retries: int = Field(1, ge=0)
    """How often one run re-asks; after that the answer is accepted as it is."""
    non_answers: list[str] = Field(default_factory=lambda: list(NON_ANSWERS))
    """Answers that only say the model does not know (compared without case, spaces and final
    punctuation): re-asked once so the model uses its tools. `[]` turns this off."""


class AnswersConfig(_Section):
    """How a ReAct agent's answer reaches the user."""

    synthesize: bool = False
    """After the loop, one streaming call writes the user-facing answer from the execution
    trace (the loop's own answer is kept when it fails)."""
    synthesis_tool_chars: int = Field(2000, ge=100)
    """Each tool result is cut to this many characters in the synthesis prompt."""
    check: AnswerCheckConfig = Field(default_factory=AnswerCheckConfig)
    on_truncated: Literal["continue", "end", "accept"] = "continue"
    """A final answer cut off by the length limit (`finish_reason: "length"`): ask the model to
    continue it once, then end with termination `truncated` (`continue`); end at once (`end`);
    or take the cut answer as the answer (`accept`)."""


DEFAULT_CONTEXT_WINDOW = 32_768
"""Tokens assumed for a model whose context window nobody configured: what most current chat
models (and common llama.cpp server settings) accept at least."""


class ContextConfig(_Section):
    """The context guard: every request of a ReAct agent fits the model's context window."""

    enabled: bool = True
    window: int | None = Field(None, ge=256)
    """The model's context window in tokens; None: the model client's `context_window`, else
    `DEFAULT_CONTEXT_WINDOW`. Set here it overrides the model's (per agent)."""
    reserve_tokens: int = Field(1024, ge=0)
    """Room left for the reply when the request sets no `max_tokens`."""
    strategy: Literal["summarize", "drop"] = "summarize"
    """How old turns leave the prompt: summarised by one model call (dropped if it fails), or
    dropped with a note."""
    target: float = Field(0.6, gt=0.0, le=1.0)
    """A compaction shrinks the prompt to this fraction of the budget, so the next turns fit
    without compacting again."""
    max_tool_result_share: float = Field(0.25, gt=0.0, le=1.0)
    """Over budget, a tool result larger than this fraction of the budget is cut with a note."""
    summary_max_tokens: int = Field(512, ge=32)
    """Length limit of the summary's reply."""
    tokenizer: str = "auto"
    """auto (tiktoken when importable and its encoding loads offline, else the ~4 characters
    per token estimate), estimate, tiktoken or tiktoken:<encoding>."""


class ToolSelectionConfig(_Section):
    """Tool selection: an agent with many tools first asks the model (one structured call, from
    a compact catalogue of names and one-line descriptions) which few of them the task needs,
    and then sends only those schemas on every call of the run: 20 schemas per call cost tokens
    and distract the model."""

    enabled: bool = True
    threshold: int = Field(12, ge=1)
    """Select only when the agent has more tools than this."""
    max_tools: int = Field(6, ge=1)
    """The selection keeps at most this many tools."""


class ToolsConfig(_Section):
    """How an agent's tools reach the model."""

    selection: ToolSelectionConfig = Field(default_factory=ToolSelectionConfig)


class ResilienceConfig(_Section):
    """Retry and fallback policy of one logical model call."""

    max_retries: int = Field(2, ge=0)
    """Retries per model after the first attempt, on 429/5xx/timeouts/connection errors."""
    backoff_initial: float = Field(0.5, ge=0.0)
    backoff_multiplier: float = Field(2.0, ge=1.0)
    backoff_max: float = Field(8.0, ge=0.0)
    backoff_jitter: float = Field(0.2, ge=0.0, le=1.0)
    """Each delay is shortened by a random fraction up to this, so clients that failed together
    do not retry in lockstep."""
    retry_after_max: float = Field(30.0, ge=0.0)
    """Cap on a server's `Retry-After` (seconds or HTTP date) honoured before a retry."""
    fallback_models: list[str] = Field(default_factory=list)
    """Tried in order when the primary model still fails after its retries."""


class CapabilityOverrides(_Section):
    """What an OpenAI-compatible server offers, where the probe (`models._server_probe`) cannot
    tell or tells wrong; None: as probed. Set under `provider.capabilities`."""

    supports_tools: bool | None = None
    """Native function calling works (the server neither rejects nor ignores `tools`)."""
    json_schema: bool | None = None
    """`response_format: {"type": "json_schema", ...}` constrains the reply to the schema."""
    json_mode: bool | None = None
    """`response_format: {"type": "json_object"}` constrains the reply to JSON."""
    grammar: bool | None = None
    """llama.cpp's `grammar` field (GBNF) constrains the reply."""
    context_window: int | None = Field(None, gt=0)
    """Tokens of context the server runs the model with (or the model's maximum), if reported."""
    served_model: str | None = None
    """The name the server serves the model under (used when no model is configured)."""


class ProviderConfig(_Section):
    base_url: str | None = None
    """Shown (repr, `jianmu-like config`, errors) without `user:password@` or secret query values."""
    api_key: SecretStr | None = None
    """A `SecretStr`: never shown by a repr, a dump or `explain_config`; `.get_secret_value()`;
    registered for redaction by value (`_base.redact.register_secret`) as soon as it is read."""
    probe: bool = True
    """Ask the server what it offers (llama.cpp `/props`, Ollama `/api/show`, `/v1/models`)
    when the tool protocol, a structured call or an unset model name needs to know."""
    capabilities: CapabilityOverrides = Field(default_factory=CapabilityOverrides)
    """Facts about the server that win over the probe's, key by key."""

    @field_validator("api_key")
    @classmethod
    def _register_key(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            register_secret(value.get_secret_value(), source="provider.api_key")
        return value

    def __repr_args__(self) -> Any:
        for key, value in super().__repr_args__():
            yield key, redact_url(value) if key == "base_url" and isinstance(value, str) else value


class LoggingConfig(_Section):
    level: str = "WARNING"
    json_logs: bool = Field(False, alias="json")


class TelemetryConfig(_Section):
    """OpenTelemetry tracing (the `otel` extra); where spans go is up to the `OTEL_*` variables."""

    otel: bool = False
    """Trace every run as spans (the CLI's `--otel` switches it on too)."""
    capture_content: bool = False
    """Also put tool arguments and results and final answers on spans (redacted like events)."""
    provider_name: str = "openai"
    """`gen_ai.provider.name` of model-call spans (every backend speaks OpenAI's chat API)."""


class AgentsConfig(_Section):
    """What agent files may reach beyond their own directory (an agent file is data, but a
    `module:attr` tool runs code and a `preset:` reads another file)."""

    allowed_modules: list[str] = Field(default_factory=list)
    """Modules (and their submodules) whose functions agent files may name as tools, besides
    modules under the agent file's own directory and the built-in tools."""
    preset_roots: list[str] = Field(default_factory=list)
    """Directories whose agent files a `preset:` node may reference, besides the referencing
    file's own directory tree and the shipped presets."""
    max_file_bytes: int = Field(1_000_000, gt=0)
    """Largest agent file read (YAML is parsed with alias, depth and size limits)."""


DEFAULT_MAX_BODY_BYTES = 1 << 20
"""Largest request body `jianmu-like serve` reads (1 MiB): its bodies are a question, a follow-up
or a decision."""


class ServerConfig(_Section):
    """What `jianmu-like serve` (jianmu_like.server) accepts at its edge."""

    allowed_hosts: list[str] = Field(default_factory=list)
    """`Host` names the server answers to besides its bound address, `localhost`, 127.0.0.1 and
    [::1] on its port: `name` (any port) or `name:port`. Any other `Host` is refused (421), so a
    page whose own name resolves to this machine (DNS rebinding) cannot reach the API."""
    max_body_bytes: int = Field(DEFAULT_MAX_BODY_BYTES, gt=0)
    """Largest request body; a larger one is refused (413) without being read."""

    @field_validator("allowed_hosts")
    @classmethod
    def _hosts(cls, hosts: list[str]) -> list[str]:
        for host in hosts:
            parse_authority(host)  # its ValueError names the entry
        return hosts


RECORDING_MAX_BYTES = 64 * 1024 * 1024
"""A recording's size limit unless given (64 MiB; `_run.recording.DEFAULT_MAX_BYTES` is this)."""


class RecordingRetention(_Section):
    """Keep each run of a thread as a recording in its checkpoint store (off unless given:
    `Agent(checkpointer=..., keep_recordings=RecordingRetention(...))` or `checkpoints.recordings`
    in the configuration). Sizes are bytes or strings such as `16MiB`."""

    max_runs: int = Field(20, ge=1)
    """Recordings kept per thread: when a run starts past it, the oldest are dropped."""
    max_bytes: ByteSize = Field(ByteSize(RECORDING_MAX_BYTES), ge=4096)
    """Size limit of one recording: past it nothing more of the run is recorded but a `truncated`
    line (the run goes on; replay refuses such a recording)."""
    max_thread_bytes: ByteSize | None = Field(None, ge=4096)
    """Bytes of recordings kept per thread in all (None: no limit besides `max_runs`); the oldest
    are dropped first, never the run being recorded."""


class CheckpointsConfig(_Section):
    """Checkpoint stores (`Agent(checkpointer=...)`, `--checkpoint`)."""

    keep: int | Literal["all"] = "all"
    """Versions kept per thread: "all", or the newest N (older ones are deleted as new ones are
    saved; `history`, `state_at` and `from_checkpoint` reach only the kept ones)."""
    durability: Literal["sync", "async", "exit"] = "sync"
    """When a run's checkpoints are written (`Agent(durability=)` and `run(durability=)` override
    it): "sync" before the run goes on, "async" in the background while it goes on, "exit" only
    when it ends or suspends. The tool-call journal is written before the run goes on in every
    mode (docs/guides/threads.md, "Durability modes")."""
    recordings: RecordingRetention | None = None
    """Keep each run of a thread as a recording in the store (None: off): `max_runs`,
    `max_bytes` (per recording), `max_thread_bytes` (docs/guides/replay.md, "Keep a thread's
    runs as recordings")."""

    @field_validator("keep")
    @classmethod
    def _keep(cls, value: int | str) -> int | str:
        if isinstance(value, int) and value < 1:
            raise ValueError("keep must be at least 1 (the newest version), or 'all'")
        return value

    @property
    def keep_versions(self) -> int | None:
        """`keep` as a number of versions, None for all."""
        return self.keep if isinstance(self.keep, int) else None


class JianmuConfig(_Section):
    models: ModelsConfig = Field(default_factory=ModelsConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    answers: AnswersConfig = Field(default_factory=AnswersConfig)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    resilience: ResilienceConfig = Field(default_factory=ResilienceConfig)
    context: ContextConfig = Field(default_factory=ContextConfig)
    provider: ProviderConfig = Field(default_factory=ProviderConfig)
    logging: LoggingConfig = Field(default_factory=LoggingConfig)
    agents: AgentsConfig = Field(default_factory=AgentsConfig)
    telemetry: TelemetryConfig = Field(default_factory=TelemetryConfig)
    server: ServerConfig = Field(default_factory=ServerConfig)
    checkpoints: CheckpointsConfig = Field(default_factory=CheckpointsConfig)


_ENV_PREFIX = "JIANMU__"
_cached: JianmuConfig | None = None


PROJECT_FILE = Path("jianmu.yaml")
"""A project's own configuration, in the working directory: read, and announced by `run`."""


def user_config_file() -> Path:
    """The user's configuration file: `$XDG_CONFIG_HOME/jianmu_like/jianmu.yaml`, by default
    `~/.config/jianmu_like/jianmu.yaml`."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "jianmu_like" / "jianmu.yaml"


def config_file() -> Path | None:
    """The configuration file read when none is passed: `$JIANMU_CONFIG` (set by `--config`
    too), else `./jianmu.yaml`, else the user's (`user_config_file`); None: built-in defaults.

    The repository's `configs/jianmu.yaml` is the documented reference of every key, never
    read implicitly: run from the repository root, it silently changed behaviour."""
    explicit = os.environ.get("JIANMU_CONFIG")
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise ConfigError(f"JIANMU_CONFIG points to {path}, which is not a file")
        return path
    for candidate in (PROJECT_FILE, user_config_file()):
        if candidate.is_file():
            return candidate
    return None


def _env_overrides() -> tuple[dict[str, Any], dict[tuple[str, ...], str]]:
    """Nested override data from `JIANMU__A__B=value` variables, and the variable of each key."""
    tree: dict[str, Any] = {}
    names: dict[tuple[str, ...], str] = {}
    for name, raw in sorted(os.environ.items()):
        if not name.startswith(_ENV_PREFIX):
            continue
        path = [p.lower() for p in name[len(_ENV_PREFIX) :].split("__") if p]
        if not path:
            continue
        node = tree
        for part in path[:-1]:
            node = node.setdefault(part, {})
        try:
            node[path[-1]] = yaml.safe_load(raw) if raw.strip() else None
        except yaml.YAMLError:
            node[path[-1]] = raw
        names[tuple(path)] = name
    return tree, names


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


class ConfigSources(BaseModel):
    """Where each effective configuration value came from (for `jianmu-like config`)."""

    file: str | None = None
    values: dict[str, tuple[Any, str]] = Field(default_factory=dict)
    """Dotted key -> (value, source): "default", "<file>:<line>" or "env <VARIABLE>"."""


def load_config(path: str | Path | None = None, *, env: bool = True) -> JianmuConfig:
    """Build a configuration from `path` (or the default search) plus environment overrides.

    Every problem is reported at once, each as `<file>:<line>: <key>: <problem>` (or naming the
    environment variable), with a did-you-mean for misspelt keys."""
    return _load(path, env=env)[0]


def explain_config(path: str | Path | None = None, *, env: bool = True) -> tuple[JianmuConfig, ConfigSources]:
    """The effective configuration and the source of every value."""
    return _load(path, env=env)


def _load(path: str | Path | None, *, env: bool) -> tuple[JianmuConfig, ConfigSources]:
    file = Path(path) if path is not None else config_file()
    data: dict[str, Any] = {}
    doc: YamlDocument | None = None
    if file is not None:
        try:
            doc = load_yaml(file)
        except SourceError as exc:
            raise ConfigError(exc.problems) from exc
        if doc.data is not None and not isinstance(doc.data, dict):
            raise ConfigError([f"{file}:1: top level must be a mapping, got {type(doc.data).__name__}"])
        data = doc.data or {}
    env_names: dict[tuple[str, ...], str] = {}
    if env:
        overrides, env_names = _env_overrides()
        data = _merge(data, overrides)

    def where(loc: tuple[int | str, ...]) -> str:
        for end in range(len(loc), 0, -1):
            name = env_names.get(tuple(str(p) for p in loc[:end]))
            if name is not None:
                return f"environment variable {name}"
        return doc.where(loc) if doc is not None else "configuration"

    duplicates = doc.problems if doc is not None else []
    try:
        config = JianmuConfig.model_validate(data)
    except ValidationError as exc:
        problems = describe_errors(exc, where=where, model=JianmuConfig)
        raise ConfigError(in_line_order([*duplicates, *problems])) from exc
    if duplicates:
        raise ConfigError(duplicates)
    sources = ConfigSources(file=str(file) if file is not None else None)
    for key, value in _flatten(config.model_dump(by_alias=True)).items():
        loc = tuple(key.split("."))
        if any(loc[:end] in env_names for end in range(len(loc), 0, -1)):
            source = where(loc).replace("environment variable ", "env ")
        elif doc is not None and loc in doc.lines:
            source = doc.where(loc)
        else:
            source = "default"
        if isinstance(value, str) and key.endswith("url"):
            value = redact_url(value)  # for display: no user:password@ or ?token=...
        sources.values[key] = (value, source)
    return config, sources


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(_flatten(value, dotted + "."))
        else:
            out[dotted] = value
    return out


def get_config(*, reload: bool = False) -> JianmuConfig:
    """The process-wide configuration, loaded once (pass `reload=True` after changing files/env)."""
    global _cached
    if _cached is None or reload:
        _cached = load_config()
    return _cached
