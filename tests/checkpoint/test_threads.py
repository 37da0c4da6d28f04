"""A thread is a conversation, over real HTTP (the scripted server) and real stores: a run on a
known thread continues it (in a new process too), a new thread starts empty, every save is a
version (history, state_at, a fork with from_checkpoint), retention keeps the newest N."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jianmu_like import Agent, ModelClient, ReActConfig, ReActState, create_react_node, human
from jianmu_like._run.template import AgentTemplate
from jianmu_like.checkpoint import open_checkpointer
from jianmu_like.checkpoint._store import CheckpointError, MemoryCheckpointer
from jianmu_like.errors import InputError
from jianmu_like.testing import ScriptedOpenAIServer, fast_resilience, reply

ANSWER = "Paris is the capital of France, on the Seine."


def tree(base_url: str) -> Any:
    """The same tree every time (a thread is continued by the tree that wrote it)."""
    client = ModelClient.resolve(
        base_url=base_url, api_key="test-key", model="m", resilience=fast_resilience()
    )
    return create_react_node(model_client=client, tools=[], config=ReActConfig(max_iterations=3))


def build(base_url: str, checkpointer: Any = None) -> Agent:
    return Agent(tree(base_url), state_schema=ReActState, checkpointer=checkpointer)


def texts(messages: list[Any]) -> list[str]:
    return [str(m.content) for m in messages]


def ask(question: str) -> dict[str, Any]:
    return {"messages": [human(question)]}


async def test_without_a_store_each_thread_keeps_its_own_conversation() -> None:
    """The old agent carried thread a's messages into thread b, and the answer check then
    rejected b's legitimate answer as a repeat of a's."""
    with ScriptedOpenAIServer([reply(ANSWER), reply(ANSWER), reply("Berlin, on the Spree river.")]) as srv:
        agent = build(srv.base_url)
        first = await agent.run(ask("Capital of France?"), thread_id="a")
        second = await agent.run(ask("Capital of France?"), thread_id="b")
        third = await agent.run(ask("And Germany?"), thread_id="a")
        requests = srv.requests

    assert first.status == second.status == third.status == "success"
    assert second.final_answer == ANSWER  # not re-asked as a repeat of thread a
    assert texts(second.state.messages) == ["Capital of France?", ANSWER]
    assert second.thread_id == "b" and third.thread_id == "a"
    assert texts(third.state.messages) == [
        "Capital of France?",
        ANSWER,
        "And Germany?",
        "Berlin, on the Spree river.",
    ]
    assert len(requests) == 3
    assert [m["content"] for m in requests[1]["messages"] if m["role"] == "user"] == ["Capital of France?"]


async def test_the_default_thread_continues_and_a_new_conversation_thread_starts_empty() -> None:
    script = [reply(ANSWER), reply("Berlin, on the Spree river."), reply(ANSWER), reply(ANSWER)]
    with ScriptedOpenAIServer(script) as srv:
        agent = build(srv.base_url)
        await agent.run(ask("Capital of France?"))
        follow = await agent.run(ask("And Germany?"))
        template = AgentTemplate(lambda: tree(srv.base_url), state_schema=ReActState)
        chat = template.conversation("x")
        await chat.run(ask("Capital of France?"))
        other = await chat.run(ask("Capital of France?"), thread_id="y")
    assert len(follow.state.messages) == 4 and follow.thread_id is None
    assert texts(other.state.messages) == ["Capital of France?", ANSWER] and chat.thread_id == "y"
    assert other.final_answer == ANSWER


async def test_a_thread_is_continued_by_a_new_agent_and_nothing_is_overwritten(store_target: str) -> None:
    """The old agent started thread t over and replaced its only checkpoint."""
    with ScriptedOpenAIServer([reply(ANSWER), reply("Berlin, on the Spree river.")]) as srv:
        first = build(srv.base_url, store_target)
        one = await first.run(ask("Capital of France?"), thread_id="t")
        await first.aclose()
        second = build(srv.base_url, store_target)  # as a new process would: only the store
        two = await second.run(ask("And Germany?"), thread_id="t")
        history = second.history("t")
        requests = srv.requests
        finished_first = [info for info in history if info.status == "success"][-1]
        old = second.state_at("t", finished_first.seq)
        await second.aclose()

    assert one.status == two.status == "success"
    assert texts(two.state.messages) == [
        "Capital of France?",
        ANSWER,
        "And Germany?",
        "Berlin, on the Spree river.",
    ]
    assert [m["content"] for m in requests[1]["messages"] if m["role"] == "user"] == [
        "Capital of France?",
        "And Germany?",
    ]
    assert two.state.rounds == 1  # run-scoped counters reset for the new run
    seqs = [info.seq for info in history]
    assert seqs == sorted(seqs, reverse=True) and len(seqs) >= 4  # both runs' versions kept
    assert all(info.parent_seq == info.seq - 1 for info in history[:-1]) and history[-1].parent_seq is None
    assert history[0].status == "success" and history[0].messages == 4
    assert finished_first.messages == 2
    assert isinstance(old, ReActState) and texts(old.messages) == ["Capital of France?", ANSWER]


async def test_from_checkpoint_forks_the_thread_and_keeps_every_version(store_target: str) -> None:
    with ScriptedOpenAIServer(
        [reply(ANSWER), reply("Berlin, on the Spree river."), reply("Rome, on the Tiber.")]
    ) as srv:
        agent = build(srv.base_url, store_target)
        await agent.run(ask("Capital of France?"), thread_id="t")
        end_of_first = agent.history("t")[0].seq
        await agent.run(ask("And Germany?"), thread_id="t")
        before = agent.history("t")
        fork = await agent.run(ask("And Italy?"), thread_id="t", from_checkpoint=end_of_first)
        after = agent.history("t")
        with pytest.raises(CheckpointError, match=r"thread 't' has no version 999 \(kept versions: 1, "):
            await agent.run(ask("?"), thread_id="t", from_checkpoint=999)
        # A version is an int: True (== 1 in Python) and "1" are refused before anything runs.
        for wrong in (True, "1", 1.0, -1):
            with pytest.raises(InputError, match=rf"from_checkpoint must be a version number .*{wrong!r}"):
                await agent.run(ask("?"), thread_id="t", from_checkpoint=wrong)  # type: ignore[arg-type]
            with pytest.raises(InputError, match=r"seq must be a version number"):
                agent.state_at("t", wrong)  # type: ignore[arg-type]
        assert agent.history("t") == after
        second_answer = texts(agent.state_at("t", before[0].seq).messages)[-1]
        await agent.aclose()

    assert texts(fork.state.messages) == ["Capital of France?", ANSWER, "And Italy?", "Rome, on the Tiber."]
    assert after[len(after) - len(before) :] == before  # the versions after the fork point stay
    first_new = after[len(after) - len(before) - 1]
    assert first_new.seq == before[0].seq + 1 and first_new.parent_seq == end_of_first  # the fork
    assert second_answer == "Berlin, on the Spree river."


async def test_retention_keeps_the_newest_versions(tmp_path: Path) -> None:
    store = open_checkpointer(tmp_path / "runs.db", keep=2)
    with ScriptedOpenAIServer([reply(ANSWER), reply("Berlin, on the Spree river.")]) as srv:
        agent = build(srv.base_url, store)
        await agent.run(ask("Capital of France?"), thread_id="t")
        await agent.run(ask("And Germany?"), thread_id="t")
        history = agent.history("t")
        with pytest.raises(CheckpointError, match="has no version 1 "):
            agent.state_at("t", 1)
    store.close()
    assert len(history) == 2 and history[0].messages == 4


def test_memory_store_and_errors_without_a_store() -> None:
    agent = build("http://127.0.0.1:9/v1")
    with pytest.raises(CheckpointError, match=r"history\(\) needs a checkpointer"):
        agent.history("t")
    assert build("http://127.0.0.1:9/v1", MemoryCheckpointer()).history("nope") == []


def test_retention_comes_from_the_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from jianmu_like._base.config import ConfigError, get_config, load_config

    bad = tmp_path / "bad.yaml"
    bad.write_text("checkpoints:\n  keep: 0\n")
    with pytest.raises(ConfigError, match="keep must be at least 1"):
        load_config(bad)
    good = tmp_path / "good.yaml"
    good.write_text("checkpoints:\n  keep: 3\n")
    assert load_config(good).checkpoints.keep_versions == 3
    monkeypatch.setenv("JIANMU__CHECKPOINTS__KEEP", "2")
    get_config(reload=True)
    try:
        store = open_checkpointer(tmp_path / "runs.db")
        assert store.keep == 2 and MemoryCheckpointer().keep == 2
        store.close()
    finally:
        monkeypatch.delenv("JIANMU__CHECKPOINTS__KEEP")
        get_config(reload=True)
    assert MemoryCheckpointer().keep is None


async def test_a_thread_of_another_state_schema_is_refused_before_anything_changes(tmp_path: Path) -> None:
    from pydantic import ConfigDict

    class OtherState(ReActState):
        model_config = ConfigDict(extra="allow")
        note: str = ""

    store = str(tmp_path / "runs.db")
    with ScriptedOpenAIServer([reply(ANSWER)]) as srv:
        writer = build(srv.base_url, store)
        await writer.run(ask("Capital of France?"), thread_id="t")
        await writer.aclose()
        other = Agent(tree(srv.base_url), state_schema=OtherState, checkpointer=store)
        before = other.state.model_dump()
        with pytest.raises(CheckpointError, match=r"was written with state schema .*ReActState"):
            await other.run(ask("And Germany?"), thread_id="t")
        assert other.state.model_dump() == before and len(srv.requests) == 1
        await other.aclose()
