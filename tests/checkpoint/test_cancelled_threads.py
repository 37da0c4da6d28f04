"""A cancelled run leaves its thread usable (issue 33.2): a run cancelled at any await of a tool
batch (asyncio cancellation: what Ctrl-C and SIGTERM do to the CLI's run task), serial or
parallel, on SQLite and PostgreSQL, leaves a thread on which the next question succeeds — the
open calls answered by one rule (a finished call with its real outcome, exactly once; the others
as interrupted) — instead of a conversation every OpenAI-compatible server refuses. A thread that
already holds such a conversation (written by an older version) is repaired the same way. The
scripted model server refuses tool calls without results, as OpenAI does."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from jianmu_like import Agent, ReActConfig, create_react_node, human, tool
from jianmu_like.checkpoint import MemoryCheckpointer
from jianmu_like.models import Message, ModelClient, ToolCall
from jianmu_like.nodes._open_calls import INTERRUPTED, NOT_RUN_WAITING, answer_open_calls
from jianmu_like.telemetry import events as ev
from jianmu_like.telemetry.events import Event
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, call, calls, reply

NEXT = "the next question"


def responder(body: dict[str, Any]) -> Any:
    """The first question asks for two calls of `work`; their results get an answer; the next
    question gets its own answer (whatever the thread's history, which the server checks)."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return reply("the batch is done")
    if last["role"] == "user" and last["content"] == NEXT:
        return reply("the next answer")
    return calls(call("work", n=1), call("work", n=2))


def make_agent(model: ModelClient, store: Any, mode: str, effects: list[int]) -> Agent:
    @tool(parallel_safe=True)
    async def work(n: int) -> str:
        """Do some work."""
        for _ in range(3):
            await asyncio.sleep(0)
        effects.append(n)
        return f"worked {n}"

    config = ReActConfig(tool_selection=False, execution_mode=mode, max_iterations=4)  # type: ignore[arg-type]
    return Agent(create_react_node(model_client=model, tools=[work], config=config), checkpointer=store)


def open_calls_of(messages: list[Message]) -> list[str]:
    """Ids of tool calls without a tool message after them."""
    answered = {m.tool_call_id for m in messages if m.role == "tool"}
    return [
        c.id for m in messages if m.role == "assistant" for c in m.tool_calls or () if c.id not in answered
    ]


async def cancel_at(agent: Agent, thread: str, yields: int) -> bool:
    """Start a run, wait until the model asked for the batch, let the loop run `yields` steps,
    then cancel the run's task (as the CLI's Ctrl-C and SIGTERM do). True when the cancel came
    before the model's final answer (on a loaded machine the I/O a step waits for can be over in
    fewer steps, so a late cancel may find the run answered, or saved and over: the callers
    check which, never assume)."""
    asked, answered = asyncio.Event(), asyncio.Event()

    def on_event(event: Event) -> None:
        if event.type == ev.REPLY_COMPLETED:
            (asked if event.data.get("tool_calls") else answered).set()

    unsubscribe = agent.telemetry.subscribe(on_event)
    task = asyncio.create_task(agent.run({"messages": [human("do the work")]}, thread_id=thread))
    try:
        async with asyncio.timeout(PATIENCE):
            await asyncio.wait(
                {task, asyncio.ensure_future(asked.wait())}, return_when=asyncio.FIRST_COMPLETED
            )
        for _ in range(yields):
            await asyncio.sleep(0)
        in_time = not answered.is_set()
        task.cancel()
        async with asyncio.timeout(PATIENCE):
            await asyncio.gather(task, return_exceptions=True)
        return in_time
    finally:
        unsubscribe()


@pytest.mark.parametrize("mode", ["serial", "parallel"])
async def test_a_run_cancelled_at_any_await_of_a_tool_batch_leaves_a_usable_thread(
    store_target: str, mode: str
) -> None:
    async with ScriptedOpenAIServer(responder) as srv:
        model = srv.client()  # one for all the agents (a client costs 80 ms to make)
        cancelled_mid_batch, kept = 0, set()
        sqlite = store_target.endswith(".db")  # its writes never yield: the batch is over in 6 steps
        for yields in range(0, 8) if sqlite else range(0, 24, 3):
            thread, effects = f"t{yields}", []
            first = make_agent(model, store_target, mode, effects)
            await cancel_at(first, thread, yields)
            await first.aclose()
            # A new process: nothing of the first run's memory, only the store.
            second = make_agent(model, store_target, mode, effects)
            seen: list[Event] = []
            second.telemetry.subscribe(seen.append)
            result = await second.run({"messages": [human(NEXT)]}, thread_id=thread)
            await second.aclose()
            assert result.status == "success", (yields, result.error)
            assert result.final_answer == "the next answer"
            messages = list(result.state.messages)  # type: ignore[attr-defined]
            assert open_calls_of(messages) == []
            observations = {m.tool_call_id: m.content for m in messages if m.role == "tool"}
            assert sorted(effects) == sorted(set(effects))  # nothing ran twice
            for n, call_id in enumerate(observations, start=1):
                # A call told it worked did work, once; one that worked may only be told so or
                # "interrupted" (cancelled between its return and its record).
                assert observations[call_id] in (f"worked {n}", INTERRUPTED), observations
                if observations[call_id] == f"worked {n}":
                    assert effects.count(n) == 1
            repaired = [e for e in seen if e.type == ev.THREAD_REPAIRED]
            if repaired:
                cancelled_mid_batch += 1
                calls_answered = repaired[0].data["calls"]
                kept.update(c["answer"] for c in calls_answered)
                assert {c["answer"] for c in calls_answered} <= {"outcome", "interrupted"}
                assert all(c["call_id"] in observations for c in calls_answered)
        assert cancelled_mid_batch >= 2  # the sweep did hit the batch (not only before or after it)
        if sqlite:  # some cancellations came after a call finished: its outcome was kept
            assert "outcome" in kept


@pytest.mark.parametrize("mode", ["serial", "parallel"])
async def test_a_cancelled_run_can_still_be_resumed_and_nothing_runs_twice(
    store_target: str, mode: str
) -> None:
    """Instead of a new question, `resume` carries the open batch on: finished calls replayed
    from the journal, a call cut off while running reported as of unknown outcome (never run
    again), a call that never began run now."""
    async with ScriptedOpenAIServer(responder) as srv:
        model = srv.client()
        sqlite = store_target.endswith(".db")
        resumed = 0
        for yields in range(0, 8) if sqlite else range(0, 24, 6):
            thread, effects = f"r{yields}", []
            first = make_agent(model, store_target, mode, effects)
            in_time = await cancel_at(first, thread, yields)
            await first.aclose()
            second = make_agent(model, store_target, mode, effects)
            try:
                result = await second.resume(thread_id=thread)
            except RuntimeError as exc:
                # Only a run that had answered before the cancel may have saved its end: then
                # there is nothing to resume, and resume says so.
                assert not in_time and "nothing to resume" in str(exc), (yields, exc)
                assert sorted(effects) == [1, 2]
                continue
            finally:
                await second.aclose()
            resumed += in_time
            assert result.status == "success" and result.final_answer == "the batch is done", yields
            messages = list(result.state.messages)  # type: ignore[attr-defined]
            assert open_calls_of(messages) == []
            tools = [m.content for m in messages if m.role == "tool"]
            assert sorted(effects) == sorted(set(effects))  # nothing ran twice
            for n, content in enumerate(tools, start=1):
                assert content == f"worked {n}" or content.startswith("Error: outcome unknown"), tools
                # told it worked: it did, once; of unknown outcome: at most once, never again
                assert effects.count(n) == 1 if content == f"worked {n}" else effects.count(n) <= 1
        assert resumed >= 1  # the cancel right after the model's request is always in time


async def test_a_run_on_a_thread_an_older_version_left_invalid_is_repaired_with_an_event() -> None:
    store = MemoryCheckpointer()
    async with ScriptedOpenAIServer(responder) as srv:
        model = srv.client()
        agent = make_agent(model, store, "serial", [])
        dangling = Message(
            role="assistant", tool_calls=[ToolCall(id="old_1", name="work", arguments={"n": 1})]
        )
        # What an older version could save: tool calls without results (the model refuses it).
        broken = await agent.run({"messages": [human("hi"), dangling]}, thread_id="old")
        assert broken.status == "failure" and "tool_call_ids did not have response messages" in (
            broken.error or ""
        )
        seen: list[Event] = []
        agent.telemetry.subscribe(seen.append)
        result = await agent.run({"messages": [human(NEXT)]}, thread_id="old")
        assert result.status == "success" and result.final_answer == "the next answer"
        [event] = [e for e in seen if e.type == ev.THREAD_REPAIRED]
        assert event.data["calls"] == [
            {"call_id": "old_1", "tool": "work", "answer": "interrupted", "namespace": None}
        ]
        assert [e.type for e in seen].index(ev.THREAD_REPAIRED) == 1  # right after run.started
        await agent.aclose()


def test_the_rule_keeps_finished_outcomes_and_says_which_calls_never_ran() -> None:
    from jianmu_like.nodes._tool_outcome import ToolOutcome

    batch = Message(
        role="assistant",
        tool_calls=[
            ToolCall(id="a", name="work", arguments={"n": 1}),
            ToolCall(id="b", name="work", arguments={"n": 2}),
            ToolCall(id="c", name="work", arguments={"n": 3}),
        ],
    )
    answered_a = Message(role="tool", content="worked 1", tool_call_id="a", name="work")
    fixed, answered = answer_open_calls(
        [human("q"), batch, answered_a, human("later")],
        outcomes={"b": ToolOutcome(content="worked 2")},
        waiting=frozenset({"c"}),
    )
    assert [(m.role, m.content) for m in fixed] == [
        ("user", "q"),
        ("assistant", None),
        ("tool", "worked 1"),
        ("tool", "worked 2"),
        ("tool", NOT_RUN_WAITING),
        ("user", "later"),
    ]
    assert [a["answer"] for a in answered] == ["outcome", "waiting"]
    same, none = answer_open_calls(fixed)
    assert same == fixed and none == []


def test_every_namespace_of_the_state_is_repaired() -> None:
    from jianmu_like import ReActState
    from jianmu_like._run.open_calls import repair_open_calls
    from jianmu_like.nodes import StateKeys
    from jianmu_like.state import StateManager

    sm = StateManager(ReActState)
    dangling = Message(role="assistant", tool_calls=[ToolCall(id="n1", name="work", arguments={"n": 1})])
    sm.update({"messages": [human("q"), dangling]}, "researcher")
    repaired = repair_open_calls(sm, StateKeys(), {}, thread_id="t")
    assert repaired == [{"call_id": "n1", "tool": "work", "answer": "interrupted", "namespace": "researcher"}]
    assert open_calls_of(list(sm.get("messages", "researcher"))) == []
    assert repair_open_calls(sm, StateKeys(), {}, thread_id="t") == []  # valid now: untouched
