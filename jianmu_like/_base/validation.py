"""pydantic validation errors as readable lines: one rule for every place that shows them.

An agent file, the configuration, a guard section, an MCP server entry, a tool's arguments and a
structured answer (both read by the model) and an HTTP request body all fail pydantic validation;
they are worded alike, one problem per key: `key.path[0].sub: problem`. An unknown key names the
closest existing key (did-you-mean) or the keys that exist; a missing key is said to be missing; a
bad value quotes what it got, except for secret keys or where the caller says inputs may be
secrets. Six formatters used to word these six ways.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from .names import did_you_mean
from .redact import is_secret_key

Loc = tuple[int | str, ...]
"""A key path: mapping keys and list indexes, outermost first."""

ProblemKind = Literal["unknown", "missing", "invalid"]

_QUIET_INPUT = ("model_type", "dict_type", "model_attributes_type")
"""Error types whose input is a whole mapping or object: quoting it says nothing useful."""


def key_path(loc: Sequence[int | str]) -> str:
    """`tree.sequence.children[0].react`: keys joined by dots, list indexes in brackets."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


@dataclass(frozen=True, slots=True)
class Problem:
    """One validation problem at one key."""

    loc: Loc
    kind: ProblemKind
    message: str
    """What is wrong, without the key: `unknown key (did you mean 'limits'?)`."""

    @property
    def key(self) -> str:
        return key_path(self.loc)

    def __str__(self) -> str:
        return f"{self.key}: {self.message}" if self.loc else self.message


def validation_problems(
    exc: ValidationError,
    *,
    model: type[BaseModel] | None = None,
    prefix: Loc = (),
    noun: str = "key",
    inputs: bool = True,
) -> list[Problem]:
    """The problems of `exc`, one per pydantic error. `model` (the validated model) lets an
    unknown key get a did-you-mean from the keys that exist at its level; `prefix` is where the
    validated value sits in a larger document; `noun` names what keys are (`argument`); with
    `inputs=False` no value is ever quoted (it may hold a secret)."""
    problems: list[Problem] = []
    for error in exc.errors(include_url=False, include_input=inputs):
        inner: Loc = tuple(error["loc"])
        loc: Loc = (*prefix, *inner)
        kind: ProblemKind
        if error["type"] == "extra_forbidden":
            choices = _fields_at(model, inner[:-1]) if model is not None else []
            problems.append(unknown_key(loc, choices, noun))
            continue
        if error["type"] == "missing":
            kind, message = "missing", f"required {noun} is missing"
        else:
            kind, message = "invalid", _own_words(error["msg"])
            quiet = error["type"] in _QUIET_INPUT or (loc and is_secret_key(str(loc[-1])))
            if inputs and "input" in error and not quiet:
                message += f" (got {_excerpt(error['input'])})"
        problems.append(Problem(loc, kind, message))
    return problems


def unknown_key(loc: Loc, choices: Sequence[str], noun: str = "key") -> Problem:
    """A key that does not exist, with the closest of `choices` (did-you-mean), else all of them."""
    hint = did_you_mean(str(loc[-1]), choices) if loc else ""
    listed = f" (expected one of: {', '.join(choices)})" if choices else ""
    return Problem(loc, "unknown", f"unknown {noun}{hint or listed}")


def error_locations(exc: ValidationError) -> list[Loc]:
    """Where each error of `exc` is (pydantic's `loc`: keys, list indexes and union tags)."""
    return [tuple(detail["loc"]) for detail in exc.errors()]


def describe_validation(exc: ValidationError, **options: Any) -> list[str]:
    """`validation_problems` as `key: problem` lines."""
    return [str(problem) for problem in validation_problems(exc, **options)]


def _own_words(message: str) -> str:
    """A validator's ValueError or assertion in its own words, without pydantic's prefix."""
    return message.removeprefix("Value error, ").removeprefix("Assertion failed, ")


def _excerpt(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _fields_at(model: type[BaseModel] | None, loc: Loc) -> list[str]:
    """Field names (aliases when set) of the nested model that `loc` points into, sorted."""
    current: Any = model
    for part in loc:
        if isinstance(part, int) or current is None:
            continue
        fields = getattr(current, "model_fields", None)
        if not isinstance(fields, Mapping):
            return []
        by_key = {**fields, **{info.alias: info for info in fields.values() if info.alias}}
        if part not in by_key:
            return []
        current = _model_in(by_key[part].annotation)
    if current is None or not hasattr(current, "model_fields"):
        return []
    return sorted(info.alias or name for name, info in current.model_fields.items())


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _model_in(arg)
        if found is not None:
            return found
    return None
