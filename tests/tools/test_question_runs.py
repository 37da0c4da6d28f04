"""Whose question is it: a question box shared by runs lists and ends each question only for the
runs it may belong to, and a run inside another (an agent called as a tool) counts as both."""

from __future__ import annotations

import asyncio

from jianmu_like.testing import await_within, wait_until_async
from jianmu_like.tools._questions import QuestionBox
from jianmu_like.tools._run_context import RunContext, current_run, enter_run, leave_run


def test_a_run_entered_inside_another_knows_the_runs_around_it() -> None:
    outer = enter_run(RunContext(None, run_id="parent"))
    try:
        inner = enter_run(RunContext(None, run_id="child"))
        try:
            assert current_run().lineage() == ("child", "parent")
        finally:
            leave_run(inner)
        assert current_run().lineage() == ("parent",)
    finally:
        leave_run(outer)


async def test_a_nested_runs_question_is_the_calling_runs_too() -> None:
    box = QuestionBox("srv", timeout=30)
    outer = enter_run(RunContext(None, run_id="parent"))
    try:
        inner = enter_run(RunContext(None, run_id="child"))
        try:
            with box.calling():  # the child's tool call; the question arrives in another task
                asked = asyncio.create_task(box.ask_human(message="name?", runs=box.callers()))
                await wait_until_async(lambda: box.pending(), "the question is open")
                (question,) = box.pending()
                assert box.pending("child") == [question]
                assert box.pending("parent") == [question]  # the caller can see and answer it
                assert box.pending("someone else") == []
                box.release("child")  # the child ended: the parent still waits on it
                assert box.pending("parent") == [question]
                box.respond(question.id, "accept", {})
                answer = await await_within(asked, "the answer reaches the asking call")
                assert answer.action == "accept"
        finally:
            leave_run(inner)
    finally:
        leave_run(outer)


async def test_a_question_no_other_run_can_own_is_cancelled_when_its_run_ends() -> None:
    box = QuestionBox("srv", timeout=30)
    token = enter_run(RunContext(None, run_id="only"))
    try:
        with box.calling():
            asked = asyncio.create_task(box.ask_human(message="name?", runs=box.callers()))
            await wait_until_async(lambda: box.pending(), "the question is open")
            box.release("only")
            answer = await await_within(asked, "the cancel reaches the asking call")
            assert answer.action == "cancel"
    finally:
        leave_run(token)
