"""The classic ReAct text format as a tool-protocol dialect.

Many instruction-tuned models were trained on `Thought:` / `Action:` / `Action Input:` /
`Final Answer:` transcripts and follow them better than a JSON reply format. The reply is read
with the shared tolerant object reader (`json_text.json_objects`) for the
action input, and a reply that is JSON after all is read by the JSON parser: one parser, two
ways of writing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection

from ._json_text import json_objects, unfenced
from ._messages import Message, ToolCall
from ._text_protocol import Dialect, ParsedReply, marks_answer, read_reply

REACT_FORMAT = (
    "Use this format, one step per reply:\n"
    "Thought: what to do next\n"
    "Action: the tool name\n"
    "Action Input: the tool's arguments as a JSON object\n"
    'Then stop: you receive "Observation (<tool name>): <result>". When you know the answer:\n'
    "Thought: I know the answer\n"
    "Final Answer: the answer\n"
    "Keep each Thought to three sentences at most, ending with the next step. Tool names are "
    "case-sensitive: write them exactly as listed."
)

# Line starts skip only spaces and tabs: `^\s*` under MULTILINE made a reply of blank lines
# quadratic (every line start scanned all the blank lines after it).
_ACTION = re.compile(r"^[ \t]*\**Action\**[ \t]*:\**\s*(\S[^\n]*)", re.MULTILINE | re.IGNORECASE)
_INPUT = re.compile(r"^[ \t]*\**Action[ \t]+Input\**[ \t]*:\**[ \t]*", re.MULTILINE | re.IGNORECASE)
_FINAL = re.compile(r"^[ \t]*\**Final[ \t]+Answer\**[ \t]*:\**[ \t]*", re.MULTILINE | re.IGNORECASE)
_OBSERVATION = re.compile(r"^[ \t]*Observation\b", re.MULTILINE | re.IGNORECASE)
_THOUGHT = re.compile(r"^\s*\**Thought\**\s*:\**\s*", re.IGNORECASE)


def render_call(call: ToolCall) -> str:
    return f"Action: {call.name}\nAction Input: {json.dumps(call.arguments, ensure_ascii=False)}"


def render_answer(answer: str) -> str:
    return f"Final Answer: {answer}"


def _thought(text: str) -> str | None:
    thought = _THOUGHT.sub("", text.strip(), count=1).strip()
    return thought or None


def has_action(text: str) -> bool:
    """Whether `text` has an `Action:` line, which every call in this format needs."""
    return _ACTION.search(text) is not None


def read_react_reply(
    text: str, new_id: Callable[[], str], tools: Collection[str] | None = None
) -> ParsedReply:
    """The message a ReAct-format reply stands for, and whether it was in the protocol.

    An `Action:` before any `Final Answer:` is a call (its input read tolerantly: fences, prose
    around it, single quotes; an unreadable input stays a call whose arguments are in error, so
    the model reads why); a `Final Answer:` is the answer; the `Thought:` becomes the message's
    `reasoning_content`. Anything after a hallucinated `Observation` is ignored. `Action: Final
    Answer` (no tool of that name among `tools`) is the answer, its input the text.
    """
    cut = _OBSERVATION.search(text)
    body = text[: cut.start()] if cut is not None else text
    action = _ACTION.search(body)
    final = _FINAL.search(body)
    if action is not None and (final is None or action.start() < final.start()):
        name = action.group(1).strip(" \t\r`'\"[]()*")
        rest = body[action.end() :]
        given = _INPUT.search(rest)
        raw = unfenced(rest[given.end() :]).strip() if given is not None else ""
        if marks_answer(name, tools):
            thought = _thought(body[: action.start()])
            return Message(role="assistant", content=raw, reasoning_content=thought), True
        arguments = next(json_objects(raw), None)
        call = ToolCall.from_raw(new_id(), name, arguments if arguments is not None else raw)
        thought = _thought(body[: action.start()])
        return Message(role="assistant", content=None, tool_calls=[call], reasoning_content=thought), True
    if final is not None:
        answer = body[final.end() :].strip()
        thought = _thought(body[: final.start()])
        return Message(role="assistant", content=answer, reasoning_content=thought), True
    return read_reply(text, new_id, tools)  # JSON after all, or not in the protocol


TEXT_DIALECT = Dialect(
    name="text",
    reply_format=REACT_FORMAT,
    render_call=render_call,
    render_answer=render_answer,
    parse=read_react_reply,
)
"""`Thought:` / `Action:` / `Action Input:` / `Final Answer:`."""
