"""Record a run and replay it: over real HTTP (the openai client against the scripted server),
then with the server gone and sockets refused, no tool side effect, the same event stream; a
changed agent diverges at the first model request; parallel batches, approvals with a resume,
plan-and-execute, going live after N iterations, exports as mock replies, bounds and redaction."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import pytest

from jianmu_like import (
    Agent,
    ReActConfig,
    ToolCall,
    create_plan_execute_node,
    create_react_node,
    create_research_node,
    create_supervisor_node,
    human,
    tool,
)
from jianmu_like._base.redact import (
    _SECRET_KEY,
    _SECRET_VALUE,
    might_hold_secret,
    redact,
    redact_bulk,
    register_secret,
)
from jianmu_like.guard import GuardDecision, GuardEnforcer
from jianmu_like.replay import (
    RecordingError,
    ReplayDivergence,
    RunRecording,
    areplay,
    export_mock,
    read_recording,
)
from jianmu_like.telemetry.events import Event
from jianmu_like.testing import (
    RepliesFile,
    ScriptedOpenAIServer,
    areplay_recording,
    call,
    calls,
    error_reply,
    recordings,
    reply,
    scripted_client,
)
from jianmu_like.tools.builtin import calculator

from . import agents


@pytest.fixture
def notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    out = tmp_path / "notes.txt"
    monkeypatch.setattr(agents, "OUT", out)
    return out


def refuse_sockets(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """From now on every attempt to open a connection is refused (and counted)."""
    attempts: list[Any] = []

    def refuse(self: socket.socket, address: Any) -> None:
        attempts.append(address)
        raise OSError("replay must not open sockets")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    return attempts


def note_agent(client: Any, prompt: str = "You keep notes.") -> Agent:
    config = ReActConfig(system_prompt=prompt, stream=True)
    return Agent(create_react_node(model_client=client, tools=[agents.write_note], config=config))


def recorded_events(path: Path) -> list[dict[str, Any]]:
    return [line for line in read_recording(path) if line["kind"] == "event"]


def view(event: dict[str, Any]) -> tuple[Any, ...]:
    data = {k: v for k, v in event["data"].items() if k != "duration"}
    return (
        event["type"],
        event["node"],
        event["namespace"],
        event["run_id"],
        json.dumps(data, sort_keys=True),
    )


def as_line(event: Event) -> dict[str, Any]:
    """A published event as `view` takes a recorded one."""
    fields = ("type", "node", "namespace", "run_id", "data")
    return {name: getattr(event, name) for name in fields}


SCRIPT = [
    calls(call("write_note", text="buy milk"), content="Writing it down."),
    reply("Noted: buy milk."),
]


async def record_notes(path: Path, notes: Path) -> Any:
    async with ScriptedOpenAIServer(SCRIPT) as srv:
        agent = note_agent(srv.client())
        result = await agent.run({"messages": [human("Remember to buy milk")]}, record=path)
        assert len(srv.requests) == 2
    assert notes.read_text() == "buy milk\n"
    notes.unlink()
    return result


async def test_a_replay_calls_no_model_and_no_tool_and_publishes_the_same_events(
    tmp_path: Path, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "run.jsonl"
    async with ScriptedOpenAIServer(SCRIPT) as srv:
        agent = note_agent(srv.client())
        recorded = await agent.run({"messages": [human("Remember to buy milk")]}, record=path)
    notes.unlink()
    no_sockets = refuse_sockets(monkeypatch)
    seen: list[Event] = []
    result = await areplay(path, agent=lambda: note_agent(scripted_client([])), on_event=seen.append)
    assert no_sockets == []  # the server is gone, and no connection was even tried
    assert not notes.exists()  # the tool did not run
    assert (
        (result.status, result.final_answer)
        == ("success", "Noted: buy milk.")
        == (
            recorded.status,
            recorded.final_answer,
        )
    )
    assert result.usage == recorded.usage and result.run_id == recorded.run_id
    assert [m.model_dump() for m in result.state.messages] == [
        m.model_dump() for m in recorded.state.messages
    ]
    # Every event, in order, equal but for the timing fields (streamed deltas included).
    new = [
        view({"type": e.type, "node": e.node, "namespace": e.namespace, "run_id": e.run_id, "data": e.data})
        for e in seen
    ]
    assert new == [view(e) for e in recorded_events(path)]
    types = {e.type for e in seen}
    assert {"text.delta", "tool.call.started", "tool.call.completed", "model.call.completed"} <= types


async def test_a_changed_system_prompt_diverges_at_the_first_model_request(
    tmp_path: Path, notes: Path
) -> None:
    path = tmp_path / "run.jsonl"
    await record_notes(path, notes)
    with pytest.raises(ReplayDivergence) as caught:
        await areplay(path, agent=lambda: note_agent(scripted_client([]), prompt="You forget notes."))
    divergence = caught.value.divergence
    assert divergence.kind == "model_request"
    assert divergence.tick == 1 and divergence.operation == 0
    assert divergence.node is not None and divergence.node.endswith("ReActAgent.LLM")
    assert divergence.path == "messages[0].content"
    assert divergence.recorded["messages"][0]["content"].startswith("You keep notes.")
    assert divergence.new["messages"][0]["content"].startswith("You forget notes.")
    assert "model request differs at messages[0].content" in str(caught.value)
    assert not notes.exists()


async def test_the_recording_names_its_python_entry_and_replay_loads_it(tmp_path: Path, notes: Path) -> None:
    path = tmp_path / "run.jsonl"
    async with ScriptedOpenAIServer(SCRIPT) as srv:
        recording = RunRecording(path, agent="tests.replay.agents:offline")
        agent = Agent(
            create_react_node(
                model_client=srv.client(),
                tools=[agents.write_note],
                config=ReActConfig(system_prompt="You keep notes."),
            ),
            record=recording,
        )
        await agent.run({"messages": [human("Remember to buy milk")]})
        await agent.aclose()
    notes.unlink()
    header = read_recording(path)[0]
    assert header["agent"] == "tests.replay.agents:offline" and header["version"] == 1
    result = await areplay(path)  # the agent comes from the entry the recording names
    assert result.final_answer == "Noted: buy milk." and not notes.exists()


# ------------------------------------------------------------------------ parallel, approvals, presets
@tool(parallel_safe=True)
async def slow_lookup(city: str) -> str:
    """Population of a city.

    Args:
        city: The city.
    """
    await asyncio.sleep({"Paris": 0.05, "Rome": 0.0}[city])  # Paris finishes last when recorded
    return {"Paris": "2.1 million", "Rome": "2.8 million"}[city]


async def test_a_parallel_tool_batch_replays(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    script = [
        calls(call("slow_lookup", city="Paris"), call("slow_lookup", city="Rome")),
        reply("Rome is bigger."),
    ]

    def build(client: Any) -> Agent:
        config = ReActConfig(execution_mode="parallel")
        return Agent(create_react_node(model_client=client, tools=[slow_lookup], config=config))

    async with ScriptedOpenAIServer(script) as srv:
        recorded = await build(srv.client()).run({"messages": [human("Which is bigger?")]}, record=path)
    tools = [line for line in read_recording(path) if line["kind"] == "tool"]
    assert sorted(t["output"] for t in tools) == ["2.1 million", "2.8 million"]
    result = await areplay(path, agent=lambda: build(scripted_client([])))
    assert result.final_answer == recorded.final_answer == "Rome is bigger."
    assert [m.content for m in result.state.messages] == [m.content for m in recorded.state.messages]


def needs_approval(call: ToolCall, _tool: Any, _ctx: Any) -> GuardDecision | None:
    return GuardDecision.pending("a human checks every calculation") if call.name == "calculator" else None


async def test_an_approval_and_its_resume_replay(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    script = [calls(call("calculator", expression="6*7")), reply("It is 42.")]

    def build(client: Any, record: Path | None = None) -> Agent:
        root = create_react_node(
            model_client=client, tools=[calculator], constraints=GuardEnforcer([needs_approval])
        )
        return Agent(root, record=record)

    async with ScriptedOpenAIServer(script) as srv:
        agent = build(srv.client(), path)
        first = await agent.run({"messages": [human("6*7?")]})
        assert first.status == "suspended"
        [approval] = first.pending_approvals
        done = await agent.resume({approval.id: "approve"})
        await agent.aclose()
    assert done.final_answer == "It is 42."
    operations = [line["op"] for line in read_recording(path) if line["kind"] == "run"]
    assert operations == ["run", "resume"]
    result = await areplay(path, agent=lambda: build(scripted_client([])))
    assert (result.status, result.final_answer) == ("success", "It is 42.")
    assert result.run_id == done.run_id


async def test_plan_and_execute_replays(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    script = [
        reply(tool_calls=[call("Plan", steps=[{"task": "compute 6*7"}])]),
        calls(call("calculator", expression="6*7")),
        reply("42"),
        reply("6*7 is 42."),
    ]

    def build(client: Any) -> Agent:
        return Agent(create_plan_execute_node("Solve", model_client=client, tools=[calculator]))

    async with ScriptedOpenAIServer(script) as srv:
        recorded = await build(srv.client()).run({"messages": [human("6*7?")]}, record=path)
    assert recorded.final_answer == "6*7 is 42."
    seen: list[Event] = []
    result = await areplay(path, agent=lambda: build(scripted_client([])), on_event=seen.append)
    assert result.final_answer == "6*7 is 42."
    assert "plan.step.completed" in {e.type for e in seen}
    assert len(seen) == len(recorded_events(path))


# ------------------------------------------------------------------------ live, mock, bounds, secrets
async def test_replay_until_an_iteration_then_live_on_a_changed_model(tmp_path: Path, notes: Path) -> None:
    path, forked = tmp_path / "run.jsonl", tmp_path / "forked.jsonl"
    await record_notes(path, notes)
    seen: list[Event] = []
    async with ScriptedOpenAIServer([reply("Noted, live.")]) as live:
        result = await areplay(
            path,
            agent=lambda: note_agent(live.client()),
            until=1,
            live=True,
            on_event=seen.append,
            record=forked,
        )
        assert len(live.requests) == 1  # only the second model call went to the model
        asked = live.requests[0]["messages"]
    assert result.final_answer == "Noted, live."
    assert not notes.exists()  # the tool call of iteration 1 came from the recording
    assert asked[-1]["role"] == "tool" and asked[-1]["content"] == "wrote 8 characters"
    [fork] = [e for e in seen if e.type == "replay.forked"]
    assert fork.data["iteration"] == 1 and fork.data["recording"] == str(path)
    assert read_recording(forked)[0]["forked_from"] == {"recording": str(path), "iteration": 1}


@pytest.mark.parametrize("fork_at", ["tool", "model"])
async def test_replay_until_a_tick_then_live(tmp_path: Path, notes: Path, fork_at: str) -> None:
    """`until_tick=T`: every call made before tick T is answered from the recording, the first
    one from T on (the tool call, or the second model call) and all after it go live."""
    path, forked = tmp_path / "run.jsonl", tmp_path / "forked.jsonl"
    await record_notes(path, notes)
    lines = read_recording(path)
    [tool_line] = [line for line in lines if line["kind"] == "tool"]
    first, second = [line for line in lines if line["kind"] == "model"]
    assert first["tick"] < tool_line["tick"] < second["tick"]
    tick = tool_line["tick"] if fork_at == "tool" else second["tick"]
    seen: list[Event] = []
    async with ScriptedOpenAIServer([reply("Noted, live.")]) as live:
        result = await areplay(
            path,
            agent=lambda: note_agent(live.client()),
            until_tick=tick,
            live=True,
            on_event=seen.append,
            record=forked,
        )
        assert len(live.requests) == 1  # the second model call only
    assert result.final_answer == "Noted, live."
    assert notes.exists() == (fork_at == "tool")  # the tool ran only when the fork came before it
    [fork] = [e for e in seen if e.type == "replay.forked"]
    assert fork.data["iteration"] == 1  # its `tick` is the replay's: answered at once, it may be earlier
    assert read_recording(forked)[0]["forked_from"] == {"recording": str(path), "tick": tick}


async def test_until_and_until_tick_together_are_refused(tmp_path: Path, notes: Path) -> None:
    path = tmp_path / "run.jsonl"
    await record_notes(path, notes)
    with pytest.raises(RecordingError, match="not both"):
        await areplay(path, agent=agents.offline, until=1, until_tick=2, live=True)
    with pytest.raises(RecordingError, match="live"):
        await areplay(path, agent=agents.offline, until_tick=2)


async def test_until_without_live_is_refused(tmp_path: Path, notes: Path) -> None:
    path = tmp_path / "run.jsonl"
    await record_notes(path, notes)
    with pytest.raises(RecordingError, match="live"):
        await areplay(path, agent=agents.offline, until=1)


async def test_a_recording_exports_as_mock_replies_that_answer_the_same(tmp_path: Path, notes: Path) -> None:
    path, out = tmp_path / "run.jsonl", tmp_path / "replies.yaml"
    await record_notes(path, notes)
    export_mock(path, out)
    replies = RepliesFile.load(out)
    assert [r.content for r in replies.replies] == ["Writing it down.", "Noted: buy milk."]
    result = await note_agent(scripted_client(replies.script())).run(
        {"messages": [human("Remember to buy milk")]}
    )
    assert result.final_answer == "Noted: buy milk."
    assert notes.read_text() == "buy milk\n"


async def test_a_recording_past_its_limit_is_truncated_and_refused(tmp_path: Path, notes: Path) -> None:
    path = tmp_path / "run.jsonl"
    async with ScriptedOpenAIServer(SCRIPT) as srv:
        agent = Agent(
            create_react_node(model_client=srv.client(), tools=[agents.write_note]),
            record=RunRecording(path, max_bytes=2000),
        )
        result = await agent.run({"messages": [human("Remember to buy milk")]})
        await agent.aclose()
    assert result.status == "success"  # the run itself is not affected
    assert path.stat().st_size < 2200
    assert json.loads(path.read_text().splitlines()[-1])["kind"] == "truncated"
    with pytest.raises(RecordingError, match="truncated"):
        read_recording(path)


async def test_secrets_never_reach_the_recording(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    declared = "replay-test-declared-secret-4711"  # a value the configuration declares secret
    register_secret(declared, source="test")

    @tool
    def credentials(service: str, note: str = "") -> str:
        """Credentials of a service.

        Args:
            service: The service.
            note: A note.
        """
        return f"token sk-abcdefghijklmnop1234 and password {declared} for " + service

    script = [
        calls(call("credentials", service="db", note="Bearer abcdefghijklmnop5678")),
        reply(f"Got it: sk-abcdefghijklmnop1234 {declared}"),
    ]
    async with ScriptedOpenAIServer(script) as srv:
        agent = Agent(create_react_node(model_client=srv.client(), tools=[credentials]))
        await agent.run({"messages": [human(f"key? mine is {declared}")]}, record=path)
    text = path.read_text()
    assert "sk-abcdefghijklmnop1234" not in text and declared not in text and "***" in text
    assert "abcdefghijklmnop5678" not in text  # in the tool call's arguments (and the request)


def test_bad_files_are_refused_clearly(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "header", "format": "jianmu-like.recording", "version": 99}\n')
    with pytest.raises(RecordingError, match="version 99"):
        read_recording(bad)
    bad.write_text("not json\n")
    with pytest.raises(RecordingError, match=r"bad\.jsonl:1: not JSON"):
        read_recording(bad)
    with pytest.raises(RecordingError, match="cannot read"):
        read_recording(tmp_path / "missing.jsonl")


# ------------------------------------------------------------------------ recordings as tests
async def test_the_testing_helper_passes_a_recording_and_fails_a_changed_agent(
    tmp_path: Path, notes: Path
) -> None:
    await record_notes(tmp_path / "a.jsonl", notes)
    [found] = recordings(tmp_path)
    result = await areplay_recording(found, agent=lambda: note_agent(scripted_client([])))
    assert result.final_answer == "Noted: buy milk."
    with pytest.raises(AssertionError, match="model request differs") as caught:
        await areplay_recording(found, agent=lambda: note_agent(scripted_client([]), prompt="Changed."))
    assert caught.value.divergence.kind == "model_request"  # type: ignore[attr-defined]
    with pytest.raises(FileNotFoundError, match="no recordings"):
        recordings(tmp_path / "empty")


def supervisor_model(body: dict[str, Any]) -> Any:
    """Plans two sub-questions (run by parallel sub-agents), answers each, then writes the answer."""
    names = {t["function"]["name"] for t in body.get("tools") or []}
    users = [str(m.get("content")) for m in body["messages"] if m["role"] == "user"]
    if "SupervisorPlan" in names:
        return reply(
            tool_calls=[call("SupervisorPlan", sub_questions=["Population of Paris?", "Population of Rome?"])]
        )
    if "SupervisorDecision" in names:
        return reply(tool_calls=[call("SupervisorDecision", answer="Rome is bigger.")])
    if "Paris" in users[0] and "Rome" not in users[0]:
        return reply("Paris has 2.1 million.")
    if "Rome" in users[0] and "Paris" not in users[0]:
        return reply("Rome has 2.8 million.")
    return reply("Rome is bigger.")


async def test_the_supervisor_with_parallel_sub_agents_replays(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"

    def build(client: Any) -> Agent:
        return Agent(create_supervisor_node(model_client=client))

    async with ScriptedOpenAIServer(supervisor_model) as srv:
        recorded = await build(srv.client()).run({"messages": [human("Paris or Rome?")]}, record=path)
        asked = len(srv.requests)
    assert recorded.status == "success", recorded.error
    nodes = {line["node"] for line in read_recording(path) if line["kind"] == "model"}
    assert len(nodes) >= 3 and asked >= 3  # the supervisor's calls and each sub-agent's
    seen: list[Event] = []
    result = await areplay(path, agent=lambda: build(scripted_client([])), on_event=seen.append)
    assert result.final_answer == recorded.final_answer
    assert {k: a.final_answer for k, a in result.agents.items()} == {
        k: a.final_answer for k, a in recorded.agents.items()
    }
    assert len(seen) == len(recorded_events(path))


SUB_AGENTS = "Supervisor/Supervisor.Agents/Supervisor.q"


def rewrite_events(source: Path, out: Path, reorder: Any, change: Any = None) -> None:
    """Writes `source` to `out` with its event lines in the order `reorder(events)` gives (a
    list of the original indices), each model line's references to them renumbered and each
    call's `events_before` moved to the first place of an event published after it started:
    another interleaving the recording could have had. `change(events)` may edit events first."""
    lines = [json.loads(raw) for raw in source.read_text().splitlines()]
    assert [line["kind"] for line in lines].count("run") == 1
    events = [line for line in lines if line["kind"] == "event"]
    if change is not None:
        change(events)
    order = reorder(events)
    assert sorted(order) == list(range(len(events)))
    place = {old: new for new, old in enumerate(order)}
    calls = [line for line in lines if line["kind"] in ("model", "tool")]
    for line in calls:
        later = [place[e] for e in range(line["events_before"], len(events))]
        line["events_before"] = min(later, default=len(events))
        if line["kind"] == "model":
            line["events"] = [place[e] if isinstance(e, int) else e for e in line["events"]]
    head = [line for line in lines if line["kind"] in ("header", "run")]
    tail = [line for line in lines if line["kind"] == "result"]
    written = [*head, *(events[i] for i in order), *calls, *tail]
    out.write_text("".join(json.dumps(line) + "\n" for line in written))


def interleave(pattern: str) -> Any:
    """A reorder for `rewrite_events`: the sub-agents' events (one contiguous stretch) merged
    as `pattern` says, a lane number per event ("1122..." = two of q1, two of q2, ...); a `*`
    after a lane takes that lane's next event of the type named up to the following space."""

    def reorder(events: list[dict[str, Any]]) -> list[int]:
        lanes: dict[str, list[int]] = {"1": [], "2": []}
        stretch = [i for i, e in enumerate(events) if str(e["node"]).startswith(SUB_AGENTS)]
        assert stretch == list(range(stretch[0], stretch[-1] + 1))  # nothing else in between
        for i in stretch:
            lanes[events[i]["node"][len(SUB_AGENTS)]].append(i)
        merged = [lanes[lane].pop(0) for lane in pattern]
        assert not lanes["1"] and not lanes["2"], pattern  # the pattern covers every event
        return [*range(stretch[0]), *merged, *range(stretch[-1] + 1, len(events))]

    return reorder


def lane_types(path: Path) -> dict[str, list[str]]:
    """The event types of each sub-agent (lane "1": q1, "2": q2) in the recording at `path`."""
    events = [json.loads(raw) for raw in path.read_text().splitlines() if '"kind":"event"' in raw]
    return {lane: [e["type"] for e in events if e["node"].startswith(SUB_AGENTS + lane)] for lane in "12"}


async def record_supervisor(path: Path) -> Any:
    async with ScriptedOpenAIServer(supervisor_model) as srv:
        recorded = await Agent(create_supervisor_node(model_client=srv.client())).run(
            {"messages": [human("Paris or Rome?")]}, record=path
        )
    assert recorded.status == "success", recorded.error
    return recorded


def supervisor_offline() -> Agent:
    return Agent(create_supervisor_node(model_client=scripted_client([])))


def ci_interleaving(lanes: dict[str, list[str]]) -> str:
    """The order a loaded CI machine recorded: q2's model answered between q1's reply and the
    end of q1's loop (before the tick that ends it)."""
    one, two = lanes["1"], lanes["2"]
    answered, ended = two.index("model.call.completed"), one.index("loop.terminated")
    started = "1" * 2 + "2" * 2  # each: its reply and its model call started
    q1_replied = "1" * (ended - 2)  # q1's answer and reply, up to the end of its loop
    q2_answered = "2" * (answered - 1)
    rest = "1" * (len(one) - ended) + "2" * (len(two) - answered - 1)
    return started + q1_replied + q2_answered + rest


@pytest.mark.parametrize(
    "rule",
    [
        pytest.param(ci_interleaving, id="q2-answers-before-q1-loop-ends"),
        pytest.param(lambda lanes: "1" * len(lanes["1"]) + "2" * len(lanes["2"]), id="q1-then-q2"),
        pytest.param(lambda lanes: "2" * len(lanes["2"]) + "1" * len(lanes["1"]), id="q2-then-q1"),
        pytest.param(lambda lanes: "12" * len(lanes["1"]), id="alternating"),
    ],
)
async def test_parallel_sub_agents_replay_whatever_their_recorded_interleaving(
    tmp_path: Path, rule: Any
) -> None:
    """The sub-agents' events may interleave in any order (each sub-agent's in its own order):
    every such recording replays, the replay publishing the same events of each sub-agent."""
    path, variant = tmp_path / "run.jsonl", tmp_path / "variant.jsonl"
    recorded = await record_supervisor(path)
    rewrite_events(path, variant, interleave(rule(lane_types(path))))
    seen: list[Event] = []
    result = await areplay(variant, agent=supervisor_offline, on_event=seen.append)
    assert result.final_answer == recorded.final_answer
    for lane in "12":
        mine = SUB_AGENTS + lane
        new = [view(as_line(e)) for e in seen if str(e.node).startswith(mine)]
        assert new == [view(e) for e in recorded_events(variant) if str(e["node"]).startswith(mine)]
    assert len(seen) == len(recorded_events(variant))


async def test_a_difference_inside_a_sub_agent_is_reported_at_that_sub_agent(tmp_path: Path) -> None:
    """Comparing per branch keeps divergences precise: the changed event of q2 is named, with
    q2's recorded event, even while q1's events are still due."""
    path, variant = tmp_path / "run.jsonl", tmp_path / "variant.jsonl"
    await record_supervisor(path)

    def change(events: list[dict[str, Any]]) -> None:
        [ended] = [e for e in events if e["type"] == "loop.terminated" and e["node"] == SUB_AGENTS + "2"]
        ended["data"]["iterations"] = 7

    rewrite_events(path, variant, lambda events: list(range(len(events))), change)
    with pytest.raises(ReplayDivergence) as caught:
        await areplay(variant, agent=supervisor_offline)
    divergence = caught.value.divergence
    assert (divergence.kind, divergence.path) == ("event", "data.iterations")
    assert divergence.node == SUB_AGENTS + "2"
    assert (divergence.recorded["data"]["iterations"], divergence.new["data"]["iterations"]) == (7, 1)


async def test_events_outside_parallel_branches_keep_their_exact_order(tmp_path: Path) -> None:
    """A parent's event and its children's are not concurrent: the parallel node's start moved
    after a sub-agent's first event is a divergence at that sub-agent's event."""
    path, variant = tmp_path / "run.jsonl", tmp_path / "variant.jsonl"
    await record_supervisor(path)

    def late_start(events: list[dict[str, Any]]) -> list[int]:
        start = next(i for i, e in enumerate(events) if e["type"] == "parallel.started")
        order = list(range(len(events)))
        order[start], order[start + 1] = order[start + 1], order[start]
        return order

    rewrite_events(path, variant, late_start)
    with pytest.raises(ReplayDivergence) as caught:
        await areplay(variant, agent=supervisor_offline)
    divergence = caught.value.divergence
    assert divergence.kind == "event" and divergence.path == "type"
    assert (divergence.recorded["type"], divergence.new["type"]) == ("reply.started", "parallel.started")


async def test_a_follow_up_injected_during_the_run_replays_at_its_place(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    holder: list[Agent] = []

    @tool
    def check_stock(item: str) -> str:
        """Stock of an item.

        Args:
            item: The item.
        """
        holder[0].inject("Also: is it on sale?")  # the user types while the tool runs
        return f"{item}: 3 left"

    script = [calls(call("check_stock", item="milk")), reply("3 left, and yes, on sale.")]

    def build(client: Any) -> Agent:
        return Agent(create_react_node(model_client=client, tools=[check_stock]))

    async with ScriptedOpenAIServer(script) as srv:
        agent = build(srv.client())
        holder.append(agent)
        recorded = await agent.run({"messages": [human("Milk in stock?")]}, record=path)
        second = srv.requests[1]["messages"]
    assert any("Also: is it on sale?" in str(m.get("content")) for m in second)
    seen: list[Event] = []
    holder.clear()  # the replay runs no tool: nobody but the replay injects
    result = await areplay(path, agent=lambda: build(scripted_client([])), on_event=seen.append)
    assert result.final_answer == recorded.final_answer
    assert [e.data["status"] for e in seen if e.type == "inject"] == ["queued", "applied"]
    assert [m.content for m in result.state.messages] == [m.content for m in recorded.state.messages]


@pytest.mark.parametrize(
    "value",
    [
        {"role": "user", "content": "plain text, nothing to hide", "n": [1, 2.5, None, True]},
        {"api_key": "abc", "x": 1},
        {"content": "see https://user:pw@example.org/x?token=t"},
        {"content": "key sk-abcdefghijklmnop1234"},
        {"content": "Bearer abcdefghijklmnop"},
        {"content": "the password is replay-test-declared-secret-4711"},
        ["a", {"nested": {"authorization": "x"}}],
        "just a string",
    ],
)
def test_the_bulk_redaction_masks_what_redact_masks(value: Any) -> None:
    register_secret("replay-test-declared-secret-4711", source="test")
    assert json.dumps(redact_bulk(value)) == json.dumps(redact(value))


def secret_key_spellings() -> list[str]:
    """Every word `_SECRET_KEY` matches, each optional separator spelled each way."""
    words = _SECRET_KEY.pattern.strip("()").split("|")
    return sorted({w.replace("[_-]?", sep) for w in words for sep in ("", "_", "-")})


@pytest.mark.parametrize("word", [*secret_key_spellings(), "sk-abcdefgh12", "Bearer abcdefgh12", "x://y"])
@pytest.mark.parametrize("around", ["a {} b", "é {} b"])  # ASCII text takes the quick check
@pytest.mark.parametrize("case", [str.lower, str.upper, str.title])
def test_the_quick_secret_check_sees_what_the_patterns_see(word: str, around: str, case: Any) -> None:
    """`might_hold_secret`'s fixed clues stay in step with `redact`'s patterns: every spelling
    they match, in any case, in ASCII or other text, is seen (a word added to the patterns
    without a clue fails here)."""
    text = around.format(word if word.startswith(("sk-", "Bearer")) else case(word))
    assert _SECRET_KEY.search(text) or _SECRET_VALUE.search(text) or "://" in text

    def check(value: Any) -> bool:
        return might_hold_secret(json.dumps(value, ensure_ascii=False).encode())

    assert check({"key": text}) and check({text: 1})
    assert not check({"key": around.format("nothing here")})


async def test_the_research_preset_replays_without_searching(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    searched: list[str] = []

    @tool(parallel_safe=True)
    async def search(query: str) -> str:
        """Search the web.

        Args:
            query: What to look for.
        """
        searched.append(query)
        return f"{query}: raw page text (https://example.org/{len(searched)})"

    script = [
        calls(call("search", query="rome"), call("search", query="italy")),
        reply("Found it."),
        reply(
            tool_calls=[
                call("ResearchSummary", summary="Rome: 2.8 million [1].", sources=["https://example.org/1"])
            ]
        ),
    ]

    def build(client: Any) -> Agent:
        return Agent(create_research_node("Researcher", model_client=client, tools=[search]))

    async with ScriptedOpenAIServer(script) as srv:
        recorded = await build(srv.client()).run({"messages": [human("Population of Rome?")]}, record=path)
    assert recorded.status == "success", recorded.error
    assert searched == ["rome", "italy"]
    result = await areplay(path, agent=lambda: build(scripted_client([])))
    assert searched == ["rome", "italy"]  # no search ran again
    assert result.final_answer == recorded.final_answer


async def test_an_agent_recording_keeps_every_run_of_its_thread(tmp_path: Path, notes: Path) -> None:
    path = tmp_path / "agent.jsonl"
    script = [*SCRIPT, reply("You asked me to buy milk.")]
    async with ScriptedOpenAIServer(script) as srv:
        agent = Agent(
            create_react_node(
                model_client=srv.client(),
                tools=[agents.write_note],
                config=ReActConfig(system_prompt="You keep notes."),
            ),
            record=path,
        )
        await agent.run({"messages": [human("Remember to buy milk")]})
        second = await agent.run({"messages": [human("What did I ask?")]})  # the same thread goes on
        await agent.aclose()
    notes.unlink()
    assert [line["op"] for line in read_recording(path) if line["kind"] == "run"] == ["run", "run"]
    result = await areplay(path, agent=agents.offline)
    assert result.final_answer == second.final_answer == "You asked me to buy milk."
    assert len(result.state.messages) == len(second.state.messages) == 6
    assert not notes.exists()


async def test_failures_replay_as_they_happened(tmp_path: Path) -> None:
    """A tool that raised and a model call that failed are answered with the same failure."""
    path = tmp_path / "run.jsonl"

    @tool
    def flaky(n: int) -> str:
        """Fails.

        Args:
            n: A number.
        """
        raise LookupError(f"no record {n}")

    script = [calls(call("flaky", n=7)), error_reply(400, "context too long")]

    def build(client: Any) -> Agent:
        return Agent(create_react_node(model_client=client, tools=[flaky]))

    async with ScriptedOpenAIServer(script) as srv:
        recorded = await build(srv.client()).run({"messages": [human("n=7?")]}, record=path)
    assert recorded.status == "failure" and "context too long" in (recorded.error or "")
    seen: list[Event] = []
    result = await areplay(path, agent=lambda: build(scripted_client([])), on_event=seen.append)
    assert (result.status, result.error) == (recorded.status, recorded.error)
    [failed] = [e for e in seen if e.type == "tool.call.completed" or e.type == "tool.call.failed"]
    assert "LookupError: no record 7" in str(failed.data)


async def test_a_tool_call_that_timed_out_replays_as_timed_out(tmp_path: Path) -> None:
    """The timeout cancelled the call while recording; the replay answers it as timed out (at
    once, nothing waits), and the run goes on as it did."""
    path = tmp_path / "run.jsonl"

    @tool(timeout=0.2)
    async def stuck(query: str) -> str:
        """Never answers.

        Args:
            query: Anything.
        """
        await asyncio.Event().wait()  # never set: the tool's own timeout ends the call
        return query

    script = [calls(call("stuck", query="x")), reply("It timed out.")]

    def build(client: Any) -> Agent:
        return Agent(create_react_node(model_client=client, tools=[stuck]))

    async with ScriptedOpenAIServer(script) as srv:
        recorded = await build(srv.client()).run({"messages": [human("Try it.")]}, record=path)
    [line] = [line for line in read_recording(path) if line["kind"] == "tool"]
    assert line["error"]["timed_out"] is True
    seen: list[Event] = []
    result = await areplay(path, agent=lambda: build(scripted_client([])), on_event=seen.append)
    assert (result.status, result.final_answer) == (recorded.status, "It timed out.")
    [failed] = [e for e in seen if e.type == "tool.call.failed"]
    assert failed.data["error"] == "tool 'stuck' timed out after 0.2 s"
