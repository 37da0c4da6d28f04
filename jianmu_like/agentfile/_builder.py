"""Building an agent from a checked agent file: the tree of nodes, each agent through its kind.

`Builder` extends the `Checker` so it builds from the specs the check read (a referenced preset
once, however often the tree names it). Each agent kind builds through `AgentKind.build` from the
common `create_react_node` arguments made here: the file's settings (a tree node's unset ones
from the file level), one model client per distinct `model:` section, the tools and providers the
file names, and the guard (one enforcer shared by the nodes that inherit the file-level guard).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import py_trees

from .._base.config import ContextConfig, get_config
from ..bt import _composites as composites
from ..bt._conditions import StateCondition
from ..bt._loop import LoopUntilSuccess
from ..guard._config import policies_from_config
from ..guard._enforcer import GuardEnforcer
from ..models._client import ModelClient
from ..models._named_providers import served_name
from ..nodes._a2a_node import A2AAgentNode
from ..nodes._message import MessageNode
from ..presets.react._config import ReActConfig
from ..state._contract import StateContract, declare
from ..tools._a2a import A2AAgentConfig, a2a_providers
from ..tools._base import Tool
from . import _wiring as wiring
from ._checker import Checker
from ._guard_uses import guard_uses
from ._kinds import AGENT_KINDS, AgentKind
from ._references import mcp_providers, resolve_output_schema, resolve_tool
from ._spec import AgentFileSpec, MCPPromptSpec, ModelSpec, ReActSpec, TreeNodeSpec

ClientFactory = Callable[[ModelSpec | None], ModelClient]


class Builder(Checker):
    """Validates and builds one agent file and the presets it references."""

    def __init__(self, client_factory: ClientFactory, allow_modules: Sequence[str] = ()) -> None:
        super().__init__(allow_modules)
        self.client_factory = client_factory
        self._clients: dict[str, ModelClient] = {}
        self._shared_guards: dict[int, tuple[dict[str, Any], GuardEnforcer]] = {}

    def build_root(self, file: Path, spec: AgentFileSpec) -> py_trees.behaviour.Behaviour:
        if spec.kind == "tree" and spec.tree is not None:
            return self._node(file, spec.tree, spec, "root")
        return self._agent(file, spec, AGENT_KINDS[spec.kind], defaults=None)

    def _agent(
        self, file: Path, spec: ReActSpec, kind: AgentKind, defaults: ReActSpec | None
    ) -> py_trees.behaviour.Behaviour:
        """An agent of `kind` (a whole file, or a tree node with the file's settings as defaults)."""
        return kind.build(self._react_args(file, spec, defaults), spec, kind.options_of(spec))

    def _node(
        self, file: Path, node: TreeNodeSpec, defaults: ReActSpec, fallback_name: str
    ) -> py_trees.behaviour.Behaviour:
        kind = node.kind
        body: Any = getattr(node, kind)
        name = getattr(body, "name", None) or fallback_name
        if kind in ("sequence", "selector", "parallel"):
            children = [self._node(file, c, defaults, f"{name}.{i}") for i, c in enumerate(body.children)]
            if kind == "sequence":
                return composites.Sequence(name, memory=body.memory, children=children)
            if kind == "selector":
                return py_trees.composites.Selector(name, memory=body.memory, children=children)
            policy = (
                py_trees.common.ParallelPolicy.SuccessOnAll()
                if body.policy == "all"
                else py_trees.common.ParallelPolicy.SuccessOnOne()
            )
            return py_trees.composites.Parallel(name, policy=policy, children=children)
        if kind == "loop":
            child = self._node(file, body.child, defaults, f"{name}.body")
            return LoopUntilSuccess(name, child, max_iterations=body.max_iterations)
        if kind == "condition":
            condition = StateCondition(name, key=body.key, namespace=body.namespace)
            read = f"{body.namespace}.{body.key}" if body.namespace else body.key
            declare(condition, StateContract(f"condition {name!r}", reads=(read,)))
            return condition
        if kind == "message":
            return MessageNode(name, body.content, namespace=body.namespace, role=body.role)
        if kind == "a2a_agent":
            node_keys = {"namespace", "message_key", "output_key"}
            return A2AAgentNode(
                name,
                A2AAgentConfig.model_validate(body.model_dump(exclude=node_keys)),
                message_key=body.message_key,
                output_key=body.output_key,
                namespace=body.namespace,
            )
        agent = AGENT_KINDS.get(kind)
        if agent is not None:
            built = self._agent(file, body, agent, defaults)
            return self._with_input(built, body.input, body.namespace or agent.namespace)
        target = self._preset_target(file, body)
        assert target is not None
        referenced = self.specs[target]
        overrides = {k: v for k, v in (("name", body.name), ("namespace", body.namespace)) if v is not None}
        root = self.build_root(target, referenced.model_copy(update=overrides))
        return self._with_input(root, body.input, wiring.preset_namespace(body, referenced))

    def _with_input(
        self, root: py_trees.behaviour.Behaviour, template: str | None, namespace: str | None
    ) -> py_trees.behaviour.Behaviour:
        if template is None:
            return root
        ask = MessageNode(f"{root.name}.Input", template, namespace=namespace)
        return composites.Sequence(f"{root.name}.WithInput", memory=True, children=[ask, root])

    def _shared_guard(self, file: Path, defaults: ReActSpec) -> GuardEnforcer:
        """One enforcer for the file-level guard of a tree and every agent node inheriting it,
        told the tools of all of them: a rule for a tool that only one node has is valid."""
        assert defaults.guard is not None
        key = id(defaults.guard)
        if key not in self._shared_guards:
            uses = guard_uses(defaults) if isinstance(defaults, AgentFileSpec) else []
            users = next((found for loc, _, found in uses if loc == ("guard",)), [])
            names = self._static_tool_names(file, users)
            enforcer = GuardEnforcer(policies_from_config(defaults.guard), tools=names or ())
            if names is None:  # MCP tools: checked when the servers list them
                enforcer.defer_check()
            self._shared_guards[key] = (defaults.guard, enforcer)
        return self._shared_guards[key][1]

    def _react_args(self, file: Path, spec: ReActSpec, defaults: ReActSpec | None) -> dict[str, Any]:
        """The arguments of `create_react_node` for `spec` (the common arguments of every kind's
        builder, `AgentKind.build`)."""
        inherited: dict[str, Any] = {}
        if defaults is not None:  # file-level settings fill what the node leaves unset
            inherited = {
                key: getattr(defaults, key)
                for key in ("model", "llm", "limits", "guard", "system_prompt", "first_messages", "context")
                if key not in spec.model_fields_set and key in defaults.model_fields_set
            }
            spec = spec.model_copy(update=inherited)
        name = spec.name if "name" in spec.model_fields_set or not spec.namespace else spec.namespace
        model = spec.model if isinstance(spec.model, ModelSpec) else ModelSpec(name=spec.model)
        key = model.model_dump_json()
        client = self._clients.get(key) or self._clients.setdefault(
            key, self.client_factory(model if spec.model is not None else None)
        )
        values: dict[str, Any] = {
            **{key: getattr(spec, key) for key in SAME_NAMED},
            **spec.llm.model_dump(),
            **spec.limits.model_dump(),
            "model": served_name(model.name, get_config().models.providers),
            **_prompt_values(spec),
            "tool_protocol": spec.tool_protocol or model.tool_protocol,
            "context": _context(spec.context, model.context_window),
        }
        if spec.guard is None:
            guard = None
        elif defaults is not None and "guard" in inherited:
            guard = self._shared_guard(file, defaults)
        else:
            guard = GuardEnforcer(policies_from_config(spec.guard))
        skills = {"skills": self._skills(file, spec)} if spec.skills else {}
        return {
            **skills,
            "name": name,
            "namespace": spec.namespace,
            "model_client": client,
            "tools": _with_output_limits(
                [resolve_tool(t, self._policy(file)) for t in spec.tools], spec.tool_output_chars
            ),
            "tool_providers": [
                *(mcp_providers(spec.mcp_servers) if spec.mcp_servers else []),
                *a2a_providers(spec.a2a_agents),
            ]
            or None,
            "constraints": guard,
            "config": ReActConfig(**{k: v for k, v in values.items() if v is not None}),
            "output_type": (
                resolve_output_schema(spec.output_schema, self._policy(file))
                if spec.output_schema is not None
                else None
            ),
        }


SAME_NAMED = tuple(
    sorted(
        set(ReActSpec.model_fields)
        & set(ReActConfig.model_fields)
        - {"model", "system_prompt", "tool_protocol", "context"}  # read with more (see BUILT_FROM)
    )
)
"""The agent-file fields that are `ReActConfig` settings of the same name, passed as they are
(set ones; unset, the configuration's default applies): `tool_choice`, `execution_mode`,
`synthesize`, ... The `llm:` and `limits:` sections are settings by their fields' names too, and
every other field is one the loader builds the agent from (`spec.BUILT_FROM`; a test checks
that each field of the spec is one or the other)."""


def _prompt_values(spec: ReActSpec) -> dict[str, Any]:
    """`ReActConfig`'s prompt fields from the spec: a written system prompt, or MCP prompts."""
    prompt, first = spec.system_prompt, spec.first_messages
    return {
        "system_prompt": prompt if isinstance(prompt, str) else None,
        "system_prompt_from": prompt.mcp_prompt if isinstance(prompt, MCPPromptSpec) else None,
        "first_messages_from": first.mcp_prompt if first is not None else None,
    }


def _context(context: bool | ContextConfig | None, window: int | None) -> bool | ContextConfig | None:
    """The agent's `context:` with the model section's `context_window` as its default window
    (so it binds whichever client serves the model, e.g. one given to `load_agent`)."""
    if window is None or context is False:
        return context
    base = context if isinstance(context, ContextConfig) else get_config().context
    update: dict[str, Any] = {"enabled": True} if context is True else {}
    if base.window is None:
        update["window"] = window
    return base.model_copy(update=update)


def _with_output_limits(tools: list[Tool], limits: dict[str, int]) -> list[Tool]:
    """`tools`, those named in `limits` (YAML `tool_output_chars`) with that output limit."""
    return [
        t.model_copy(update={"max_output_chars": limits[t.name]}) if t.name in limits else t for t in tools
    ]
