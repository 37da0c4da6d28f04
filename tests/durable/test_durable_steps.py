"""Units of the DBOS integration that need no database: what steps record must survive pickling,
and the tool-call hook reaches every tool call, also those of nodes built during the run."""

from __future__ import annotations

import asyncio
import pickle
from typing import Any

from jianmu_like import tool
from jianmu_like.durable._naming import queue_name
from jianmu_like.models._errors import ModelCallFailed, ModelError
from jianmu_like.models._messages import ToolCall
from jianmu_like.nodes._tool_calls import ToolCallRunner
from jianmu_like.tools._hooks import ToolInvoke, use_tool_call_hook
from jianmu_like.tools._toolset import ToolSet


def test_a_failed_model_call_survives_the_step_record() -> None:
    failed = ModelCallFailed("gave up", attempts=[ModelError("busy", status_code=503, retryable=True)])
    again = pickle.loads(pickle.dumps(failed))
    assert type(again) is ModelCallFailed
    assert str(again) == str(failed)
    assert [(a.message, a.status_code, a.retryable) for a in again.attempts] == [("busy", 503, True)]


def test_the_tool_call_hook_sees_every_call_keeping_the_nodes_own_runner() -> None:
    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    async def sandbox(t: object, arguments: dict[str, object]) -> str:
        return "sandboxed"

    seen: list[str] = []

    async def hook(invoke: ToolInvoke, t: Any, arguments: dict[str, Any]) -> Any:
        seen.append(t.name)
        return await invoke(t, arguments)

    plain = ToolCallRunner(ToolSet([ping]), emit=lambda *a, **k: None)
    boxed = ToolCallRunner(ToolSet([ping]), emit=lambda *a, **k: None, tool_runner=sandbox)
    call = ToolCall(id="c1", name="ping", arguments={})

    async def both() -> list[str]:
        with use_tool_call_hook(hook):
            return [(await plain.run(call, ping)).content, (await boxed.run(call, ping)).content]

    assert asyncio.run(both()) == ["pong", "sandboxed"]
    assert seen == ["ping", "ping"]
    assert asyncio.run(plain.run(call, ping)).content == "pong"  # no hook: called directly
    assert seen == ["ping", "ping"]


def test_two_files_with_one_name_never_share_a_queue(tmp_path: Any) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, second = tmp_path / "a" / "agent.yaml", tmp_path / "b" / "agent.yaml"
    assert queue_name(first) != queue_name(second)
    assert queue_name(first).startswith("jianmu.agent.")
    assert queue_name(first) == queue_name(tmp_path / "b" / ".." / "a" / "agent.yaml")  # one file, one queue
    assert queue_name(first, "payments") == queue_name(second, "payments") == "jianmu.payments"
