"""YAML with line numbers, and validation errors that point at the offending line.

Configuration and agent files are validated by pydantic models; a bare pydantic error names a key
path but not where it is in the file. `load_yaml()` keeps the line of every mapping key and list
item, and `describe_errors()` turns a ValidationError into `file:line: key: problem` lines, with a
did-you-mean for unknown keys.

It sits in the lowest layer (beside `config`, `redact`, `names`) because both the process
configuration and the agent files read YAML through it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from ..errors import JianmuError
from .validation import validation_problems

Loc = tuple[int | str, ...]


class SourceError(ValueError, JianmuError):
    """A file that cannot be used; `problems` holds one `file:line: key: problem` per issue."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


class YamlDocument:
    """Parsed YAML data plus the line (1-based) of each key path."""

    def __init__(
        self, data: Any, lines: dict[Loc, int], path: Path, problems: list[str] | None = None
    ) -> None:
        self.data = data
        self.lines = lines
        self.path = path
        self.problems = problems or []
        """Duplicate keys: reported by the caller together with its own checks."""

    def line_of(self, loc: Loc) -> int | None:
        """The line of `loc`, or of its nearest ancestor present in the file."""
        for end in range(len(loc), -1, -1):
            line = self.lines.get(tuple(loc[:end]))
            if line is not None:
                return line
        return None

    def where(self, loc: Loc) -> str:
        line = self.line_of(loc)
        return f"{self.path}:{line}" if line is not None else str(self.path)


@dataclass(frozen=True)
class YamlLimits:
    """Bounds on what one YAML file may cost to read. A file is data written by someone else:
    a 351-byte alias bomb must not take gigabytes, so the limits are checked while the document
    is composed (aliases are counted by the size they stand for), never after expanding it."""

    max_bytes: int = 1_000_000
    max_depth: int = 64
    """Nesting of mappings and lists."""
    max_aliases: int = 1_000
    max_nodes: int = 200_000
    """Nodes of the document with every alias counted as the whole node it refers to."""


class _LimitExceeded(yaml.YAMLError, JianmuError):
    def __init__(self, mark: yaml.Mark | None, problem: str) -> None:
        super().__init__(problem)
        self.mark = mark
        self.problem = problem


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that enforces `YamlLimits` during composition, refuses recursive aliases and
    reports duplicate mapping keys (with both lines) instead of keeping the last silently."""

    def __init__(self, text: str, limits: YamlLimits, path: Path) -> None:
        super().__init__(text)
        self.limits = limits
        self.path = path
        self.duplicates: list[tuple[int, str]] = []
        self._depth = 0
        self._aliases = 0
        self._nodes = 0
        self._sizes: dict[int, int] = {}
        self._open: dict[str, int] = {}

    def _count(self, size: int, mark: yaml.Mark) -> None:
        self._nodes += size
        if self._nodes > self.limits.max_nodes:
            raise _LimitExceeded(
                mark,
                f"the document expands to more than {self.limits.max_nodes} nodes "
                "(aliases count as the whole node they refer to)",
            )

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            anchor = str(event.anchor)
            self._aliases += 1
            if self._aliases > self.limits.max_aliases:
                raise _LimitExceeded(event.start_mark, f"more than {self.limits.max_aliases} aliases")
            if anchor in self._open:
                raise _LimitExceeded(
                    event.start_mark,
                    f"recursive alias *{anchor} (it is inside its own anchor &{anchor}, "
                    f"line {self._open[anchor]})",
                )
            node = super().compose_node(parent, index)
            self._count(self._sizes.get(id(node), 1), event.start_mark)
            return node
        event = self.peek_event()  # type: ignore[no-untyped-call]
        self._depth += 1
        if self._depth > self.limits.max_depth:
            raise _LimitExceeded(event.start_mark, f"nested deeper than {self.limits.max_depth} levels")
        anchor = event.anchor
        if anchor is not None:
            self._open[anchor] = event.start_mark.line + 1
        before = self._nodes
        self._count(1, event.start_mark)
        node = super().compose_node(parent, index)
        self._sizes[id(node)] = self._nodes - before
        if anchor is not None:
            self._open.pop(anchor, None)
        self._depth -= 1
        return node

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node)
            line = key_node.start_mark.line + 1
            if key in seen:
                self.duplicates.append((line, f"{key}: duplicate key (first at line {seen[key]})"))
            else:
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


def _read(file: Path, max_bytes: int) -> str:
    try:
        with file.open("rb") as handle:
            raw = handle.read(max_bytes + 1)
    except FileNotFoundError as exc:
        raise SourceError([f"{file}: no such file"]) from exc
    except OSError as exc:
        raise SourceError([f"{file}: cannot read: {exc.strerror or exc}"]) from exc
    if len(raw) > max_bytes:
        raise SourceError([f"{file}: file is larger than {max_bytes} bytes (the limit for YAML files)"])
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise SourceError([f"{file}:{line}: not UTF-8 text (byte {exc.start})"]) from None


def load_yaml(path: str | Path, limits: YamlLimits | None = None) -> YamlDocument:
    """Parse a YAML file within `limits`, keeping line numbers. Malformed YAML and exceeded
    limits raise SourceError with the line; duplicate keys are kept in `problems` so a caller
    reports them with its own findings, in one pass."""
    file = Path(path)
    limits = limits or YamlLimits()
    return parse_yaml(_read(file, limits.max_bytes), file, limits)


def parse_yaml(
    text: str, file: Path, limits: YamlLimits | None = None, *, first_line: int = 1
) -> YamlDocument:
    """`load_yaml` for YAML already read: `text` from `file`, its first line being line
    `first_line` of the file (YAML front matter inside a Markdown file)."""
    limits = limits or YamlLimits()
    text = "\n" * (first_line - 1) + text  # blank lines keep every line number the file's
    try:
        loader = _BoundedLoader(text, limits, file)
    except yaml.reader.ReaderError as exc:  # a NUL byte or another character YAML forbids
        number = text.count("\n", 0, exc.position) + 1
        raise SourceError(
            [f"{file}:{number}: YAML refused: the character U+{exc.character:04X} is not allowed in YAML"]
        ) from None
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except _LimitExceeded as exc:
        line = f":{exc.mark.line + 1}" if exc.mark is not None else ""
        raise SourceError([f"{file}{line}: YAML refused: {exc.problem}"]) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = exc.problem or exc.context or "malformed YAML"
        raise SourceError([f"{file}{line}: malformed YAML: {problem}"]) from exc
    except yaml.YAMLError as exc:
        raise SourceError([f"{file}: malformed YAML: {exc}"]) from exc
    finally:
        loader.dispose()
    lines: dict[Loc, int] = {}
    if node is not None:
        _collect(node, (), lines)
    problems = [f"{file}:{line}: {text}" for line, text in sorted(loader.duplicates)]
    return YamlDocument(data, lines, file, problems)


def in_line_order(problems: list[str]) -> list[str]:
    """Problems sorted by line within each file (files in order of first appearance)."""
    files: dict[str, int] = {}

    def key(problem: str) -> tuple[int, int]:
        match = _WHERE.match(problem)
        if match is None:
            return (files.setdefault(problem.split(":", 1)[0], len(files)), 0)
        return (files.setdefault(match[1], len(files)), int(match[2]))

    return sorted(problems, key=key)


_WHERE = re.compile(r"^(.*?):(\d+):")


def _collect(node: yaml.Node, loc: Loc, lines: dict[Loc, int]) -> None:
    lines.setdefault(loc, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.value)
            lines[(*loc, key)] = key_node.start_mark.line + 1
            _collect(value_node, (*loc, key), lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines[(*loc, index)] = item.start_mark.line + 1
            _collect(item, (*loc, index), lines)


def describe_errors(
    exc: ValidationError,
    *,
    where: Any = None,
    model: type[BaseModel] | None = None,
    prefix: Loc = (),
) -> list[str]:
    """One readable line per pydantic error: `<where>: <key.path>: <problem>` (the wording is
    `validation`'s, the one rule for validation errors).

    `where(loc) -> str` locates a key path (e.g. `YamlDocument.where`); `model` lets unknown keys
    get a did-you-mean from the fields that exist at that level.
    """
    out: list[str] = []
    for problem in validation_problems(exc, model=model, prefix=prefix):
        place = where(problem.loc) if where is not None else ""
        out.append(f"{place}: {problem}" if place else str(problem))
    return out
