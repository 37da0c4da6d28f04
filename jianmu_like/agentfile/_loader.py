"""Build agents and trees from YAML agent files (`presets/*.yaml`).

`load_agent(path)` returns a ready `Agent`; `validate_agent_file(path)` checks a file without
contacting any model. Every problem — schema, unknown tool, a module that is not allowed, guard
section, MCP server entry, a referenced preset missing or outside the allowed directories, a
template placeholder or `output` that names nothing — is reported as `file:line: key: problem`,
all of them in one pass, in line order.

An agent file is data: it may name tools from allowed modules only (see `_modules`), reference
presets inside its own directory tree (or configured roots), and is read with YAML limits.

This module is the entry: the work is the `Checker`'s (`_checker`: every problem, collected),
then the `Builder`'s (`_builder`: the tree, each agent through its kind), with what a file names
outside itself resolved in `_references` and its guard sections paired with the agents they
guard in `_guard_uses`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .._base.config import ResilienceConfig
from .._base.sources import SourceError, in_line_order
from .._run.agent import Agent
from .._run.substitutions import UnknownTarget
from ..models._client import ModelClient
from ..presets.react._state import ReActState
from . import _wiring as wiring
from ._builder import Builder, ClientFactory
from ._checker import Checker
from ._spec import AgentFileSpec, ModelSpec


class AgentFileError(SourceError):
    """An agent file that cannot be loaded; `problems` lists every issue with its line."""


def validate_agent_file(path: str | Path, *, allow_modules: Sequence[str] = ()) -> AgentFileSpec:
    """Parse and check an agent file (tools, guard, MCP entries, referenced presets and the
    wiring of templates and `output`). No module that is not allowed is imported; `allow_modules`
    adds to `agents.allowed_modules` of the configuration."""
    return _checked(Checker(allow_modules=allow_modules), Path(path))


def load_agent(
    path: str | Path, *, model_client: ModelClient | None = None, allow_modules: Sequence[str] = ()
) -> Agent:
    """A ready Agent from an agent file. `model_client` overrides the file's `model:` servers
    (the model *name* from the file is still used); `allow_modules` as in `validate_agent_file`."""
    factory: ClientFactory = (lambda _spec: model_client) if model_client is not None else _client_for
    builder = Builder(client_factory=factory, allow_modules=allow_modules)
    file = Path(path)
    spec = _checked(builder, file)
    root = builder.build_root(file, spec)
    inputs = (*wiring.RUN_INPUTS, *spec.inputs)  # every run gives task and messages (see cli._run)
    source = str(file.resolve())
    # Agent files run on the ReAct state (their wiring checks keys against it), whatever nodes
    # their tree holds: a tree of plain nodes has no preset root to say so.
    if spec.kind == "tree":
        agent = Agent(
            root, ReActState, namespace=None, output_namespace=spec.output, inputs=inputs, source=source
        )
    else:
        agent = Agent(root, ReActState, namespace=spec.namespace, inputs=inputs, source=source)
    try:
        agent.breakpoints.set(spec.breakpoints)
        agent.substitutions.set(spec.substitutions)
    except UnknownTarget as exc:  # a rule naming a node or a tool the tree lacks
        where = builder._where(file, (exc.rules, exc.index))
        raise AgentFileError([f"{where}: {exc.rules}.{exc.index}: {exc.problem}"]) from None
    return agent


def _client_for(spec: ModelSpec | None) -> ModelClient:
    if spec is None:
        return ModelClient.resolve()
    resilience = ResilienceConfig(fallback_models=spec.fallback) if spec.fallback else None
    return ModelClient.resolve(
        spec.name,
        base_url=spec.base_url,
        api_key_env=spec.api_key_env,
        resilience=resilience,
        tool_protocol=spec.tool_protocol,
        supports_tools=spec.supports_tools,
        context_window=spec.context_window,
        supports_json_mode=spec.supports_json_mode,
    )


def _checked(checker: Checker, file: Path) -> AgentFileSpec:
    """The checked spec of `file`, or an `AgentFileError` with every problem, in line order."""
    spec = checker.check(file)
    if checker.problems or spec is None:
        raise AgentFileError(in_line_order(checker.problems) or [f"{file}: invalid agent file"])
    return spec
