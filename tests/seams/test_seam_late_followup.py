"""The seam matrix, follow-ups sent while a run is suspended: saved with the thread, delivered
exactly once by whoever resumes it — the same agent, a fresh agent from SQLite or PostgreSQL,
or `jianmu-like resume` — over real HTTP (the scripted model server, the official client).

The run suspends at its gated `lookup`; the follow-up is sent to the suspended agent
(`Agent.inject`); another agent (the second process) approves and resumes. Every cell asserts
the same: the model's request after the tool result carries the follow-up once, after the tool
result; the answer addresses it; the saved thread ends with it in its messages once and no
longer waiting; the usage is the server's sum.
"""

from __future__ import annotations

import asyncio
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from jianmu_like import Agent, human, load_agent
from jianmu_like.checkpoint import Checkpointer, MemoryCheckpointer, ThreadConflictError, open_checkpointer
from jianmu_like.models import Usage
from jianmu_like.telemetry.events import Event
from jianmu_like.testing import ScriptedOpenAIServer, call, reply
from jianmu_like.testing._postgres import TemporaryPostgres
from jianmu_like.testing._script import DEFAULT_USAGE, ScriptItem
from tests.cli.running import in_process
from tests.seams.seam_kit import HERE

QUESTION = "Late follow-up: how many people live in Paris?"
FOLLOW_UP = "Also: in French, please."
THREAD = "late"
INTERRUPT = f"[USER INTERRUPT] {FOLLOW_UP}"
TOOLS_MODULE = "late_followup_tools"
"""The matrix's tools under a name of their own: a module name is bound to the one folder it was
first imported from (the matrix's agent files import `matrix_tools` from theirs)."""


def _respond(body: dict[str, Any]) -> ScriptItem:
    messages = body["messages"]
    if not any(m["role"] == "tool" for m in messages):
        return call("lookup", city="Paris")
    seen = sum(m["role"] == "user" and m["content"] == INTERRUPT for m in messages)
    return reply(f"Paris compte 2,1 millions d'habitants (follow-ups seen: {seen}).")


ANSWER = "Paris compte 2,1 millions d'habitants (follow-ups seen: 1)."


@pytest.fixture(scope="module")
def agent_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("late_followup")
    shutil.copy(HERE / "seam_tools.py", folder / f"{TOOLS_MODULE}.py")
    document = {
        "kind": "react",
        "name": "LateFollowUp",
        "model": "scripted-model",
        "tools": [f"{TOOLS_MODULE}:lookup"],
        "limits": {"max_iterations": 5},
        "guard": {"require_approval": {"tools": ["lookup"], "reason": "late follow-up gate"}},
    }
    file = folder / "late_followup.yaml"
    file.write_text(yaml.safe_dump(document, sort_keys=False))
    return file


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(_respond) as srv:
        yield srv


@pytest.fixture(scope="module")
def late_database(postgres_cluster: TemporaryPostgres) -> str:
    return postgres_cluster.new_database()


async def _suspend_and_follow_up(
    file: Path, srv: ScriptedOpenAIServer, store: Checkpointer
) -> tuple[Agent, str]:
    """The first process: run to the gate, then send the follow-up to the suspended run."""
    first = load_agent(file, model_client=srv.client())
    first.use_checkpointer(store)
    suspended = await first.run({"messages": [human(QUESTION)]}, thread_id=THREAD)
    assert suspended.status == "suspended", (suspended.status, suspended.error)
    [approval] = suspended.pending_approvals
    first.inject(FOLLOW_UP)
    saved = store.load(THREAD)
    assert saved is not None and saved.status == "suspended"
    assert [(f.namespace, f.content) for f in saved.followups] == [(None, FOLLOW_UP)]
    return first, approval.id


def _assert_delivered_once(srv: ScriptedOpenAIServer, store: Checkpointer) -> None:
    """The request after the tool result carries the follow-up once, right after it; the thread
    ends with it in its messages once and no longer waiting."""
    requests = srv.requests
    assert len(requests) == 2, [r["messages"] for r in requests]
    roles = [m["role"] for m in requests[1]["messages"]]
    assert roles[-3:] == ["assistant", "tool", "user"], roles
    contents = [m.get("content") for m in requests[1]["messages"]]
    assert contents.count(INTERRUPT) == 1 and contents.count(QUESTION) == 1, contents
    newest = store.load(THREAD)
    assert newest is not None and newest.status == "success" and newest.followups == []
    messages = [m.get("content") for m in newest.state["messages"]]
    assert messages.count(INTERRUPT) == 1 and messages[-1] == ANSWER, messages
    usage = Usage.model_validate(newest.state["usage"])
    assert usage.calls == 2 and usage.total_tokens == 2 * DEFAULT_USAGE.total_tokens, usage


@pytest.mark.parametrize("where", ["memory", "sqlite", "postgres"])
async def test_a_follow_up_sent_to_a_suspended_run_is_delivered_by_a_fresh_agent(
    where: str, agent_file: Path, server: ScriptedOpenAIServer, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if where == "memory":
        store: Checkpointer = MemoryCheckpointer()
    elif where == "sqlite":
        store = open_checkpointer(tmp_path / "runs.db")
    else:
        store = open_checkpointer(request.getfixturevalue("late_database"))
    try:
        first, approval = await _suspend_and_follow_up(agent_file, server, store)
        events: list[Event] = []
        second = load_agent(agent_file, model_client=server.client())
        second.telemetry.subscribe(events.append)
        result = await second.resume({approval: "approve"}, thread_id=THREAD, checkpointer=store)
        assert result.status == "success" and result.final_answer == ANSWER, (result.status, result.error)
        injects = [(e.data["status"], e.data["content"]) for e in events if e.type == "inject"]
        assert injects == [("applied", INTERRUPT)], injects
        _assert_delivered_once(server, store)
        # The first process still holds the suspended run, but the thread moved on without it.
        with pytest.raises(ThreadConflictError, match="saved by another process"):
            await first.resume({})
        await first.aclose()
        await second.aclose()
    finally:
        if where != "memory":
            store.close()  # type: ignore[attr-defined]


def test_jianmu_like_resume_delivers_a_saved_follow_up(
    agent_file: Path,
    server: ScriptedOpenAIServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    target = str(tmp_path / "runs.db")
    store = open_checkpointer(target)

    async def first_process() -> str:
        first, approval = await _suspend_and_follow_up(agent_file, server, store)
        await first.aclose()
        return approval

    try:
        approval = asyncio.run(first_process())
    finally:
        store.close()
    cli = in_process(server.base_url, monkeypatch, capsys)

    code, printed = cli("approvals", "approve", target, THREAD, approval)
    assert code == 0, printed
    code, printed = cli("resume", str(agent_file), "--checkpoint", target, "--thread", THREAD, "--no-live")
    assert code == 0, printed
    assert re.search(r"follow-ups seen: 1", printed), printed
    store = open_checkpointer(target)
    try:
        _assert_delivered_once(server, store)
    finally:
        store.close()


async def test_a_follow_up_to_a_thread_resumed_elsewhere_is_refused_and_not_queued(
    agent_file: Path, server: ScriptedOpenAIServer
) -> None:
    store = MemoryCheckpointer()
    first = load_agent(agent_file, model_client=server.client())
    first.use_checkpointer(store)
    suspended = await first.run({"messages": [human(QUESTION)]}, thread_id=THREAD)
    [approval] = suspended.pending_approvals
    second = load_agent(agent_file, model_client=server.client())
    done = await second.resume({approval.id: "approve"}, thread_id=THREAD, checkpointer=store)
    assert done.final_answer == "Paris compte 2,1 millions d'habitants (follow-ups seen: 0)."
    events: list[Event] = []
    first.telemetry.subscribe(events.append)
    with pytest.raises(ThreadConflictError, match="the follow-up was not queued: saved by another process"):
        first.inject(FOLLOW_UP)
    assert first.interrupts.contents() == [] and not [e for e in events if e.type == "inject"]
    newest = store.load(THREAD)
    assert newest is not None and newest.status == "success" and newest.followups == []
    await first.aclose()
    await second.aclose()


async def test_follow_ups_wait_in_every_saved_version_until_let_in(
    agent_file: Path, server: ScriptedOpenAIServer
) -> None:
    """Two follow-ups to one suspended run: a version each (the history shows them waiting),
    both let in as one message by the resume; every version after holds them exactly once,
    waiting or in its messages (never both, never neither), and the last in its messages."""
    store = MemoryCheckpointer()
    agent = load_agent(agent_file, model_client=server.client())
    agent.use_checkpointer(store)
    suspended = await agent.run({"messages": [human(QUESTION)]}, thread_id=THREAD)
    agent.inject("first")
    agent.inject("second")
    waiting: Callable[[int], list[str]] = lambda seq: [  # noqa: E731
        f.content for f in (store.load(THREAD, seq) or pytest.fail(f"no version {seq}")).followups
    ]
    suspended_seqs = [info.seq for info in agent.history(THREAD) if info.status == "suspended"]
    assert [waiting(seq) for seq in sorted(suspended_seqs)] == [[], ["first"], ["first", "second"]]
    result = await agent.resume({suspended.pending_approvals[0].id: "approve"})
    assert result.status == "success"
    last = server.requests[-1]["messages"]
    assert [m.get("content") for m in last].count("[USER INTERRUPT] first\n\nsecond") == 1
    merged = "[USER INTERRUPT] first\n\nsecond"
    held = []
    for info in sorted(agent.history(THREAD), key=lambda i: i.seq):
        if info.seq > max(suspended_seqs):
            version = store.load(THREAD, info.seq)
            assert version is not None
            let_in = [m.get("content") for m in version.state["messages"]].count(merged)
            held.append((waiting(info.seq), let_in))
    assert all((w, n) in ((["first", "second"], 0), ([], 1)) for w, n in held), held
    assert held[-1] == ([], 1), held
    await agent.aclose()
