"""Issue 19's renames, applied to any worktree: implementation modules become private (`_name.py`).

Run it in the repository root (`python dev/apply_renames.py`, `--dry-run` to only print) after
merging a branch that renamed modules, or on a branch that still uses the old paths:

1. `git mv`s every module of `RENAMES` still found at its old path (a file at both paths is
   reported and left alone: merge it by hand, then run this again);
2. rewrites every reference to an old module in the tracked and untracked (not ignored) text files:
   absolute dotted paths anywhere (imports, `mock.patch` targets, logger names, docs, the
   import-linter contracts), relative imports inside the package (`from ..nodes.llm import X`,
   `from . import llm`), export tables (`{".agent": (...)}`), the import-linter `layers` (bare
   top-level names), the CLI's `handler="module:function"` strings, and file paths in prose
   (`nodes/llm.py`, `jianmu_like/config.py`).

It is idempotent: a second run changes nothing (no new path matches an old one). It prints each
file it changed with the number of rewrites. Which modules stay public, and why: `PUBLIC_MODULES`
in tests/test_public_api.py (which fails on any other module without the underscore).
"""

from __future__ import annotations

import argparse
import ast
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

PACKAGE = "jianmu_like"

RENAMES: dict[str, str] = {
    "jianmu_like.agent": "jianmu_like._agent",
    "jianmu_like.agentfile.kinds": "jianmu_like.agentfile._kinds",
    "jianmu_like.agentfile.loader": "jianmu_like.agentfile._loader",
    "jianmu_like.agentfile.modules": "jianmu_like.agentfile._modules",
    "jianmu_like.agentfile.shipped": "jianmu_like.agentfile._shipped",
    "jianmu_like.agentfile.spec": "jianmu_like.agentfile._spec",
    "jianmu_like.agentfile.wiring": "jianmu_like.agentfile._wiring",
    "jianmu_like.bt.async_behaviour": "jianmu_like.bt._async_behaviour",
    "jianmu_like.bt.clone": "jianmu_like.bt._clone",
    "jianmu_like.bt.composites": "jianmu_like.bt._composites",
    "jianmu_like.bt.conditions": "jianmu_like.bt._conditions",
    "jianmu_like.bt.dynamic_parallel": "jianmu_like.bt._dynamic_parallel",
    "jianmu_like.bt.eager": "jianmu_like.bt._eager",
    "jianmu_like.bt.fault": "jianmu_like.bt._fault",
    "jianmu_like.bt.inline": "jianmu_like.bt._inline",
    "jianmu_like.bt.loop": "jianmu_like.bt._loop",
    "jianmu_like.bt.node": "jianmu_like.bt._node",
    "jianmu_like.bt.progress": "jianmu_like.bt._progress",
    "jianmu_like.bt.runner": "jianmu_like.bt._runner",
    "jianmu_like.checkpoint.contract": "jianmu_like.checkpoint._contract",
    "jianmu_like.checkpoint.history": "jianmu_like.checkpoint._history",
    "jianmu_like.checkpoint.owner": "jianmu_like.checkpoint._owner",
    "jianmu_like.checkpoint.postgres": "jianmu_like.checkpoint._postgres",
    "jianmu_like.checkpoint.recorder": "jianmu_like.checkpoint._recorder",
    "jianmu_like.checkpoint.sql": "jianmu_like.checkpoint._sql",
    "jianmu_like.checkpoint.store": "jianmu_like.checkpoint._store",
    "jianmu_like.checkpoint.target": "jianmu_like.checkpoint._target",
    "jianmu_like.checkpoint.threads": "jianmu_like.checkpoint._threads",
    "jianmu_like.cli.approvals": "jianmu_like.cli._approvals",
    "jianmu_like.cli.common": "jianmu_like.cli._common",
    "jianmu_like.cli.durable": "jianmu_like.cli._durable",
    "jianmu_like.cli.inspect": "jianmu_like.cli._inspect",
    "jianmu_like.cli.main": "jianmu_like.cli._main",
    "jianmu_like.cli.parser": "jianmu_like.cli._parser",
    "jianmu_like.cli.render": "jianmu_like.cli._render",
    "jianmu_like.cli.run": "jianmu_like.cli._run",
    "jianmu_like.cli.serve": "jianmu_like.cli._serve",
    "jianmu_like.cli.signals": "jianmu_like.cli._signals",
    "jianmu_like.cli.threads": "jianmu_like.cli._threads",
    "jianmu_like.cli.tracing": "jianmu_like.cli._tracing",
    "jianmu_like.config": "jianmu_like._config",
    "jianmu_like.durable.client": "jianmu_like.durable._client",
    "jianmu_like.durable.fingerprint": "jianmu_like.durable._fingerprint",
    "jianmu_like.durable.liveness": "jianmu_like.durable._liveness",
    "jianmu_like.durable.naming": "jianmu_like.durable._naming",
    "jianmu_like.durable.result": "jianmu_like.durable._result",
    "jianmu_like.durable.setup": "jianmu_like.durable._setup",
    "jianmu_like.durable.steps": "jianmu_like.durable._steps",
    "jianmu_like.durable.threads": "jianmu_like.durable._threads",
    "jianmu_like.durable.worker": "jianmu_like.durable._worker",
    "jianmu_like.durable.workflow": "jianmu_like.durable._workflow",
    "jianmu_like.guard.approvals": "jianmu_like.guard._approvals",
    "jianmu_like.guard.config": "jianmu_like.guard._config",
    "jianmu_like.guard.decisions": "jianmu_like.guard._decisions",
    "jianmu_like.guard.enforcer": "jianmu_like.guard._enforcer",
    "jianmu_like.guard.policies": "jianmu_like.guard._policies",
    "jianmu_like.guard.value_schema": "jianmu_like.guard._value_schema",
    "jianmu_like.hostnames": "jianmu_like._hostnames",
    "jianmu_like.json_schema": "jianmu_like._json_schema",
    "jianmu_like.keys": "jianmu_like._keys",
    "jianmu_like.models.client": "jianmu_like.models._client",
    "jianmu_like.models.constraints": "jianmu_like.models._constraints",
    "jianmu_like.models.construct": "jianmu_like.models._construct",
    "jianmu_like.models.errors": "jianmu_like.models._errors",
    "jianmu_like.models.gbnf": "jianmu_like.models._gbnf",
    "jianmu_like.models.hooks": "jianmu_like.models._hooks",
    "jianmu_like.models.json_text": "jianmu_like.models._json_text",
    "jianmu_like.models.local_backends.base": "jianmu_like.models.local_backends._base",
    "jianmu_like.models.local_backends.llama_cpp_python_backend": "jianmu_like.models.local_backends._llama_cpp_python_backend",  # noqa: E501
    "jianmu_like.models.local_backends.xllamacpp_backend": "jianmu_like.models.local_backends._xllamacpp_backend",  # noqa: E501
    "jianmu_like.models.local_provider": "jianmu_like.models._local_provider",
    "jianmu_like.models.messages": "jianmu_like.models._messages",
    "jianmu_like.models.openai_provider": "jianmu_like.models._openai_provider",
    "jianmu_like.models.provider": "jianmu_like.models._provider",
    "jianmu_like.models.react_text": "jianmu_like.models._react_text",
    "jianmu_like.models.server_probe": "jianmu_like.models._server_probe",
    "jianmu_like.models.streaming": "jianmu_like.models._streaming",
    "jianmu_like.models.structured": "jianmu_like.models._structured",
    "jianmu_like.models.text_protocol": "jianmu_like.models._text_protocol",
    "jianmu_like.models.tokens": "jianmu_like.models._tokens",
    "jianmu_like.models.tool_protocol": "jianmu_like.models._tool_protocol",
    "jianmu_like.models.types": "jianmu_like.models._types",
    "jianmu_like.models.usage": "jianmu_like.models._usage",
    "jianmu_like.names": "jianmu_like._names",
    "jianmu_like.nodes.answer_check": "jianmu_like.nodes._answer_check",
    "jianmu_like.nodes.compaction": "jianmu_like.nodes._compaction",
    "jianmu_like.nodes.context": "jianmu_like.nodes._context",
    "jianmu_like.nodes.context_guard": "jianmu_like.nodes._context_guard",
    "jianmu_like.nodes.critic": "jianmu_like.nodes._critic",
    "jianmu_like.nodes.interrupts": "jianmu_like.nodes._interrupts",
    "jianmu_like.nodes.llm": "jianmu_like.nodes._llm",
    "jianmu_like.nodes.llm_call": "jianmu_like.nodes._llm_call",
    "jianmu_like.nodes.message": "jianmu_like.nodes._message",
    "jianmu_like.nodes.one_call": "jianmu_like.nodes._one_call",
    "jianmu_like.nodes.output": "jianmu_like.nodes._output",
    "jianmu_like.nodes.prompt_call": "jianmu_like.nodes._prompt_call",
    "jianmu_like.nodes.reflection": "jianmu_like.nodes._reflection",
    "jianmu_like.nodes.settings": "jianmu_like.nodes._settings",
    "jianmu_like.nodes.supervisor_steps": "jianmu_like.nodes._supervisor_steps",
    "jianmu_like.nodes.synthesis": "jianmu_like.nodes._synthesis",
    "jianmu_like.nodes.tool_calls": "jianmu_like.nodes._tool_calls",
    "jianmu_like.nodes.tool_executor": "jianmu_like.nodes._tool_executor",
    "jianmu_like.nodes.tool_node": "jianmu_like.nodes._tool_node",
    "jianmu_like.nodes.tool_outcome": "jianmu_like.nodes._tool_outcome",
    "jianmu_like.nodes.tool_selection": "jianmu_like.nodes._tool_selection",
    "jianmu_like.nodes.trace": "jianmu_like.nodes._trace",
    "jianmu_like.nodes.truncation": "jianmu_like.nodes._truncation",
    "jianmu_like.presets.plan_execute": "jianmu_like.presets._plan_execute",
    "jianmu_like.presets.plan_steps": "jianmu_like.presets._plan_steps",
    "jianmu_like.presets.react.config": "jianmu_like.presets.react._config",
    "jianmu_like.presets.react.factory": "jianmu_like.presets.react._factory",
    "jianmu_like.presets.react.state": "jianmu_like.presets.react._state",
    "jianmu_like.presets.research": "jianmu_like.presets._research",
    "jianmu_like.presets.supervisor": "jianmu_like.presets._supervisor",
    "jianmu_like.redact": "jianmu_like._redact",
    "jianmu_like.results": "jianmu_like._results",
    "jianmu_like.review": "jianmu_like._review",
    "jianmu_like.schema_refs": "jianmu_like._schema_refs",
    "jianmu_like.server.app": "jianmu_like.server._app",
    "jianmu_like.server.artifacts": "jianmu_like.server._artifacts",
    "jianmu_like.server.channels": "jianmu_like.server._channels",
    "jianmu_like.server.console": "jianmu_like.server._console",
    "jianmu_like.server.errors": "jianmu_like.server._errors",
    "jianmu_like.server.nodes": "jianmu_like.server._nodes",
    "jianmu_like.server.openai_compat": "jianmu_like.server._openai_compat",
    "jianmu_like.server.runs": "jianmu_like.server._runs",
    "jianmu_like.server.schemas": "jianmu_like.server._schemas",
    "jianmu_like.server.security": "jianmu_like.server._security",
    "jianmu_like.server.watch": "jianmu_like.server._watch",
    "jianmu_like.sources": "jianmu_like._sources",
    "jianmu_like.state.contract": "jianmu_like.state._contract",
    "jianmu_like.state.inputs": "jianmu_like.state._inputs",
    "jianmu_like.state.journal": "jianmu_like.state._journal",
    "jianmu_like.state.manager": "jianmu_like.state._manager",
    "jianmu_like.state.reducers": "jianmu_like.state._reducers",
    "jianmu_like.state.schema": "jianmu_like.state._schema",
    "jianmu_like.state.wakeup": "jianmu_like.state._wakeup",
    "jianmu_like.telemetry.hub": "jianmu_like.telemetry._hub",
    "jianmu_like.telemetry.otel": "jianmu_like.telemetry._otel",
    "jianmu_like.template": "jianmu_like._template",
    "jianmu_like.testing.llama_server": "jianmu_like.testing._llama_server",
    "jianmu_like.testing.openai_rules": "jianmu_like.testing._openai_rules",
    "jianmu_like.testing.postgres": "jianmu_like.testing._postgres",
    "jianmu_like.testing.script": "jianmu_like.testing._script",
    "jianmu_like.testing.scripted": "jianmu_like.testing._scripted",
    "jianmu_like.testing.server": "jianmu_like.testing._server",
    "jianmu_like.testing.waiting": "jianmu_like.testing._waiting",
    "jianmu_like.tool_text": "jianmu_like._tool_text",
    "jianmu_like.tools.arguments": "jianmu_like.tools._arguments",
    "jianmu_like.tools.artifact": "jianmu_like.tools._artifact",
    "jianmu_like.tools.base": "jianmu_like.tools._base",
    "jianmu_like.tools.call_context": "jianmu_like.tools._call_context",
    "jianmu_like.tools.describe": "jianmu_like.tools._describe",
    "jianmu_like.tools.errors": "jianmu_like.tools._errors",
    "jianmu_like.tools.hooks": "jianmu_like.tools._hooks",
    "jianmu_like.tools.mcp.config": "jianmu_like.tools.mcp._config",
    "jianmu_like.tools.mcp.content": "jianmu_like.tools.mcp._content",
    "jianmu_like.tools.mcp.elicitation": "jianmu_like.tools.mcp._elicitation",
    "jianmu_like.tools.mcp.process": "jianmu_like.tools.mcp._process",
    "jianmu_like.tools.mcp.prompts": "jianmu_like.tools.mcp._prompts",
    "jianmu_like.tools.mcp.provider": "jianmu_like.tools.mcp._provider",
    "jianmu_like.tools.mcp.resources": "jianmu_like.tools.mcp._resources",
    "jianmu_like.tools.mcp.sampling": "jianmu_like.tools.mcp._sampling",
    "jianmu_like.tools.mcp.session": "jianmu_like.tools.mcp._session",
    "jianmu_like.tools.provider": "jianmu_like.tools._provider",
    "jianmu_like.tools.run_context": "jianmu_like.tools._run_context",
    "jianmu_like.tools.schema": "jianmu_like.tools._schema",
    "jianmu_like.tools.threads": "jianmu_like.tools._threads",
    "jianmu_like.tools.toolset": "jianmu_like.tools._toolset",
    "jianmu_like.tools.truncation": "jianmu_like.tools._truncation",
    "jianmu_like.validation": "jianmu_like._validation",
}
"""Old dotted module → new dotted module (the package itself keeps its name)."""

SUFFIXES = {".py", ".md", ".yml", ".yaml", ".toml", ".cfg", ".ini", ".txt", ".pyi"}
SELF = Path("dev/apply_renames.py")
CLI_PARSER = ("parser", "_parser")
"""The module that names the commands' handlers (before and after the rename)."""
DOTTED = re.compile(r"(?<![\w.])" + PACKAGE + r"(?:\.\w+)+")


def new_dotted(path: str, renames: Mapping[str, str]) -> str:
    """`path` with its longest renamed prefix (whole components) replaced."""
    parts = path.split(".")
    for end in range(len(parts), 1, -1):
        head = ".".join(parts[:end])
        if head in renames:
            return ".".join([renames[head], *parts[end:]])
    return path


def path_pattern(renames: Mapping[str, str]) -> tuple[re.Pattern[str], dict[str, str]]:
    """File paths in prose: `nodes/llm.py` (a subpackage's module) or `jianmu_like/config.py`."""
    table: dict[str, str] = {}
    for old, new in renames.items():
        rel_old, rel_new = old.split(".")[1:], new.split(".")[1:]
        table[f"{PACKAGE}/{'/'.join(rel_old)}.py"] = f"{PACKAGE}/{'/'.join(rel_new)}.py"
        if len(rel_old) > 1:
            table[f"{'/'.join(rel_old)}.py"] = f"{'/'.join(rel_new)}.py"
    keys = sorted(table, key=len, reverse=True)
    return re.compile(r"(?<![\w/.-])(" + "|".join(re.escape(k) for k in keys) + r")(?![\w])"), table


def package_of(file: Path) -> str | None:
    """Dotted package a module file's relative imports start from (None outside the package)."""
    parts = file.with_suffix("").parts
    if not parts or parts[0] != PACKAGE:
        return None
    return ".".join(parts[:-1])  # also right for __init__.py: its package is its folder


def resolve(package: str, level: int, module: str | None) -> str:
    base = package.split(".")
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def relative(level: int, dotted: str, package: str) -> str:
    """`dotted` written relative to `package` with `level` dots (the same level as before)."""
    base = resolve(package, level, None)
    rest = dotted[len(base) + 1 :] if dotted != base else ""
    return "." * level + rest


Edit = tuple[int, int, str]
"""(start offset, end offset, replacement) in the file's text."""


def _offsets(text: str) -> list[int]:
    starts, total = [0], 0
    for line in text.splitlines(keepends=True):
        total += len(line)
        starts.append(total)
    return starts


def import_edits(text: str, file: Path, renames: Mapping[str, str]) -> list[Edit]:
    """Edits of `from X import names` statements: a relative X that resolves to an old module, and
    imported names that are old modules (`from . import llm` → `from . import _llm as llm`)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    starts = _offsets(text)
    package = package_of(file)
    edits: list[Edit] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                if package is None:
                    continue
                absolute = resolve(package, node.level, node.module)
            elif node.module and node.module.split(".")[0] == PACKAGE:
                absolute = node.module
            else:
                continue
            start = starts[node.lineno - 1] + node.col_offset
            end = starts[(node.end_lineno or node.lineno) - 1] + (node.end_col_offset or 0)
            segment = text[start:end]
            new_segment = _rewrite_from(segment, node, absolute, package, renames)
            if new_segment != segment:
                edits.append((start, end, new_segment))
        elif isinstance(node, ast.Dict) and package is not None:
            edits.extend(_table_edits(node, starts, text, package, file, renames))
    return edits


def _rewrite_from(
    segment: str, node: ast.ImportFrom, absolute: str, package: str | None, renames: Mapping[str, str]
) -> str:
    head = re.match(r"from\s+([.\w]+)\s+import\b", segment)
    if head is None:
        return segment
    target = new_dotted(absolute, renames)
    if target != absolute:
        written = target if not node.level else relative(node.level, target, package or "")
        segment = segment[: head.start(1)] + written + segment[head.end(1) :]
        head = re.match(r"from\s+([.\w]+)\s+import\b", segment)
        assert head is not None
    names_at = head.end()
    tail = segment[names_at:]
    for alias in node.names:
        old = f"{target}.{alias.name}"
        if old not in renames:
            continue
        new_name = renames[old].rsplit(".", 1)[1]
        bound = alias.asname or alias.name
        replacement = f"{new_name} as {bound}" if alias.asname is None else new_name
        tail = re.sub(rf"(?<![\w.]){re.escape(alias.name)}(?![\w])", replacement, tail, count=1)
    return segment[:names_at] + tail


def _table_edits(
    node: ast.Dict, starts: list[int], text: str, package: str, file: Path, renames: Mapping[str, str]
) -> Iterable[Edit]:
    """Keys of an export table (a dict whose keys are all relative module names, `".agent"`)."""
    keys = [k for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    if not keys or len(keys) != len(node.keys):
        return []
    if not all(re.fullmatch(r"\.+[\w.]*", str(k.value)) for k in keys):  # type: ignore[union-attr]
        return []
    edits: list[Edit] = []
    for key in keys:
        value = str(key.value)  # type: ignore[union-attr]
        level = len(value) - len(value.lstrip("."))
        absolute = resolve(package, level, value[level:] or None)
        target = new_dotted(absolute, renames)
        if target == absolute:
            continue
        start = starts[key.lineno - 1] + key.col_offset
        end = starts[(key.end_lineno or key.lineno) - 1] + (key.end_col_offset or 0)
        quote = text[start]
        edits.append((start, end, f"{quote}{relative(level, target, package)}{quote}"))
    return edits


FROM_IMPORT = re.compile(r"(\bfrom\s+)(" + PACKAGE + r"(?:\.\w+)*)(\s+import\s+)([\w ,]+)")


def imported_modules(text: str, renames: Mapping[str, str]) -> str:
    """One-line `from jianmu_like.bt import composites` outside parsed code (code in strings, docs):
    a name that is an old module is imported under its new name, bound as before."""

    def names(match: re.Match[str]) -> str:
        package = new_dotted(match.group(2), renames)
        items = []
        for item in match.group(4).split(","):
            parts = item.split()
            old = f"{package}.{parts[0]}" if parts else ""
            if old in renames:
                new = renames[old].rsplit(".", 1)[1]
                lead = item[: len(item) - len(item.lstrip())]
                trail = item[len(item.rstrip()) :]
                bound = f" as {parts[0]}" if len(parts) == 1 else " " + " ".join(parts[1:])
                item = f"{lead}{new}{bound}{trail}"
            items.append(item)
        return match.group(1) + match.group(2) + match.group(3) + ",".join(items)

    return FROM_IMPORT.sub(names, text)


def layer_names(text: str, renames: Mapping[str, str]) -> str:
    """The import-linter `layers = [...]` lists name top-level modules bare (`"template : agent"`)."""
    top = {old.split(".")[1]: new.split(".")[1] for old, new in renames.items() if old.count(".") == 1}

    def names(match: re.Match[str]) -> str:
        return re.sub(r"[A-Za-z_]\w*", lambda m: top.get(m.group(), m.group()), match.group())

    def block(match: re.Match[str]) -> str:
        return re.sub(r'"[^"\n]*"', names, match.group())

    return re.sub(r"(?ms)^layers\s*=\s*\[.*?^\]", block, text)


def handler_names(text: str, renames: Mapping[str, str]) -> str:
    """Commands name their handler `"run:run_command"`: a module of `jianmu_like.cli`, bare."""
    prefix = f"{PACKAGE}.cli."
    cli = {o.removeprefix(prefix): n.removeprefix(prefix) for o, n in renames.items() if o.startswith(prefix)}
    return re.sub(
        r"""(["'])(\w+)(:\w+\1)""", lambda m: m.group(1) + cli.get(m.group(2), m.group(2)) + m.group(3), text
    )


def rewrite(text: str, file: Path, renames: Mapping[str, str]) -> tuple[str, int]:
    """The file's text with every reference to an old module rewritten, and how many there were."""
    count = 0
    if file.suffix == ".py":
        edits = sorted(import_edits(text, file, renames), reverse=True)
        for start, end, new in edits:
            text = text[:start] + new + text[end:]
        count += len(edits)

    def dotted(match: re.Match[str]) -> str:
        nonlocal count
        new = new_dotted(match.group(), renames)
        count += new != match.group()
        return new

    changed = imported_modules(text, renames)
    count += changed != text
    text = DOTTED.sub(dotted, changed)
    pattern, table = path_pattern(renames)

    def path(match: re.Match[str]) -> str:
        nonlocal count
        count += 1
        return table[match.group(1)]

    text = pattern.sub(path, text)
    for special in (layer_names, handler_names):
        if special is layer_names and file.name != "pyproject.toml":
            continue
        if special is handler_names and file.as_posix() not in (f"{PACKAGE}/cli/{n}.py" for n in CLI_PARSER):
            continue
        changed = special(text, renames)
        count += changed != text
        text = changed
    return text, count


def git(*args: str) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout


def move_files(renames: Mapping[str, str], dry_run: bool) -> list[str]:
    """`git mv` each old module still present; returns the problems (a file at both paths)."""
    problems = []
    for old, new in renames.items():
        source, target = Path(*old.split(".")).with_suffix(".py"), Path(*new.split(".")).with_suffix(".py")
        if not source.exists():
            continue
        if target.exists():
            problems.append(f"{source} and {target} both exist: merge them by hand, then run this again")
            continue
        print(f"git mv {source} {target}")
        if not dry_run:
            git("mv", str(source), str(target))
    return problems


def text_files() -> list[Path]:
    listed = git("ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    return sorted(
        {
            Path(p)
            for p in listed
            if p and (Path(p).suffix in SUFFIXES or p.startswith(".ci/")) and Path(p) != SELF
            if Path(p).is_file()
        }
    )


def tidy(files: list[Path]) -> None:
    """Imports re-sorted and lines re-wrapped in the rewritten Python files (`ruff`, when found:
    `from ._agent` sorts elsewhere than `from .agent`, and a longer name can cross the limit)."""
    ruff = shutil.which("ruff") or shutil.which("ruff", path=str(Path(sys.executable).parent))
    if not files or ruff is None:
        if files:
            print("ruff not found: run `ruff check --select I --fix` and `ruff format` on the changes")
        return
    names = [str(f) for f in files]
    subprocess.run([ruff, "check", "--select", "I", "--fix", "--quiet", *names], check=False)
    subprocess.run([ruff, "format", "--quiet", *names], check=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--dry-run", action="store_true", help="print what would change, change nothing")
    args = parser.parse_args(argv)
    if not Path(PACKAGE).is_dir():
        print(f"run this in the repository root (no {PACKAGE}/ here)", file=sys.stderr)
        return 2
    problems = move_files(RENAMES, args.dry_run)
    total, changed = 0, []
    for file in text_files():
        text = file.read_text(encoding="utf-8")
        new, count = rewrite(text, file, RENAMES)
        if new != text:
            total += count
            print(f"{file}: {count} reference(s)")
            if not args.dry_run:
                file.write_text(new, encoding="utf-8")
                changed.append(file)
    print(f"{total} reference(s) rewritten" + (" (dry run)" if args.dry_run else ""))
    tidy([f for f in changed if f.suffix == ".py"])
    for problem in problems:
        print(f"problem: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
