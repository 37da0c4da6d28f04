"""The agent the console tests serve: a ReAct agent on the scripted model with three tools.

`add N` -> add(N, 1); `wait L` -> wait(L) (held until `gate` is set); `delete P` ->
delete_file(P), which a guard policy holds for approval (PENDING). After a tool result the model
answers "result <output>", or quotes the follow-up when one was injected.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from starlette.applications import Starlette

from jianmu_like import AgentTemplate, ReActConfig, create_react_node, tool
from jianmu_like.guard import GuardEnforcer, RequireApproval
from jianmu_like.server import create_app
from jianmu_like.testing import PATIENCE, call, reply, scripted_client

gate = threading.Event()


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
async def wait(label: str) -> str:
    """Wait until released."""
    released = await asyncio.to_thread(gate.wait, PATIENCE)
    return f"{label} released" if released else f"{label} timed out"


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def responder(body: dict[str, Any]) -> Any:
    messages = body["messages"]
    last = messages[-1]
    if last["role"] == "user" and last["content"].startswith("[USER INTERRUPT]"):
        return reply(f"noted: {last['content']}")
    if last["role"] == "tool":
        return reply(f"result {last['content']}")
    verb, arg = last["content"].split()
    if verb == "add":
        return call("add", a=int(arg), b=1)
    if verb == "wait":
        return call("wait", label=arg)
    return call("delete_file", path=arg)


def console_app(*, token: str | None = None) -> Starlette:
    root = create_react_node(
        model_client=scripted_client(responder),
        tools=[add, wait, delete_file],
        constraints=GuardEnforcer([RequireApproval(tools="delete_file")]),
        config=ReActConfig(stream=True, max_iterations=5),
    )
    template = AgentTemplate.from_prototype(root, log_events=False)
    return create_app(template.conversation, token=token)
