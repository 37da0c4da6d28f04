"""Deriving a tool's description, JSON schema and argument binder from a Python function.

The schema comes from a pydantic model built from the signature, so what the model is told
(`parameters`) and what is enforced (the binder) can never drift apart. Fields get internal
names with the parameter name as alias, which lets parameters be called `schema`, `json` or
`model_config` without colliding with `BaseModel` attributes.

The emitted schema is tidied for function calling: pydantic's `title` noise is dropped and
non-recursive `$ref`s are inlined, since smaller and local models often ignore `$defs`.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo

from ._arguments import CallSlot, ModelBinder
from ._run_context import ContextBinder, is_run_context

_LITERAL_KEYS = frozenset({"default", "enum", "const", "examples", "example"})
_REF_PREFIX = "#/$defs/"


@dataclass(frozen=True)
class DocInfo:
    """What a docstring says: a summary for the tool and a description per parameter."""

    summary: str = ""
    params: dict[str, str] = field(default_factory=dict)


def _one_line(text: str | None) -> str:
    return " ".join(line.strip() for line in (text or "").splitlines() if line.strip())


def parse_docstring(doc: str | None) -> DocInfo:
    """The summary (first paragraph) and the parameter descriptions of a docstring.

    `docstring_parser` reads Google (`Args:`), NumPy (`Parameters` / `----------`), reST
    (`:param x:`) and Epydoc (`@param x:`) styles, picking whichever fits the docstring best.
    A docstring it cannot parse still gives its first paragraph as the summary.
    """
    if not doc:
        return DocInfo()
    text = inspect.cleandoc(doc)
    if "\n" not in text:
        return DocInfo(text.strip())  # a one-line docstring: nothing to parse
    import docstring_parser  # deferred: only docstrings with sections need it

    try:
        parsed = docstring_parser.parse(text)
    except docstring_parser.ParseError:
        return DocInfo(_one_line(text.split("\n\n", 1)[0]))
    summary = parsed.short_description or ""
    if summary and parsed.long_description and not parsed.blank_after_short_description:
        summary += "\n" + parsed.long_description.split("\n\n", 1)[0]  # a summary over two lines
    params = {p.arg_name.lstrip("*"): _one_line(p.description) for p in parsed.params if p.arg_name}
    return DocInfo(_one_line(summary), params)


def _has_description(annotation: Any, default: Any) -> bool:
    if isinstance(default, FieldInfo) and default.description:
        return True
    if typing.get_origin(annotation) is typing.Annotated:
        return any(isinstance(m, FieldInfo) and m.description for m in annotation.__metadata__)
    return False


def _is_model_class(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


@dataclass(frozen=True)
class FunctionSpec:
    """Everything `Tool.from_function` needs from a function."""

    summary: str
    parameters: dict[str, Any]
    binder: ModelBinder | ContextBinder


def _signature(fn: Callable[..., Any], *, lenient: bool) -> inspect.Signature:
    try:
        return inspect.signature(fn, eval_str=True)
    except NameError as exc:
        if lenient:  # args_model supplies the types; the hints are not needed
            return inspect.signature(fn)
        raise TypeError(
            f"cannot resolve the type hints of {fn!r}: {exc}. Types used in a tool's signature "
            "must be importable from its module (not local to a function), or pass args_model="
        ) from exc
    except ValueError as exc:
        raise TypeError(f"cannot read the signature of {fn!r}: {exc}") from exc


def _schema_of(model: type[BaseModel], where: str) -> dict[str, Any]:
    try:
        return clean_schema(model.model_json_schema())
    except Exception as exc:
        raise TypeError(f"cannot derive a JSON schema for {where}: {exc}") from exc


def function_spec(fn: Callable[..., Any], *, args_model: type[BaseModel] | None = None) -> FunctionSpec:
    """Build the schema and binder of `fn` (from its hints, or from `args_model`). Parameters
    annotated `RunContext[...]` are not arguments: the binder passes the run's context."""
    sig = _signature(fn, lenient=args_model is not None)
    contexts = [p for p in sig.parameters.values() if is_run_context(p.annotation)]
    spec = _function_spec(fn, sig, args_model, exclude={p.name for p in contexts})
    if not contexts:
        return spec
    where = f"tool function {getattr(fn, '__qualname__', fn)!r}"
    for param in contexts:
        if param.kind is param.POSITIONAL_ONLY:
            raise TypeError(f"{where}: its RunContext parameter {param.name!r} must not be positional-only")
    return FunctionSpec(spec.summary, spec.parameters, ContextBinder(spec.binder, [p.name for p in contexts]))


def _function_spec(
    fn: Callable[..., Any],
    sig: inspect.Signature,
    args_model: type[BaseModel] | None,
    *,
    exclude: set[str],
) -> FunctionSpec:
    doc = parse_docstring(inspect.getdoc(fn))
    params = [
        p
        for p in sig.parameters.values()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name not in exclude
    ]
    takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    if not params and len(sig.parameters) > len(exclude) and args_model is None:
        raise TypeError(
            f"{fn!r} only takes *args/**kwargs, so no parameter schema can be derived; give it "
            "named, annotated parameters or pass args_model="
        )
    where = f"tool function {getattr(fn, '__qualname__', fn)!r}"
    if params and params[0].name == "self" and inspect.isfunction(fn):
        raise TypeError(
            f"{where} looks like an unbound method (its first parameter is 'self'); make the tool "
            "from the bound method instead: Tool.from_function(instance.method)"
        )

    if args_model is None and len(params) == 1 and _is_model_class(params[0].annotation):
        args_model = params[0].annotation
    if args_model is not None:
        return _spec_from_model(fn, args_model, params, takes_kwargs, doc, where)

    fields: dict[str, Any] = {}
    slots: list[CallSlot] = []
    for index, param in enumerate(params):
        annotation = Any if param.annotation is inspect.Parameter.empty else param.annotation
        default = ... if param.default is inspect.Parameter.empty else param.default
        extra: dict[str, Any] = {"alias": param.name}
        description = doc.params.get(param.name)
        if description and not _has_description(annotation, default):
            extra["description"] = description
        if isinstance(default, FieldInfo):
            annotation = typing.Annotated[annotation, default]
            info = Field(**extra)
        else:
            info = Field(default, **extra)
        internal = f"p{index}"
        fields[internal] = (annotation, info)
        slots.append(CallSlot(internal, param.name, positional=param.kind is param.POSITIONAL_ONLY))
    try:
        model = create_model(
            f"{getattr(fn, '__name__', 'tool')}_arguments",
            __config__=ConfigDict(extra="forbid"),
            **fields,
        )
    except Exception as exc:
        raise TypeError(f"cannot build an argument model for {where}: {exc}") from exc
    return FunctionSpec(doc.summary, _schema_of(model, where), ModelBinder(model, slots))


def _spec_from_model(
    fn: Callable[..., Any],
    model: type[BaseModel],
    params: list[inspect.Parameter],
    takes_kwargs: bool,
    doc: DocInfo,
    where: str,
) -> FunctionSpec:
    schema = _schema_of(model, where)
    summary = doc.summary or (model.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
    if len(params) == 1 and (
        params[0].annotation in (inspect.Parameter.empty, model.__name__)
        or (_is_model_class(params[0].annotation) and issubclass(model, params[0].annotation))
    ):
        slot = CallSlot("", params[0].name, positional=params[0].kind is params[0].POSITIONAL_ONLY)
        return FunctionSpec(summary, schema, ModelBinder(model, model_param=slot))
    names = {p.name for p in params}
    unknown = [name for name in model.model_fields if name not in names and not takes_kwargs]
    uncovered = [
        p.name for p in params if p.name not in model.model_fields and p.default is inspect.Parameter.empty
    ]
    if unknown or uncovered:
        raise TypeError(
            f"args_model {model.__name__} does not match {where}: "
            + "; ".join(
                [f"function has no parameter '{n}'" for n in unknown]
                + [f"required parameter '{n}' is not a field of the model" for n in uncovered]
            )
        )
    positional = [p.name for p in params if p.kind is p.POSITIONAL_ONLY and p.name in model.model_fields]
    slots = [CallSlot(name, name, positional=True) for name in positional]
    slots += [CallSlot(name, name) for name in model.model_fields if name not in positional]
    return FunctionSpec(summary, schema, ModelBinder(model, slots))


def clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop `title`s, inline non-recursive `$ref`s and make sure the object shape is explicit."""
    defs: dict[str, Any] = dict(schema.get("$defs") or {})
    recursive: set[str] = set()

    def walk(node: Any, stack: frozenset[str]) -> Any:
        if isinstance(node, list):
            return [walk(item, stack) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_REF_PREFIX):
            name = ref[len(_REF_PREFIX) :]
            if name in defs and name not in stack:
                target = walk(defs[name], stack | {name})
                siblings = {k: walk(v, stack) for k, v in node.items() if k not in ("$ref", "title")}
                return {**target, **siblings}
            recursive.add(name)
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "$defs" or (key == "title" and isinstance(value, str)):
                continue
            if key == "properties" and isinstance(value, dict):
                out[key] = {prop: walk(sub, stack) for prop, sub in value.items()}
            else:
                out[key] = value if key in _LITERAL_KEYS else walk(value, stack)
        return out

    cleaned: dict[str, Any] = walk(schema, frozenset())
    if recursive:
        cleaned["$defs"] = {name: walk(sub, frozenset({name})) for name, sub in defs.items()}
    cleaned.setdefault("type", "object")
    cleaned.setdefault("properties", {})
    cleaned.setdefault("required", [])
    return cleaned
