"""Run dependencies: `run(..., deps=obj)` hands `obj` to the run's tools — a `RunContext[T]`
parameter (left out of the tool's schema) or `current_run().deps` — and never into a checkpoint:
a resume takes `deps=` again. Over real HTTP (the scripted OpenAI server, the real `openai`
client), with a real SQLite checkpoint resumed by another Agent."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from jianmu_like import (
    Agent,
    AgentTemplate,
    ReActConfig,
    RunContext,
    create_react_node,
    current_run,
    human,
    tool,
)
from jianmu_like.checkpoint import SQLiteCheckpointer
from jianmu_like.guard import GuardEnforcer, RequireApproval
from jianmu_like.testing import ScriptedOpenAIServer, call, calls, reply

SECRET = "db-handle-7f3a9c"
"""Appears in the deps only: a checkpoint that held them would contain it."""


@dataclass
class Shop:
    name: str
    handle: str = SECRET
    charged: list[str] = field(default_factory=list)


@tool
def charge(order_id: str, ctx: RunContext[Shop]) -> str:
    """Charge an order.

    Args:
        order_id: The order.
    """
    ctx.deps.charged.append(order_id)
    return f"{ctx.deps.name} charged {order_id}"


@tool
async def whoami() -> str:
    """Which shop this run serves."""
    deps = current_run().deps
    return "nobody" if deps is None else f"shop {deps.name}"


def build(srv: ScriptedOpenAIServer, checkpointer: Any = None, *, guarded: bool = False) -> Agent:
    guard = GuardEnforcer([RequireApproval(tools="charge")]) if guarded else None
    root = create_react_node(
        model_client=srv.client(),
        tools=[charge, whoami],
        constraints=guard,
        config=ReActConfig(max_iterations=4),
    )
    return Agent(root, checkpointer=checkpointer)


def tool_results(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def test_a_run_context_parameter_is_not_part_of_the_schema() -> None:
    assert list(charge.parameters["properties"]) == ["order_id"]
    assert charge.parameters["required"] == ["order_id"]
    with pytest.raises(RuntimeError, match="only available inside an agent run"):
        current_run()


async def test_deps_reach_the_tools_of_the_run() -> None:
    shop = Shop("north")
    script = [calls(call("charge", order_id="A1"), call("whoami")), reply("Charged.")]
    async with ScriptedOpenAIServer(script) as srv:
        result = await build(srv).run({"messages": [human("charge A1")]}, deps=shop)
        sent_tools = {t["function"]["name"]: t["function"]["parameters"] for t in srv.requests[0]["tools"]}
        results = tool_results(srv.requests[1])
    assert result.status == "success" and shop.charged == ["A1"]
    assert results == ["north charged A1", "shop north"]
    assert list(sent_tools["charge"]["properties"]) == ["order_id"]  # the model never sees ctx


async def test_the_model_cannot_fill_the_context_parameter() -> None:
    shop = Shop("north")
    script = [call("charge", order_id="A1", ctx={"deps": "forged"}), reply("Could not.")]
    async with ScriptedOpenAIServer(script) as srv:
        await build(srv).run({"messages": [human("charge A1")]}, deps=shop)
        [result] = tool_results(srv.requests[1])
    assert shop.charged == [] and "ctx" in result and result.startswith("Error:")


async def test_deps_are_never_checkpointed_and_a_resume_takes_them_again(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    first_shop, second_shop = Shop("first"), Shop("second")
    script = [call("charge", order_id="B2"), reply("Done."), call("whoami"), reply("Nobody.")]
    async with ScriptedOpenAIServer(script) as srv:
        agent = build(srv, SQLiteCheckpointer(db), guarded=True)
        suspended = await agent.run({"messages": [human("charge B2")]}, thread_id="t1", deps=first_shop)
        assert suspended.status == "suspended"
        with sqlite3.connect(db) as con:  # every stored byte: checkpoints, journal, decisions
            dump = "\n".join(con.iterdump())
        assert "first" not in dump and SECRET not in dump

        resumer = build(srv, SQLiteCheckpointer(db), guarded=True)  # as a new process would
        done = await resumer.resume(
            {suspended.pending_approvals[0].id: "approve"}, thread_id="t1", deps=second_shop
        )
        assert done.status == "success" and tool_results(srv.requests[1]) == ["second charged B2"]
        again = await resumer.run({"messages": [human("who?")]}, thread_id="t2")  # no deps given
        assert again.status == "success" and tool_results(srv.requests[3])[-1] == "nobody"
    assert first_shop.charged == [] and second_shop.charged == ["B2"]


async def test_a_conversation_takes_deps_per_run() -> None:
    script = [call("whoami"), reply("one"), call("whoami"), reply("two")]
    async with ScriptedOpenAIServer(script) as srv:
        root = create_react_node(model_client=srv.client(), tools=[charge, whoami])
        conversation = AgentTemplate.from_prototype(root, log_events=False).conversation()
        await conversation.run({"messages": [human("who?")]}, deps=Shop("east"))
        await conversation.run({"messages": [human("and now?")]}, deps=Shop("west"))
        assert tool_results(srv.requests[1])[-1] == "shop east"
        assert tool_results(srv.requests[3])[-1] == "shop west"
