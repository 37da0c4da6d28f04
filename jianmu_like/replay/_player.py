"""Playing a recording back: the tree runs again, the model and the tools answer from the file.

The player installs itself at the same seams the recorder used (the model-call and tool-call
hooks, the run-id source, a telemetry subscriber), so nothing inside the tree knows it is a
replay: no provider is asked (no socket is opened to a model server) and no tool runs (a tool
that would write a file does not). Every event the tree publishes is compared, as it is
published, with the recorded one at the same place: type, node, namespace, run id and payload,
apart from the timing fields (`recording.TIMING_FIELDS`). "The same place" is the recorded order
of the run's events, except across the branches of a parallel node, whose events may interleave
differently (each branch's in its recorded order, see `_order`). The first difference stops the
replay (the run is cancelled) with a `Divergence` naming the tick, the node, and the recorded
and the new request or event.

Model calls are matched by their request (first unanswered recorded call with an equal request),
tool calls by tool and arguments, so the calls of a parallel batch or of parallel sub-agents
find their answers whatever order they are made in.

`until=N, live=True` answers the first N model calls (and the tool calls before the next one)
from the recording in their recorded order, whatever the requests now say, then lets the run go
on against the real model and tools: the fork point is published as a `replay.forked` event
and, when the live part is recorded, written into the new recording's header. `until_tick=T`
forks instead at the first model or tool call the recording made at tick T or later: the
recording's ticks, its lines' `tick` (a replay, answering at once, may take fewer); with
several runs or resumes, each one's ticks go on from the previous one's last.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import re
from collections import deque
from collections.abc import Callable, Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from .._run.agent import Agent
from .._run.recording import (
    TIMING_FIELDS,
    RecordingError,
    RunRecording,
    node_of,
    read_recording,
    request_data,
)
from .._run.result import AgentResult
from ..errors import JianmuError
from ..models._client import emit_named
from ..models._errors import ModelCallFailed, ModelError
from ..models._hooks import ModelCall, ModelCallHook, model_call_hook, use_model_call_hook
from ..models._types import ModelEventCallback, ModelRequest, ModelResponse
from ..state._manager import StateError
from ..telemetry import events as ev
from ..telemetry.events import AnyEvent
from ..tools._base import Tool
from ..tools._errors import ToolArgumentsError
from ..tools._hooks import ToolInvoke, ToolTimedOut, use_tool_call_hook
from ._order import Branches, EventOrder

AgentSource = Agent | Callable[[], Agent] | str | Path
"""What replay runs: an `Agent`, a function building one, an agent file or `module:function`."""

TURN_PATIENCE = 30.0
"""Seconds a replayed call waits for the events that came before it in the recording."""
_ENTRY = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


class Divergence(BaseModel):
    """Where a replay first differed from its recording."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["model_request", "tool_call", "event", "missing_event", "extra_event"]
    """What differed: a model request, a tool call, an event; the run published fewer events
    than recorded (`missing_event`) or more (`extra_event`)."""
    tick: int
    """The tick of the replayed run it happened in (counted from the run's or resume's start)."""
    node: str | None
    """The node (path) that made the request or published the event."""
    operation: int
    """Which `run()`/`resume()` of the recording (0: the first)."""
    recorded: Any = None
    """The recorded request, tool call or event at that place (None: nothing was recorded)."""
    new: Any = None
    """What the replay asked or published there instead (None: nothing)."""
    path: str | None = None
    """The first differing field, as a JSON path (`messages[0].content`)."""

    def describe(self) -> str:
        """One readable paragraph: where, what, and the two sides of the first difference."""
        what = {
            "model_request": "the model request differs",
            "tool_call": "the tool call differs",
            "event": "the event differs",
            "missing_event": "the replay published fewer events than the recording",
            "extra_event": "the replay published an event the recording does not have",
        }[self.kind]
        where = f"tick {self.tick}, node {self.node or '?'}"
        text = f"replay diverged (operation {self.operation}, {where}): {what}"
        if self.path is not None:
            a, b = _at(self.recorded, self.path), _at(self.new, self.path)
            text += f" at {self.path}: recorded {_short(a)}, now {_short(b)}"
        else:
            text += f": recorded {_short(self.recorded)}, now {_short(self.new)}"
        return text


class ReplayDivergence(RuntimeError, JianmuError):
    """A replay that differed from its recording; `divergence` says where and how."""

    def __init__(self, divergence: Divergence) -> None:
        super().__init__(divergence.describe())
        self.divergence = divergence


class _Stop(JianmuError):
    """Internal: raised in place of the diverging call (the run is cancelled meanwhile)."""


class Player:
    """One replay of one recording (see the module); `play()` runs it."""

    def __init__(
        self,
        lines: list[dict[str, Any]],
        *,
        until: int | None = None,
        live: bool = False,
        on_event: Callable[[AnyEvent], None] | None = None,
        source: str = "",
        until_tick: int | None = None,
    ) -> None:
        if until is not None and until_tick is not None:
            raise RecordingError("give until=N (model calls) or until_tick=T (ticks), not both")
        if until is not None and not live:
            raise RecordingError(
                "until=N replays N model calls and then goes on live: give live=True (--live) too"
            )
        if until_tick is not None and not live:
            raise RecordingError(
                "until_tick=T replays up to tick T and then goes on live: give live=True (--live) too"
            )
        for name, value in (("until", until), ("until_tick", until_tick)):
            if value is not None and value < 0:
                raise RecordingError(f"{name} must be 0 or more, not {value}")
        self.header = lines[0]
        self.source = source
        self.until = until
        self.until_tick = until_tick
        self.live = live
        self.on_event = on_event
        self.operations: list[dict[str, Any]] = []
        self.events: list[list[dict[str, Any]]] = []
        self.models: list[dict[str, Any]] = []
        self.tools: list[dict[str, Any]] = []
        offset = last = 0  # the recording's ticks, counted on over its runs and resumes
        for line in lines[1:]:
            kind = line["kind"]
            if kind == "run":
                self.operations.append(line)
                self.events.append([])
                offset, last = offset + last, 0
            elif kind == "state" and self.operations:
                self.operations[-1]["start_state"] = line.get("state")
            elif kind == "event" and self.events:
                self.events[-1].append(line)
                last = max(last, int(line.get("tick") or 0))
            elif kind in ("model", "tool"):
                line["at_tick"] = offset + int(line.get("tick") or 0)
                (self.models if kind == "model" else self.tools).append(line)
        if not self.operations:
            raise RecordingError(f"{source}: the recording holds no run")
        self.end_tick = offset + last
        """The recording's last tick (counted on over its runs and resumes, as `until_tick`)."""
        self.ends_early = lines[-1]["kind"] != "result"
        """The recorded run stopped before it ended (its process killed, the run cancelled):
        past the recording's end, the replay stops with `ended_early` instead of diverging."""
        self.ended_early: RecordingError | None = None
        self._model_queues: dict[str, deque[dict[str, Any]]] = {}
        for line in self.models:
            self._model_queues.setdefault(_key(line["request"]), deque()).append(line)
        self._tool_queues: dict[str, deque[dict[str, Any]]] = {}
        for line in self.tools:
            self._tool_queues.setdefault(_key([line["tool"], line["arguments"]]), deque()).append(line)
        self._answered: set[int] = set()
        self._tools_used: set[int] = set()
        self.model_served = 0
        self.forked = False
        self.divergence: Divergence | None = None
        self._operation = 0
        self._branches = Branches(lambda: self._agent.root if self._agent is not None else None)
        self._order = EventOrder(self.events[0], self._branches)
        self._task: asyncio.Task[AgentResult] | None = None
        self._agent: Agent | None = None
        self._tick: Callable[[], int] = lambda: 0
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._injecting = False
        self._own_rules: list[Any] | None = None

    # ------------------------------------------------------------------ the run
    async def play(self, agent: Agent, *, record: str | Path | None = None) -> AgentResult:
        """Run every recorded `run()` and `resume()` on `agent`; the last one's result. A
        `ReplayDivergence` at the first difference (never when going live after it)."""
        self._agent = agent
        core = agent._core
        runner = agent.runner
        recording: RunRecording | None = None
        if record is not None:
            forked: dict[str, Any] | None = None
            if self.live:
                forked = {"recording": self.source, "iteration": self.until}
                if self.until_tick is not None:
                    forked = {"recording": self.source, "tick": self.until_tick}
            recording = RunRecording(record, agent=self.header.get("agent"), forked_from=forked)
        unsubscribe = agent.telemetry.subscribe(self._compare)
        result: AgentResult | None = None
        outer = model_call_hook()  # a hook around the replay (a server's request watch) sees each call
        try:
            with use_model_call_hook(self._within(outer)), use_tool_call_hook(self._tool):
                for index, operation in enumerate(self.operations):
                    self._operation = index
                    self._order = EventOrder(self.events[index], self._branches)
                    run_id = operation.get("run_id")
                    if isinstance(run_id, str):
                        core.new_run_id = lambda run_id=run_id: run_id  # type: ignore[misc]
                    first = runner.ticks_now
                    self._tick = lambda first=first: runner.ticks_now - first  # type: ignore[misc]
                    result = await self._operate(agent, operation, recording)
                    self._finish_operation()
        finally:
            unsubscribe()
            if recording is not None:
                recording.close()
        assert result is not None
        return result

    async def _operate(
        self, agent: Agent, operation: dict[str, Any], recording: RunRecording | None
    ) -> AgentResult:
        thread_id = operation.get("thread_id")
        # The recorded run's substitution rules, unless the caller gave the agent its own.
        if self._own_rules is None:
            self._own_rules = list(agent.substitutions.items)
        agent.substitutions.set(self._own_rules or operation.get("substitutions") or [])
        if operation.get("op") == "resume":
            decisions = {
                k: (tuple(v) if isinstance(v, list) else v) for k, v in operation["decisions"].items()
            }
            work = agent.resume(decisions)
        else:
            start = operation.get("start_state")
            if isinstance(start, dict):  # the thread's state the run started from
                core = agent._core
                core.threads.current = thread_id  # held: the run takes this state, not a fresh one
                try:
                    core.state_manager.restore(start)
                except StateError as exc:
                    raise RecordingError(
                        f"{self.source}: the state a run started from does not fit: {exc}"
                    ) from exc
            work = agent.run(revive(agent, operation.get("input") or {}) or None, thread_id=thread_id)
        if recording is not None:
            # the live continuation is recorded as a run of its own (the header says the fork)
            agent._core.recording = recording
        self._task = task = asyncio.ensure_future(work)
        try:
            result = await task
            self._stopped()
            return result
        except asyncio.CancelledError:
            self._stopped(from_cancel=True)
            raise
        except _Stop:
            self._stopped(from_cancel=True)
            raise AssertionError("a replay stopped without saying why") from None
        finally:
            if recording is not None:
                agent._core.recording = None

    def _stopped(self, *, from_cancel: bool = False) -> None:
        """Raise why the replay stopped the run, if it did: the recording ended early, or a
        divergence."""
        if self.ended_early is not None:
            raise self.ended_early from None
        if self.divergence is not None:
            if from_cancel:
                raise ReplayDivergence(self.divergence) from None
            raise ReplayDivergence(self.divergence)

    def _end_early(self, what: str) -> bool:
        """Whether the recording ended early and the replay has now gone past its end (`what`
        it asked for is beyond it): the run is then stopped, and `play` raises `ended_early`."""
        if not self.ends_early or self._operation != len(self.operations) - 1:
            return False
        if self.ended_early is None and self.divergence is None:
            served = len(self._answered)
            self.ended_early = RecordingError(
                f"{self.source or 'the recording'}: the recording ends early: its run stopped "
                f"before it ended (the process was killed, or the run cancelled), after "
                f"{served} model call(s), at tick {self.end_tick}; the replay matched it up to "
                f"there and then {what}. Replay it with live=True, until_tick={self.end_tick + 1} "
                f"(--live --until-tick {self.end_tick + 1}) to go on from its end with the real "
                "model and tools"
            )
            task = self._task
            if task is not None and not task.done():
                task.cancel()
        return True

    def _finish_operation(self) -> None:
        if self.forked:
            return
        line = self._order.pending()
        if line is not None:
            self._diverge("missing_event", line.get("node"), _event_view(line), None)
            raise ReplayDivergence(self.divergence)  # type: ignore[arg-type]

    def _diverge(self, kind: Any, node: str | None, recorded: Any, new: Any) -> None:
        if self.divergence is not None:
            return
        self.divergence = Divergence(
            kind=kind,
            tick=self._tick(),
            node=node,
            operation=self._operation,
            recorded=recorded,
            new=new,
            path=_first_difference(recorded, new) if recorded is not None and new is not None else None,
        )
        task = self._task
        if task is not None and not task.done():
            task.cancel()

    # ------------------------------------------------------------------ events
    def _compare(self, event: AnyEvent) -> None:
        if self.on_event is not None:
            self.on_event(event)
        if (
            self.divergence is not None
            or self.ended_early is not None
            or self.forked
            or event.type.startswith("replay.")
        ):
            return
        order = self._order
        new = _event_view(event)
        due = order.due(event.node)
        if due is None:
            if order.pending() is None and self._end_early(f"published {event.type!r}"):
                return
            self._diverge("extra_event", event.node, None, new)
            return
        recorded = _event_view(order.expected[due])
        if recorded != new:
            self._diverge("event", event.node, recorded, new)
            return
        order.publish(due)
        self._release()
        self._follow_up()

    def _follow_up(self) -> None:
        """Send the follow-ups the recording received at this place of the event stream (an
        `inject` queued there, once every event before it is published): the replay injects
        them itself, at the same point of the run."""
        order = self._order
        agent = self._agent
        while not self._injecting and agent is not None and (line := order.pending()) is not None:
            data = line.get("data") or {}
            if line.get("type") != ev.INJECT or data.get("status") != "queued":
                return
            at = order.low
            self._injecting = True
            try:
                agent.inject(str(data.get("content") or ""), namespace=line.get("namespace"))
            except (RuntimeError, ValueError) as exc:
                self._diverge("missing_event", line.get("node"), _event_view(line), {"error": str(exc)})
                return
            finally:
                self._injecting = False
            if order.low == at:  # it published nothing the comparison took
                return

    async def _turn(self, before: Any) -> None:
        """Wait until the replay has published the first `before` recorded events of this
        operation, as the recording had at this point of a call (a parallel batch answers, and
        parallel model calls publish, in their recorded order); a wait that the replay cannot
        end within `TURN_PATIENCE` seconds is a divergence (an event that never came)."""
        if not isinstance(before, int) or self.forked or self._order.low >= before:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append((before, waiter))
        try:
            await asyncio.wait_for(waiter, TURN_PATIENCE)
        except TimeoutError:
            missing = self._order.pending()
            self._diverge("missing_event", None, _event_view(missing) if missing else None, None)
            raise _Stop from None

    def _release(self) -> None:
        waiters = self._waiters
        if waiters:
            low = self._order.low
            ready = [w for w in waiters if low >= w[0]]
            for item in ready:
                waiters.remove(item)
                if not item[1].done():
                    item[1].set_result(None)

    # ------------------------------------------------------------------ the seams
    def _within(self, outer: ModelCallHook | None) -> ModelCallHook:
        """The player's model hook, inside `outer` when there is one: `outer` sees each request
        and its `call` is the player's answer (so a watcher around a replay, such as the server's
        list of a run's requests, gets the replayed run's requests as a live run's)."""
        if outer is None:
            return self._model

        async def hook(
            call: ModelCall, request: ModelRequest, on_event: ModelEventCallback | None
        ) -> ModelResponse:
            async def answer(request: ModelRequest, on_event: ModelEventCallback | None) -> ModelResponse:
                return await self._model(call, request, on_event)

            return await outer(answer, request, on_event)

        return hook

    async def _model(
        self, call: ModelCall, request: ModelRequest, on_event: ModelEventCallback | None
    ) -> ModelResponse:
        if self.forked:
            return await call(request, on_event)
        new = request_data(request)
        line: dict[str, Any] | None
        if self.live:  # answered in recorded order: the requests may have changed on purpose
            line = self.models[self.model_served] if self.model_served < len(self.models) else None
            if (self.until is not None and self.model_served >= self.until) or self._tick_reached(line):
                self._fork(node_of(on_event))
                return await call(request, on_event)
        else:
            queue = self._model_queues.get(_key(new))
            line = queue.popleft() if queue else None
        if line is None:
            waiting = [m for m in self.models if m["seq"] not in self._answered]
            if not waiting and self._end_early("asked the model once more"):
                raise _Stop
            recorded = waiting[0]["request"] if waiting else None
            self._diverge("model_request", node_of(on_event), recorded, new)
            raise _Stop
        self._answered.add(line["seq"])
        self.model_served += 1
        if not self.live:
            await self._turn(line.get("events_before"))
        if on_event is not None:
            places = line.get("event_at") or []
            for index, (event_type, data) in enumerate(line.get("events", ())):
                if not self.live and index < len(places):
                    await self._turn(places[index])
                emit_named(on_event, event_type, data)
        if "error" in line:
            raise _rebuild(line["error"])
        return ModelResponse.model_validate(line["response"])

    async def _tool(self, invoke: ToolInvoke, tool: Tool, arguments: dict[str, Any]) -> Any:
        if self.forked:
            return await invoke(tool, arguments)
        from .._base.redact import redact
        from .._run.recording import jsonable

        new = [tool.name, redact(jsonable(arguments))]
        queue = self._tool_queues.get(_key(new))
        if self.until_tick is not None and self._tick_reached(queue[0] if queue else None):
            self._fork(None)
            return await invoke(tool, arguments)
        line = queue.popleft() if queue else None
        if line is None:
            waiting = [t for i, t in enumerate(self.tools) if i not in self._tools_used]
            if not waiting and self._end_early(f"called the tool {tool.name!r}"):
                raise _Stop
            recorded = [waiting[0]["tool"], waiting[0]["arguments"]] if waiting else None
            self._diverge("tool_call", None, recorded, new)
            raise _Stop
        self._tools_used.add(self.tools.index(line))
        await self._turn(line.get("events_before"))
        if "error" in line:
            raise _rebuild(line["error"])
        return line["output"]

    def _tick_reached(self, line: dict[str, Any] | None) -> bool:
        """Whether `until_tick` says to go live at the call the recording answered with `line`
        (None: one it never made)."""
        if self.until_tick is None:
            return False
        return line is None or int(line["at_tick"]) >= self.until_tick

    def _fork(self, node: str | None) -> None:
        self.forked = True
        agent = self._agent
        if agent is not None:
            agent.telemetry.emit(
                ev.ReplayForked,
                node=node,
                namespace=agent.namespace,
                iteration=self.model_served,
                tick=self._tick(),
                recording=self.source,
            )


# ---------------------------------------------------------------------- loading and helpers
def load_replay_agent(agent: AgentSource | None, header: Mapping[str, Any], source: str) -> Agent:
    """The agent to replay on: the one given (an `Agent`, or built by a function), else the
    agent file or `module:function` entry the recording names, loaded afresh."""
    if isinstance(agent, Agent):
        return agent
    if callable(agent):
        built = agent()
        if not isinstance(built, Agent):
            raise RecordingError(f"the agent factory returned {type(built).__name__}, not an Agent")
        return built
    where = str(agent) if agent is not None else header.get("agent")
    if not where:
        raise RecordingError(
            f"{source}: the recording names no agent file or Python entry (recorded from code): "
            "give the agent to replay on (agent=... / --agent FILE)"
        )
    if entry_of(where) is not None:
        module_name, _, function = where.partition(":")
        try:
            factory = getattr(importlib.import_module(module_name), function)
        except (ImportError, AttributeError) as exc:
            raise RecordingError(f"cannot load the agent entry {where!r}: {exc}") from exc
        built = factory()
        if not isinstance(built, Agent):
            raise RecordingError(f"{where} returned {type(built).__name__}, not an Agent")
        return built
    from ..agentfile._loader import load_agent

    loaded: Agent = load_agent(where)
    return loaded


def entry_of(where: Any) -> str | None:
    """The `module:function` entry a recording's `agent` names (None: an agent file's path, or
    nothing): what replay imports and calls to build the agent."""
    if isinstance(where, str) and _ENTRY.match(where) and not Path(where).exists():
        return where
    return None


def revive(agent: Agent, data: Mapping[str, Any]) -> dict[str, Any]:
    """Recorded input as the run took it: each value of a state field validated as that
    field's type (messages back to `Message`s); other values as recorded."""
    fields = agent.state_manager.schema.model_fields
    out: dict[str, Any] = {}
    for key, value in data.items():
        field = fields.get(key.rpartition(".")[2])
        if field is not None and field.annotation is not None:
            with suppress(ValidationError):  # else as recorded: the run took it as it was
                value = TypeAdapter(field.annotation).validate_python(value)
        out[key] = value
    return out


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=repr)


def _event_view(event: AnyEvent | Mapping[str, Any]) -> dict[str, Any]:
    """What of an event replay compares: everything but the timing fields."""
    if not isinstance(event, Mapping):
        raw: Mapping[str, Any] = {
            "type": event.type,
            "node": event.node,
            "namespace": event.namespace,
            "run_id": event.run_id,
            "data": event.data,
        }
    else:
        raw = event
    data = raw.get("data") or {}
    # through JSON, as recorded: tuples become lists, models their dumps
    plain = _untimed(json.loads(json.dumps(data, default=repr)))
    return {
        "type": raw.get("type"),
        "node": raw.get("node"),
        "namespace": raw.get("namespace"),
        "run_id": raw.get("run_id"),
        "data": plain,
    }


def _untimed(value: Any) -> Any:
    """`value` (JSON data) without the timing fields, at any depth."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k not in TIMING_FIELDS}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def _first_difference(a: Any, b: Any, path: str = "") -> str | None:
    """The JSON path of the first place `a` and `b` differ (None: equal)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in [*a, *(k for k in b if k not in a)]:
            if key not in a or key not in b:
                return f"{path}.{key}" if path else str(key)
            found = _first_difference(a[key], b[key], f"{path}.{key}" if path else str(key))
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        for index, (x, y) in enumerate(zip(a, b, strict=False)):
            found = _first_difference(x, y, f"{path}[{index}]")
            if found is not None:
                return found
        return None if len(a) == len(b) else f"{path}[{min(len(a), len(b))}]"
    return None if a == b else (path or "$")


_STEP = re.compile(r"\.?([^.\[\]]+)|\[(\d+)\]")


def _at(value: Any, path: str) -> Any:
    if path == "$":
        return value
    for name, index in _STEP.findall(path):
        if index:
            value = value[int(index)] if isinstance(value, list) and int(index) < len(value) else None
        else:
            value = value.get(name) if isinstance(value, dict) else None
    return value


def _short(value: Any, limit: int = 300) -> str:
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _rebuild(error: Mapping[str, Any]) -> BaseException:
    """The recorded failure of a call, raised again: the same class name and message, so the
    node turns it into the same observation or failure it did when recorded."""
    name, message = str(error.get("type", "Exception")), str(error.get("message", ""))
    if error.get("timed_out") is True:  # a tool call its deadline cancelled
        return ToolTimedOut(message)
    if name == "ModelCallFailed":
        attempts = [ModelError(str(a)) for a in error.get("attempts") or ()]
        return ModelCallFailed(message, attempts=attempts)
    base: type[BaseException] = Exception
    if name == "ToolArgumentsError":
        base = ToolArgumentsError
    elif name == "CancelledError":
        return asyncio.CancelledError(message)
    elif name in ("TimeoutError", "KeyboardInterrupt", "SystemExit"):
        base = {"TimeoutError": TimeoutError, "KeyboardInterrupt": Exception, "SystemExit": Exception}[name]
    cls: type[BaseException] = type(name, (base,), {"__str__": lambda self: message})
    exc: BaseException = BaseException.__new__(cls)
    BaseException.__init__(exc, message)
    return exc


def read(path: str | Path) -> list[dict[str, Any]]:
    """The checked lines of the recording at `path` (a `RecordingError` otherwise)."""
    return read_recording(path)
