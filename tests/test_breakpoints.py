"""Breakpoints: a run pauses before a node ticks, as a pending approval of kind `breakpoint`;
its state is read and edited (checked against the state schema), it steps to the next node or
continues, a denied pause skips the node as a failure, and a paused run with a store survives a
new process paused. Nothing is held open: the pause comes before the node starts its call."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import py_trees
import pytest
from py_trees.common import Status

from jianmu_like import Agent, ReActConfig, ReActState, create_react_node, human, tool
from jianmu_like.bt import AsyncBehaviour
from jianmu_like.checkpoint import open_checkpointer
from jianmu_like.guard._approvals import ApprovalDecision, InvalidEdit
from jianmu_like.testing import PATIENCE, call, reply, scripted_client

ran: list[dict[str, int]] = []
asked: list[int] = []


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    ran.append({"a": a, "b": b})
    return a + b


def responder(body: dict[str, Any]) -> Any:
    asked.append(1)
    last = body["messages"][-1]
    if last["role"] == "tool":
        return reply(f"result {last['content']}")
    return call("add", a=41, b=1)


def agent(checkpointer: Any = None) -> Agent:
    root = create_react_node(
        model_client=scripted_client(responder), tools=[add], config=ReActConfig(max_iterations=4)
    )
    return Agent(root, checkpointer=checkpointer, log_events=False)


@pytest.fixture(autouse=True)
def fresh() -> None:
    ran.clear()
    asked.clear()


async def test_pause_before_the_tool_node_edit_state_step_and_continue() -> None:
    bot = agent()
    bot.breakpoints.set([{"tool": "add"}])
    result = await bot.run(input_data={"messages": [human("add")]})
    assert result.status == "suspended"
    [pause] = result.pending_approvals
    assert pause.kind == "breakpoint" and pause.tool == "ReActAgent/ReActAgent.Loop/ReActAgent.Tools"
    assert pause.arguments["node"] == "0.0.1"
    assert asked == [1] and ran == []  # the model answered; the tool has not been called
    tools = bot.tree.children[0].children[1]
    assert type(tools).__name__ == "ToolExecutor" and tools.status.name == "RUNNING"

    # The state can be read, and edited only as the schema allows: a bad edit records nothing.
    assert bot.state.actions[0].arguments == {"a": 41, "b": 1}  # type: ignore[attr-defined]
    with pytest.raises(InvalidEdit, match="rounds"):
        bot.decide(pause.id, ApprovalDecision(approved=True, arguments={"state": {"rounds": "many"}}))
    with pytest.raises(InvalidEdit, match="nope"):
        bot.decide(pause.id, ApprovalDecision(approved=True, arguments={"state": {"nope": 1}}))
    action = bot.state.actions[0].model_dump()  # type: ignore[attr-defined]
    action["arguments"] = {"a": 99, "b": 1}
    bot.breakpoints.set([])
    edit = ApprovalDecision(approved=True, arguments={"step": True, "state": {"actions": [action]}})
    result = await bot.resume(decisions={pause.id: edit})

    # Stepped: the tool node ran on the edited call, and the run paused at the next node.
    assert ran == [{"a": 99, "b": 1}]
    assert result.status == "suspended"
    [pause] = result.pending_approvals
    assert pause.kind == "breakpoint" and pause.arguments["node"] == "0.0.2"  # the Done gate
    result = await bot.resume(decisions={pause.id: True})
    assert result.status == "success" and result.final_answer == "result 100"
    assert asked == [1, 1] and ran == [{"a": 99, "b": 1}]

    # Without breakpoints the tree ticks with its own classes again.
    result = await bot.run(input_data={"messages": [human("add")]})
    assert result.status == "success" and not hasattr(type(tools), "_jianmu_watched")


async def test_a_denied_pause_skips_the_node_as_a_failure() -> None:
    bot = agent()
    bot.breakpoints.set([{"node": "ReActAgent.Done"}])
    result = await bot.run(input_data={"messages": [human("add")]})
    [pause] = result.pending_approvals
    assert pause.arguments["node"] == "0.0.2" and ran == [{"a": 41, "b": 1}]
    bot.breakpoints.set([])
    result = await bot.resume(decisions={pause.id: False})
    # The Done gate failed unticked: the loop went round again, the model saw the tool's result.
    assert result.status == "success" and result.final_answer == "result 42"
    assert asked == [1, 1] and result.usage.calls == 2


def test_bad_breakpoints_are_refused() -> None:
    bot = agent()
    for bad, message in (
        ({"status": "RUNNING"}, "SUCCESS"),
        ({"status": "FAILURE", "tool": "add"}, "not tool="),
        ({"event": "tool.call.fail"}, r"unknown event type 'tool.call.fail'.*tool\.call\.failed"),
        ({"event": "tool.call.failed", "node": "0"}, "only event="),
        ({}, "exactly one"),
        ({"node": "x", "tool": "y"}, "exactly one"),
        ({"nod": "x"}, "nod"),
    ):
        with pytest.raises(ValueError, match=message):
            bot.breakpoints.set([{"node": "0"}, bad])
        assert bot.breakpoints.items == []


async def test_a_status_pauses_before_the_next_node_entered_saying_which_node() -> None:
    """The Done gate fails (the loop goes round): the run pauses before the next node entered, the
    loop, before the model is asked again, and the pause names the node and its status."""
    bot = agent()
    bot.breakpoints.set([{"status": "failure", "node": "ReActAgent.Done"}])
    result = await bot.run(input_data={"messages": [human("add")]})
    assert result.status == "suspended"
    [pause] = result.pending_approvals
    done = "ReActAgent/ReActAgent.Loop/ReActAgent.Done"
    assert pause.kind == "breakpoint" and pause.arguments["node"] == "0.0"
    assert pause.arguments["trigger"] == {"status": "FAILURE", "node": done, "node_id": "0.0.2"}
    assert f"after {done} finished FAILURE" in pause.reason
    assert asked == [1] and ran == [{"a": 41, "b": 1}]  # the model is not asked again yet
    result = await bot.resume(decisions={pause.id: True})
    # Continued: the model answered; the Done gate succeeded, so no status rule fired again.
    assert result.status == "success" and result.final_answer == "result 42" and asked == [1, 1]

    bot = agent()  # a status of another node: the Done gate never succeeds before the end
    bot.breakpoints.set([{"status": "SUCCESS", "node": "ReActAgent.Tools"}])
    result = await bot.run(input_data={"messages": [human("add")]})
    [pause] = result.pending_approvals
    assert pause.arguments["node"] == "0.0.2" and pause.arguments["trigger"]["node_id"] == "0.0.1"


async def test_an_event_pauses_before_the_next_node_entered_saying_which_event() -> None:
    @tool
    def broken(a: int, b: int) -> int:
        """Add two integers, badly."""
        ran.append({"a": a, "b": b})
        raise RuntimeError("no adding today")

    def answer(body: dict[str, Any]) -> Any:
        asked.append(1)
        if body["messages"][-1]["role"] == "tool":
            return reply("it failed")
        return call("broken", a=1, b=2)

    root = create_react_node(
        model_client=scripted_client(answer), tools=[broken], config=ReActConfig(max_iterations=4)
    )
    bot = Agent(root, log_events=False)
    seen: list[str] = []
    bot.telemetry.subscribe(lambda e: seen.append(e.type))
    bot.breakpoints.set([{"event": "tool.call.failed"}])
    result = await bot.run(input_data={"messages": [human("add")]})
    assert result.status == "suspended"
    [pause] = result.pending_approvals
    tools = "ReActAgent/ReActAgent.Loop/ReActAgent.Tools"
    assert pause.arguments["trigger"] == {"event": "tool.call.failed", "node": tools}
    assert pause.arguments["node"] == "0.0.2" and "after event tool.call.failed" in pause.reason
    assert ran == [{"a": 1, "b": 2}] and asked == [1] and "tool.call.failed" in seen
    # Its own interruption events never arm a rule: continuing runs to the end.
    bot.breakpoints.set([{"event": "interruption.decided"}, {"event": "tool.call.failed"}])
    result = await bot.resume(decisions={pause.id: True})
    assert result.status == "success" and result.final_answer == "it failed"

    quiet = agent()  # an event rule observes the hub only while it is set: else no cost
    assert not quiet.telemetry.active
    quiet.breakpoints.set([{"event": "tool.call.failed"}])
    assert quiet.telemetry.active
    quiet.breakpoints.set([{"node": "0"}])
    assert not quiet.telemetry.active


async def test_a_paused_run_survives_a_new_process(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    first = agent(store)
    first.breakpoints.set([{"node": "0.0.1"}])
    result = await first.run(input_data={"messages": [human("add")]}, thread_id="t")
    [pause] = result.pending_approvals
    assert pause.kind == "breakpoint" and ran == []
    await first.aclose()

    later = agent(store)  # a new process: no breakpoints set, the pause comes from the store
    result = await later.resume(thread_id="t", decisions={pause.id: True})
    assert result.status == "success" and result.final_answer == "result 42"
    assert ran == [{"a": 41, "b": 1}] and asked == [1, 1]
    await later.aclose()


def test_breakpoints_in_an_agent_file(tmp_path: Path) -> None:
    from jianmu_like import load_agent
    from jianmu_like.errors import JianmuError
    from jianmu_like.testing import scripted_client as client

    path = tmp_path / "agent.yaml"
    path.write_text(
        "kind: react\nmodel: m\ntools: [calculator]\nbreakpoints:\n  - node: ReActAgent.Tools\n"
        "  - tool: calculator\n"
    )
    loaded = load_agent(path, model_client=client(responder))
    assert [b.model_dump(exclude_none=True) for b in loaded.breakpoints.items] == [
        {"node": "ReActAgent.Tools"},
        {"tool": "calculator"},
    ]
    # A rule naming a node or a tool the tree lacks would never pause: refused at its line.
    path.write_text("kind: react\nmodel: m\nbreakpoints:\n  - node: ReActAgent.Tools\n  - tool: add\n")
    with pytest.raises(JianmuError, match=r"agent.yaml:5: breakpoints.1: no tool 'add' in the tree"):
        load_agent(path, model_client=client(responder))
    path.write_text("kind: react\nmodel: m\nbreakpoints:\n  - node: ReActAgent.Gone\n")
    with pytest.raises(JianmuError, match=r"agent.yaml:4: breakpoints.0: no node 'ReActAgent.Gone'"):
        load_agent(path, model_client=client(responder))
    path.write_text(
        "kind: react\nmodel: m\nbreakpoints:\n  - status: FAILURE\n    node: ReActAgent.Done\n"
        "  - event: tool.call.failed\n"
    )
    loaded = load_agent(path, model_client=client(responder))
    assert [b.model_dump(exclude_none=True) for b in loaded.breakpoints.items] == [
        {"status": "FAILURE", "node": "ReActAgent.Done"},
        {"event": "tool.call.failed"},
    ]
    path.write_text("kind: react\nmodel: m\nbreakpoints:\n  - tool: add\n  - event: tool.call.fail\n")
    with pytest.raises(JianmuError, match=r"agent.yaml:5.*unknown event type.*tool\.call\.failed"):
        load_agent(path, model_client=client(responder))


async def test_a_state_without_approvals_refuses_breakpoints_and_runs_as_before() -> None:
    import py_trees
    from pydantic import BaseModel

    class Plain(BaseModel):
        count: int = 0

    bot = Agent(py_trees.behaviours.Success("Done"), Plain, log_events=False)
    with pytest.raises(ValueError, match="keeps approvals"):
        bot.breakpoints.set([{"node": "Done"}])
    assert (await bot.run()).status == "success"  # no breakpoint: the state is never asked


async def test_a_pause_opens_and_closes_with_the_interruption_events() -> None:
    """A breakpoint's pause publishes the same pair as every other kind of interruption."""
    bot = agent()
    seen: list[Any] = []
    bot.telemetry.subscribe(seen.append)
    bot.breakpoints.set([{"tool": "add"}])
    result = await bot.run(input_data={"messages": [human("add")]})
    [pause] = result.pending_approvals
    bot.breakpoints.set([])
    result = await bot.resume(decisions={pause.id: True})
    assert result.status == "success"
    pairs = [e for e in seen if e.type.startswith("interruption.")]
    assert [(e.type, e.data["id"], e.data["kind"]) for e in pairs] == [
        ("interruption.requested", pause.id, "breakpoint"),
        ("interruption.decided", pause.id, "breakpoint"),
    ]
    requested, decided = (e.data for e in pairs)
    assert set(requested) == {"id", "kind", "tool", "call_id", "request"}
    assert set(decided) == {"id", "kind", "tool", "call_id", "answer"}
    assert requested["request"] == pause.model_dump(mode="json")
    assert decided["answer"]["approved"] is True
    assert pairs[0].node == pause.tool


# ---------------------------------------------------------------- the whole tree pauses
entered: list[str] = []


class Mark(py_trees.behaviour.Behaviour):
    """A leaf that notes when it is entered (its `initialise()`) and succeeds."""

    def initialise(self) -> None:
        entered.append(self.name)

    def update(self) -> Status:
        return Status.SUCCESS


class Work(AsyncBehaviour):
    """A call in flight when the pause comes: it ends once `go` is set."""

    def __init__(self, name: str, go: asyncio.Event) -> None:
        super().__init__(name)
        self.go = go

    def initialise(self) -> None:
        entered.append(self.name)
        super().initialise()

    async def update_async(self) -> Status:
        await self.go.wait()
        entered.append(f"{self.name} done")
        return Status.SUCCESS


def fan(go: asyncio.Event) -> Agent:
    """Parallel[Sequence[Work, After], Paused, Later]: Work's call is in flight when the run
    pauses before Paused; After (entered when Work ends) and Later (Paused's sibling) are due
    while it waits."""
    entered.clear()
    slow = py_trees.composites.Sequence("Slow", memory=True, children=[Work("Work", go), Mark("After")])
    root = py_trees.composites.Parallel(
        "Fan",
        policy=py_trees.common.ParallelPolicy.SuccessOnAll(),
        children=[slow, Mark("Paused"), Mark("Later")],
    )
    return Agent(root, ReActState, log_events=False)


async def paused_fan(bot: Agent, go: asyncio.Event, thread_id: str | None = None) -> Any:
    """Run until the pause before Paused, let Work's call finish meanwhile; the suspended result."""
    asked_for = asyncio.Event()
    bot.telemetry.subscribe(lambda e: asked_for.set() if e.type == "interruption.requested" else None)
    bot.breakpoints.set([{"node": "Paused"}])
    run = asyncio.ensure_future(bot.run(thread_id=thread_id))
    await asyncio.wait_for(asked_for.wait(), PATIENCE)
    assert entered == ["Work"]  # the pause came in the first tick: Later was due in it
    go.set()  # the call in flight ends while the run is paused
    result = await asyncio.wait_for(run, PATIENCE)  # returns once nothing is in flight
    assert result.status == "suspended"
    return result


async def test_a_pause_holds_the_whole_tree_and_lets_a_call_in_flight_finish() -> None:
    go = asyncio.Event()
    bot = fan(go)
    result = await paused_fan(bot, go)
    [pause] = result.pending_approvals
    assert pause.arguments["node"] == "0.1"
    # The call in flight finished; nothing was entered after it, nor beside the paused node.
    assert entered == ["Work", "Work done"]
    names = {node.name: node for node in bot.tree.iterate()}
    assert names["After"].status == names["Later"].status == Status.RUNNING  # held, unticked
    bot.breakpoints.set([])
    result = await bot.resume(decisions={pause.id: True})
    assert result.status == "success"
    assert entered == ["Work", "Work done", "After", "Paused", "Later"]


async def test_a_step_enters_the_held_nodes_and_pauses_at_the_next_one() -> None:
    go = asyncio.Event()
    bot = fan(go)
    result = await paused_fan(bot, go)
    [pause] = result.pending_approvals
    bot.breakpoints.set([])
    result = await bot.resume(decisions={pause.id: ApprovalDecision(approved=True, arguments={"step": True})})
    # The decision's tick enters After (held before it in tick order) and Paused; Later, next
    # after the stepped node, pauses.
    assert result.status == "suspended"
    [again] = result.pending_approvals
    assert again.arguments["node"] == "0.2" and again.arguments["trigger"] == {"step": True}
    assert entered == ["Work", "Work done", "After", "Paused"]
    result = await bot.resume(decisions={again.id: True})
    assert result.status == "success" and entered[-1] == "Later"


async def test_a_pause_holds_the_children_a_dynamic_parallel_builds_at_run_time() -> None:
    """A supervisor's sub-agents are built per run (DynamicParallel): a pause elsewhere holds
    them as well; their calls in flight finish, their next nodes wait."""
    from jianmu_like.bt import DynamicParallel

    go = asyncio.Event()
    entered.clear()

    def build(index: int, item: str) -> py_trees.behaviour.Behaviour:
        return py_trees.composites.Sequence(
            item, memory=True, children=[Work(f"{item}.work", go), Mark(f"{item}.after")]
        )

    agents = DynamicParallel("Agents", plan=lambda node: ["a", "b"], build=build)
    root = py_trees.composites.Parallel(
        "Fan", policy=py_trees.common.ParallelPolicy.SuccessOnAll(), children=[agents, Mark("Paused")]
    )
    bot = Agent(root, ReActState, log_events=False)
    asked_for = asyncio.Event()
    bot.telemetry.subscribe(lambda e: asked_for.set() if e.type == "interruption.requested" else None)
    bot.breakpoints.set([{"node": "Paused"}])
    run = asyncio.ensure_future(bot.run())
    await asyncio.wait_for(asked_for.wait(), PATIENCE)
    go.set()
    result = await asyncio.wait_for(run, PATIENCE)
    [pause] = result.pending_approvals
    assert sorted(entered) == ["a.work", "a.work done", "b.work", "b.work done"]  # no .after
    bot.breakpoints.set([])
    result = await bot.resume(decisions={pause.id: True})
    assert result.status == "success"
    assert {"a.after", "b.after", "Paused"} <= set(entered)


async def test_the_nodes_a_pause_holds_are_entered_after_a_new_process(tmp_path: Path) -> None:
    """Held nodes are saved RUNNING with the pause (its `arguments.held`): a new process enters
    them (their `initialise()`) once the pause is decided, rather than ticking them unentered —
    those ticked before the paused node as well as those after it."""

    def tree(go: asyncio.Event) -> Agent:
        agent = fan(go)
        agent.use_checkpointer(open_checkpointer(str(tmp_path / "runs.db")))
        return agent

    go = asyncio.Event()
    first = tree(go)
    result = await paused_fan(first, go, thread_id="t")
    [pause] = result.pending_approvals
    assert pause.arguments["held"] == ["Fan/Later", "Fan/Slow/After"]
    await first.aclose()

    later = tree(asyncio.Event())  # a new process: the pause and what it held come from the store
    result = await later.resume(thread_id="t", decisions={pause.id: True})
    assert result.status == "success"
    assert entered == ["After", "Paused", "Later"]  # Work had finished: not run again
    await later.aclose()
