"""YAML with line numbers, and validation errors that point at the offending line.

Configuration and agent files are validated by pydantic models; a bare pydantic error names a key
path but not where it is in the file. `load_yaml()` keeps the line of every mapping key and list
item, and `describe_errors()` turns a ValidationError into `file:line: key: problem` lines, with a
did-you-mean for unknown keys.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from ..telemetry.redact import is_secret_key

Loc = tuple[int | str, ...]


class SourceError(ValueError):
    """A file that cannot be used; `problems` holds one `file:line: key: problem` per issue."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


class YamlDocument:
    """Parsed YAML data plus the line (1-based) of each key path."""

    def __init__(self, data: Any, lines: dict[Loc, int], path: Path) -> None:
        self.data = data
        self.lines = lines
        self.path = path

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


def load_yaml(path: str | Path) -> YamlDocument:
    """Parse a YAML file, keeping line numbers; malformed YAML raises SourceError with its line."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise SourceError([f"{file}: no such file"]) from exc
    except OSError as exc:
        raise SourceError([f"{file}: cannot read: {exc.strerror or exc}"]) from exc
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = exc.problem or exc.context or "malformed YAML"
        raise SourceError([f"{file}{line}: malformed YAML: {problem}"]) from exc
    except yaml.YAMLError as exc:
        raise SourceError([f"{file}: malformed YAML: {exc}"]) from exc
    lines: dict[Loc, int] = {}
    if node is not None:
        _collect(node, (), lines)
    return YamlDocument(data, lines, file)


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
    """One readable line per pydantic error: `<where>: <key.path>: <problem>`.

    `where(loc) -> str` locates a key path (e.g. `YamlDocument.where`); `model` lets unknown keys
    get a did-you-mean from the fields that exist at that level.
    """
    out: list[str] = []
    for error in exc.errors():
        loc: Loc = (*prefix, *error["loc"])
        key = ".".join(str(p) for p in loc) or "(top level)"
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = "unknown key"
            choices = _fields_at(model, tuple(error["loc"][:-1])) if model is not None else []
            suggestion = difflib.get_close_matches(str(loc[-1]), choices, n=1)
            if suggestion:
                message += f" (did you mean {suggestion[0]!r}?)"
            elif choices:
                message += f" (expected one of: {', '.join(choices)})"
        elif error["type"] == "missing":
            message = "required key is missing"
        elif (
            "input" in error
            and error["type"] not in ("model_type", "dict_type")
            and not (loc and is_secret_key(loc[-1]))
        ):
            message += f" (got {error['input']!r})"
        place = where(loc) if where is not None else ""
        out.append(f"{place}: {key}: {message}" if place else f"{key}: {message}")
    return out


def _fields_at(model: type[BaseModel] | None, loc: Loc) -> list[str]:
    """Field names (aliases when set) of the nested model that `loc` points into."""
    current: Any = model
    for part in loc:
        if isinstance(part, int) or current is None:
            continue
        fields = getattr(current, "model_fields", None)
        if not isinstance(fields, Mapping) or part not in fields:
            return []
        current = _model_in(fields[part].annotation)
    if current is None or not hasattr(current, "model_fields"):
        return []
    return [info.alias or name for name, info in current.model_fields.items()]


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _model_in(arg)
        if found is not None:
            return found
    return None
