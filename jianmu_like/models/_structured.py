"""`structured_llm_call`: a validated value from any chat model, whatever the server supports.

Servers differ: some force a function call, some only have a JSON mode, some only write text.
So the call degrades: a native tool call with the schema as the only tool (forced
`tool_choice`; skipped on a server that reports no tool support) → JSON mode (one re-format
retry) → plain text with the JSON extracted (one retry). The prompted levels send the strongest
constraint the server offers (`models._constraints`: a grammar or the JSON schema itself, else
JSON mode; `json_mode` sends `response_format={"type": "json_object"}` to a server not known
to offer any). It starts at the highest level the client's
declared abilities allow (`declared_levels`: no native call for a model declared without
function calling, no JSON mode for one declared without it), so the worst case is 5 calls,
4 or 2 — the reference's table. A `regex_fallback` reads a reply the schema could not be read
from (prose) before its retry. The result says which level succeeded, how many calls it took
and what they cost; when every level fails, a default or an error naming each level's failure.
`OutputSchema` (a pydantic model or a JSON schema) is shared with the ReAct preset's
`output_type`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .._base.validation import describe_validation
from ..errors import JianmuError
from ._client import ModelClient, OldModelEventCallback, typed_events
from ._constraints import schema_constraint
from ._errors import ModelError
from ._json_text import json_objects, unfenced
from ._messages import Message, ai, human
from ._types import ModelEventCallback, ModelRequest, Usage

Level = Literal["native", "json_mode", "text"]
LEVELS: tuple[Level, ...] = ("native", "json_mode", "text")
_NAME = re.compile(r"[^a-zA-Z0-9_-]+")


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()
"""Marks `default_value` as not given: every level failing raises `StructuredOutputError`."""


TextReading = Callable[[str], dict[str, Any] | None]
"""A `regex_fallback`: the raw object a reply's text stands for, or None when it stands for none."""


def declared_levels(client: ModelClient) -> tuple[Level, ...]:
    """The levels `client`'s declared abilities allow, in order: native function calling unless
    the model is declared without it (`supports_tools=False`, or a prompted `json`/`text` tool
    protocol), JSON mode unless `supports_json_mode=False`, and text always. Unknown abilities
    count as present: a level the server lacks fails on its first call (HTTP 400) and costs nothing."""
    from ._tool_protocol import ProtocolAdapter  # deferred: a cycle through the client

    provider = client.provider
    tools = not (
        isinstance(provider, ProtocolAdapter)
        and (provider.protocol in ("json", "text") or provider.supports_tools is False)
    )
    levels: list[Level] = ["native"] if tools else []
    if client.supports_json_mode is not False:
        levels.append("json_mode")
    levels.append("text")
    return tuple(levels)


class StructuredOutputError(ValueError, JianmuError):
    """No level produced a valid value; `failures` maps each level tried to why it failed.

    `calls` and `usage` are what the failed attempts cost: invalid replies are paid for too, and
    a budget must count them."""

    def __init__(self, failures: Mapping[str, str], *, calls: int = 0, usage: Usage | None = None) -> None:
        self.failures = dict(failures)
        self.calls = calls
        self.usage = usage if usage is not None else Usage()
        detail = "; ".join(f"{level}: {why}" for level, why in self.failures.items()) or "no level tried"
        super().__init__(f"structured output failed at every level: {detail}")


class OutputSchema:
    """What a structured value must look like: a pydantic model class (validated into an
    instance) or a JSON schema (validated with `jsonschema`, the value stays a dict); or
    `parse_fn(raw_dict)`, which then does the validating and returns the value."""

    def __init__(
        self,
        schema: type[BaseModel] | Mapping[str, Any],
        *,
        parse_fn: Callable[[dict[str, Any]], Any] | None = None,
        name: str | None = None,
    ) -> None:
        self.schema = schema
        self.parse_fn = parse_fn
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            self.json_schema: dict[str, Any] = schema.model_json_schema()
            title = schema.__name__
        elif isinstance(schema, Mapping):
            from .._base.json_schema import compile_schema  # deferred: only dict schemas need it

            self._validator = compile_schema(schema, known_keywords=False)  # checked once, here
            self.json_schema = dict(schema)
            title = str(schema.get("title") or "output")
        else:
            raise TypeError(f"schema must be a pydantic model class or a JSON schema dict, got {schema!r}")
        self.name = _NAME.sub("_", name or title)[:64] or "output"

    def instruction(self) -> str:
        """How to ask a model for the value in text."""
        return (
            "Reply with only a JSON object (no prose, no code fence) that matches this JSON schema:\n"
            + json.dumps(self.json_schema, ensure_ascii=False)
        )

    def tool(self) -> dict[str, Any]:
        """The schema as the one tool of a forced native call."""
        description = self.json_schema.get("description") or f"Return the {self.name} value."
        return {
            "type": "function",
            "function": {"name": self.name, "description": description, "parameters": self.json_schema},
        }

    def validate(self, raw: dict[str, Any]) -> Any:
        """The value for `raw`; ValueError with a one-line reason when it does not fit."""
        try:
            if self.parse_fn is not None:
                return self.parse_fn(raw)
            if isinstance(self.schema, type):
                return self.schema.model_validate(raw)
        except ValidationError as exc:
            problems = describe_validation(exc, model=self.schema if isinstance(self.schema, type) else None)
            raise ValueError("does not match the schema: " + "; ".join(problems)) from exc
        from .._base.json_schema import key_problems

        mismatches = key_problems(self._validator, raw)
        if mismatches:
            raise ValueError("does not match the schema: " + "; ".join(map(str, mismatches)))
        return raw

    def parse_text(self, text: str) -> tuple[dict[str, Any], Any]:
        """The raw object found in `text` (fences, prose around it, single quotes tolerated)
        and its validated value; ValueError saying what is wrong."""
        raw = next(json_objects(unfenced(text)), None)
        if raw is None:
            excerpt = " ".join(text.split())[:120]
            raise ValueError(f"no JSON object in the reply ({excerpt!r})" if excerpt else "empty reply")
        return raw, self.validate(raw)


class StructuredResult(BaseModel):
    """The outcome of `structured_llm_call`."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    value: Any
    """The validated value (a model instance for a pydantic schema), or the default."""
    raw: dict[str, Any] | None = None
    """The JSON object the model produced (None for the default)."""
    level: Literal["native", "json_mode", "text", "default"]
    calls: int = 0
    """Model calls made (each level's retry included)."""
    usage: Usage = Field(default_factory=Usage)
    failures: dict[str, str] = Field(default_factory=dict)
    """Why each level tried before the successful one failed."""
    reasoning: str | None = None
    """The model's reasoning on the reply the value was read from (`Message.reasoning_content`),
    for people (a node's `reply.completed`); None for the default."""


async def structured_llm_call(
    model_client: ModelClient,
    messages: Sequence[Message],
    schema: type[BaseModel] | Mapping[str, Any],
    *,
    parse_fn: Callable[[dict[str, Any]], Any] | None = None,
    default_value: Any = NO_DEFAULT,
    name: str | None = None,
    levels: Sequence[Level] | None = None,
    regex_fallback: TextReading | None = None,
    model: str | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    timeout: float | None = None,
    on_event: ModelEventCallback | OldModelEventCallback | None = None,
) -> StructuredResult:
    """Ask for a value matching `schema`, degrading through `levels` (default: the client's
    `declared_levels`; see the module docstring).

    A level whose call fails (e.g. HTTP 400: the server lacks the feature) moves on at once;
    an invalid reply in JSON mode or text gets one retry that quotes the error. `regex_fallback`
    reads the text of a reply no JSON object was found in (at any level: a forced call answered
    in prose too); what it returns is validated like any raw object. With `default_value` every
    level failing returns it (`level="default"`); without it a `StructuredOutputError` names
    each level's failure.
    """
    output = OutputSchema(schema, parse_fn=parse_fn, name=name)
    events = typed_events(on_event) if on_event is not None else None  # a former-shape one warns once
    state = _Call(model_client, list(messages), output, events, model, temperature, max_tokens, timeout)
    state.regex_fallback = regex_fallback
    for level in declared_levels(model_client) if levels is None else levels:
        if level not in LEVELS:
            raise ValueError(f"unknown level {level!r} (one of {', '.join(LEVELS)})")
        try:
            raw, value = await (state.native() if level == "native" else state.prompted(level))
        except (ModelError, ValueError) as exc:
            state.failures[level] = str(exc)
            continue
        except RecursionError:  # a value within the reading limits, but too deep for a validator
            state.failures[level] = "the reply is nested too deeply to validate"
            continue
        return StructuredResult(
            value=value,
            raw=raw,
            level=level,
            calls=state.calls,
            usage=state.usage,
            failures=state.failures,
            reasoning=state.reasoning,
        )
    if default_value is NO_DEFAULT:
        raise StructuredOutputError(state.failures, calls=state.calls, usage=state.usage)
    return StructuredResult(
        value=default_value, level="default", calls=state.calls, usage=state.usage, failures=state.failures
    )


class _Call:
    """The running tally of one structured call."""

    def __init__(
        self,
        client: ModelClient,
        messages: list[Message],
        output: OutputSchema,
        on_event: ModelEventCallback | None,
        model: str | None,
        temperature: float | None,
        max_tokens: int | None,
        timeout: float | None,
    ) -> None:
        self.client, self.messages, self.output, self.on_event = client, messages, output, on_event
        self.params: dict[str, Any] = {
            "model": model,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "timeout": timeout,
        }
        self.calls = 0
        self.usage = Usage()
        self.failures: dict[str, str] = {}
        self.regex_fallback: TextReading | None = None
        self.reasoning: str | None = None
        """The reasoning of the last reply (the one a successful level reads)."""

    async def _ask(self, messages: list[Message], **fields: Any) -> Message:
        self.calls += 1
        request = ModelRequest(messages=messages, **self.params, **fields)
        response = await self.client.complete(request, on_event=self.on_event)
        self.usage = self.usage + response.usage
        self.reasoning = response.message.reasoning_content
        return response.message

    async def native(self) -> tuple[dict[str, Any], Any]:
        caps = await self.client.capabilities(self.params["model"])
        if caps.supports_tools is False:  # it would ignore the tool and answer in prose
            raise ValueError(f"the server ({caps.kind}) reports no tool support")
        tool = self.output.tool()
        choice = {"type": "function", "function": {"name": self.output.name}}
        message = await self._ask(self.messages, tools=[tool], tool_choice=choice)
        calls = message.tool_calls or []
        if not calls:
            if (read := self._fallback(message.content or "")) is not None:
                return read
            raise ValueError("the model did not call the schema tool")
        call = next((c for c in calls if c.name == self.output.name), calls[0])
        if call.arguments_error:
            raise ValueError(call.arguments_error)
        return call.arguments, self.output.validate(call.arguments)

    async def prompted(self, level: Level) -> tuple[dict[str, Any], Any]:
        """One ask (and one re-ask quoting the error) under the strongest constraint the
        server offers (`models._constraints`); JSON mode at the `json_mode` level when the server
        is not known to offer any (a 400 then moves on to `text`)."""
        caps = await self.client.capabilities(self.params["model"])
        extra = schema_constraint(self.output.json_schema, self.output.name, caps, {})
        if not extra and level == "json_mode":
            extra = {"response_format": {"type": "json_object"}}
        messages = [*self.messages, human(self.output.instruction())]
        reply = await self._ask(messages, extra_params=extra)
        try:
            return self._read(reply.content or "")
        except ValueError as first:
            retry = human(f"That reply is not valid: {first}. {self.output.instruction()}")
            messages = [*messages, ai(reply.content or ""), retry]
            again = await self._ask(messages, extra_params=extra)
            try:
                return self._read(again.content or "")
            except ValueError as second:
                raise ValueError(f"{first}; after a retry: {second}") from second

    def _read(self, text: str) -> tuple[dict[str, Any], Any]:
        """The JSON object in `text`, else the `regex_fallback`'s reading of it."""
        try:
            return self.output.parse_text(text)
        except ValueError:
            if (read := self._fallback(text)) is None:
                raise
            return read

    def _fallback(self, text: str) -> tuple[dict[str, Any], Any] | None:
        """The `regex_fallback`'s reading of `text`, validated (None: no fallback, or it found
        nothing); a reading that does not fit the schema is a ValueError like any reply."""
        if self.regex_fallback is None or next(json_objects(unfenced(text)), None) is not None:
            return None
        raw = self.regex_fallback(text)
        if raw is None:
            return None
        return raw, self.output.validate(raw)
