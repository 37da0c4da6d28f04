"""The `Interruption` record: one shape for every kind, typed payloads back from JSON, the
answers each kind takes, a kind added by registering it, and a suspended run's interruptions
answered by `Agent.decide`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from jianmu_like import human
from jianmu_like.guard import Interruption, InterruptionError, InterruptionKind, register_kind
from jianmu_like.guard._approvals import Approval, ApprovalDecision
from jianmu_like.guard._interruptions import KINDS, from_approval, from_question
from jianmu_like.testing import ScriptedOpenAIServer, call, reply
from jianmu_like.tools import ElicitationError
from jianmu_like.tools._questions import Question, QuestionAnswer
from tests.integration.approval_agent import build_agent


def test_each_kind_comes_back_from_json_with_its_typed_payload() -> None:
    approval = from_approval(Approval(id="call_1", tool="delete_file", arguments={"path": "x"}), "a")
    question = from_question(Question(id="ev-1", server="ev", message="Your name?"))
    for item in (approval, question):
        back = Interruption.model_validate_json(item.model_dump_json())
        assert back == item and type(back.payload) is type(item.payload)
    assert approval.approval is not None and approval.question is None and approval.namespace == "a"
    assert question.question is not None and question.approval is None


def test_each_kind_takes_its_own_answers_and_refuses_the_others() -> None:
    approval = from_approval(Approval(id="call_1", tool="t"))
    question = from_question(Question(id="ev-1", server="ev", message="?"))
    approved = approval.parse_answer("approve")
    assert isinstance(approved, ApprovalDecision) and approved.approved
    denied = approval.parse_answer(("deny", "no"))
    assert isinstance(denied, ApprovalDecision) and (denied.approved, denied.reason) == (False, "no")
    assert question.parse_answer("decline") == QuestionAnswer(action="decline")
    assert question.parse_answer({"action": "accept", "content": {"n": 1}}) == QuestionAnswer(
        action="accept", content={"n": 1}
    )
    with pytest.raises(ValueError, match="not a decision"):
        approval.parse_answer({"action": "accept"})
    with pytest.raises(ElicitationError, match=r"accept \(and content\), decline or cancel"):
        question.parse_answer(True)
    with pytest.raises(ElicitationError, match="not an answer to a question"):
        question.parse_answer({"action": "maybe"})


def test_an_unknown_kind_is_refused_naming_the_known_ones() -> None:
    known = "approval, breakpoint, client_tool, question"
    with pytest.raises(InterruptionError, match=rf"unknown interruption kind 'nap' \(known: {known}\)"):
        Interruption.model_validate({"id": "x", "kind": "nap", "payload": {}})


class Stop(BaseModel):
    node: str


class Go(BaseModel):
    step: bool = False


@pytest.fixture
def pauses() -> Iterator[InterruptionKind]:
    kind = register_kind(InterruptionKind("pause", Stop, Go, lambda value: Go.model_validate(value)))
    try:
        yield kind
    finally:
        KINDS.pop("pause")


def test_a_kind_is_added_by_registering_it(pauses: InterruptionKind) -> None:
    stop = Interruption(id="bp-1", kind="pause", payload=Stop(node="Root/LLM"))
    back = Interruption.model_validate_json(stop.model_dump_json())
    assert back.payload == Stop(node="Root/LLM")
    assert back.parse_answer({"step": True}) == Go(step=True)
    register_kind(pauses)  # the same models again: no conflict
    with pytest.raises(ValueError, match="'pause' is registered already"):
        register_kind(InterruptionKind("pause", Go, Stop, lambda value: value))


async def test_a_suspended_runs_interruptions_are_answered_by_decide(tmp_path: Path) -> None:
    log = tmp_path / "effects.log"
    script = [call("delete_file", path="/tmp/x"), reply("Deleted.")]
    with ScriptedOpenAIServer(script) as srv:
        agent = build_agent(srv.base_url, log)
        result = await agent.run({"messages": [human("delete /tmp/x")]})
        assert result.status == "suspended"
        [waiting] = result.interruptions
        assert waiting.kind == "approval" and waiting.approval == result.pending_approvals[0]
        assert agent.pending_interruptions() == [waiting]
        assert agent.decide(waiting.id, "approve") == waiting
        done = await agent.resume()
    assert done.status == "success" and done.interruptions == []
    assert log.read_text() == "delete /tmp/x\n"
