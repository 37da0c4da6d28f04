"""A tool's question is saved with its thread while it waits (SQLite and PostgreSQL): the store
lists it as soon as it is asked, a version without it is saved once it is answered, two answers
at once leave the first standing (the second is `AlreadyAnswered`), a run cancelled while its
question waits answers it `cancel` and leaves it listed as expired (an answer is
`QuestionExpired`, nothing recorded), and the answer's secret fields are `***` in the events.
Against server-everything over stdio and the real `openai` client against the strict scripted
model server."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from jianmu_like import Agent, create_react_node, human
from jianmu_like._run.review import QuestionExpired, stored_questions
from jianmu_like.checkpoint import Checkpointer
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, call, reply, wait_until_async
from jianmu_like.tools import MCPToolProvider
from jianmu_like.tools._questions import AlreadyAnswered, Question, QuestionAnswer, shown_answer
from tests.mcp.everything import everything_command, needs_everything

pytestmark = needs_everything


def model(body: dict[str, Any]) -> Any:
    results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    return reply(f"done: {results[-1]}") if results else call("trigger-elicitation-request")


def asking_agent(srv: ScriptedOpenAIServer, store: str) -> Agent:
    node, *args = everything_command("stdio")
    provider = MCPToolProvider(
        name="ev", command=node, args=args, elicitation="ask", allow=["trigger-elicitation-request"]
    )
    return Agent(create_react_node(model_client=srv.client(), tool_providers=[provider]), checkpointer=store)


def versions(store: Checkpointer, thread_id: str) -> list[tuple[str, list[str]]]:
    """(status, open question ids) of each version the store keeps, oldest first."""
    found = []
    for info in reversed(store.history(thread_id)):
        checkpoint = store.load(thread_id, info.seq)
        assert checkpoint is not None
        found.append((checkpoint.status, [q["id"] for q in checkpoint.questions]))
    return found


async def test_a_question_is_stored_while_it_waits_and_answered_once(store_target: str) -> None:
    with ScriptedOpenAIServer(model) as srv:
        agent = asking_agent(srv, store_target)
        decided: list[dict[str, Any]] = []
        agent.telemetry.subscribe(
            lambda e: decided.append(e.data) if e.type == "interruption.decided" else None
        )
        try:
            run = asyncio.create_task(agent.run({"messages": [human("ask my name")]}, thread_id="t"))
            store = agent.checkpointer
            assert store is not None
            [stored] = await wait_until_async(
                lambda: stored_questions(store, thread_id="t"), "the question, in the store"
            )
            assert stored.alive and stored.expired is None and stored.question.server == "ev"
            [live] = agent.pending_interruptions()
            assert (live.id, live.kind) == (stored.question.id, "question")

            # Two answers at once (no await between them): the first stands.
            agent.decide(live.id, {"action": "accept", "content": {"name": "Ada"}})
            with pytest.raises(AlreadyAnswered, match=r"already answered \(accept\)"):
                agent.decide(live.id, "decline")

            result = await asyncio.wait_for(run, PATIENCE)
            assert result.status == "success", result.error
            assert result.final_answer is not None and "Ada" in result.final_answer
            assert stored_questions(store, thread_id="t") == []
            history = versions(store, "t")
            asked = max(i for i, (_, ids) in enumerate(history) if ids == [live.id])
            assert history[asked + 1] == ("running", [])  # saved again once answered
            [answer] = [d["answer"] for d in decided]
            assert (answer["action"], answer["content"]["name"]) == ("accept", "Ada")
        finally:
            await agent.aclose()


async def test_a_question_of_a_cancelled_run_is_listed_expired_and_refused(store_target: str) -> None:
    with ScriptedOpenAIServer(model) as srv:
        agent = asking_agent(srv, store_target)
        try:
            run = asyncio.create_task(agent.run({"messages": [human("ask my name")]}, thread_id="t"))
            [live] = await wait_until_async(agent.pending_elicitations, "the server's question")
            run.cancel()
            with pytest.raises(asyncio.CancelledError):
                await run
            # The run answers its open questions `cancel` as it ends (the server's request waits
            # in the MCP session, not in the cancelled call).
            await wait_until_async(lambda: agent.pending_elicitations() == [], "the question cancelled")
            [listed] = agent.pending_interruptions(thread_id="t")
            assert listed.id == live.id and listed.expired is not None
            with pytest.raises(QuestionExpired, match="has expired: the run that asked it has stopped"):
                agent.decide(live.id, {"action": "accept", "content": {"name": "Ada"}})
            assert [q.id for q in agent.pending_interruptions(thread_id="t")] == [live.id]  # nothing recorded
        finally:
            await agent.aclose()


def test_secret_fields_of_an_answer_are_hidden_from_the_events() -> None:
    question = Question(
        id="q-1",
        server="s",
        message="Sign in",
        requested_schema={
            "type": "object",
            "properties": {
                "user": {"type": "string"},
                "pin": {"type": "string", "writeOnly": True},
                "passphrase": {"type": "string", "format": "password"},
                "api_key": {"type": "string"},
            },
        },
    )
    answer = QuestionAnswer(
        action="accept", content={"user": "ada", "pin": "1234", "passphrase": "open sesame", "api_key": "k"}
    )
    shown = shown_answer(question, answer)
    assert shown["content"] == {"user": "ada", "pin": "***", "passphrase": "***", "api_key": "***"}
    assert answer.content is not None and answer.content["pin"] == "1234"  # the tool gets it whole
