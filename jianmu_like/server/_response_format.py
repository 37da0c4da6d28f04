"""Structured output on the OpenAI-compatible endpoint: a request's `response_format` becomes
the run's output schema (`output_schema`), which the ReAct preset's output node checks like an
`output_type`: the agent is asked for JSON of that shape, an invalid answer is re-asked once, and
a run whose answer still does not match fails (`invalid_output`) rather than answer prose.

- `{"type": "json_schema", "json_schema": {"name", "schema", "strict"}}`: the answer is valid
  against `schema`. `strict` (true or not) changes nothing here: every answer is validated
  against the whole schema either way (OpenAI's strict mode constrains its decoding; the agent's
  model may be any server, so the check is on the answer).
- `{"type": "json_object"}`: the answer is a JSON object.
- `{"type": "text"}` or none: the agent's answer as it is.

The response's `content` is then the validated value as compact JSON, whatever fence or prose
the model put around it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .._base.json_schema import compile_schema
from ._client_tools import ClientRequestError


class JSONSchemaFormat(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1, max_length=64)
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    strict: bool | None = None
    description: str | None = None


class ResponseFormat(BaseModel):
    """The request's `response_format`."""

    model_config = ConfigDict(extra="allow")

    type: Literal["text", "json_object", "json_schema"]
    json_schema: JSONSchemaFormat | None = None


ANY_OBJECT: dict[str, Any] = {"type": "object"}


def output_schema(response_format: ResponseFormat | None) -> dict[str, Any] | None:
    """The JSON schema the run's answer must match (None: plain text), checked to be a schema."""
    if response_format is None or response_format.type == "text":
        return None
    if response_format.type == "json_object":
        return dict(ANY_OBJECT)
    spec = response_format.json_schema
    if spec is None:
        raise ClientRequestError(
            "response_format of type json_schema needs its json_schema (name and schema)",
            "response_format.json_schema",
        )
    schema = dict(spec.schema_ or ANY_OBJECT)
    try:
        compile_schema(schema, known_keywords=False)
    except ValueError as exc:
        raise ClientRequestError(
            f"response_format.json_schema.schema is not a valid JSON schema: {exc}",
            "response_format.json_schema.schema",
        ) from None
    schema.setdefault("title", spec.name)
    return schema
