"""Skills: folders with a `SKILL.md`, loaded progressively, used through three kinds of tool.

A skill (the Agent Skills format) is a folder holding `SKILL.md` — YAML front matter with a
`name` and a `description`, then Markdown instructions — and optional files: `scripts/` the
instructions tell the model to run, references and assets it reads when they say so. Loading is
progressive, so a hundred skills cost a few lines of prompt each:

- the **descriptions** go into the system prompt (`SkillSet.prompt`, within `prompt_chars`;
  skills beyond it are listed by name only, and `use_skill` still takes every name);
- the **body** reaches the model when it picks the skill: `use_skill(name)` returns the
  instructions and the list of the skill's files;
- a **file** is read when the instructions point to it: `read_skill_file(skill, path)`,
  confined to the skill's folder (no `..`, no absolute path, no symlink leading out), bounded;
- a **script** runs only as a tool call, so only behind the agent's guard: each skill with
  scripts has its own tool `run_<skill>` with effect tags `skill_script` and `skill:<name>`, so a
  guard can require approval for every script (`effect_tags: [skill_script]`) or one skill's
  (`skill:<name>`, or the tool's name). A script runs as a subprocess in the skill's folder
  with a bounded time and output, a small environment (no API keys), stdin closed.

A skill folder must not lie inside a Python installation (the standard library, site-packages,
a virtual environment); an agent file's skills must also lie under its own directory
(`agentfile`, the same rule as its code). A malformed `SKILL.md` is a `SourceError` whose
problems carry `file:line`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .._base.installations import installation_of
from .._base.names import did_you_mean
from .._base.sources import SourceError, YamlLimits, describe_errors, parse_yaml
from ._base import Tool
from ._errors import ToolError

SKILL_FILE = "SKILL.md"
MAX_SKILL_BYTES = 256_000
"""The largest `SKILL.md` read (the format asks for a few thousand tokens)."""
MAX_FILES = 500
"""Files of one skill listed at most (a folder holding a dataset is not a skill)."""
_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_SCRIPT_SUFFIXES = {".py": (sys.executable,), ".sh": ("/bin/sh",)}
_ENV_KEPT = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ", "SYSTEMROOT")
"""The environment a script gets: enough to run, nothing secret (API keys stay in the agent)."""


class SkillFrontMatter(BaseModel):
    """The front matter of a `SKILL.md`, as the Agent Skills format defines it."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str = Field(min_length=1, max_length=64)
    """Lowercase letters, digits and single hyphens; the folder's own name."""
    description: str = Field(min_length=1, max_length=1024)
    """What the skill does and when to use it: what the model reads to pick it."""
    license: str | None = None
    compatibility: str | None = Field(None, max_length=500)
    metadata: dict[str, str] = Field(default_factory=dict)
    allowed_tools: str | None = Field(None, alias="allowed-tools")

    @field_validator("name")
    @classmethod
    def _name_shape(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(
                "lowercase letters, digits and single hyphens only, not starting or ending with one"
            )
        return value

    @field_validator("allowed_tools")
    @classmethod
    def _refused(cls, value: str | None) -> str | None:
        if value is not None:
            raise ValueError(
                "not supported: which calls run is the agent's guard's decision "
                "(guard: require_approval / allow / deny), not the skill's; remove the key"
            )
        return value


@dataclass(frozen=True)
class Skill:
    """One loaded skill: its front matter, instructions and the files it may use."""

    name: str
    description: str
    folder: Path
    """The real path of the skill's folder: every file it reads or runs lies under it."""
    body: str
    """The instructions (the Markdown after the front matter)."""
    files: tuple[str, ...] = ()
    """Its other files, relative POSIX paths (`references/guide.md`, `scripts/run.py`)."""
    license: str | None = None
    compatibility: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)

    @property
    def scripts(self) -> tuple[str, ...]:
        """The files under `scripts/`: what `run_<name>` may run."""
        return tuple(f for f in self.files if f.startswith("scripts/"))

    @property
    def tool_name(self) -> str:
        """The name of the tool that runs this skill's scripts."""
        return "run_" + self.name.replace("-", "_")

    def path_of(self, relative: str) -> Path:
        """The real path of one of the skill's files; a `ToolError` for anything outside
        the folder (absolute, `..`, a symlink leading out) or not a file."""
        pure = PurePosixPath(relative.replace("\\", "/"))
        if not relative or pure.is_absolute() or ".." in pure.parts:
            raise ToolError(
                f"{relative!r}: give a path inside the skill {self.name!r}, like {self._example()}"
            )
        real = Path(os.path.realpath(self.folder / pure))
        if not real.is_relative_to(self.folder):
            raise ToolError(f"{relative!r} leads outside the skill {self.name!r}")
        if not real.is_file():
            known = [f for f in self.files if not f.startswith("scripts/")]
            raise ToolError(
                f"the skill {self.name!r} has no file {relative!r}{did_you_mean(relative, self.files)}"
                f" (its files: {', '.join(known) or 'none'})"
            )
        return real

    def _example(self) -> str:
        return repr(self.files[0]) if self.files else "'references/guide.md'"


def load_skill(folder: str | Path, *, within: Path | None = None) -> Skill:
    """Read the skill in `folder`. A `SourceError` (with `file:line` where there is one) for a
    folder without `SKILL.md`, inside a Python installation or (with `within`) outside that
    directory, and for a malformed `SKILL.md`."""
    given = Path(folder)
    real = Path(os.path.realpath(given))
    if within is not None and not real.is_relative_to(os.path.realpath(within)):
        raise SourceError([f"{given}: a skill folder must lie under {within} (the agent file's directory)"])
    skill_md = real / SKILL_FILE
    if not real.is_dir():
        raise SourceError([f"{given}: no such skill folder"])
    if not skill_md.is_file():
        raise SourceError([f"{given}: not a skill folder (no {SKILL_FILE})"])
    installed = installation_of(str(skill_md), Path(within or real.anchor))
    if installed is not None:
        raise SourceError([f"{given}: a skill folder may not lie inside a Python installation ({installed})"])
    text = _read_text(skill_md)
    front, first_line, body = _split_front_matter(text, skill_md)
    doc = parse_yaml(front, skill_md, YamlLimits(max_bytes=MAX_SKILL_BYTES), first_line=first_line)
    if doc.problems:
        raise SourceError(doc.problems)
    if not isinstance(doc.data, dict):
        raise SourceError([f"{skill_md}:{first_line}: the front matter must be a mapping (name, ...)"])
    try:
        meta = SkillFrontMatter.model_validate(doc.data)
    except ValidationError as exc:
        raise SourceError(describe_errors(exc, where=doc.where, model=SkillFrontMatter)) from None
    if meta.name != real.name:
        raise SourceError(
            [f"{doc.where(('name',))}: name: {meta.name!r} must be the skill folder's name ({real.name!r})"]
        )
    return Skill(
        name=meta.name,
        description=" ".join(meta.description.split()),
        folder=real,
        body=body.strip(),
        files=_files(real),
        license=meta.license,
        compatibility=meta.compatibility,
        metadata=meta.metadata,
    )


def _read_text(file: Path) -> str:
    with file.open("rb") as handle:
        raw = handle.read(MAX_SKILL_BYTES + 1)
    if len(raw) > MAX_SKILL_BYTES:
        raise SourceError([f"{file}: larger than {MAX_SKILL_BYTES} bytes"])
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise SourceError([f"{file}:{line}: not UTF-8 text"]) from None


def _split_front_matter(text: str, file: Path) -> tuple[str, int, str]:
    """(front matter, its first line number, body) of a `SKILL.md`."""
    lines = text.lstrip("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise SourceError([f"{file}:1: a SKILL.md starts with YAML front matter between '---' lines"])
    for index in range(1, len(lines)):
        if lines[index].strip() == "---":
            return "".join(lines[1:index]), 2, "".join(lines[index + 1 :])
    raise SourceError([f"{file}:1: the front matter opened here is never closed by a '---' line"])


def _files(folder: Path) -> tuple[str, ...]:
    """The skill's files besides `SKILL.md`, hidden ones and those leading outside left out."""
    found: list[str] = []
    for top, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        for name in sorted(names):
            path = Path(top) / name
            if name.startswith(".") or path == folder / SKILL_FILE:
                continue
            if not Path(os.path.realpath(path)).is_relative_to(folder):
                continue
            found.append(path.relative_to(folder).as_posix())
            if len(found) >= MAX_FILES:
                return tuple(found)
    return tuple(found)


class SkillSet:
    """The skills of one agent and the tools that use them.

    `prompt_chars` bounds the catalogue in the system prompt (`prompt`): skills are described in
    the order given until it is spent, the rest are named only. `max_file_chars` bounds one file
    read, `script_timeout` (seconds) and `max_output_chars` one script run.
    """

    def __init__(
        self,
        skills: Iterable[Skill | str | Path],
        *,
        prompt_chars: int = 4000,
        max_file_chars: int = 20_000,
        script_timeout: float = 30.0,
        max_output_chars: int = 8000,
    ) -> None:
        loaded = [s if isinstance(s, Skill) else load_skill(s) for s in skills]
        self.skills: dict[str, Skill] = {}
        for skill in loaded:
            if skill.name in self.skills:
                first = self.skills[skill.name].folder
                raise ValueError(f"two skills are called {skill.name!r} ({first}, {skill.folder})")
            if skill.scripts and len(skill.tool_name) > 64:  # the chat APIs' limit on tool names
                raise ValueError(
                    f"the skill {skill.name!r} has scripts, so its name may have 60 characters at "
                    f"most (its tool {skill.tool_name!r} must fit 64)"
                )
            self.skills[skill.name] = skill
        self.prompt_chars = prompt_chars
        self.max_file_chars = max_file_chars
        self.script_timeout = script_timeout
        self.max_output_chars = max_output_chars

    def __len__(self) -> int:
        return len(self.skills)

    def get(self, name: str) -> Skill:
        """The skill called `name`; a `ToolError` naming the closest and every skill otherwise."""
        skill = self.skills.get(name)
        if skill is None:
            raise ToolError(
                f"no skill {name!r}{did_you_mean(name, self.skills)}; skills: {', '.join(self.skills)}"
            )
        return skill

    def prompt(self) -> str:
        """The catalogue for the system prompt: one line per skill within `prompt_chars`."""
        if not self.skills:
            return ""
        head = (
            "Skills: instructions for particular tasks. When a task matches a skill's description, "
            "call use_skill with its name first and follow what it says."
        )
        lines, left = [head], self.prompt_chars - len(head)
        unlisted: list[str] = []
        for skill in self.skills.values():
            line = f"- {skill.name}: {skill.description}"
            if len(line) + 1 <= left and not unlisted:
                lines.append(line)
                left -= len(line) + 1
            else:
                unlisted.append(skill.name)
        if unlisted:
            lines.append(f"More skills (use_skill shows what each is for): {', '.join(unlisted)}")
        return "\n".join(lines)

    def activate(self, name: str) -> str:
        """What `use_skill` returns: the skill's instructions and the files it may use."""
        skill = self.get(name)
        parts = [f"Skill {skill.name}:\n\n{skill.body}"]
        resources = [f for f in skill.files if not f.startswith("scripts/")]
        if resources:
            parts.append(
                "Files (read with read_skill_file(skill, path) when the instructions need them): "
                + ", ".join(resources)
            )
        if skill.scripts:
            parts.append(f"Scripts (run with {skill.tool_name}(script, args)): {', '.join(skill.scripts)}")
        return "\n\n".join(parts)

    def read(self, name: str, path: str) -> str:
        """What `read_skill_file` returns: one file of a skill, as text, cut at `max_file_chars`."""
        real = self.get(name).path_of(path)
        with real.open("rb") as handle:
            raw = handle.read(self.max_file_chars * 4 + 4)
        text = raw.decode("utf-8", errors="replace")
        if "\x00" in text:
            size = real.stat().st_size
            raise ToolError(f"{path!r} is a binary file ({size} bytes): it cannot be read as text")
        if len(text) > self.max_file_chars or real.stat().st_size > len(raw):
            cut = f"\n[cut: the file is longer than {self.max_file_chars} characters]"
            return text[: self.max_file_chars] + cut
        return text

    async def run_script(self, name: str, script: str, args: Sequence[str] = ()) -> str:
        """Run one of a skill's scripts (see the module docstring); its output, or a
        `ToolError` with the output when it fails, times out or writes too much."""
        skill = self.get(name)
        relative = script if script.startswith("scripts/") else f"scripts/{script}"
        if relative not in skill.scripts:
            raise ToolError(
                f"the skill {skill.name!r} has no script {script!r}{did_you_mean(relative, skill.scripts)}"
                f" (its scripts: {', '.join(skill.scripts) or 'none'})"
            )
        path = skill.path_of(relative)
        runner = _SCRIPT_SUFFIXES.get(path.suffix)
        if runner is None and not os.access(path, os.X_OK):
            raise ToolError(f"{relative}: not a .py or .sh script and not executable")
        command = [*(runner or ()), str(path), *(str(a) for a in args)]
        return await _run(command, skill.folder, self.script_timeout, self.max_output_chars, relative)

    def tools(self) -> list[Tool]:
        """`use_skill`, `read_skill_file` (when a skill has files) and `run_<skill>` for each
        skill with scripts."""
        if not self.skills:
            return []
        names = ", ".join(self.skills)

        def use_skill(name: str) -> str:
            return self.activate(name)

        def read_skill_file(skill: str, path: str) -> str:
            return self.read(skill, path)

        out = [
            Tool.from_function(
                use_skill,
                description=f"Load a skill's instructions by its name (skills: {names}). "
                "Call it before working on a task that matches the skill's description.",
                run_inline=True,
            )
        ]
        if any(s.files for s in self.skills.values()):
            out.append(
                Tool.from_function(
                    read_skill_file,
                    description="Read one file of a skill (a path relative to the skill's folder, "
                    "as its instructions name it).",
                )
            )
        for skill in self.skills.values():
            if skill.scripts:
                out.append(self._script_tool(skill))
        return out

    def _script_tool(self, skill: Skill) -> Tool:
        async def run(script: str, args: list[str] | None = None) -> str:
            return await self.run_script(skill.name, script, args or ())

        return Tool.from_function(
            run,
            name=skill.tool_name,
            description=f"Run a script of the skill {skill.name} ({', '.join(skill.scripts)}) with "
            "command-line arguments; returns its output.",
            effect_tags=("skill_script", f"skill:{skill.name}"),
            parallel_safe=False,
            timeout=self.script_timeout + 5.0,  # the script's own bound ends it first, and says so
        )


async def _run(command: list[str], cwd: Path, timeout: float, max_chars: int, what: str) -> str:
    """Run `command` with a bounded time and output; the whole process group ends with it."""
    env = {k: v for k in _ENV_KEPT if (v := os.environ.get(k)) is not None}
    env["PYTHONIOENCODING"] = "utf-8"
    process = await asyncio.create_subprocess_exec(
        *command,
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    limit = max_chars * 4  # bytes: enough for max_chars characters of UTF-8
    out = bytearray()
    problem: str | None = None
    try:
        async with asyncio.timeout(timeout):
            assert process.stdout is not None
            while chunk := await process.stdout.read(65536):
                out += chunk
                if len(out) > limit:
                    problem = f"it wrote more than {max_chars} characters: stopped"
                    break
            if problem is None:
                await process.wait()
    except TimeoutError:
        problem = f"it did not finish within {timeout:g}s: stopped"
    finally:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await asyncio.shield(process.wait())
    text = out.decode("utf-8", errors="replace")
    if len(text) > max_chars:
        text = text[:max_chars] + "\n[cut]"
    if problem is not None:
        raise ToolError(f"script {what}: {problem}. Output so far:\n{text}")
    if process.returncode != 0:
        raise ToolError(f"script {what} failed (exit status {process.returncode}):\n{text}")
    return text or "(no output)"


def skill_tools(skills: SkillSet | Sequence[Skill | str | Path] | None) -> tuple[SkillSet | None, list[Tool]]:
    """A `SkillSet` (built from paths when given those) and its tools; (None, []) for none."""
    if not skills:
        return None, []
    found = skills if isinstance(skills, SkillSet) else SkillSet(skills)
    return found, found.tools()


def describe(skill: Skill) -> dict[str, Any]:
    """A skill as data (`skill_result`, `jianmu-like show`)."""
    return {"name": skill.name, "description": skill.description, "files": list(skill.files)}
