"""Document 004's critic over the supervisor's own draft (004-35): with `review_answer=True` the
critic judges the supervisor's answer to the run's task; a rejected draft is rewritten from the
results with the critique — over real HTTP against the scripted server, twice on one agent (each
run gets its own re-runs)."""

from __future__ import annotations

from typing import Any

from jianmu_like import Agent, SupervisorConfig, create_supervisor_node, human
from jianmu_like.testing import ScriptedOpenAIServer, call, reply

TASK = "How many people live in Paris?"
CRITIQUE = "give the exact census figure"


def respond(body: dict[str, Any]) -> Any:
    names = {t["function"]["name"] for t in body.get("tools") or []}
    users = [str(m.get("content")) for m in body["messages"] if m["role"] == "user"]
    if "SupervisorPlan" in names:
        return reply(tool_calls=[call("SupervisorPlan", sub_questions=["Population of Paris?"])])
    if "SupervisorDecision" in names:
        return reply(tool_calls=[call("SupervisorDecision", answer="Roughly two million (draft).")])
    if "CriticVerdict" in names:
        accept = "(draft)" not in users[-1]
        verdict = call("CriticVerdict", accept=accept, critique="" if accept else CRITIQUE)
        return reply(tool_calls=[verdict])
    if "Write the final answer to the task." in users[-1]:
        return reply("Paris has 2.1 million people (census).")
    return reply("Paris has 2.1 million people.")  # the sub-agent


async def test_the_critic_reviews_the_supervisors_draft_and_a_rejected_one_is_rewritten() -> None:
    async with ScriptedOpenAIServer(respond) as srv:
        root = create_supervisor_node(
            model_client=srv.client(),
            supervisor=SupervisorConfig(max_follow_ups=0, review_answer=True, max_critic_retries=1),
        )
        agent = Agent(root)
        for _ in range(2):
            before = len(srv.requests)
            result = await agent.run({"messages": [human(TASK)]})
            requests = srv.requests[before:]
            assert result.status == "success"
            assert result.final_answer == "Paris has 2.1 million people (census)."
            verdicts = [r for r in requests if "CriticVerdict" in str(r.get("tools"))]
            assert len(verdicts) == 2  # the draft, rejected; the rewrite, accepted
            assert f"Question: {TASK}" in str(verdicts[0]["messages"][-1]["content"])
            revise = next(r for r in requests if str(r["messages"][-1]["content"]).endswith("to the task."))
            history = [str(m.get("content")) for m in revise["messages"]]
            assert "Roughly two million (draft)." in history
            assert any(h.startswith(f"A reviewer rejected your answer: {CRITIQUE}") for h in history)
        reviews = result.state.model_extra["supervisor.critic_reviews"]  # type: ignore[index]
        assert [r["accept"] for r in reviews] == [False, True]  # this run's only
