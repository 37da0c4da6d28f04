"""`Tool`: one function a model may call, with its schema, argument validation and metadata.

A Tool bundles what the model sees (`name`, `description`, `parameters`), what the runtime
needs to schedule it (`parallel_safe`, `timeout`, `run_inline`), what guard policies inspect
(`effect_tags`) and how to call it safely (validated arguments, sync functions off the event
loop, results rendered to text). It is immutable so one instance can be shared by many agents;
use `model_copy(update=...)` to derive a variant (updates are re-validated).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Self, overload

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator
from pydantic_core import to_jsonable_python

from ._arguments import ArgumentBinder, ModelBinder, SchemaBinder
from ._artifact import Artifact
from ._call_context import artifact_observation
from ._errors import ToolExitError
from ._run_context import ContextBinder
from ._schema import function_spec
from ._threads import run_in_daemon_thread

_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def validate_tool_name(name: object) -> str:
    """Check OpenAI's naming rule early, so a bad name fails at definition, not at the API call."""
    if isinstance(name, str) and _NAME_RE.match(name):
        return name
    hint = ""
    if isinstance(name, str):
        fixed = re.sub(r"[^a-zA-Z0-9_-]", "_", name)[:64]
        hint = f" (for example {fixed!r})" if fixed else ""
    raise ValueError(
        f"invalid tool name {name!r}: a tool name must be 1-64 characters of letters, digits, "
        f"'_' or '-'{hint}"
    )


def _as_tags(tags: Iterable[str]) -> frozenset[str]:
    """`effect_tags="read"` means one tag, not the letters r, e, a, d."""
    return frozenset([tags] if isinstance(tags, str) else tags)


def _empty_parameters() -> dict[str, Any]:
    return {"type": "object", "properties": {}, "required": []}


def _json_default(value: Any) -> Any:
    try:
        return to_jsonable_python(value)
    except Exception:
        return str(value)


def render_result(result: Any) -> str:
    """Turn whatever a tool returned into the text the model reads as the observation.

    An `Artifact` (or a list of them) becomes its placeholder and is attached to the running
    tool call: the model never reads the document itself."""
    if isinstance(result, str):
        return result
    if type(result) is int:  # the common case, without a JSON encoder round trip
        return str(result)
    if result is None:
        return ""
    if isinstance(result, list | tuple | Artifact):
        placeholder = artifact_observation(result)
        if placeholder is not None:
            return placeholder
    if isinstance(result, BaseModel):
        return result.model_dump_json()
    if isinstance(result, bytes | bytearray):
        return bytes(result).decode("utf-8", errors="replace")
    if isinstance(result, dict | list | tuple | set | frozenset | int | float) or (
        dataclasses.is_dataclass(result) and not isinstance(result, type)
    ):
        return json.dumps(result, ensure_ascii=False, default=_json_default)
    return str(result)


_PLAIN_RESULTS: frozenset[type] = frozenset({str, int, float, bool, dict, list, tuple, type(None)})
"""Result types that are never awaitable: no `inspect.isawaitable` for them."""


def _is_async_callable(fn: Callable[..., Any]) -> bool:
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.iscoroutinefunction(fn):
        return True
    if inspect.isfunction(fn) or inspect.ismethod(fn):
        return False
    return inspect.iscoroutinefunction(type(fn).__call__)


def _keyword_names(fn: Callable[..., Any]) -> list[str] | None:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
        return None
    return [p.name for p in sig.parameters.values() if p.kind in kinds]


def _default_name(fn: Callable[..., Any]) -> str:
    target: Any = fn
    while isinstance(target, functools.partial):
        target = target.func
    name = getattr(target, "__name__", None)
    return name if isinstance(name, str) else type(target).__name__


class Tool(BaseModel):
    """A callable the model can use. Build it with `@tool` or `Tool.from_function`.

    Constructed directly (e.g. by a provider wrapping a remote tool), arguments are checked
    against `parameters` structurally; built from a function, they are fully validated by the
    pydantic model the schema was derived from.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=_empty_parameters, repr=False)
    """JSON Schema (type "object") of the arguments, as sent in the function-calling request."""
    fn: Callable[..., Any] = Field(repr=False)
    parallel_safe: bool = True
    """False when concurrent calls could interfere (shared state, rate-limited APIs)."""
    effect_tags: frozenset[str] = frozenset()
    """What the tool does to the world ("read", "write", "network", "destructive"...)."""
    timeout: float | None = Field(default=None, gt=0)
    """Seconds one call may take; enforced by the executor, not here."""
    run_inline: bool = False
    """Run a sync function on the event-loop thread: only for trivial, fast, pure functions."""
    idempotent: bool = False
    """Running it twice has the effect of running it once: after a crash mid-call it is run
    again; otherwise the model is told the call's outcome is unknown."""
    max_output_chars: int | None = Field(default=None, ge=100)
    """The most characters of one result the model reads (None: the agent's limit, 8,000 by
    default); longer results are cut by `tools._truncation`."""

    _binder: ArgumentBinder | None = PrivateAttr(default=None)
    _is_async: bool = PrivateAttr(default=False)
    _schema: dict[str, Any] | None = PrivateAttr(default=None)

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str) -> str:
        return validate_tool_name(value)

    @field_validator("effect_tags", mode="before")
    @classmethod
    def _check_tags(cls, value: Any) -> Any:
        return _as_tags(value) if isinstance(value, str) else value

    @field_validator("parameters")
    @classmethod
    def _check_parameters(cls, value: dict[str, Any]) -> dict[str, Any]:
        kind = value.get("type", "object")
        if kind != "object":
            raise ValueError(f"parameters must be a JSON Schema of type 'object', got type {kind!r}")
        if "type" in value and "properties" in value:
            return value
        return {"type": "object", "properties": {}, **value}

    def model_post_init(self, context: Any, /) -> None:
        self._is_async = _is_async_callable(self.fn)

    def __hash__(self) -> int:
        return hash(self.name)

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        parallel_safe: bool = True,
        effect_tags: Iterable[str] = (),
        timeout: float | None = None,
        run_inline: bool = False,
        idempotent: bool = False,
        args_model: type[BaseModel] | None = None,
        max_output_chars: int | None = None,
    ) -> Tool:
        """Derive a tool from a function: name, docstring summary and a schema from its hints.

        Per-parameter descriptions come from the docstring (Google, NumPy, reST or Epydoc style),
        or from `Annotated[..., Field(description=...)]`. A function whose single parameter
        is a pydantic model (or any function given `args_model=`) exposes that model's fields.
        """
        if isinstance(fn, Tool):
            raise TypeError(f"{fn.name!r} is already a Tool; use tool.model_copy(update={{...}}) to vary it")
        if not callable(fn):
            raise TypeError(f"a tool needs a callable, got {type(fn).__name__}")
        tool_name = validate_tool_name(name if name is not None else _default_name(fn))
        spec = function_spec(fn, args_model=args_model)
        made = cls(
            name=tool_name,
            description=description if description is not None else spec.summary,
            parameters=spec.parameters,
            fn=fn,
            parallel_safe=parallel_safe,
            effect_tags=_as_tags(effect_tags),
            timeout=timeout,
            run_inline=run_inline,
            idempotent=idempotent,
            max_output_chars=max_output_chars,
        )
        made._binder = spec.binder
        return made

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """Copy with `update` re-validated (a plain pydantic copy would skip the name check)."""
        if not update:
            return super().model_copy(deep=deep)
        data: dict[str, Any] = {key: getattr(self, key) for key in type(self).model_fields}
        if deep:
            data = copy.deepcopy(data)
        data.update(update)
        copied = type(self).model_validate(data)
        if "fn" not in update and isinstance(self._binder, ModelBinder | ContextBinder):
            copied._binder = self._binder
        return copied

    def _get_binder(self) -> ArgumentBinder:
        if self._binder is None:
            self._binder = SchemaBinder(self.parameters, accepts=_keyword_names(self.fn))
        return self._binder

    def validate_arguments(self, arguments: Mapping[str, Any] | None) -> None:
        """Raise `ToolArgumentsError` if `arguments` would be rejected, without calling the tool."""
        self._get_binder().bind(self.name, {} if arguments is None else arguments)

    async def execute(self, arguments: Mapping[str, Any] | None = None) -> Any:
        """Validate `arguments` and call the function, returning its raw result.

        Sync functions run in a daemon worker thread (unless `run_inline`) so a slow one never
        blocks the event loop, several can run in parallel, and a stuck one cannot keep the
        process alive. Exceptions propagate as is, except the tool's own attempts to stop the
        process (`SystemExit`, or `KeyboardInterrupt` in its worker thread), which become a
        `ToolExitError`.
        """
        # Private attributes read through pydantic's __getattr__ cost ~1 µs each: read them once.
        private = self.__pydantic_private__ or {}
        binder = private.get("_binder") or self._get_binder()
        call = binder.bind(self.name, {} if arguments is None else arguments)
        try:
            if private.get("_is_async"):
                result = await self.fn(*call.args, **call.kwargs)
            elif self.run_inline:
                result = self.fn(*call.args, **call.kwargs)
            else:
                result = await run_in_daemon_thread(self.fn, *call.args, **call.kwargs)
            if type(result) not in _PLAIN_RESULTS and inspect.isawaitable(result):
                result = await result
        except SystemExit as exc:
            # Left alone, it would leave the event loop and end every agent in the process. A
            # KeyboardInterrupt on this thread may be a real Ctrl-C, so that one propagates.
            raise ToolExitError(exc) from exc
        return result

    async def invoke(self, arguments: Mapping[str, Any] | None = None) -> str:
        """Validate, call and render the result as the observation text for the model."""
        return render_result(await self.execute(arguments))

    # Shadows pydantic's deprecated v1 classmethod `BaseModel.schema` on purpose.
    def schema(self) -> dict[str, Any]:  # type: ignore[override]
        """The OpenAI `tools` entry for this tool (cached; treat it as read-only)."""
        if self._schema is None:
            self._schema = {
                "type": "function",
                "function": {
                    "name": self.name,
                    "description": self.description,
                    "parameters": self.parameters,
                },
            }
        return self._schema

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly (no validation), e.g. in unit tests."""
        return self.fn(*args, **kwargs)


_Decorator = Callable[[Callable[..., Any]], Tool]


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    name: str | None = None,
    /,
    *,
    description: str | None = None,
    parallel_safe: bool = True,
    effect_tags: Iterable[str] = (),
    timeout: float | None = None,
    run_inline: bool = False,
    idempotent: bool = False,
    args_model: type[BaseModel] | None = None,
    max_output_chars: int | None = None,
) -> _Decorator: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    parallel_safe: bool = True,
    effect_tags: Iterable[str] = (),
    timeout: float | None = None,
    run_inline: bool = False,
    idempotent: bool = False,
    args_model: type[BaseModel] | None = None,
    max_output_chars: int | None = None,
) -> _Decorator: ...


def tool(
    fn: Callable[..., Any] | str | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    parallel_safe: bool = True,
    effect_tags: Iterable[str] = (),
    timeout: float | None = None,
    run_inline: bool = False,
    idempotent: bool = False,
    args_model: type[BaseModel] | None = None,
    max_output_chars: int | None = None,
) -> Tool | _Decorator:
    """Make a `Tool` of a function: `@tool`, `@tool("name")` or `@tool(name=..., timeout=...)`."""
    if isinstance(fn, str):
        name, fn = fn, None
    tags = _as_tags(effect_tags)

    def decorate(target: Callable[..., Any]) -> Tool:
        return Tool.from_function(
            target,
            name=name,
            description=description,
            parallel_safe=parallel_safe,
            effect_tags=tags,
            timeout=timeout,
            run_inline=run_inline,
            idempotent=idempotent,
            args_model=args_model,
            max_output_chars=max_output_chars,
        )

    return decorate if fn is None else decorate(fn)
