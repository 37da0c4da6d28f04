"""A thread's runs kept as recordings in a real SQLite store (`keep_recordings`): the same lines
as `record=FILE` writes for the same run, replayed from the store to the same event stream; a
run and its approval's resume (in another agent, as another process would) are one recording;
the size bound and the retention; two threads at once; off by default, on from the
configuration; bad values refused. (PostgreSQL: the contract tests, tests/checkpoint.)"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from jianmu_like import Agent, ToolCall, create_react_node, human
from jianmu_like._base.config import get_config
from jianmu_like._run.thread_recordings import replayable_recording
from jianmu_like.checkpoint import (
    CheckpointError,
    RecordingRetention,
    SQLiteCheckpointer,
    UnknownRecordingError,
)
from jianmu_like.guard import GuardDecision, GuardEnforcer
from jianmu_like.replay import RecordingError, areplay, parse_recording, read_recording
from jianmu_like.telemetry.events import Event
from jianmu_like.testing import PATIENCE, call, calls, reply, scripted_client
from jianmu_like.tools.builtin import calculator

SCRIPT = [calls(call("calculator", expression="6*7"), content="Let me compute."), reply("It is 42.")]


def calc_agent(script: list[Any], store: Any = None, **kwargs: Any) -> Agent:
    root = create_react_node(
        model_client=scripted_client(list(script)), tools=[calculator], **kwargs.pop("node", {})
    )
    return Agent(root, checkpointer=store, **kwargs)


def offline() -> Agent:
    return calc_agent([])


def without_header(data: bytes) -> list[Any]:
    return [json.loads(raw) for raw in data.splitlines()[1:]]


def view(e: Event) -> tuple[Any, ...]:
    return (
        e.type,
        e.node,
        e.run_id,
        json.dumps({k: v for k, v in e.data.items() if k != "duration"}, sort_keys=True),
    )


async def test_a_kept_recording_is_the_file_recording_and_replays_to_the_same_events(tmp_path: Path) -> None:
    store = SQLiteCheckpointer(tmp_path / "runs.db")
    agent = calc_agent(SCRIPT, store, keep_recordings=RecordingRetention(max_runs=5))
    path = tmp_path / "run.jsonl"
    result = await agent.run({"messages": [human("6*7?")]}, thread_id="t1", record=path)
    assert result.final_answer == "It is 42."
    [info] = store.recordings("t1")
    assert (info.run_id, info.status, info.truncated) == (result.run_id, "success", False)
    assert info.ended_at is not None and info.ended_at >= info.started_at
    stored = store.read_recording("t1", result.run_id)
    assert info.size == len(stored)
    file = path.read_bytes()
    # The same run written twice: every line after the header is the same (the header's
    # creation time differs).
    assert without_header(stored) == without_header(file)
    assert json.loads(stored.splitlines()[0])["format"] == "jianmu-like.recording"
    from_file: list[Event] = []
    from_store: list[Event] = []
    replayed_file = await areplay(path, agent=offline, on_event=from_file.append)
    replayed_store = await areplay(stored, agent=offline, on_event=from_store.append)
    assert [view(e) for e in from_store] == [view(e) for e in from_file]
    assert len(from_store) > 5 and {"tool.call.completed", "model.call.completed"} <= {
        e.type for e in from_store
    }
    assert replayed_store.final_answer == replayed_file.final_answer == "It is 42."
    assert replayed_store.run_id == result.run_id
    await agent.aclose()
    # The store reopened (another process, a restart): still there, still replays.
    reopened = SQLiteCheckpointer(tmp_path / "runs.db", readonly=True)
    info_again, data = replayable_recording(reopened, "t1", label="runs.db")
    assert info_again.run_id == result.run_id and data == stored
    reopened.close()
    store.close()


def needs_approval(call: ToolCall, _tool: Any, _ctx: Any) -> GuardDecision | None:
    return GuardDecision.pending("a human checks every calculation") if call.name == "calculator" else None


async def test_a_run_and_its_resume_in_another_agent_are_one_recording(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    node = {"constraints": GuardEnforcer([needs_approval])}
    first_agent = calc_agent(SCRIPT[:1], str(db), keep_recordings=True, node=node)
    first = await first_agent.run({"messages": [human("6*7?")]}, thread_id="t")
    assert first.status == "suspended"
    [approval] = first.pending_approvals
    await first_agent.aclose()
    store = SQLiteCheckpointer(db)
    [info] = store.recordings("t")
    assert info.status == "suspended" and info.replayable
    # Another agent (as another process would): the resume continues the same recording.
    second_agent = calc_agent(SCRIPT[1:], str(db), keep_recordings=True, node=node)
    done = await second_agent.resume({approval.id: "approve"}, thread_id="t")
    assert done.final_answer == "It is 42."
    await second_agent.aclose()
    [info] = store.recordings("t")
    assert (info.run_id, info.status) == (first.run_id, "success")
    lines = parse_recording(store.read_recording("t", info.run_id), "stored")
    assert [line["op"] for line in lines if line["kind"] == "run"] == ["run", "resume"]
    seqs = [line["seq"] for line in lines if line["kind"] == "model"]
    assert seqs == [1, 2]  # the resume's model call goes on from the run's
    replayed = await areplay(
        store.read_recording("t", info.run_id),
        agent=lambda: calc_agent([], node={"constraints": GuardEnforcer([needs_approval])}),
    )
    assert (replayed.status, replayed.final_answer) == ("success", "It is 42.")
    store.close()


async def test_the_size_bound_and_the_retention(tmp_path: Path) -> None:
    store = SQLiteCheckpointer(tmp_path / "runs.db")
    small = calc_agent(SCRIPT, store, keep_recordings=RecordingRetention(max_bytes=4096))
    result = await small.run({"messages": [human("6*7?" + " please" * 400)]}, thread_id="big")
    assert result.final_answer == "It is 42."  # the run goes on past the bound
    [info] = store.recordings("big")
    assert info.truncated and info.status == "success" and not info.replayable and info.size <= 4096 + 200
    with pytest.raises(RecordingError, match="truncated at its size limit"):
        replayable_recording(store, "big", label="runs.db")
    with pytest.raises(RecordingError, match="truncated at its size limit"):
        await areplay(store.read_recording("big", info.run_id), agent=offline)
    kept = calc_agent(SCRIPT * 3, store, keep_recordings=RecordingRetention(max_runs=2))
    runs = [(await kept.run({"messages": [human("6*7?")]}, thread_id="t")).run_id for _ in range(3)]
    assert [i.run_id for i in store.recordings("t")] == [runs[2], runs[1]]  # the oldest went first
    assert [i.run_id for i in store.recordings("big")] == [info.run_id]  # another thread untouched
    assert all(i.size > 4096 for i in store.recordings("t"))  # a run's recording is larger than...
    by_bytes = calc_agent(SCRIPT * 2, store, keep_recordings=RecordingRetention(max_thread_bytes=4096))
    latest = [(await by_bytes.run({"messages": [human("6*7?")]}, thread_id="b")).run_id for _ in range(2)]
    # ...this bound: the older goes, the one just written stays though it alone passes it
    assert [i.run_id for i in store.recordings("b")] == [latest[1]]
    store.close()


async def test_two_threads_at_once_each_get_their_own_recording(tmp_path: Path) -> None:
    store = SQLiteCheckpointer(tmp_path / "runs.db")
    a = calc_agent(SCRIPT, store, keep_recordings=True)
    b = calc_agent([reply("Hello.")], store, keep_recordings=True)
    ra, rb = await asyncio.gather(
        a.run({"messages": [human("6*7?")]}, thread_id="a"), b.run({"messages": [human("hi")]}, thread_id="b")
    )
    for thread, result, build in (("a", ra, offline), ("b", rb, lambda: calc_agent([]))):
        [info] = store.recordings(thread)
        data = store.read_recording(thread, info.run_id)
        events = [line for line in parse_recording(data, thread) if line["kind"] == "event"]
        assert {e["run_id"] for e in events} == {result.run_id}  # nothing of the other run
        replayed = await areplay(data, agent=build)
        assert replayed.final_answer == result.final_answer
    store.close()


async def test_off_by_default_on_from_the_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SQLiteCheckpointer(tmp_path / "runs.db")
    await calc_agent(SCRIPT, store).run({"messages": [human("6*7?")]}, thread_id="off")
    assert store.recordings("off") == []
    config = tmp_path / "jianmu.yaml"
    config.write_text("checkpoints:\n  recordings:\n    max_runs: 3\n    max_bytes: 1MiB\n")
    monkeypatch.setenv("JIANMU_CONFIG", str(config))
    assert get_config(reload=True).checkpoints.recordings == RecordingRetention(
        max_runs=3, max_bytes=1024 * 1024
    )
    await calc_agent(SCRIPT, store).run({"messages": [human("6*7?")]}, thread_id="on")
    assert [i.status for i in store.recordings("on")] == ["success"]
    await calc_agent(SCRIPT, store, keep_recordings=False).run({"messages": [human("6*7?")]}, thread_id="no")
    assert store.recordings("no") == []  # False turns it off whatever the configuration says
    config.write_text("checkpoints:\n  recordings:\n    max_runs: 0\n")
    with pytest.raises(
        Exception, match=r"jianmu\.yaml:3: checkpoints\.recordings\.max_runs: .*greater than or equal to 1"
    ):
        get_config(reload=True)
    store.close()


def test_bad_values_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="max_runs"):
        RecordingRetention(max_runs=0)
    with pytest.raises(ValidationError, match="max_bytes"):
        RecordingRetention(max_bytes="lots")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="max_bytes"):
        RecordingRetention(max_bytes=100)
    with pytest.raises(ValidationError, match="unlimited"):
        RecordingRetention(unlimited=True)  # type: ignore[call-arg]
    assert RecordingRetention(max_bytes="16MiB").max_bytes == 16 * 1024 * 1024  # type: ignore[arg-type]
    with pytest.raises(CheckpointError, match="keep_recordings takes a RecordingRetention"):
        calc_agent([], str(tmp_path / "x.db"), keep_recordings={"max_runs": 2})
    storeless = calc_agent([], keep_recordings=True)
    with pytest.raises(
        CheckpointError, match=r"give the agent a checkpointer \(Agent\(checkpointer=\.\.\.\) or run"
    ):
        storeless.run_sync({"messages": [human("6*7?")]})
    # given at run time, the store keeps them
    store = SQLiteCheckpointer(tmp_path / "later.db")
    late = calc_agent(SCRIPT, keep_recordings=True)
    late.run_sync({"messages": [human("6*7?")]}, thread_id="t", checkpointer=store)
    assert [i.status for i in store.recordings("t")] == ["success"]
    store.close()


def test_a_thread_without_recordings_says_how_to_keep_them(tmp_path: Path) -> None:
    store = SQLiteCheckpointer(tmp_path / "runs.db")
    with pytest.raises(UnknownRecordingError, match=r"has no recordings \(runs are kept as recordings with"):
        replayable_recording(store, "t", label="runs.db")
    store.append_recording("t", "r1", b"x\n", status="success")
    with pytest.raises(UnknownRecordingError, match=r"no recording of run 'r2' \(recordings: r1\)"):
        replayable_recording(store, "t", "r2", label="runs.db")
    store.close()
    assert read_recording  # the file API stays the same


async def test_on_postgresql_a_run_and_its_resume_replay_from_the_store(postgres_url: str) -> None:
    node = {"constraints": GuardEnforcer([needs_approval])}
    agent = calc_agent(SCRIPT, postgres_url, keep_recordings=True, node=node)
    first = await agent.run({"messages": [human("6*7?")]}, thread_id="pg")
    [approval] = first.pending_approvals
    done = await agent.resume({approval.id: "approve"}, thread_id="pg")
    assert done.final_answer == "It is 42."
    store = agent.checkpointer
    assert store is not None
    [info] = store.recordings("pg")
    assert (info.run_id, info.status) == (first.run_id, "success")
    data = store.read_recording("pg", info.run_id)
    replayed = await areplay(data, agent=lambda: calc_agent([], node=node))
    assert (replayed.status, replayed.final_answer, replayed.run_id) == ("success", "It is 42.", done.run_id)
    await agent.aclose()


async def test_a_cancelled_run_leaves_an_incomplete_recording(tmp_path: Path) -> None:
    from jianmu_like import tool

    entered, never = asyncio.Event(), asyncio.Event()

    @tool
    async def block(note: str) -> str:
        """Wait until released.

        Args:
            note: Anything.
        """
        entered.set()
        await never.wait()
        return "released"

    store = SQLiteCheckpointer(tmp_path / "runs.db")
    root = create_react_node(model_client=scripted_client([calls(call("block", note="x"))]), tools=[block])
    agent = Agent(root, checkpointer=store, keep_recordings=True)
    task = asyncio.create_task(agent.run({"messages": [human("go")]}, thread_id="c"))
    await asyncio.wait_for(entered.wait(), PATIENCE)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    [info] = store.recordings("c")
    assert info.status == "incomplete" and info.ended_at is not None and not info.replayable
    with pytest.raises(RecordingError, match="incomplete: its run stopped mid-way"):
        replayable_recording(store, "c", label="runs.db")
    store.close()


def test_an_event_past_the_limit_truncates_even_when_a_few_bytes_are_left(tmp_path: Path) -> None:
    """The event line that does not fit ends the recording with the `truncated` line (it used to
    write an empty `{}` line when 3 bytes were left, and the file could not be read)."""
    from jianmu_like.replay import RunRecording
    from jianmu_like.telemetry import events as ev
    from jianmu_like.telemetry._hub import TelemetryHub

    path = tmp_path / "small.jsonl"
    recording = RunRecording(path, max_bytes=4096)
    recording.written = 4096 - 10  # room for `{}` but not for an event
    hub = TelemetryHub()
    with recording.recording(hub):
        hub.emit(ev.RunStarted, node="root", namespace=None, thread_id="t")
    recording.close()
    assert [json.loads(raw)["kind"] for raw in path.read_bytes().splitlines()] == ["header", "truncated"]
    with pytest.raises(RecordingError, match="truncated at its size limit"):
        read_recording(path)


async def test_a_threads_later_run_replays_from_the_state_it_started_from(tmp_path: Path) -> None:
    """A run that continues a thread starts from the thread's conversation so far: its
    recording (kept or a file) holds that state, and the replay starts from it."""
    store = SQLiteCheckpointer(tmp_path / "runs.db")
    agent = calc_agent(SCRIPT * 2, store, keep_recordings=True)
    await agent.run({"messages": [human("6*7?")]}, thread_id="t")
    second = await agent.run({"messages": [human("and again?")]}, thread_id="t", record=tmp_path / "2.jsonl")
    newest, _first = store.recordings("t")
    assert newest.run_id == second.run_id
    data = store.read_recording("t", newest.run_id)
    [state] = [line["state"] for line in parse_recording(data, "stored") if line["kind"] == "state"]
    assert [m["content"] for m in state["messages"]][-1] == "It is 42."  # the first run's end
    seen: list[Event] = []
    replayed = await areplay(data, agent=offline, on_event=seen.append)
    assert [m.content for m in replayed.state.messages] == [m.content for m in second.state.messages]
    assert len(replayed.state.messages) == len(second.state.messages) > 4
    from_file = await areplay(tmp_path / "2.jsonl", agent=offline)
    assert from_file.final_answer == replayed.final_answer == "It is 42."
    assert seen and all(e.run_id == second.run_id for e in seen)
    store.close()
