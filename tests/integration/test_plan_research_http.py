"""Plan-and-execute and research presets over real HTTP (openai client → scripted server): one
re-plan after a failed step, the per-step model override, results flowing between steps, usage
per namespace equal to what the server returned, the research tool-call cap counted in tool
executions, the compressed summary as the only thing a parent reads, a suspended step resumed
from SQLite in a new agent, and both presets from YAML."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from rich.console import Console

from jianmu_like import (
    Agent,
    ReActConfig,
    ToolCall,
    Usage,
    create_plan_execute_node,
    create_research_node,
    human,
    load_agent,
    tool,
)
from jianmu_like.bt import _composites as composites
from jianmu_like.cli._render import tree_view
from jianmu_like.guard import GuardDecision, GuardEnforcer
from jianmu_like.nodes import LLMCallNode
from jianmu_like.testing import ScriptedOpenAIServer, call, calls, error_reply, reply
from jianmu_like.tools.builtin import calculator


def plan(*steps: dict[str, Any], tokens: int = 15) -> Any:
    usage = Usage(prompt_tokens=tokens - 5, completion_tokens=5, total_tokens=tokens)
    return reply(tool_calls=[call("Plan", steps=list(steps))], usage=usage)


def text(content: str, tokens: int) -> Any:
    return reply(content, usage=Usage(prompt_tokens=tokens - 1, completion_tokens=1, total_tokens=tokens))


def is_plan(body: dict[str, Any]) -> bool:
    return any(t["function"]["name"] == "Plan" for t in body.get("tools") or [])


def user_text(body: dict[str, Any]) -> str:
    return "\n".join(m["content"] or "" for m in body["messages"] if m["role"] == "user")


async def test_failed_step_replans_once_with_the_step_model_and_usage_per_namespace() -> None:
    script = [
        plan(
            {"task": "multiply 6 by 7", "tools": ["calculator"]},
            {"task": "double it", "model": "strong"},
            tokens=11,
        ),
        reply(
            tool_calls=[call("calculator", expression="6*7")], usage=Usage(total_tokens=20, prompt_tokens=20)
        ),
        text("42", 30),
        error_reply(400, "context too long"),  # step 2 fails on its model
        plan({"task": "double 42", "model": "strong"}, tokens=40),
        text("84", 50),
        text("6*7 doubled is 84.", 60),
    ]
    async with ScriptedOpenAIServer(script) as srv:
        root = create_plan_execute_node(
            "Solve", model_client=srv.client(), tools=[calculator], models={"strong": "big-model"}
        )
        agent = Agent(root)
        result = await agent.run({"messages": [human("What is 6*7 doubled?")]})
        requests = srv.requests
    # The live tree view shows the steps built at run time, with their outcome.
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(tree_view(agent.root, statuses=True))
    live = console.file.getvalue()  # type: ignore[attr-defined]
    assert "Solve.Step3" in live and "Solve.Step3.Tools" in live and "Solve.Step1" not in live

    assert result.status == "success" and result.final_answer == "6*7 doubled is 84."
    assert result.termination == {"reason": "completed", "iterations": 2}  # one re-plan
    plans = [r for r in requests if is_plan(r)]
    assert len(plans) == 2
    replan = user_text(plans[1])
    assert "Step 2 (double it) failed: model_error" in replan and "context too long" in replan
    assert "Step 1 (multiply 6 by 7): 42" in replan
    # The per-step model override: exactly the steps naming "strong" asked big-model.
    assert [r["model"] for r in requests] == [
        "scripted-model",
        "scripted-model",
        "scripted-model",
        "big-model",
        "scripted-model",
        "big-model",
        "scripted-model",
    ]
    # Results flow: the re-planned step's prompt carries step 1's result.
    assert "Step 1 (multiply 6 by 7): 42" in user_text(requests[5])
    assert "Your step (3): double 42" in user_text(requests[5])
    agents = result.agents
    assert set(agents) == {"step1", "step2", "step3"}
    assert (agents["step1"].status, agents["step1"].final_answer) == ("success", "42")
    assert agents["step2"].status == "failure" and "context too long" in (agents["step2"].error or "")
    assert (agents["step3"].status, agents["step3"].final_answer) == ("success", "84")
    assert [agents[s].usage.total_tokens for s in ("step1", "step2", "step3")] == [20 + 30, 0, 50]
    assert result.usage.total_tokens == 11 + 20 + 30 + 40 + 50 + 60
    assert result.usage.calls == 6  # the failed call reported no usage
    assert [r["number"] for r in result.state.plan_results] == [1, 2, 3]


async def test_a_second_failure_stops_after_exactly_one_replan() -> None:
    script = [
        plan({"task": "look it up"}),
        error_reply(400, "first failure"),
        plan({"task": "look it up again"}),
        error_reply(400, "second failure"),
    ]
    async with ScriptedOpenAIServer(script) as srv:
        root = create_plan_execute_node("Solve", "pe", model_client=srv.client(), tools=[calculator])
        result = await Agent(root).run({"messages": [human("What is the answer?")]})
        requests = srv.requests
    assert result.status == "failure"
    assert len([r for r in requests if is_plan(r)]) == 2 and len(requests) == 4
    assert result.termination is not None
    assert result.termination["reason"] == "step_failed" and result.termination["step"] == 2
    assert "second failure" in result.termination["error"]
    assert set(result.agents) == {"pe", "pe.step1", "pe.step2"}
    assert result.usage.total_tokens == 2 * 15 == result.agents["pe"].usage.total_tokens


def needs_approval(call: ToolCall, _tool: Any, _ctx: Any) -> GuardDecision | None:
    return GuardDecision.pending("a human checks every calculation") if call.name == "calculator" else None


def approval_agent(client: Any, db: Path) -> Agent:
    root = create_plan_execute_node(
        "Solve", model_client=client, tools=[calculator], constraints=GuardEnforcer([needs_approval])
    )
    return Agent(root, checkpointer=db)


async def test_a_step_waiting_for_approval_resumes_from_sqlite_in_a_new_agent(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    script = [
        plan({"task": "compute 2+3"}),
        call("calculator", expression="2+3"),
        text("5", 15),
        text("2+3 is 5.", 15),
    ]
    async with ScriptedOpenAIServer(script) as srv:
        first = await approval_agent(srv.client(), db).run({"messages": [human("2+3?")]}, thread_id="t")
        assert first.status == "suspended"
        [approval] = first.pending_approvals
        assert approval.namespace == "step1"
        done = await approval_agent(srv.client(), db).resume({approval.id: "approve"}, thread_id="t")
        assert len(srv.requests) == 4  # no model call repeated
    assert done.status == "success" and done.final_answer == "2+3 is 5."
    assert done.agents["step1"].final_answer == "5"


@tool
def search(query: str) -> str:
    """Search the web.

    Args:
        query: What to look for.
    """
    SEARCHES.append(query)
    return f"{query}: raw page text {len(SEARCHES)} (https://example.org/{len(SEARCHES)})"


SEARCHES: list[str] = []


async def test_research_cap_refuses_calls_beyond_the_limit_and_the_parent_reads_the_summary() -> None:
    SEARCHES.clear()
    summary = "Rome has 2.8 million people [1]."
    script = [
        calls(
            call("search", query="rome"), call("think", thought="need more"), call("search", query="italy")
        ),
        calls(call("search", query="census"), call("search", query="again")),  # the cap is 3
        reply(tool_calls=[call("ResearchSummary", summary=summary, sources=["https://example.org/1"])]),
        text("About 2.8 million.", 10),
    ]
    async with ScriptedOpenAIServer(script) as srv:
        research = create_research_node(
            "Researcher", "r", model_client=srv.client(), tools=[search], max_tool_calls=3
        )
        writer = LLMCallNode("Writer", srv.client(), namespace="w", prompt="Answer from: {r.final_answer}")
        tree = composites.Sequence("Pipeline", memory=True, children=[research, writer])
        result = await Agent(tree, output_namespace="w").run({"r.messages": [human("Population of Rome?")]})
        requests = srv.requests

    assert SEARCHES == ["rome", "italy", "census"]  # three executions, then a refusal ends it
    assert result.agents["r"].termination == {"reason": "completed", "iterations": 2, "tool_cap": 3}
    compress = user_text(requests[2])
    assert (
        "Tool call limit reached (3 calls)" in compress and "none: stopped at its tool-call limit" in compress
    )
    assert result.status == "success" and result.final_answer == "About 2.8 million."
    research_answer = result.agents["r"].final_answer
    assert research_answer == f"{summary}\n\nSources:\n[1] https://example.org/1"
    assert result.agents["r"].output.sources == ["https://example.org/1"]
    writer_prompt = user_text(requests[-1])
    assert summary in writer_prompt and "raw page text" not in writer_prompt
    assert "raw page text" in compress  # the compress step read the findings
    assert result.usage.total_tokens == 15 * 3 + 10
    assert result.agents["r"].usage.total_tokens == 15 * 3


async def test_a_model_that_keeps_searching_is_stopped_at_the_cap_and_summarised() -> None:
    """Document 004: the cap routes to the compress step regardless of the model's requests; the
    run succeeds with the summary instead of failing at max_iterations with none."""
    SEARCHES.clear()
    summary = "Rome has 2.8 million people [1]."
    searching = [call("search", query=f"rome {n}") for n in range(3)]  # it would go on asking
    script = [
        *searching,
        reply(tool_calls=[call("ResearchSummary", summary=summary, sources=["https://example.org/1"])]),
    ]
    async with ScriptedOpenAIServer(script) as srv:
        research = create_research_node(
            "Researcher",
            model_client=srv.client(),
            tools=[search],
            max_tool_calls=2,
            config=ReActConfig(max_iterations=6),
        )
        agent = Agent(research)
        events: list[Any] = []
        agent.telemetry.subscribe(events.append)
        result = await agent.run({"messages": [human("Population of Rome?")]})
        requests = srv.requests
    assert SEARCHES == ["rome 0", "rome 1"]
    assert result.status == "success"
    assert result.final_answer == f"{summary}\n\nSources:\n[1] https://example.org/1"
    assert result.termination == {"reason": "completed", "iterations": 3, "tool_cap": 2}
    stops = [e.data for e in events if e.type == "loop.terminated"]
    assert [s["reason"] for s in stops] == ["tool_cap"]
    assert len(requests) == 4  # three searches asked (the third refused), then the compress step
    assert [t["function"]["name"] for t in requests[-1]["tools"]] == ["ResearchSummary"]


PLAN_FILE = """
kind: plan_execute
name: Solver
tools: [calculator]
limits: {max_iterations: 4}
plan: {max_steps: 2, models: {strong: big-model}}
"""

TREE_FILE = """
kind: tree
name: Pipeline
output: write
tree:
  sequence:
    children:
      - research:
          name: Researcher
          namespace: r
          tools: [calculator]
          input: "Research: {task}"
          research: {max_tool_calls: 1}
      - react:
          name: Writer
          namespace: write
          input: "Answer from: {r.final_answer}"
"""


async def test_both_presets_from_yaml(tmp_path: Path) -> None:
    (tmp_path / "plan.yaml").write_text(PLAN_FILE)
    (tmp_path / "tree.yaml").write_text(TREE_FILE)
    script = [
        plan({"task": "compute 2**10", "model": "strong"}),
        text("1024", 15),
        text("2**10 = 1024.", 15),
        calls(call("calculator", expression="1+1"), call("calculator", expression="2+2")),
        reply(tool_calls=[call("ResearchSummary", summary="1+1 is 2 [1].", sources=["calculator"])]),
        text("It is 2.", 15),
    ]
    async with ScriptedOpenAIServer(script) as srv:
        planned = load_agent(tmp_path / "plan.yaml", model_client=srv.client())
        first = await planned.run({"task": "2**10?", "messages": [human("2**10?")]})
        tree = load_agent(tmp_path / "tree.yaml", model_client=srv.client())
        second = await tree.run({"task": "1+1?", "messages": [human("1+1?")]})
        requests = srv.requests
    assert first.status == "success" and first.final_answer == "2**10 = 1024."
    assert requests[1]["model"] == "big-model"
    assert second.status == "success" and second.final_answer == "It is 2."
    findings = user_text(requests[4])  # the compress step, right after the refused call
    assert '1. calculator({"expression": "1+1"}) -> 2' in findings
    assert "Tool call limit reached (1 calls)" in findings
    assert "1+1 is 2 [1]." in user_text(requests[5])


async def test_date_placeholder_in_preset_prompts() -> None:
    """`{date}` in any preset prompt becomes today's date; the research prompt has it by default."""
    import datetime

    from jianmu_like import create_react_node

    today = datetime.date.today().isoformat()
    summary = reply(tool_calls=[call("ResearchSummary", summary="Nothing [1].", sources=["none"])])
    async with ScriptedOpenAIServer([text("Nothing found.", 5), summary, text("Hi.", 5)]) as srv:
        research = create_research_node("Researcher", model_client=srv.client(), tools=[search])
        await Agent(research).run({"messages": [human("Latest news?")]})
        react = create_react_node(
            model_client=srv.client(), config=ReActConfig(system_prompt="As of {date}, be brief.")
        )
        await Agent(react).run({"messages": [human("Hi?")]})
        requests = srv.requests
    assert f"today is {today}" in requests[0]["messages"][0]["content"]
    assert requests[2]["messages"][0]["content"].startswith(f"As of {today}, be brief.")
    assert "{date}" not in str(requests)
