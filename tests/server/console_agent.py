"""The agent the console tests serve: a ReAct agent on the scripted model with four tools.

`add N` -> add(N, 1); `wait L` -> wait(L) (held until `gate` is set); `delete P` ->
delete_file(P), which a guard policy holds for approval (PENDING); `think N` -> add(N, 1) with a
thought before it; `reason N` -> add(N, 1) with the model's reasoning (`reasoning_content`);
`boom X` -> explode(X), a tool that fails; `fail X` -> the model call fails (HTTP 400); `md X` ->
an answer in hostile markdown (`HOSTILE`). After a tool result the model answers "result
<output>", or quotes the follow-up when one was injected. `console_app(checkpoint=)` serves it
with a checkpoint store (one `Agent` per conversation), so threads and versions exist.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from starlette.applications import Starlette

from jianmu_like import Agent, AgentTemplate, ReActConfig, create_react_node, tool
from jianmu_like.guard import GuardEnforcer, RequireApproval
from jianmu_like.server import create_app
from jianmu_like.testing import PATIENCE, call, calls, error_reply, reply, scripted_client

gate = threading.Event()
HOSTILE = (
    "The total is **110**.\n\n"
    "<script>document.title = 'pwned by script'</script>\n\n"
    "<img src=x onerror=\"document.title = 'pwned by onerror'\">\n\n"
    "[a javascript link](javascript:document.title='pwned-by-link') and "
    "[a fine link](https://example.org/docs)\n\n"
    "| city | people |\n|---|---|\n| Paris | 2.1 |\n"
)


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


@tool
def explode(label: str) -> str:
    """A tool that fails."""
    raise ValueError(f"the {label} blew up")


def responder(body: dict[str, Any]) -> Any:
    messages = body["messages"]
    last = messages[-1]
    if last["role"] == "user" and last["content"].startswith("[USER INTERRUPT]"):
        return reply(f"noted: {last['content']}")
    if last["role"] == "tool":
        return reply(f"result {last['content']}")
    verb, arg = last["content"].split()
    if verb == "think":
        return calls(call("add", a=int(arg), b=1), content=f"I should add 1 to {arg}.")
    if verb == "reason":
        return calls(call("add", a=int(arg), b=1), reasoning_content=f"Adding one to {arg}.")
    if verb == "boom":
        return call("explode", label=arg)
    if verb == "fail":
        return error_reply(400, f"the model refuses {arg}")
    if verb == "md":
        return reply(HOSTILE)
    if verb == "add":
        return call("add", a=int(arg), b=1)
    if verb == "wait":
        return call("wait", label=arg)
    return call("delete_file", path=arg)


def build_root() -> Any:
    return create_react_node(
        model_client=scripted_client(responder),
        tools=[add, wait, delete_file, explode],
        constraints=GuardEnforcer([RequireApproval(tools="delete_file")]),
        config=ReActConfig(stream=True, max_iterations=5),
    )


def console_app(*, token: str | None = None, checkpoint: str | None = None) -> Starlette:
    if checkpoint is not None:
        return create_app(lambda: Agent(build_root(), checkpointer=checkpoint, log_events=False), token=token)
    template = AgentTemplate.from_prototype(build_root(), log_events=False)
    return create_app(template.conversation, token=token)


def replayable() -> Agent:
    """The console agent as a `module:function` entry a recording names (`record()`)."""
    return Agent(build_root(), log_events=False)


def changed() -> Agent:
    """The console agent changed since a recording: another system prompt (a replay diverges at
    the first model call)."""
    root = create_react_node(
        model_client=scripted_client(responder),
        tools=[add, wait, delete_file, explode],
        constraints=GuardEnforcer([RequireApproval(tools="delete_file")]),
        config=ReActConfig(stream=True, max_iterations=5, system_prompt="You changed."),
    )
    return Agent(root, log_events=False)


def record(path: Any, question: str, entry: str = "tests.server.console_agent:replayable") -> None:
    """Record one run of the console agent into `path`, naming `entry` as its agent (in a thread
    of its own: a browser test's thread runs Playwright's event loop)."""
    from concurrent.futures import ThreadPoolExecutor

    from jianmu_like import human
    from jianmu_like._run.recording import RunRecording

    async def once() -> None:
        agent = Agent(build_root(), log_events=False, record=RunRecording(path, agent=entry))
        try:
            await agent.run({"messages": [human(question)]})
        finally:
            await agent.aclose()

    with ThreadPoolExecutor(1) as pool:  # its own event loop (a browser test's thread has one)
        pool.submit(asyncio.run, once()).result(PATIENCE)
