"""A failed run says why, whatever its root (issue 34, item 2): a tree whose output namespace
never ran names the agent that failed, a plain tree the node, and a ReAct loop's limits what to
raise."""

from __future__ import annotations

import py_trees

from jianmu_like import Agent, AgentResult, ReActState
from jianmu_like._run.explain import headline


async def test_a_plain_tree_that_fails_names_the_node_that_failed() -> None:
    root = py_trees.composites.Sequence(
        "Steps",
        memory=True,
        children=[py_trees.behaviours.Success("Fetch"), py_trees.behaviours.Failure("Check")],
    )
    result = await Agent(root, state_schema=ReActState).run({})
    assert result.status == "failure"
    assert result.error is not None and result.error.startswith("node 'Check' failed")
    assert headline(result)[0] == result.error


def test_a_loop_limit_says_what_to_raise() -> None:
    termination = {"reason": "max_iterations", "iterations": 8, "max_iterations": 8}
    first, more = headline(AgentResult(status="failure", termination=termination))
    assert first == (
        "it reached its limit of 8 iterations without an answer: raise limits.max_iterations, or ask "
        "a narrower question"
    )
    assert more == []
    budget = {"reason": "budget_exhausted", "total_tokens": 9000, "max_budget_tokens": 8000}
    assert headline(AgentResult(status="failure", termination=budget))[0] == (
        "it spent its token budget (9000 of 8000 tokens): raise limits.max_budget_tokens"
    )


def test_a_failure_nothing_explains_says_where_to_look() -> None:
    first, _ = headline(AgentResult(status="failure"))
    assert first == "the agent failed (error), and nothing recorded why (run with -v, or --json)"
