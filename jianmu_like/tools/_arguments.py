"""Validating a model's tool-call arguments and binding them to the Python call.

Models get arguments wrong often: a string for a number, a misspelt optional key, a forgotten
required one. The binders here catch all of that *before* the tool runs and report every
problem in one sentence list the model can act on, instead of letting a `TypeError` from deep
inside the function become the observation.

Two binders exist: `ModelBinder` validates with a pydantic model (tools derived from Python
functions, the common case); `SchemaBinder` validates against a hand-written JSON schema (tools
built directly, e.g. by providers wrapping remote tools), through `json_schema`.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from pydantic import BaseModel, ValidationError

from .._base.validation import unknown_key, validation_problems
from ._errors import ToolArgumentsError, ToolError


class BoundCall(NamedTuple):
    """Positional and keyword arguments ready to be passed to the tool's function (a tuple:
    one is made per tool call, and a frozen dataclass costs several times as much to build)."""

    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = {}  # noqa: RUF012 - never mutated: every binder passes its own dict


class ArgumentBinder(Protocol):
    """Turns the model's JSON arguments into a call, or raises `ToolArgumentsError`."""

    def bind(self, tool_name: str, arguments: Mapping[str, Any]) -> BoundCall: ...


@dataclass(frozen=True, slots=True)
class CallSlot:
    """Where one validated field goes in the function call."""

    field: str
    """Attribute name on the validated pydantic model."""
    param: str
    """Parameter name of the function."""
    positional: bool = False
    """Positional-only parameters cannot be passed by keyword."""


def describe_validation_error(exc: ValidationError) -> tuple[list[str], list[str]]:
    """One line per pydantic error (`validation`'s wording, with `argument` for key), plus the
    names of unexpected top-level keys (reported with the accepted ones, `_unexpected_problems`)."""
    problems: list[str] = []
    unexpected: list[str] = []
    for problem in validation_problems(exc, noun="argument"):
        if problem.kind == "unknown" and len(problem.loc) == 1:
            unexpected.append(str(problem.loc[0]))
        else:
            problems.append(str(problem))
    return problems, unexpected


def _unexpected_problems(unexpected: Iterable[str], accepted: Sequence[str]) -> list[str]:
    if not accepted:
        return [f"{name}: unknown argument (the tool takes no arguments)" for name in unexpected]
    return [str(unknown_key((name,), accepted, "argument")) for name in unexpected]


def _require_mapping(tool_name: str, arguments: object) -> Mapping[str, Any]:
    if not isinstance(arguments, Mapping):
        raise ToolArgumentsError(
            tool_name, [f"arguments must be a JSON object, got {type(arguments).__name__}"]
        )
    return arguments


def _accepted_keys(model: type[BaseModel]) -> list[str] | None:
    """Keys the model accepts at top level, or None when aliases make that undecidable."""
    keys: list[str] = []
    by_name = bool(model.model_config.get("validate_by_name") or model.model_config.get("populate_by_name"))
    for name, info in model.model_fields.items():
        if info.validation_alias is not None and not isinstance(info.validation_alias, str):
            return None
        alias = info.validation_alias or info.alias
        keys.append(alias or name)
        if alias and by_name:
            keys.append(name)
    return keys


def _accepts_none(annotation: Any) -> bool:
    if annotation in (Any, None, type(None)):
        return True
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _accepts_none(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return any(_accepts_none(arg) for arg in typing.get_args(annotation))
    if origin is typing.Literal:
        return None in typing.get_args(annotation)
    return False


def _null_means_default(model: type[BaseModel]) -> frozenset[str]:
    """Keys of optional fields that cannot hold None: a `null` there means "use the default".

    Models (OpenAI strict mode in particular) send `null` for optional arguments they do not
    want to set; rejecting that would cost a round-trip for no benefit.
    """
    keys: set[str] = set()
    for name, info in model.model_fields.items():
        if not info.is_required() and not _accepts_none(info.annotation):
            alias = info.validation_alias if isinstance(info.validation_alias, str) else info.alias
            keys.add(alias or name)
    return frozenset(keys)


class ModelBinder:
    """Validates with a pydantic model and maps its fields onto the function's parameters.

    With `model_param` set, the function receives the validated model itself (a function
    taking one pydantic-model parameter); otherwise each field goes to its `CallSlot`.
    Unknown keys are rejected unless the model explicitly allows extras: a model's default
    `extra="ignore"` would silently drop a misspelt optional argument.
    """

    def __init__(
        self,
        model: type[BaseModel],
        slots: Sequence[CallSlot] = (),
        *,
        model_param: CallSlot | None = None,
    ) -> None:
        self.model = model
        self.slots = tuple(slots)
        self.model_param = model_param
        extra = model.model_config.get("extra")
        self._accepted = _accepted_keys(model)
        self._accepted_set = frozenset(self._accepted or ())
        self._check_extra = extra not in ("allow", "forbid") and self._accepted is not None
        self._keyword_only = all(not slot.positional for slot in self.slots)
        self._exact = _exact_plan(model, self.slots) if model_param is None else None
        self._null_means_default = _null_means_default(model)
        self._validate = model.__pydantic_validator__.validate_python
        self._display = [
            info.alias if isinstance(info.alias, str) else name for name, info in model.model_fields.items()
        ]

    def bind(self, tool_name: str, arguments: Mapping[str, Any]) -> BoundCall:
        exact = self._exact
        if exact is not None and type(arguments) is dict and len(arguments) == len(exact):
            # Every argument given, each exactly of its plain declared type: validation would
            # return the same values, so they are passed on as they are.
            kwargs: dict[str, Any] = {}
            for key, param, kind in exact:
                value = arguments.get(key)
                if type(value) is not kind:
                    break
                kwargs[param] = value
            else:
                return BoundCall((), kwargs)
        if type(arguments) is not dict:  # the usual case skips the (slow) ABC check
            arguments = _require_mapping(tool_name, arguments)
        unexpected: list[str] = []
        if self._check_extra:
            accepted = self._accepted_set
            unexpected = [str(key) for key in arguments if key not in accepted]
        problems: list[str] = []
        validated: BaseModel | None = None
        null_default = self._null_means_default
        data = (
            {k: v for k, v in arguments.items() if v is not None or k not in null_default}
            if null_default
            else arguments
        )
        try:
            validated = self._validate(data)
        except ValidationError as exc:
            problems, more_unexpected = describe_validation_error(exc)
            unexpected.extend(more_unexpected)
        if unexpected:
            problems.extend(_unexpected_problems(unexpected, self._display))
        if problems or validated is None:
            raise ToolArgumentsError(tool_name, problems)
        if self.model_param is not None:
            slot = self.model_param
            return BoundCall((validated,), {}) if slot.positional else BoundCall((), {slot.param: validated})
        if self._keyword_only:
            fields = validated.__dict__
            return BoundCall((), {slot.param: fields[slot.field] for slot in self.slots})
        args: list[Any] = []
        kwargs = {}
        for slot in self.slots:
            value = getattr(validated, slot.field)
            if slot.positional:
                args.append(value)
            else:
                kwargs[slot.param] = value
        return BoundCall(tuple(args), kwargs)


_EXACT_TYPES = (str, int, float, bool)
"""Types whose values pydantic returns unchanged when they arrive exactly as declared."""
_TRANSFORMING_CONFIG = ("str_strip_whitespace", "str_to_lower", "str_to_upper", "str_max_length", "strict")


def _exact_plan(
    model: type[BaseModel], slots: Sequence[CallSlot]
) -> tuple[tuple[str, str, type], ...] | None:
    """(key, parameter, type) per argument when every argument is a plain str/int/float/bool
    with no constraint, alias choice, validator or string setting; else None (always validate)."""
    decorators = model.__pydantic_decorators__
    if (
        not slots
        or any(slot.positional for slot in slots)
        or any(model.model_config.get(key) for key in _TRANSFORMING_CONFIG)
        or decorators.field_validators
        or decorators.model_validators
        or decorators.validators
        or decorators.root_validators
        or model.__pydantic_post_init__ is not None
    ):
        return None
    plan: list[tuple[str, str, type]] = []
    for slot in slots:
        info = model.model_fields.get(slot.field)
        kind: Any = info.annotation if info is not None else None
        if info is None or kind not in _EXACT_TYPES or info.metadata:
            return None
        if info.validation_alias is not None and not isinstance(info.validation_alias, str):
            return None
        key = info.validation_alias or info.alias or slot.field
        plan.append((key, slot.param, kind))
    return tuple(plan)


class SchemaBinder:
    """Validates against the tool's own JSON schema, fully (Draft 2020-12 through `json_schema`,
    the one JSON-schema path of the package; compiled on the first call, once per tool).

    Unknown keys are rejected when the schema forbids them or when the function could not accept
    them anyway. A schema that is not valid JSON Schema fails every call with a `ToolError`
    naming the problem (the tool's definition is wrong, not the model's arguments).
    """

    def __init__(self, parameters: Mapping[str, Any], *, accepts: Iterable[str] | None = None) -> None:
        self.parameters = parameters
        properties = parameters.get("properties")
        self.properties: dict[str, Any] = dict(properties) if isinstance(properties, Mapping) else {}
        self.accepts = None if accepts is None else frozenset(accepts)
        """Keyword names the function accepts; None when it takes `**kwargs` or is opaque."""
        self._validator: Any = None

    def _compiled(self, tool_name: str) -> Any:
        if self._validator is None:
            from .._base.json_schema import compile_schema  # jsonschema: imported on first use

            try:
                self._validator = compile_schema(self.parameters, known_keywords=False)
            except ValueError as exc:
                raise ToolError(f"tool {tool_name!r} has an invalid parameters schema: {exc}") from None
        return self._validator

    def bind(self, tool_name: str, arguments: Mapping[str, Any]) -> BoundCall:
        arguments = _require_mapping(tool_name, arguments)
        validator = self._compiled(tool_name)
        problems: list[str] = []
        unexpected: list[str] = []
        if next(validator.iter_errors(arguments), None) is not None:
            from .._base.json_schema import key_problems

            for problem in key_problems(validator, arguments, noun="argument", known=list(self.properties)):
                if problem.kind == "unknown" and len(problem.loc) == 1:
                    unexpected.append(str(problem.loc[0]))  # listed below with the function's
                else:
                    problems.append(str(problem))
        if self.accepts is not None:
            unexpected.extend(k for k in map(str, arguments) if k not in self.accepts and k not in unexpected)
        problems.extend(_unexpected_problems(unexpected, list(self.properties)))
        if problems:
            raise ToolArgumentsError(tool_name, problems)
        return BoundCall((), dict(arguments))
