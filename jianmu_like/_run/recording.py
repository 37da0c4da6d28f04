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
(`_base.redact.redact`), checked on the line's JSON text once it is serialized (`write`): the full
walk only for a line whose text may hold a secret. The line schema is documented in
docs/guides/replay.md.
"""

from __future__ import annotations

import asyncio
import datetime
import functools
import json
import secrets
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from operator import attrgetter
from pathlib import Path
from typing import IO, Any, ParamSpec

from pydantic import BaseModel
from pydantic_core import to_json, to_jsonable_python

from .._base.redact import might_hold_secret, redact, redact_bulk
from ..bt._runner import ReactiveRunner, TickHook
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
            if messages[:limit] == previous[:limit]:  # the usual case, compared in C (same objects)
                keep = limit
            else:
                while keep < limit and (previous[keep] is messages[keep] or previous[keep] == messages[keep]):
                    keep += 1
            tools_same = tools is previous_tools or tools == previous_tools
            out["base"], out["keep"] = base, keep
        self._last[node] = (seq, messages, tools)
        values = _settings_of(request)
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
_settings_of = attrgetter(*_SETTINGS)


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
        self._pending: list[Any] = []
        """Lines not written yet, each followed by `_SEPARATOR` (see `flush`): event lines as
        dicts, and a placeholder for each call line (kept in `_calls`)."""
        self._calls: list[tuple[dict[str, Any], tuple[str, ...]]] = []
        """The call lines (model, tool, run...) of `_pending`, with the keys to redact."""
        self._slots: list[int] = []
        """Where each of `_calls` goes among `_pending`'s lines."""
        self._framed: list[tuple[bytes, bytes] | None] = []
        """For each line of `_pending`, what goes before and after its JSON text (an event's
        frame, `_event_frame`), or None (a call line, whole)."""
        self._frames: dict[tuple[str, str | None, str | None, str | None], tuple[bytes, bytes]] = {}
        self._frame_tick = -1
        self._frame_start = b""
        try:
            # Unbuffered: each `flush` is one write(2), so what it wrote survives the process.
            self._file: IO[bytes] | None = sink if sink is not None else self.path.open("wb", buffering=0)
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
        """Append one line now (with every line still pending before it), or, past the size
        limit, the `truncated` line and nothing after it. The values under the keys `redacted`
        names are redacted (`_base.redact.redact`) when the line's JSON text may hold a secret
        (`might_hold_secret`): one scan of the text written instead of one per value, and no
        walk of a line without a secret. A pydantic model in a line is written without its
        None fields (`jsonable`); a plain dict keeps its nulls."""
        self.add(line, redacted)
        self.flush()

    def add(self, line: dict[str, Any], redacted: tuple[str, ...] = ()) -> None:
        """`write` at the next `flush` (the end of the tick, at the latest)."""
        if self._file is None or self.truncated:
            return
        pending = self._pending
        self._slots.append(len(pending) >> 1)
        self._calls.append((line, redacted))
        self._framed.append(None)
        pending.append(None)
        pending.append(_SEPARATOR)

    def flush(self) -> None:
        """Write the pending lines: one serialization and one write(2) for them all.

        The lines of a tick wait in `_pending` as the objects they hold (events, messages,
        replies) and are serialized here, at the tick's end (the core calls this after every
        tick, and when the run ends, fails or is cancelled), by one pydantic-core `to_json`
        over the event lines and one over the call lines, each a list whose lines are
        separated by `_SEPARATOR` (a string no recorded value can hold: its JSON text is then
        where one line ends), instead of one call, one scan and one write per line: what a
        recording costs per line was the work around each line more than the bytes. A SIGKILL
        loses at most the lines of the tick in progress."""
        pending = self._pending
        if not pending:
            return
        calls, slots, framed = self._calls, self._slots, self._framed
        self._pending, self._calls, self._slots, self._framed = [], [], [], []
        file = self._file
        if file is None or self.truncated:
            return
        parts = to_json(pending, fallback=repr)[1:_END].split(_SPLIT)
        if len(parts) != len(framed):  # a value held the separator after all
            parts = [to_json(line, fallback=repr) for line in pending[::2]]
        if calls:
            texts = _call_texts(calls)
            for slot, text in zip(slots, texts, strict=True):
                parts[slot] = text
        lines: list[bytes] = []
        for frame, part in zip(framed, parts, strict=True):
            if frame is None:
                lines.append(part)
            else:  # an event's `{"data":...,"ts":...}` inside its frame
                lines.append(frame[0] + part[1:-1] + frame[1])
        parts = lines
        data = b"\n".join(parts) + b"\n"
        if self.written + len(data) > self.max_bytes:
            self._write_until_full(parts)
            return
        self.written += len(data)
        _write_all(file, data)

    def _write_until_full(self, parts: list[bytes]) -> None:
        """Write `parts` (lines) one by one up to the size limit, then the `truncated` line."""
        file = self._file
        assert file is not None
        for part in parts:
            size = len(part) + 1
            if self.written + size > self.max_bytes:
                self.truncate()
                return
            self.written += size
            _write_all(file, part + b"\n")

    def truncate(self) -> None:
        """Write the `truncated` line: nothing more is written after it."""
        file = self._file
        if file is None or self.truncated:
            return
        self.truncated = True
        note = {"kind": "truncated", "at_bytes": self.written, "max_bytes": self.max_bytes}
        _write_all(file, to_json(note) + b"\n")
        file.flush()

    def close(self) -> None:
        self.flush()
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
            self._file.flush()  # a file given in place of ours may buffer

    # ------------------------------------------------------------------ the seams
    def on_event(self, event: AnyEvent) -> None:
        """The telemetry subscriber: every event of the run, with its tick, kept for `flush`
        (the event's wire shape, as `TypedEvent.wire` gives it: its `data` and `ts` are
        serialized at the flush, the rest of the line is the same for every event of a node
        and type and is made once, `_event_frame`)."""
        self.events += 1
        self.last_type = event.type
        if self._file is None or self.truncated:
            return
        tick = self.tick()
        if tick != self._frame_tick:
            self._frame_tick, self._frame_start = tick, b'{"kind":"event","tick":%d,' % tick
        key = (event.type, event.node, event.namespace, event.run_id)
        frame = self._frames.get(key)
        if frame is None:
            frame = self._frames[key] = _event_frame(*key)
        pending = self._pending
        pending.append({"data": event.data, "ts": event.ts})
        pending.append(_SEPARATOR)
        self._framed.append((self._frame_start + frame[0], frame[1]))
        if len(pending) > _MAX_PENDING:  # a tick that publishes a lot (a long streamed reply)
            self.flush()

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
            self.add(line, ("request",))
            raise
        line["events"] = emitted
        line["response"] = response
        self.add(line, ("request", "response"))
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
            self.add(line, ("arguments",))
            raise
        text = output if isinstance(output, str) else render_result(output)
        line["events_before"] = self.events
        line["output"] = text
        self.add(line, ("arguments", "output"))
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
            stack.callback(self.flush)  # ended, failed or cancelled: what it recorded is written
            stack.enter_context(use_model_call_hook(model))
            stack.enter_context(use_tool_call_hook(tools))
            stack.callback(hub.subscribe(self.on_event))
            yield


_SEPARATOR = "\x00" + secrets.token_hex(16)
"""What separates the lines of a batch (`RunRecording.flush`): a string element between two
lines of the list serialized, which no recorded value can hold (it is random, made once per
process and never written), so where its JSON text stands between two elements one line ends.
A JSON string cannot hold `"` unescaped, so its text cannot occur inside a string either."""
_SPLIT = b',"\\u0000' + _SEPARATOR[1:].encode() + b'",'
_END = -len(_SPLIT)
"""A batch's text is `[line,"sep",line,"sep"]`: past its `[`, before its last `,"sep"]`."""
_MAX_PENDING = 2 * 512


def _event_frame(
    type_: str, node: str | None, namespace: str | None, run_id: str | None
) -> tuple[bytes, bytes]:
    """What an event line holds around its `"data":...,"ts":...` (the wire's order: `type`,
    `node`, `namespace`, `data`, `ts`, `run_id`), after its `kind` and `tick`."""
    head = to_json({"type": type_, "node": node, "namespace": namespace})[1:-1] + b","
    return head, b',"run_id":' + to_json(run_id) + b"}"


"""Lines kept before a flush inside a tick (two entries each: the line and a separator)."""


def _call_texts(calls: list[tuple[dict[str, Any], tuple[str, ...]]]) -> list[bytes]:
    """The JSON text of each call line: serialized together (without the None fields of the
    pydantic models they hold), checked together for secrets (`might_hold_secret`), and only
    the lines whose own text may hold one redacted and serialized again."""
    batch: list[Any] = []
    for line, _ in calls:
        batch.append(line)
        batch.append(_SEPARATOR)
    texts = to_json(batch, fallback=repr, exclude_none=True)[1:_END].split(_SPLIT)
    if len(texts) != len(calls):  # a value held the separator after all: one line at a time
        texts = [to_json(line, fallback=repr, exclude_none=True) for line, _ in calls]
    if not might_hold_secret(b"".join(texts)):
        return texts
    for index, (line, redacted) in enumerate(calls):
        if redacted and might_hold_secret(texts[index]):
            for key in redacted:
                if key in line:
                    line[key] = redact(jsonable(line[key]))
            texts[index] = to_json(line, fallback=repr, exclude_none=True)
    return texts


def _write_all(file: IO[bytes], data: bytes) -> None:
    """`data` written whole (an unbuffered file may take part of it per call)."""
    written = file.write(data)
    if written is not None and written < len(data):
        view = memoryview(data)
        while written < len(data):
            written += file.write(view[written:]) or 0


class _FlushEveryTick:
    """The runner's tick hook while a run is recorded: writes what the recordings hold
    (`RunRecording.flush`), then calls the hook it wraps (the checkpoint recorder's)."""

    __slots__ = ("previous", "recordings")

    def __init__(self, recordings: tuple[RunRecording, ...], previous: TickHook | None) -> None:
        self.recordings = recordings
        self.previous = previous

    def __call__(self) -> Awaitable[None] | None:
        for recording in self.recordings:
            recording.flush()
        previous = self.previous
        return previous() if previous is not None else None


@contextmanager
def flush_every_tick(runner: ReactiveRunner, recordings: Iterable[RunRecording]) -> Iterator[None]:
    """Flush `recordings` after every tick of `runner` inside (see `RunRecording.flush`)."""
    previous = runner.on_tick
    while isinstance(previous, _FlushEveryTick):  # an earlier run's, left below another hook
        previous = previous.previous
    hook = _FlushEveryTick(tuple(recordings), previous)
    runner.on_tick = hook
    try:
        yield
    finally:
        hook.recordings = ()  # from now on it only passes the tick on
        if runner.on_tick is hook:
            runner.on_tick = previous
        # Otherwise a hook set during the run wraps this one (the server's node view of a
        # suspended run): it puts this one back when it goes, and the next run unwraps it.


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
    truncated (`RecordingError` saying which line and why otherwise). A last line cut short
    (no newline, not JSON: its process died while writing it) is left out: the recording then
    ends early, as one whose process died between two writes does (no `result` line)."""
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
    raws = text.splitlines()
    for number, raw in enumerate(raws, start=1):
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except json.JSONDecodeError as exc:
            if number == len(raws) and not text.endswith("\n") and number > 1:
                break  # a line cut short by the end of the process that wrote it: the file ends early
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
