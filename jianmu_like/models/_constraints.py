"""Constrained decoding over HTTP: the strongest reply constraint a server offers.

A small model told to "reply with one JSON object" mostly does not; sampled under a JSON schema
or a grammar it cannot do otherwise (the embedded model works because its sampler is
constrained). So the prompt-based tool protocols and `structured_llm_call` send, in this order
of strength, whatever the server supports (`server_probe.ServerCapabilities`):

- `response_format: {"type": "json_schema", ...}` with the exact schema (OpenAI, llama.cpp,
  vLLM, SGLang, Ollama): for the JSON protocol, the schema of the allowed actions and their
  arguments (`text_protocol.reply_schema`);
- llama.cpp's `grammar` (GBNF), for the ReAct text format, which no JSON schema can describe;
- `response_format: {"type": "json_object"}` (JSON mode): any JSON object;
- nothing, where the server offers none or is unknown.

Each builder returns the request parameters to merge into `extra_params` (empty when nothing
applies); a constraint the caller already set in `extra_params` is never replaced. A server
that rejects the constraint (HTTP 400) is asked again without it by the caller.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ._gbnf import GENERIC, literal, schema_rules, schema_to_gbnf
from ._server_probe import ServerCapabilities
from ._text_protocol import arguments_schema, forced_tools, reply_schema, tool_functions

CONSTRAINT_KEYS = frozenset({"response_format", "grammar", "json_schema", "guided_json", "format"})
"""Request parameters that constrain decoding: one set by the caller is left alone."""

_NAME = re.compile(r"[^a-zA-Z0-9_-]+")


def json_schema_format(schema: Mapping[str, Any], name: str) -> dict[str, Any]:
    """`response_format` for `schema`; not `strict` (OpenAI's strict mode forbids the `oneOf`
    at the root a choice of actions needs)."""
    safe = _NAME.sub("_", name)[:64] or "reply"
    return {"type": "json_schema", "json_schema": {"name": safe, "schema": dict(schema), "strict": False}}


def _caller_constrained(extra_params: Mapping[str, Any]) -> bool:
    body = extra_params.get("extra_body")
    keys = set(extra_params) | (set(body) if isinstance(body, Mapping) else set())
    return bool(keys & CONSTRAINT_KEYS)


def schema_constraint(
    schema: Mapping[str, Any], name: str, caps: ServerCapabilities, extra_params: Mapping[str, Any]
) -> dict[str, Any]:
    """The strongest constraint of a reply to one JSON object matching `schema`: a grammar in
    `json.dumps`'s layout where the server takes one (see `models._gbnf`), else the schema, else
    JSON mode."""
    if _caller_constrained(extra_params):
        return {}
    if caps.grammar:
        return {"grammar": schema_to_gbnf(schema)}
    if caps.json_schema:
        return {"response_format": json_schema_format(schema, name)}
    if caps.json_mode:
        return {"response_format": {"type": "json_object"}}
    return {}


def json_reply_constraint(
    tools: Sequence[dict[str, Any]] | None,
    tool_choice: Any,
    caps: ServerCapabilities,
    extra_params: Mapping[str, Any],
) -> dict[str, Any]:
    """The strongest constraint of a JSON-protocol reply: a call of an allowed tool with its
    arguments, or (when allowed) `{"answer": ...}`."""
    return schema_constraint(reply_schema(tools, tool_choice), "reply", caps, extra_params)


def react_grammar(tools: Sequence[dict[str, Any]] | None, tool_choice: Any) -> str:
    """The GBNF of one reply in the ReAct text format (`react_text`): an optional `Thought:`
    line, then `Action:` an allowed tool and `Action Input:` its arguments (per its parameter
    schema), or (when allowed) `Final Answer:` and the answer."""
    functions = {f["name"]: f for f in tool_functions(tools)}
    allowed, may_answer = forced_tools(tool_choice, list(functions))
    rules: list[str] = []
    branches = []
    for index, name in enumerate(allowed):
        top, needed = schema_rules(arguments_schema(functions[name]), prefix=f"t{index}x")
        rules.extend(needed)
        action = literal(f"Action: {name}\nAction Input: ")
        branches.append(f"{action} {top}")
    if may_answer or not allowed:
        branches.append(r'"Final Answer: " [^\n] [^\x00]{0,4000}')
    head = [
        f'root ::= ( "Thought: " line "\\n" )? ( {" | ".join(branches)} )',
        r"line ::= [^\n]{1,400}",
    ]
    return "\n".join(head + rules) + GENERIC


def text_reply_constraint(
    tools: Sequence[dict[str, Any]] | None,
    tool_choice: Any,
    caps: ServerCapabilities,
    extra_params: Mapping[str, Any],
) -> dict[str, Any]:
    """The strongest constraint of a text-protocol reply: llama.cpp's grammar where offered
    (no JSON schema describes the ReAct format), else none."""
    if _caller_constrained(extra_params) or not caps.grammar:
        return {}
    return {"grammar": react_grammar(tools, tool_choice)}


def reply_constraint(
    dialect: str,
    tools: Sequence[dict[str, Any]] | None,
    tool_choice: Any,
    caps: ServerCapabilities,
    extra_params: Mapping[str, Any],
) -> dict[str, Any]:
    """The constraint of one reply in the prompt-based tool protocol `dialect` ("json"/"text")."""
    build = text_reply_constraint if dialect == "text" else json_reply_constraint
    return build(tools, tool_choice, caps, extra_params)
