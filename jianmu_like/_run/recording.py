"""Recordings: a run written down as JSON Lines, so `jianmu_like.replay` can play it back.

Everything non-deterministic a run reads enters through a few seams, and the recorder sits at
each of them rather than inside any node:

- model calls, through the model-call hook (`models._hooks`, the one the durable engine uses):
  the request, the response and the events the call emitted (`model.call.*`, `text.delta`...);
- tool calls, through the tool-call hook (`tools._hooks`, every call of every ToolSet, MCP
  included): the tool, its arguments and its output (or what it raised);
- the run's id (`RunCore.new_run_id`) and what the caller did: each `run()` with its input,
  each `resume()` with its decisions;
- the event stream itself (a telemetry subscriber, events already redacted by the hub), each
  event with the tick it was published in, which replay compares against.

The file is bounded (`max_bytes`): once a line would pass the limit, nothing more is written but
one `truncated` line, and replay refuses such a file (it cannot answer what it never saw).
Model requests and responses and tool arguments and outputs are redacted like every event
(`_redact.redact`), checked on the line's JSON text once it is serialized (`write`): the full
walk only for a line whose text may hold a secret. The line schema is documented in
docs/guides/replay.md.
"""

from __future__ import annotations

import asyncio
import datetime
import functools
import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO, Any, ParamSpec

from pydantic import BaseModel
from pydantic_core import to_json, to_jsonable_python

from .._redact import might_hold_secret, redact, redact_bulk
from ..errors import JianmuError
from ..models._client import ContentEvents, event_name
from ..models._hooks import ModelCall, model_call_hook, use_model_call_hook
from ..models._messages import Message
from ..models._types import ModelEvent, ModelEventCallback, ModelRequest, ModelResponse
from ..telemetry._hub import TelemetryHub
from ..telemetry.events import AnyEvent
from ..tools._base import Tool, render_result
from ..tools._hooks import ToolInvoke, call_timed_out, tool_call_hook, use_tool_call_hook

FORMAT = "jianmu-like.recording"
VERSION = 1
"""The format's version: a reader refuses a file of a newer one."""
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
"""A recording's size limit unless given (64 MiB)."""
TIMING_FIELDS = frozenset({"ts", "duration", "requested_at", "decided_at"})
"""What may differ between a run and its replay: the event's `ts`, a payload's `duration`, and
when an interruption was requested and decided (`interruption.*` carry the approval or question
with its `requested_at`, the decision with its `decided_at`), at any depth of the event's data
(wall-clock seconds). Everything else of an event must be equal."""

P = ParamSpec("P")


class RecordingError(ValueError, JianmuError):
    """A recording that cannot be written or read (bad file, newer format, truncated)."""


def jsonable(value: Any) -> Any:
    """`value` as JSON data (pydantic models dumped, anything else unknown as its repr)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    return to_jsonable_python(value, fallback=repr, exclude_none=True)


def request_data(request: ModelRequest) -> dict[str, Any]:
    """A model request as recorded and compared (redacted: secrets never reach the file, and a
    replayed request is redacted the same way before it is compared)."""
    data: dict[str, Any] = redact(request.model_dump(mode="json", exclude_none=True))
    return data


class RequestDeltas:
    """Writes each model request as what changed since the same node's previous one.

    A ReAct node's request holds the whole conversation, so writing (and redacting) it whole at
    every call costs O(k^2) over k iterations: most of a recording's cost and size. A node's
    next request starts with the previous one's messages (the same objects), so a request is
    recorded as `base` (the `seq` of that node's previous call), `keep` (how many of its
    messages come first, unchanged), the new `messages`, and `tools` only when they changed
    (`tools_same` otherwise). `expand_requests` rebuilds every full request when a recording is
    read. Not redacted here: `RunRecording.write` redacts the line's request when its text may
    hold a secret.
    """

    __slots__ = ("_last", "_settings")

    def __init__(self) -> None:
        self._last: dict[str | None, tuple[int, list[Message], Any]] = {}
        self._settings: dict[str | None, tuple[tuple[Any, ...], dict[str, Any]]] = {}

    def encode(self, node: str | None, seq: int, request: ModelRequest) -> dict[str, Any]:
        messages, tools = request.messages, request.tools
        out: dict[str, Any] = {}
        keep, tools_same = 0, False
        last = self._last.get(node)
        if last is not None:
            base, previous, previous_tools = last
            limit = min(len(previous), len(messages))
            while keep < limit and (previous[keep] is messages[keep] or previous[keep] == messages[keep]):
                keep += 1
            tools_same = tools is previous_tools or tools == previous_tools
            out["base"], out["keep"] = base, keep
        self._last[node] = (seq, messages, tools)
        values = tuple(getattr(request, name) for name in _SETTINGS)
        cached = self._settings.get(node)
        if cached is None or cached[0] != values:  # the sampling settings rarely change
            dumped = request.model_dump(mode="json", exclude_none=True, exclude={"messages", "tools"})
            cached = self._settings[node] = (values, dumped)
        out.update(cached[1])
        out["messages"] = messages[keep:]  # the models: `write` serializes them (None fields left out)
        if tools_same:
            out["tools_same"] = True
        elif tools is not None:
            out["tools"] = tools
        return out


_REQUEST_FIELDS = tuple(ModelRequest.model_fields)
_SETTINGS = tuple(name for name in _REQUEST_FIELDS if name not in ("messages", "tools"))


def expand_requests(lines: list[dict[str, Any]]) -> None:
    """Replace each model line's recorded request (see `RequestDeltas`) by the full request, as
    `request_data` gives it, in place."""
    full: dict[int, dict[str, Any]] = {}
    for line in sorted((x for x in lines if x["kind"] == "model"), key=lambda x: x["seq"]):
        encoded = dict(line["request"])
        base = full.get(encoded.pop("base", -1))
        keep = encoded.pop("keep", 0)
        same = encoded.pop("tools_same", False)
        messages = encoded.pop("messages", [])
        request = {**encoded, "messages": (base["messages"][:keep] if base else []) + messages}
        if same and base is not None and "tools" in base:
            request["tools"] = base["tools"]
        order = {name: request[name] for name in _REQUEST_FIELDS if name in request}
        full[line["seq"]] = line["request"] = {**order, **request}


@functools.cache
def package_version() -> str | None:
    """The installed jianmu_like's version (None: not installed, a source checkout)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("jianmu_like")
    except PackageNotFoundError:
        return None


def node_of(on_event: ModelEventCallback | None) -> str | None:
    """The path of the node whose model call reports to `on_event` (its bound `emit`,
    possibly wrapped in `ContentEvents`, or another recorder's relay, which names it)."""
    relayed = getattr(on_event, "node_path", None) or getattr(
        getattr(on_event, "emit", None), "node_path", None
    )
    if isinstance(relayed, str):
        return relayed
    owner = getattr(on_event, "__self__", None)
    if owner is None:
        owner = getattr(getattr(on_event, "emit", None), "__self__", None)
    path = getattr(owner, "path", None)
    return path if isinstance(path, str) else None


class RunRecording:
    """Writes one recording file (see the module); a RunCore calls `record_run` / `record_resume`
    and runs each drive inside `recording()`.

    `agent` names where replay rebuilds the agent from: an agent file's path or a Python entry
    `module:function` returning an `Agent` (None: the replayer must be given the agent)."""

    def __init__(
        self,
        path: str | Path,
        *,
        agent: str | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        forked_from: Mapping[str, Any] | None = None,
        sink: IO[bytes] | None = None,
    ) -> None:
        """`sink`: where the lines go instead of a new file at `path` (which then only names the
        recording in messages): a thread's recordings go to its checkpoint store this way."""
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.written = 0
        self.truncated = False
        self.tick: Callable[[], int] = lambda: 0
        """The runner's tick count (set by the core: events and calls carry the tick they were in)."""
        self.model_calls = 0
        self.requests = RequestDeltas()
        self.last_type: str | None = None
        self.events = 0
        self.substitutions: list[dict[str, Any]] = []
        """The substitution rules of the operation recorded next (`_run.substitutions`): kept on
        its `run` line, so a replay applies them and answers as the recording did."""
        """Events recorded in the current operation: a call's line says how many came before
        it, so replay can keep a parallel batch's interleaving."""
        try:
            self._file: IO[bytes] | None = sink if sink is not None else self.path.open("wb")
        except OSError as exc:
            raise RecordingError(f"cannot write the recording {str(self.path)!r}: {exc}") from exc
        header: dict[str, Any] = {
            "kind": "header",
            "format": FORMAT,
            "version": VERSION,
            "agent": agent,
            "package_version": package_version(),
            "created": datetime.datetime.now(datetime.UTC).isoformat(),
            "max_bytes": max_bytes,
        }
        if forked_from is not None:
            header["forked_from"] = dict(forked_from)
        self.write(header)

    def __repr__(self) -> str:
        return f"RunRecording({str(self.path)!r}, written={self.written})"

    # ------------------------------------------------------------------ writing
    def write(self, line: dict[str, Any], redacted: tuple[str, ...] = ()) -> None:
        """Append one line, or, past the size limit, the `truncated` line and nothing after it.
        The values under the keys `redacted` names are redacted (`_redact.redact`) when the
        line's JSON text may hold a secret (`might_hold_secret`): one scan of the text written
        instead of one per value, and no walk of a line without a secret. A pydantic model in a
        line is written without its None fields (`jsonable`); a plain dict keeps its nulls."""
        file = self._file
        if file is None or self.truncated:
            return
        data = to_json(line, fallback=repr, exclude_none=True)
        if redacted and might_hold_secret(data):
            for key in redacted:
                if key in line:
                    line[key] = redact(jsonable(line[key]))
            data = to_json(line, fallback=repr, exclude_none=True)
        data += b"\n"
        size = len(data)
        if self.written + size > self.max_bytes:
            self.truncate()
            return
        self.written += size
        file.write(data)

    def truncate(self) -> None:
        """Write the `truncated` line: nothing more is written after it."""
        file = self._file
        if file is None or self.truncated:
            return
        self.truncated = True
        note = {"kind": "truncated", "at_bytes": self.written, "max_bytes": self.max_bytes}
        file.write(to_json(note) + b"\n")
        file.flush()

    def close(self) -> None:
        file, self._file = self._file, None
        if file is not None:
            file.close()

    def record_run(self, input_data: Mapping[str, Any] | None, thread_id: str | None, run_id: str) -> None:
        self.events = 0  # event lines are counted per operation
        self.write(
            {
                "kind": "run",
                "op": "run",
                "run_id": run_id,
                "thread_id": thread_id,
                "input": redact_bulk(jsonable(dict(input_data or {}))),
                **self._rules(),
            }
        )

    def record_resume(self, decisions: Mapping[str, Any] | None, thread_id: str | None, run_id: str) -> None:
        self.events = 0
        self.write(
            {
                "kind": "run",
                "op": "resume",
                "run_id": run_id,
                "thread_id": thread_id,
                "decisions": jsonable(dict(decisions or {})),
                **self._rules(),
            }
        )

    def _rules(self) -> dict[str, Any]:
        return {"substitutions": redact_bulk(self.substitutions)} if self.substitutions else {}

    def record_result(self, status: str, final_answer: str | None) -> None:
        self.write({"kind": "result", "status": status, "final_answer": redact(final_answer)})
        if self._file is not None:
            self._file.flush()

    # ------------------------------------------------------------------ the seams
    def on_event(self, event: AnyEvent) -> None:
        """The telemetry subscriber: every event of the run, with its tick (the event's wire
        shape serialized by pydantic-core: an event line costs a few microseconds)."""
        self.events += 1
        self.last_type = event.type
        file = self._file
        if file is None or self.truncated:
            return
        data = b'{"kind":"event","tick":%d,' % self.tick() + to_json(event.wire(), fallback=repr)[1:] + b"\n"
        if self.written + len(data) > self.max_bytes:
            self.truncate()
            return
        self.written += len(data)
        file.write(data)

    async def model_hook(
        self, call: ModelCall, request: ModelRequest, on_event: ModelEventCallback | None, outer: Any
    ) -> ModelResponse:
        """Runs the call (through an outer hook, a durable step, if there is one) and records
        it with the events it emitted."""
        self.model_calls += 1
        seq = self.model_calls
        tick = self.tick()
        node = node_of(on_event)
        emitted: list[Any] = []

        def capture(event: Callable[P, ModelEvent], /, *args: P.args, **data: P.kwargs) -> None:
            before = self.events
            if on_event is not None:
                on_event(event, *args, **data)
            event_type = event_name(event)
            if self.events == before + 1 and self.last_type == event_type:
                emitted.append(before)  # the event line just written (its index in the operation)
            else:  # not published as it was given: kept whole
                emitted.append([event_type, redact(data)])

        capture.node_path = node  # type: ignore[attr-defined]  # a recorder inside this one sees the node
        # keep asking for the request's content when the node did
        relay: ModelEventCallback = ContentEvents(capture) if isinstance(on_event, ContentEvents) else capture
        line: dict[str, Any] = {
            "kind": "model",
            "seq": seq,
            "tick": tick,
            "node": node,
            "events_before": self.events,
            "request": self.requests.encode(node, seq, request),
        }
        try:
            if outer is not None:
                response: ModelResponse = await outer(call, request, relay if on_event is not None else None)
            else:
                response = await call(request, relay if on_event is not None else None)
        except BaseException as exc:
            line["events"] = emitted
            line["error"] = error_data(exc)
            self.write(line, ("request",))
            raise
        line["events"] = emitted
        line["response"] = response
        self.write(line, ("request", "response"))
        return response

    async def tool_hook(self, invoke: ToolInvoke, tool: Tool, arguments: dict[str, Any], outer: Any) -> Any:
        line: dict[str, Any] = {
            "kind": "tool",
            "tick": self.tick(),
            "after_model": self.model_calls,
            "tool": tool.name,
            "arguments": jsonable(arguments),
        }
        try:
            output = await (outer(invoke, tool, arguments) if outer is not None else invoke(tool, arguments))
        except BaseException as exc:
            line["events_before"] = self.events
            line["error"] = error_data(exc)
            if isinstance(exc, asyncio.CancelledError) and call_timed_out():
                line["error"]["timed_out"] = True  # its deadline, not the run, cancelled it
            self.write(line, ("arguments",))
            raise
        text = output if isinstance(output, str) else render_result(output)
        line["events_before"] = self.events
        line["output"] = text
        self.write(line, ("arguments", "output"))
        return text

    @contextmanager
    def recording(self, hub: TelemetryHub) -> Iterator[None]:
        """Record every model call, tool call and event of the drive run inside it."""
        outer_model = model_call_hook()
        outer_tool = tool_call_hook()

        def model(call: ModelCall, request: ModelRequest, on_event: ModelEventCallback | None) -> Any:
            return self.model_hook(call, request, on_event, outer_model)

        def tools(invoke: ToolInvoke, tool: Tool, arguments: dict[str, Any]) -> Any:
            return self.tool_hook(invoke, tool, arguments, outer_tool)

        with ExitStack() as stack:
            stack.enter_context(use_model_call_hook(model))
            stack.enter_context(use_tool_call_hook(tools))
            stack.callback(hub.subscribe(self.on_event))
            yield


def error_data(exc: BaseException) -> dict[str, Any]:
    """What a call raised, as recorded: its class and message (redacted)."""
    data: dict[str, Any] = {"type": type(exc).__name__, "message": redact(str(exc))}
    attempts = getattr(exc, "attempts", None)
    if isinstance(attempts, list):
        data["attempts"] = [redact(str(a)) for a in attempts]
    return data


def _resolve_events(lines: list[dict[str, Any]]) -> None:
    """A model line's events as `[type, data]`, in place: the recorder writes an event the call
    published as its index among the event lines of the operation (see `model_hook`), kept in
    `event_at` (replay publishes each at its place among the other calls' events)."""
    published: list[dict[str, Any]] = []
    for line in lines:
        kind = line["kind"]
        if kind == "run":
            published = []
        elif kind == "event":
            published.append(line)
        elif kind == "model":
            events = line.get("events", ())
            line["event_at"] = [e if isinstance(e, int) else None for e in events]
            line["events"] = [
                [published[e]["type"], published[e]["data"]] if isinstance(e, int) else e for e in events
            ]


def read_recording(path: str | Path) -> list[dict[str, Any]]:
    """The lines of a recording, checked: the header first, a known format and version, not
    truncated (`RecordingError` saying which line and why otherwise)."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise RecordingError(f"cannot read the recording {str(file)!r}: {exc}") from exc
    return parse_recording(text, str(file))


def parse_recording(text: str | bytes, file: str) -> list[dict[str, Any]]:
    """`read_recording` of a recording's content (a thread's, from its store); `file` names it
    in messages."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RecordingError(f"{file}: not UTF-8 text ({exc})") from exc
    lines: list[dict[str, Any]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise RecordingError(f"{file}:{number}: not JSON: {exc.msg}") from exc
        if not isinstance(line, dict) or not isinstance(line.get("kind"), str):
            raise RecordingError(f"{file}:{number}: a line must be an object with a 'kind'")
        lines.append(line)
    if not lines or lines[0]["kind"] != "header" or lines[0].get("format") != FORMAT:
        raise RecordingError(f"{file}:1: not a jianmu-like recording (no {FORMAT!r} header)")
    version = lines[0].get("version")
    if not isinstance(version, int) or version > VERSION:
        raise RecordingError(
            f"{file}:1: recording format version {version!r}; this jianmu_like reads up to {VERSION}"
        )
    for number, line in enumerate(lines, start=1):
        if line["kind"] == "truncated":
            raise RecordingError(
                f"{file}:{number}: the recording was truncated at its size limit "
                f"({line.get('max_bytes')} bytes): it cannot be replayed; "
                "record again with a larger max_bytes"
            )
    try:
        expand_requests(lines)
        _resolve_events(lines)
    except (KeyError, TypeError, IndexError) as exc:
        raise RecordingError(f"{file}: a model request line is malformed ({exc!r})") from exc
    return lines
