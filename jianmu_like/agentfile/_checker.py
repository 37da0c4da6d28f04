"""Checking an agent file: every problem, at its line, in one pass, without contacting a model.

`Checker` reads a file and the presets it references (each once), validates it against the spec,
then checks what the spec alone cannot: the tools and output schemas it names, its guard rules
against its tools, its MCP prompts against its MCP servers, the presets it references (confined
to allowed directories) and, in a tree, the wiring of templates and `output`. Problems collect in
`problems` rather than raising, so one `validate` reports them all; the loader turns them into an
`AgentFileError`. The builder (`_builder.Builder`) extends the checker, so it builds from the
specs the check has read.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .._base.config import get_config
from .._base.names import did_you_mean
from .._base.sources import Loc, SourceError, YamlDocument, YamlLimits, describe_errors, load_yaml
from ..guard._config import GuardConfig, policies_from_config
from ..guard._policies import unknown_tool
from ..nodes._message import MessageNode
from ..tools._skills import SKILL_FILE, Skill, SkillSet, load_skill
from ..tools.mcp._config import parse_mcp_servers
from . import _wiring as wiring
from ._guard_uses import agent_nodes, guard_uses
from ._kinds import AGENT_KINDS, FILE_KINDS
from ._modules import ModulePolicy
from ._partial import without_bad_keys
from ._references import mcp_providers, resolve_output_schema, resolve_tool
from ._shipped import SHIPPED_DIR
from ._spec import AgentFileSpec, MCPPromptSpec, PresetRefSpec, ReActSpec, TreeNodeSpec


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


class Checker:
    """Validates one agent file and the presets it references, collecting every problem."""

    def __init__(self, allow_modules: Sequence[str] = ()) -> None:
        agents = get_config().agents
        self.policy = ModulePolicy(names=(*agents.allowed_modules, *allow_modules))
        self.limits = YamlLimits(max_bytes=agents.max_file_bytes)
        self.preset_roots = [_real(Path(root)) for root in agents.preset_roots]
        self.docs: dict[Path, YamlDocument] = {}
        self.specs: dict[Path, AgentFileSpec] = {}
        self.problems: list[str] = []
        self._roots: tuple[Path, ...] = ()
        self.pruned: set[Path] = set()
        """Files whose schema errors were reported and whose other keys were checked without
        the bad ones (`without_bad_keys`): never built, never wired."""

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
            agents = agent_nodes(spec.tree, ("tree",))
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

    def check(self, file: Path) -> AgentFileSpec | None:
        """The spec of `file`, checked; None, or problems in `problems`, when it is refused."""
        self._roots = (_real(file.parent),)
        spec = self.spec_of(file)
        if spec is not None and spec.kind == "tree" and file not in self.pruned:
            self._check_wiring(file, spec)
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

    def _policy(self, file: Path) -> ModulePolicy:
        policy = self.policy.with_root(file.parent)
        for root in self._roots:
            policy = policy.with_root(root)
        return policy

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
                mcp_providers(spec.mcp_servers)
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


def _looks_like_agent_file(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and data.get("kind", "react") in FILE_KINDS
        and ("kind" in data or "tools" in data or "name" in data)
    )
