"""The JSON/text tool protocol, for models without native function calling.

Small local models have no tool-calling API, so the tools and the reply format go into the
system prompt and every reply is one JSON object: `{"tool": <name>, "arguments": {...}}` to
call a tool, `{"answer": "..."}` to finish. `reply_schema` describes exactly those objects so a
grammar-constrained sampler (llama.cpp) cannot produce anything else; `to_chat_messages`
rewrites the OpenAI-shaped history into plain chat turns (a past call becomes the JSON the
model would have written, a tool result a user-side "Observation"); `parse_reply` turns the
model's text back into a `Message`, tolerating code fences, trailing text and Python quoting.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .._base.tool_text import function_line
from ._json_text import json_objects, unfenced
from ._messages import Message, ToolCall

ChatTurn = dict[str, str]
"""One plain chat message: {"role": "system" | "user" | "assistant", "content": ...}."""

REPLY_FORMAT = (
    "Reply with exactly one JSON object and nothing else.\n"
    'To use a tool: {"tool": "<tool name>", "arguments": {<the tool\'s arguments>}}\n'
    'To give the final answer: {"answer": "<your answer>"}\n'
    'After a tool call you receive "Observation (<tool name>): <result>". Use the result: when it '
    "answers the question, give the final answer with it.\n"
    "Tool names are case-sensitive: write them exactly as listed."
)

OBSERVATION_NUDGE = "If this answers the question, reply with the answer now."
"""Appended to each observation: without it the smallest models tend to call the same tool again."""
ERROR_NUDGE = "Correct the call and try again."
"""Appended instead when the observation is an error: the nudge to answer made models answer with it."""

CORRECTION_PREFIX = "Your last reply could not be read"
"""Starts the corrective message sent after a reply in neither the tool protocol nor a final
answer (`models._tool_protocol`); the reply it follows is shown back to the model verbatim."""

ParsedReply = tuple[Message, bool]
"""The message a reply stands for, and whether the reply was in the protocol at all."""


class ReplyReader(Protocol):
    """Reads one reply: `tools` are the names the agent has (None: unknown, any named tool is
    a call), so an object naming something else is a call only when it plainly asks for one."""

    def __call__(
        self, text: str, new_id: Callable[[], str], tools: Collection[str] | None = None
    ) -> ParsedReply: ...


@dataclass(frozen=True)
class Dialect:
    """How calls and answers are written in one prompt-based tool protocol: the reply-format
    instructions, the rendering of past calls and answers, and the parser of a reply."""

    name: str
    reply_format: str
    render_call: Callable[[ToolCall], str]
    render_answer: Callable[[str], str]
    parse: ReplyReader


@dataclass(frozen=True)
class WorkedExample:
    """A short demonstration of one tool round trip, shown in the system prompt."""

    question: str
    tool: str
    arguments: dict[str, Any]
    observation: str
    answer: str


CALCULATOR_EXAMPLE = WorkedExample(
    question="What is 12 * 3 + 4?",
    tool="calculator",
    arguments={"expression": "12 * 3 + 4"},
    observation="40",
    answer="12 * 3 + 4 = 40",
)
"""Two operators, passed whole: with a one-operator example (`12 * 3`) SmolLM2-135M passed
only the first operation of a question (`25 * 4 + 10` → `25 * 4`). The answer has no final
period: small models copied "36." as "72.75" (digits after the dot)."""

BUILTIN_EXAMPLES = (CALCULATOR_EXAMPLE,)
"""Shown by default, each only when its tool is offered."""


def tool_functions(tools: Sequence[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The `function` parts of OpenAI tool schemas (entries without one are skipped)."""
    out: list[dict[str, Any]] = []
    for entry in tools or ():
        function = entry.get("function") if entry.get("type", "function") == "function" else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            out.append(function)
    return out


def render_examples(examples: Sequence[WorkedExample], dialect: Dialect | None = None) -> str:
    """The examples as transcripts in the same shapes `to_chat_messages` produces."""
    dialect = dialect or JSON_DIALECT
    blocks = []
    for example in examples:
        call = dialect.render_call(ToolCall(id="example", name=example.tool, arguments=example.arguments))
        answer = dialect.render_answer(example.answer)
        blocks.append(
            f"User: {example.question}\n"
            f"Assistant: {call}\n"
            f"User: {observation_text(example.observation, example.tool)}\n"
            f"Assistant: {answer}"
        )
    return ("Example:\n" if len(blocks) == 1 else "Examples:\n") + "\n\n".join(blocks)


def render_system_prompt(
    persona: str | None,
    tools: Sequence[dict[str, Any]] | None,
    *,
    examples: Sequence[WorkedExample] | None = None,
    dialect: Dialect | None = None,
) -> str:
    """The persona, the tool list, the reply format and worked examples: `examples` (default
    `BUILTIN_EXAMPLES`), each shown only when its tool is offered; `dialect` defaults to JSON.
    `persona` arrives as data (`ModelRequest.persona`): this protocol never takes apart a system
    prompt someone else wrote for native calling."""
    dialect = dialect or JSON_DIALECT
    functions = tool_functions(tools)
    names = {f["name"] for f in functions}
    parts = [persona or ""]
    parts.append("You can use these tools:\n" + "\n".join(function_line(f) for f in functions))
    parts.append(dialect.reply_format)
    shown = [e for e in (BUILTIN_EXAMPLES if examples is None else examples) if e.tool in names]
    if shown:
        parts.append(render_examples(shown, dialect))
    return "\n\n".join(p for p in parts if p)


def observation_text(content: str | None, tool_name: str | None) -> str:
    """How one tool result reads to the model."""
    label = f"Observation ({tool_name})" if tool_name else "Observation"
    text = content or ""
    nudge = ERROR_NUDGE if text.startswith("Error") else OBSERVATION_NUDGE
    return f"{label}: {text}\n{nudge}"


def _assistant_text(message: Message, protocol: bool, dialect: Dialect) -> str:
    if message.tool_calls:
        return "\n".join(dialect.render_call(call) for call in message.tool_calls)
    if not protocol:
        return message.content or ""
    return dialect.render_answer(message.content or "")


def is_correction(message: Message) -> bool:
    """Whether `message` is the corrective message of the tool protocol."""
    return message.role == "user" and (message.content or "").startswith(CORRECTION_PREFIX)


def to_chat_messages(
    messages: Sequence[Message],
    tools: Sequence[dict[str, Any]] | None,
    *,
    system_role: bool = True,
    examples: Sequence[WorkedExample] | None = None,
    dialect: Dialect | None = None,
    persona: str | None = None,
) -> list[ChatTurn]:
    """Plain chat turns for a model without tool calling.

    The first system message becomes the protocol prompt (`render_system_prompt` around
    `persona`, the request's persona, or that message's text when it has none; without tools it
    stays as it is and answers stay plain text); later ones become user notes.
    Consecutive turns of one role are merged, since some chat templates (Gemma's) require
    strict user/assistant alternation. With `system_role=False` the system prompt is put at
    the top of the first user turn instead. A reply that a corrective message follows is shown
    as the model wrote it. `dialect` (default JSON) is how calls and answers are written.
    """
    dialect = dialect or JSON_DIALECT
    protocol = bool(tool_functions(tools))
    names: dict[str, str] = {}
    turns: list[ChatTurn] = []
    system_text: str | None = None
    for index, message in enumerate(messages):
        if message.role == "system":
            if system_text is None and not turns:
                system_text = message.content or ""
                continue
            role, text = "user", f"Note: {message.content or ''}"
        elif message.role == "assistant":
            for call in message.tool_calls or ():
                names[call.id] = call.name
            corrected = index + 1 < len(messages) and is_correction(messages[index + 1])
            role, text = "assistant", _assistant_text(message, protocol and not corrected, dialect)
        elif message.role == "tool":
            name = message.name or names.get(message.tool_call_id or "")
            role, text = "user", observation_text(message.content, name)
        else:
            role, text = "user", message.content or ""
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] += "\n\n" + text
        else:
            turns.append({"role": role, "content": text})
    prompt = (
        render_system_prompt(
            persona if persona is not None else system_text, tools, examples=examples, dialect=dialect
        )
        if protocol
        else system_text
    )
    if not prompt:
        return turns
    if system_role:
        return [{"role": "system", "content": prompt}, *turns]
    if turns and turns[0]["role"] == "user":
        turns[0] = {"role": "user", "content": f"{prompt}\n\n{turns[0]['content']}"}
        return turns
    return [{"role": "user", "content": prompt}, *turns]


ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}


def arguments_schema(function: dict[str, Any]) -> dict[str, Any]:
    params = function.get("parameters")
    if isinstance(params, dict) and params.get("type", "object") == "object":
        return params
    return {"type": "object"}


def forced_tools(tool_choice: Any, names: Sequence[str]) -> tuple[list[str], bool]:
    """Which tools a reply may call and whether it may answer, for an OpenAI `tool_choice`.

    None/"auto": any tool or an answer; "required"/"any": any tool; "none": only an answer;
    `{"type": "function", "function": {"name": X}}`: only X (all tools when X is unknown).
    """
    if tool_choice == "none":
        return [], True
    if tool_choice in ("required", "any"):
        return list(names), False
    if isinstance(tool_choice, dict):
        function = tool_choice.get("function")
        wanted = function.get("name") if isinstance(function, dict) else None
        return ([wanted] if isinstance(wanted, str) and wanted in names else list(names)), False
    return list(names), True


def reply_schema(tools: Sequence[dict[str, Any]] | None, tool_choice: Any = None) -> dict[str, Any]:
    """The JSON schema of one reply: a call of an allowed tool (arguments per its parameter
    schema) or, when allowed, `{"answer": "..."}`."""
    functions = {f["name"]: f for f in tool_functions(tools)}
    allowed, may_answer = forced_tools(tool_choice, list(functions))
    branches: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {"tool": {"const": name}, "arguments": arguments_schema(functions[name])},
            "required": ["tool", "arguments"],
            "additionalProperties": False,
        }
        for name in allowed
    ]
    if may_answer or not branches:
        branches.append(ANSWER_SCHEMA)
    return branches[0] if len(branches) == 1 else {"oneOf": branches}


_TOOL_KEYS = ("tool", "name", "tool_name", "function", "action", "tool_call")
_PLAIN_TOOL_KEYS = ("tool", "tool_name", "function", "tool_call")
"""Keys that name a tool and nothing else: an object using one asks for a tool even when the
name is not one the agent has (the model then reads "unknown tool" and can correct itself)."""
_ARGUMENT_KEYS = ("arguments", "args", "parameters", "input", "action_input")
_ANSWER_KEYS = ("answer", "final_answer", "response", "content")
_MARKED_ANSWER_KEYS = (*_ANSWER_KEYS, "action_input", "text", "output", "result", "arguments", "input")
"""Where the answer of an object marked as a final answer is: `{"action": "Final Answer",
"action_input": ...}` (LangChain), `{"type": "final_answer", "content": ...}`, ..."""
_ANSWER_MARKERS = frozenset({"final_answer", "finalanswer", "final", "answer", "finish", "final_response"})
"""Action/type names meaning "this is the final answer" (compared lower-case, spaces and dashes
as underscores) — unless the agent has a tool of that name."""
_TRUNCATED_ANSWER = re.compile(r'^\s*\{\s*"answer"\s*:\s*"(.*)$', re.DOTALL)
_TRUNCATED_CALL = re.compile(
    r'^\s*\{\s*"tool"\s*:\s*"([^"]+)"\s*,?\s*(?:"arguments"\s*:\s*)?(.*)$', re.DOTALL
)


def _pick(obj: dict[str, Any], keys: tuple[str, ...]) -> tuple[bool, Any]:
    for key in keys:
        if key in obj:
            return True, obj[key]
    return False, None


def marks_answer(name: Any, tools: Collection[str] | None) -> bool:
    """Whether an action/tool/type `name` means "final answer" (and is no tool of the agent's)."""
    if not isinstance(name, str) or (tools is not None and name in tools):
        return False
    return name.strip().lower().replace(" ", "_").replace("-", "_") in _ANSWER_MARKERS


def _tool_call(
    obj: dict[str, Any], new_id: Callable[[], str], tools: Collection[str] | None
) -> ToolCall | None:
    """The call `obj` stands for: it names a tool the agent has, or (`tools` None, a tool-only
    key, or arguments given) plainly asks for one; a final-answer marker is never a call."""
    nested = obj.get("tool_call")
    plain = isinstance(nested, dict) or any(isinstance(obj.get(k), str) for k in _PLAIN_TOOL_KEYS)
    if isinstance(nested, dict):  # {"tool_call": {"name": ..., "arguments": ...}}
        obj = nested
    found, name = _pick(obj, _TOOL_KEYS)
    if not found or not isinstance(name, str) or not name or marks_answer(name, tools):
        return None
    has_arguments, arguments = _pick(obj, _ARGUMENT_KEYS)
    if tools is not None and name not in tools and not (plain or has_arguments):
        return None  # e.g. {"name": "Ann", "answer": ...}: a value, not a request
    if arguments is None or isinstance(arguments, dict | str):
        return ToolCall.from_raw(new_id(), name, arguments)
    return ToolCall.from_raw(new_id(), name, json.dumps(arguments))


def _answer(obj: dict[str, Any], tools: Collection[str] | None) -> tuple[bool, Any]:
    """Whether `obj` is a final answer, and the answer: an answer key, or an object marked as
    a final answer by its action, tool or type (`{"action": "final_answer", "answer": ...}`)."""
    marked = any(marks_answer(obj.get(key), tools) for key in (*_TOOL_KEYS, "type"))
    if not marked:
        return _pick(obj, _ANSWER_KEYS)
    found, answer = _pick(obj, _MARKED_ANSWER_KEYS)
    if isinstance(answer, dict) and len(answer) == 1:  # {"tool": "final_answer", "arguments": {"answer": X}}
        answer = next(iter(answer.values()))
    return found, answer


def _salvage_truncated_answer(text: str) -> str | None:
    match = _TRUNCATED_ANSWER.match(text)
    if match is None:
        return None
    body = match.group(1).rstrip().removesuffix("}").rstrip().removesuffix('"')
    try:
        return str(json.loads(f'"{body}"'))
    except json.JSONDecodeError:
        return body


def parse_reply(text: str, new_id: Callable[[], str], tools: Collection[str] | None = None) -> Message:
    """The assistant message a protocol reply stands for (see `read_reply`)."""
    return read_reply(text, new_id, tools)[0]


def read_reply(text: str, new_id: Callable[[], str], tools: Collection[str] | None = None) -> ParsedReply:
    """The assistant message a protocol reply stands for, and whether it was in the protocol.

    An object is a call when it names one of `tools` (the agent's tool names; None: any name),
    or plainly asks for a tool (a tool-only key like `tool`, or arguments): it becomes a
    `ToolCall` (ids from `new_id`, arguments via `ToolCall.from_raw` so a malformed argument
    text reaches the model as an error). Otherwise the first answer object is the content, in
    every common JSON-mode shape: `{"answer": ...}`, `{"final_answer": ...}`, `{"action":
    "final_answer" | "Final Answer", "answer" | "action_input": ...}`, `{"type":
    "final_answer", ...}`. A cut-off `{"tool": ...` stays a call whose arguments are in error
    (the model reads why and can retry); a cut-off `{"answer": "...` keeps what was written;
    text with no usable object is taken as the answer itself (and reported as not in the
    protocol).
    """
    cleaned = unfenced(text).strip()
    objects = list(json_objects(cleaned))
    calls = [c for c in (_tool_call(o, new_id, tools) for o in objects) if c]
    if calls:
        return Message(role="assistant", content=None, tool_calls=calls), True
    for obj in objects:
        found, answer = _answer(obj, tools)
        if found:
            content = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
            return Message(role="assistant", content=content), True
    cut_call = _TRUNCATED_CALL.match(cleaned)
    if cut_call is not None and not marks_answer(cut_call.group(1), tools):
        # e.g. an argument string never closed before max_tokens
        call = ToolCall.from_raw(new_id(), cut_call.group(1), cut_call.group(2).strip() or "{")
        return Message(role="assistant", content=None, tool_calls=[call]), True
    salvaged = _salvage_truncated_answer(cleaned)
    if salvaged is not None:
        return Message(role="assistant", content=salvaged), True
    return Message(role="assistant", content=cleaned), False


JSON_DIALECT = Dialect(
    name="json",
    reply_format=REPLY_FORMAT,
    render_call=lambda call: json.dumps({"tool": call.name, "arguments": call.arguments}, ensure_ascii=False),
    render_answer=lambda answer: json.dumps({"answer": answer}, ensure_ascii=False),
    parse=read_reply,
)
"""One JSON object per reply: `{"tool": ..., "arguments": {...}}` or `{"answer": ...}`."""
