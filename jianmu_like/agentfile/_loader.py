"""Build agents and trees from YAML agent files (`presets/*.yaml`).

`load_agent(path)` returns a ready `Agent`; `validate_agent_file(path)` checks a file without
contacting any model. Every problem — schema, unknown tool, a module that is not allowed, guard
section, MCP server entry, a referenced preset missing or outside the allowed directories, a
template placeholder or `output` that names nothing — is reported as `file:line: key: problem`,
all of them in one pass, in line order.

An agent file is data: it may name tools from allowed modules only (see `modules`), reference
presets inside its own directory tree (or configured roots), and is read with YAML limits.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import py_trees
from pydantic import BaseModel, ValidationError

from .._agent import Agent
from .._config import ContextConfig, ResilienceConfig, get_config
from .._names import did_you_mean
from .._run.substitutions import UnknownTarget
from .._sources import (
    Loc,
    SourceError,
    YamlDocument,
    YamlLimits,
    describe_errors,
    in_line_order,
    load_yaml,
)
from ..bt import _composites as composites
from ..bt._conditions import StateCondition
from ..bt._loop import LoopUntilSuccess
from ..guard._config import GuardConfig, policies_from_config
from ..guard._enforcer import GuardEnforcer
from ..guard._policies import unknown_tool
from ..models._client import ModelClient
from ..models._named_providers import served_name
from ..nodes._a2a_node import A2AAgentNode
from ..nodes._message import MessageNode
from ..presets.react._config import ReActConfig
from ..presets.react._state import ReActState
from ..state._contract import StateContract, declare
from ..tools._a2a import A2AAgentConfig, a2a_providers
from ..tools._base import Tool
from ..tools._provider import ToolProvider
from ..tools._skills import SKILL_FILE, Skill, SkillSet, load_skill
from ..tools.builtin import builtin_tools
from ..tools.mcp._config import parse_mcp_servers
from . import _wiring as wiring
from ._kinds import AGENT_KINDS, FILE_KINDS, AgentKind
from ._modules import ModulePolicy
from ._partial import without_bad_keys
from ._shipped import SHIPPED_DIR
from ._spec import AgentFileSpec, MCPPromptSpec, ModelSpec, PresetRefSpec, ReActSpec, TreeNodeSpec

ClientFactory = Callable[[ModelSpec | None], ModelClient]


class AgentFileError(SourceError):
    """An agent file that cannot be loaded; `problems` lists every issue with its line."""


GuardUse = tuple[Loc, dict[str, Any], list[tuple[str, ReActSpec]]]
"""A `guard:` section (its key path), with the agents it guards as (kind, spec)."""


def guard_uses(spec: AgentFileSpec) -> list[GuardUse]:
    """Each guard section of a file with the agents it guards: the file's own agent; in a tree,
    each agent node that sets its own `guard:`, and the file-level guard for every agent node
    that sets none (it is their default)."""
    if spec.kind != "tree" or spec.tree is None:
        return [(("guard",), spec.guard, [(spec.kind, spec)])] if spec.guard is not None else []
    uses: list[GuardUse] = []
    inheritors: list[tuple[str, ReActSpec]] = []
    for loc, kind, body in _agent_nodes(spec.tree, ("tree",)):
        if "guard" not in body.model_fields_set:
            inheritors.append((kind, body))
        elif body.guard is not None:
            uses.append(((*loc, "guard"), body.guard, [(kind, body)]))
    if spec.guard is not None:
        uses.insert(0, (("guard",), spec.guard, inheritors))
    return uses


def _agent_nodes(node: TreeNodeSpec, loc: Loc) -> list[tuple[Loc, str, ReActSpec]]:
    kind = node.kind
    body: Any = getattr(node, kind)
    here = (*loc, kind)
    found: list[tuple[Loc, str, ReActSpec]] = [(here, kind, body)] if kind in AGENT_KINDS else []
    for index, child in enumerate(getattr(body, "children", None) or []):
        found.extend(_agent_nodes(child, (*here, "children", index)))
    if kind == "loop":
        found.extend(_agent_nodes(body.child, (*here, "child")))
    return found


def validate_agent_file(path: str | Path, *, allow_modules: Sequence[str] = ()) -> AgentFileSpec:
    """Parse and check an agent file (tools, guard, MCP entries, referenced presets and the
    wiring of templates and `output`). No module that is not allowed is imported; `allow_modules`
    adds to `agents.allowed_modules` of the configuration."""
    return _Builder(client_factory=None, allow_modules=allow_modules).check(Path(path))


def load_agent(
    path: str | Path, *, model_client: ModelClient | None = None, allow_modules: Sequence[str] = ()
) -> Agent:
    """A ready Agent from an agent file. `model_client` overrides the file's `model:` servers
    (the model *name* from the file is still used); `allow_modules` as in `validate_agent_file`."""
    factory: ClientFactory = (lambda _spec: model_client) if model_client is not None else _client_for
    builder = _Builder(client_factory=factory, allow_modules=allow_modules)
    file = Path(path)
    spec = builder.check(file)
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


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


class _Builder:
    """Validates and builds one agent file and the presets it references."""

    def __init__(self, client_factory: ClientFactory | None, allow_modules: Sequence[str] = ()) -> None:
        agents = get_config().agents
        self.client_factory = client_factory
        self.policy = ModulePolicy(names=(*agents.allowed_modules, *allow_modules))
        self.limits = YamlLimits(max_bytes=agents.max_file_bytes)
        self.preset_roots = [_real(Path(root)) for root in agents.preset_roots]
        self.docs: dict[Path, YamlDocument] = {}
        self.specs: dict[Path, AgentFileSpec] = {}
        self.problems: list[str] = []
        self._clients: dict[str, ModelClient] = {}
        self._roots: tuple[Path, ...] = ()
        self._shared_guards: dict[int, tuple[dict[str, Any], GuardEnforcer]] = {}
        self.pruned: set[Path] = set()
        """Files whose schema errors were reported and whose other keys were checked without
        the bad ones (`without_bad_keys`): never built, never wired."""

    # ------------------------------------------------------------------ checking
    def spec_of(self, file: Path, referenced_at: str | None = None) -> AgentFileSpec | None:
        """The checked spec of `file`. For a referenced file (`referenced_at` is where the
        reference is), a file that is not an agent file is reported without echoing its content."""
        file = _real(file) if file.exists() else file
        if file in self.specs:
            return self.specs[file]
        try:
            doc = load_yaml(file, self.limits)
        except SourceError as exc:
            if referenced_at is None:
                self.problems.extend(exc.problems)
            else:
                self.problems.append(f"{referenced_at}: preset: {file} is not a readable agent file")
            return None
        if referenced_at is not None and not _looks_like_agent_file(doc.data):
            self.problems.append(
                f"{referenced_at}: preset: {file} is not an agent file "
                f"(a mapping with kind: {', '.join(FILE_KINDS)})"
            )
            return None
        self.docs[file] = doc
        self.problems.extend(doc.problems)
        if not isinstance(doc.data, dict):
            self.problems.append(f"{file}:1: an agent file must be a mapping (kind, name, tools, ...)")
            return None
        try:
            spec = AgentFileSpec.model_validate(doc.data)
        except ValidationError as exc:
            self.problems.extend(describe_errors(exc, where=doc.where, model=AgentFileSpec))
            # The rest of the file is checked too (its references: tools, MCP servers, guard
            # rules), so one `validate` reports every problem; the file stays refused.
            rest = without_bad_keys(doc.data, exc)
            if rest is None:
                return None
            spec = rest
            self.pruned.add(file)
        else:
            self.specs[file] = spec
        self._check_sections(file, spec)
        self._check_react(file, spec, ())
        self._check_unsupported(file, spec.kind, spec, ())
        if spec.tree is not None:
            self._check_node(file, spec.tree, ("tree",))
        self._check_guard_tools(file, spec)
        self._check_mcp_prompts(file, spec)
        return spec

    def _check_mcp_prompts(self, file: Path, spec: AgentFileSpec) -> None:
        """Each MCP prompt (`system_prompt` / `first_messages: {mcp_prompt: ...}`) names one of
        the MCP servers of the agent using it (a tree node inherits the file's), and only a
        `react` agent takes one. The prompt's name and arguments are checked when the server
        runs (validation starts no server)."""
        agents: list[tuple[Loc, str, ReActSpec]] = [((), spec.kind, spec)]
        if spec.kind == "tree" and spec.tree is not None:
            agents = _agent_nodes(spec.tree, ("tree",))
        for loc, kind, body in agents:
            for key in ("system_prompt", "first_messages"):
                source, at = (body, loc) if key in body.model_fields_set else (spec, ())
                value = getattr(source, key)
                if not isinstance(value, MCPPromptSpec):
                    continue
                where = self._where(file, (*at, key))
                heir = f" (inherited by the {kind} node {body.name!r})" if source is not body else ""
                if kind != "react":
                    self.problems.append(
                        f"{where}: {key}: an MCP prompt is only for react agents, not {kind}{heir}"
                    )
                    continue
                try:
                    names = [server.name for server in parse_mcp_servers(body.mcp_servers)]
                except ValueError:
                    continue  # reported by `_check_react`
                server = value.mcp_prompt.server
                if server not in names:
                    where = self._where(file, (*at, key, "mcp_prompt", "server"))
                    self.problems.append(
                        f"{where}: {key}.mcp_prompt.server: the agent has no MCP server {server!r}"
                        f"{did_you_mean(server, names)}{heir} (its MCP servers: {', '.join(names) or 'none'})"
                    )

    def _check_guard_tools(self, file: Path, spec: AgentFileSpec) -> None:
        """Every tool a guard rule names must be a tool of an agent it guards (fail closed: a
        typo would otherwise switch the rule off). Agents with MCP servers are checked when the
        servers list their tools, before the first model call (see `GuardEnforcer.attach`)."""
        for loc, section, users in guard_uses(spec):
            try:
                config = GuardConfig.model_validate(section)
            except ValidationError:
                continue  # reported by `_check_react`
            names = self._static_tool_names(file, users)
            if names is None:
                continue
            for key, pattern in config.tool_references():
                problem = unknown_tool(pattern, names)
                if problem is not None:
                    path = "guard" + "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in key)
                    self.problems.append(f"{self._where(file, (*loc, *key))}: {path}: {problem}")

    def _static_tool_names(self, file: Path, users: list[tuple[str, ReActSpec]]) -> set[str] | None:
        """The tool names of these agents, or None when not all are known before the run (MCP
        servers) or a tool cannot be resolved (reported already)."""
        names: set[str] = set()
        for kind, body in users:
            if body.mcp_servers:
                return None
            names.update(agent.name for agent in body.a2a_agents)
            for reference in body.tools:
                try:
                    names.add(resolve_tool(reference, self._policy(file)).name)
                except ValueError:
                    return None
            names.update(AGENT_KINDS[kind].implicit_tools)
            skills = self._skills(file, body) if body.skills else None
            if body.skills and skills is None:
                return None
            if skills is not None:
                names.update(tool.name for tool in skills.tools())
        return names

    def check(self, file: Path) -> AgentFileSpec:
        self._roots = (_real(file.parent),)
        spec = self.spec_of(file)
        if spec is not None and spec.kind == "tree" and file not in self.pruned:
            self._check_wiring(file, spec)
        if self.problems or spec is None:
            raise AgentFileError(in_line_order(self.problems) or [f"{file}: invalid agent file"])
        return spec

    def _check_wiring(self, file: Path, spec: AgentFileSpec) -> None:
        """Templates and `output` against what the tree writes (skipped when a referenced preset
        could not be read: what it writes is unknown, and its problem is reported already)."""
        unresolved: list[PresetRefSpec] = []

        def resolve(source: Path, ref: PresetRefSpec) -> tuple[Path, AgentFileSpec] | None:
            target = self._preset_target(source, ref)
            found = self.specs.get(target) if target is not None else None
            if target is None or found is None:
                unresolved.append(ref)
                return None
            return target, found

        found = wiring.collect(file, spec, resolve)
        if unresolved:
            return
        for source, loc, template in found.templates:
            key = ".".join(str(p) for p in loc)
            for problem in wiring.template_problems(template, found):
                self.problems.append(f"{self._where(source, loc)}: {key}: {problem}")
        unanswered = wiring.output_problem(spec, found)
        if unanswered is not None:
            self.problems.append(f"{self._where(file, ('output',))}: output: {unanswered}")

    def _preset_target(self, file: Path, ref: PresetRefSpec) -> Path | None:
        """The real path of a referenced agent file if it lies where presets may be read."""
        target = _real(file.parent / ref.path)
        allowed = (*self._roots, _real(file.parent), _real(SHIPPED_DIR), *self.preset_roots)
        return target if any(target.is_relative_to(root) for root in allowed) else None

    def _where(self, file: Path, loc: Loc) -> str:
        doc = self.docs.get(_real(file) if file.exists() else file)
        return doc.where(loc) if doc is not None else str(file)

    def _skills(self, file: Path, spec: ReActSpec, loc: Loc | None = None) -> SkillSet | None:
        """The agent's skills, from folders under the agent file's directory; with `loc`, each
        problem is reported (a malformed `SKILL.md` at its own line) and None returned."""
        if not spec.skills:
            return None
        found: list[Skill] = []
        problems: list[str] = []
        for index, folder in enumerate(spec.skills):
            try:
                found.append(load_skill(file.parent / folder, within=file.parent))
            except SourceError as exc:
                where = self._where(file, (*(loc or ()), "skills", index)) + f": skills[{index}]: "
                skill_md = str(_real(file.parent / folder) / SKILL_FILE)
                problems.extend(p if p.startswith(skill_md) else where + p for p in exc.problems)
        try:
            skills = SkillSet(found) if not problems else None
        except ValueError as exc:
            problems.append(f"{self._where(file, (*(loc or ()), 'skills'))}: skills: {exc}")
            skills = None
        if loc is not None:
            self.problems.extend(problems)
        return skills

    def _check_react(self, file: Path, spec: ReActSpec, loc: Loc) -> None:
        policy = self._policy(file)
        names: list[str] = []
        self._skills(file, spec, loc)
        for index, name in enumerate(spec.tools):
            try:
                names.append(resolve_tool(name, policy).name)
            except ValueError as exc:
                self.problems.append(f"{self._where(file, (*loc, 'tools', index))}: tools[{index}]: {exc}")
        for name in spec.tool_output_chars:
            if name not in names and len(names) == len(spec.tools):
                where = self._where(file, (*loc, "tool_output_chars", name))
                self.problems.append(
                    f"{where}: tool_output_chars: {name!r} is not one of this agent's tools "
                    f"({', '.join(names) or 'none'}; an MCP server takes max_output_chars in its entry)"
                )
        if spec.guard is not None:
            self._check_guard(file, spec.guard, loc)
        if spec.output_schema is not None:
            try:
                resolve_output_schema(spec.output_schema, policy)
            except (ValueError, TypeError) as exc:
                self.problems.append(f"{self._where(file, (*loc, 'output_schema'))}: output_schema: {exc}")
        if spec.mcp_servers:
            try:
                _mcp_providers(spec.mcp_servers)
            except (ValueError, ImportError) as exc:
                self.problems.append(f"{self._where(file, (*loc, 'mcp_servers'))}: mcp_servers: {exc}")

    def _check_guard(self, file: Path, guard: dict[str, Any], loc: Loc) -> None:
        """The `guard:` section, each problem at its own key's line (with a did-you-mean for a
        misspelt key), as the rest of the file; then what only building the policies finds."""
        try:
            config = GuardConfig.model_validate(guard)
        except ValidationError as exc:
            where = functools.partial(self._where, file)
            self.problems.extend(describe_errors(exc, where=where, model=GuardConfig, prefix=(*loc, "guard")))
            return
        try:
            policies_from_config(config)
        except ValueError as exc:
            self.problems.append(f"{self._where(file, (*loc, 'guard'))}: guard: {exc}")

    def _check_sections(self, file: Path, spec: AgentFileSpec) -> None:
        """A kind's options section (`supervisor:`, `plan:`, `research:`) in a file of another kind
        would be ignored: an error at its line."""
        for kind in AGENT_KINDS.values():
            if (
                kind.section is not None
                and kind.name != spec.kind
                and getattr(spec, kind.section) is not None
            ):
                where = self._where(file, (kind.section,))
                self.problems.append(
                    f"{where}: {kind.section}: `{kind.section}:` is only for kind: {kind.name}"
                )

    def _check_unsupported(self, file: Path, kind: str, spec: ReActSpec, loc: Loc) -> None:
        """Keys of a ReAct agent that the kind does not take (`AgentKind.unsupported`)."""
        found = AGENT_KINDS.get(kind)
        for key in found.unsupported if found is not None else ():
            if getattr(spec, key):
                self.problems.append(
                    f"{self._where(file, (*loc, key))}: {key}: not supported by {kind} agents"
                )

    def _check_node(self, file: Path, node: TreeNodeSpec, loc: Loc) -> None:
        kind = node.kind
        body: Any = getattr(node, kind)
        here = (*loc, kind)
        if kind in AGENT_KINDS:
            self._check_react(file, body, here)
            self._check_unsupported(file, kind, body, here)
        elif kind == "preset":
            where = self._where(file, (*here, "path"))
            target = self._preset_target(file, body)
            if target is None:
                self.problems.append(
                    f"{where}: preset: {body.path!r} is outside the directories presets may be read from "
                    f"({self._roots[0]}, the shipped presets); list its directory under "
                    "agents.preset_roots in the configuration to allow it"
                )
            elif not target.is_file():
                self.problems.append(f"{where}: preset: no such file {target}")
            else:
                self.spec_of(target, referenced_at=where)
        elif kind == "message":
            try:
                MessageNode("check", body.content)
            except ValueError as exc:
                self.problems.append(f"{self._where(file, (*here, 'content'))}: message: {exc}")
        for index, child in enumerate(getattr(body, "children", None) or []):
            self._check_node(file, child, (*here, "children", index))
        if kind == "loop":
            self._check_node(file, body.child, (*here, "child"))

    # ------------------------------------------------------------------ building
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

    def _policy(self, file: Path) -> ModulePolicy:
        policy = self.policy.with_root(file.parent)
        for root in self._roots:
            policy = policy.with_root(root)
        return policy

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
        assert self.client_factory is not None
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
                *(_mcp_providers(spec.mcp_servers) if spec.mcp_servers else []),
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


def resolve_tool(reference: str, policy: ModulePolicy | None = None) -> Tool:
    """A built-in tool by name, or `package.module:attribute` (a Tool or a plain function) from a
    module `policy` allows (none but the built-in tools without one); a refused module is never
    imported."""
    builtins = builtin_tools()
    if reference in builtins:
        return builtins[reference]
    if ":" not in reference:
        known = ", ".join(sorted(builtins))
        raise ValueError(
            f"unknown tool {reference!r}{did_you_mean(reference, builtins)} "
            f"(built-in: {known}; or 'package.module:function')"
        )
    module_name, _, attr = reference.partition(":")
    try:
        module = (policy or ModulePolicy()).import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import module {module_name!r} for tool {reference!r}: {exc}") from exc
    target = getattr(module, attr, None)
    if target is None:
        public = (name for name in vars(module) if not name.startswith("_"))
        raise ValueError(f"module {module_name!r} has no attribute {attr!r}{did_you_mean(attr, public)}")
    if isinstance(target, Tool):
        return target
    if callable(target):
        return Tool.from_function(target)
    raise ValueError(f"{reference!r} is neither a Tool nor a function")


def resolve_output_schema(
    reference: dict[str, Any] | str, policy: ModulePolicy | None = None
) -> type[BaseModel] | dict[str, Any]:
    """An `output_schema:` value: a JSON schema (checked) or a pydantic model class named
    `package.module:Model` / `package.module.Model` from a module `policy` allows."""
    if isinstance(reference, dict):
        from .._json_schema import compile_schema

        compile_schema(reference, known_keywords=False)  # as OutputSchema will: ValueError naming the place
        if reference.get("type", "object") != "object":
            raise ValueError(f"the schema must describe an object (type: object), not {reference['type']!r}")
        return reference
    module_name, sep, attr = reference.partition(":")
    if not sep:
        module_name, _, attr = reference.rpartition(".")
    if not module_name or not attr:
        raise ValueError(f"{reference!r} is neither a JSON schema nor 'package.module:Model'")
    try:
        module = (policy or ModulePolicy()).import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import module {module_name!r} for output_schema: {exc}") from exc
    target = getattr(module, attr, None)
    if not (isinstance(target, type) and issubclass(target, BaseModel)):
        raise ValueError(f"{reference!r} is not a pydantic model class (found {type(target).__name__})")
    return target


def _looks_like_agent_file(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and data.get("kind", "react") in FILE_KINDS
        and ("kind" in data or "tools" in data or "name" in data)
    )


def _mcp_providers(entries: Any) -> list[ToolProvider]:
    from ..tools.mcp._provider import mcp_servers_from_config

    return list(mcp_servers_from_config(entries))


def _with_output_limits(tools: list[Tool], limits: dict[str, int]) -> list[Tool]:
    """`tools`, those named in `limits` (YAML `tool_output_chars`) with that output limit."""
    return [
        t.model_copy(update={"max_output_chars": limits[t.name]}) if t.name in limits else t for t in tools
    ]
