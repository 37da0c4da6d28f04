"""An MCP server (stdio) whose tools run as tasks, for what server-everything lacks.

    python mcp_task_server.py

server-everything has one task tool (`simulate-research-query`: required, succeeds, may ask a
question). This server adds what a client must also handle: a tool that *allows* tasks
(`taskSupport: optional`), progress and `notifications/tasks/status` while a task runs, a task
that fails, one the server cancels itself, one that never ends (the client must cancel it), a
server that stops answering `tasks/get`, and a malformed `CreateTaskResult`. `task_log` tells a
test what the server saw (the tasks cancelled through `tasks/cancel`). With the environment
variable `TASK_SERVER_NO_CAPABILITY` set, it does not declare the `tasks` capability (its tools
still say they support tasks, which a client must then ignore). It speaks 2025-11-25 only
(`legacy_stdio`), as servers of that revision do.

The `mcp` SDK (2.3) serves no `tasks/*` methods and would refuse a `CreateTaskResult` as a
`tools/call` result, so a server middleware (`MCPServer(middleware=...)`, the SDK's hook that
runs before its own validation) answers the task side of the protocol: it adds the `tasks`
capability to the handshake and the task tools (with `execution.taskSupport`) to `tools/list`,
and handles `tools/call` of those tools and `tasks/get`, `tasks/result`, `tasks/cancel`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from legacy_stdio import run_legacy  # the script's folder is first on sys.path
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, METHOD_NOT_FOUND, TaskStatusNotification, TaskStatusNotificationParams

RELATED = "io.modelcontextprotocol/related-task"


def _now() -> str:
    return datetime.now(UTC).isoformat()


@dataclass
class Job:
    """One task: its status and, once it ended, its `CallToolResult`."""

    task_id: str
    tool: str
    poll_interval: int
    status: str = "working"
    message: str | None = None
    created: str = field(default_factory=_now)
    updated: str = field(default_factory=_now)
    result: dict[str, Any] | None = None
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    runner: asyncio.Task[None] | None = None

    def wire(self) -> dict[str, Any]:
        task = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": self.created,
            "lastUpdatedAt": self.updated,
            "ttl": 60000,
            "pollInterval": self.poll_interval,
        }
        if self.message is not None:
            task["statusMessage"] = self.message
        return task


JOBS: dict[str, Job] = {}
CANCELLED: list[str] = []
_ids = itertools.count(1)

Notify = Callable[[Job], Awaitable[None]]
Progress = Callable[[float, float | None, str | None], Awaitable[None]]


def _text(text: str, *, error: bool = False) -> dict[str, Any]:
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if error:
        result["isError"] = True
    return result


async def _set(
    job: Job, notify: Notify, status: str, message: str | None, result: dict[str, Any] | None = None
) -> None:
    if job.status in ("completed", "failed", "cancelled"):
        return
    job.status, job.message, job.updated = status, message, _now()
    if result is not None:
        job.result = result
    if status in ("completed", "failed", "cancelled"):
        job.ended.set()
    await notify(job)


async def count_slowly(job: Job, args: dict[str, Any], notify: Notify, progress: Progress) -> None:
    steps = int(args.get("steps", 3))
    for step in range(1, steps + 1):
        await asyncio.sleep(float(args.get("delay", 0.05)))
        await progress(step, steps, f"step {step}")
        await _set(job, notify, "working", f"step {step} of {steps}")
    await _set(job, notify, "completed", None, _text(f"counted to {steps}"))


async def breaks(job: Job, args: dict[str, Any], notify: Notify, progress: Progress) -> None:
    await asyncio.sleep(0.05)
    await _set(job, notify, "failed", "the job broke", _text("the job broke: disk full", error=True))


async def endless(job: Job, args: dict[str, Any], notify: Notify, progress: Progress) -> None:
    await asyncio.Event().wait()


async def withdrawn(job: Job, args: dict[str, Any], notify: Notify, progress: Progress) -> None:
    await asyncio.sleep(0.05)
    await _set(job, notify, "cancelled", "an operator stopped it")


Run = Callable[[Job, dict[str, Any], Notify, Progress], Coroutine[Any, Any, None]]

TASK_TOOLS: dict[str, tuple[str, str, Run]] = {
    "count_slowly": ("optional", "Count to `steps`, one step per `delay` seconds.", count_slowly),
    "breaks": ("required", "A task that fails.", breaks),
    "endless": ("required", "A task that never ends.", endless),
    "withdrawn": ("required", "A task the server cancels itself.", withdrawn),
    "mute": ("required", "A task whose status the server never tells.", endless),
    "malformed": ("required", "Answers with a CreateTaskResult that is not one.", endless),
}


def _tool_def(name: str) -> dict[str, Any]:
    support, description, _ = TASK_TOOLS[name]
    properties = {"steps": {"type": "integer"}, "delay": {"type": "number"}} if name == "count_slowly" else {}
    return {
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": properties},
        "execution": {"taskSupport": support},
    }


def _job(params: dict[str, Any]) -> Job:
    job = JOBS.get(str(params.get("taskId")))
    if job is None:
        raise MCPError(code=INVALID_PARAMS, message=f"no task {params.get('taskId')!r}")
    return job


async def _start(ctx: ServerRequestContext[Any, Any], params: dict[str, Any]) -> HandlerResult:
    name = str(params["name"])
    support, _, run = TASK_TOOLS[name]
    if "task" not in params:
        if support == "required":
            raise MCPError(code=METHOD_NOT_FOUND, message=f"tool {name!r} requires task augmentation")
        job = Job(task_id="inline", tool=name, poll_interval=0)
        await run(job, params.get("arguments") or {}, _quiet, _quiet_progress)
        return job.result
    if name == "malformed":
        return {"task": {"taskId": 7}}
    job = Job(task_id=f"task-{next(_ids)}", tool=name, poll_interval=100 if name != "count_slowly" else 0)
    JOBS[job.task_id] = job
    session = ctx.session
    token = (params.get("_meta") or {}).get("progressToken")

    async def notify(changed: Job) -> None:
        status = TaskStatusNotificationParams.model_validate(changed.wire())
        # Typed for the notifications the SDK knows; it sends any notification model.
        await session.send_notification(TaskStatusNotification(params=status))  # type: ignore[arg-type]

    async def progress(done: float, total: float | None, message: str | None) -> None:
        if token is not None:
            await session.send_progress_notification(token, done, total, message)

    job.runner = asyncio.create_task(run(job, params.get("arguments") or {}, notify, progress))
    return {"task": job.wire()}


async def _quiet(job: Job) -> None:
    return None


async def _quiet_progress(done: float, total: float | None, message: str | None) -> None:
    return None


async def tasks_middleware(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    method, params = ctx.method, dict(ctx.params or {})
    if method == "initialize" and not os.environ.get("TASK_SERVER_NO_CAPABILITY"):
        result = dict(await call_next(ctx) or {})
        tasks: dict[str, Any] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        result["capabilities"] = {**result.get("capabilities", {}), "tasks": tasks}
        return result
    if method == "tools/list":
        result = dict(await call_next(ctx) or {})
        result["tools"] = [*result.get("tools", []), *(_tool_def(name) for name in TASK_TOOLS)]
        return result
    if method == "tools/call" and params.get("name") in TASK_TOOLS:
        return await _start(ctx, params)
    if method == "tasks/get":
        job = _job(params)
        if job.tool == "mute":
            await asyncio.Event().wait()
        return job.wire()
    if method == "tasks/result":
        job = _job(params)
        await job.ended.wait()
        if job.result is None:
            raise MCPError(code=INVALID_PARAMS, message=f"task {job.task_id} has no result: {job.status}")
        return {**job.result, "_meta": {RELATED: {"taskId": job.task_id}}}
    if method == "tasks/cancel":
        job = _job(params)
        if job.status in ("completed", "failed", "cancelled"):
            raise MCPError(code=INVALID_PARAMS, message=f"task {job.task_id} already ended: {job.status}")
        CANCELLED.append(job.task_id)
        if job.runner is not None:
            job.runner.cancel()
        job.status, job.message, job.updated = "cancelled", "cancelled by the client", _now()
        job.ended.set()
        return job.wire()
    return await call_next(ctx)


server = MCPServer("jianmu-tasks", middleware=[tasks_middleware], log_level="WARNING")


@server.tool()
def task_log() -> str:
    """What the server saw: the tasks cancelled through tasks/cancel, every task's last status."""
    return json.dumps({"cancelled": CANCELLED, "status": {job.task_id: job.status for job in JOBS.values()}})


if __name__ == "__main__":
    if os.environ.get("TASK_SERVER_BOTH_ERAS"):
        server.run()  # answers the 2026-07-28 probe too, where core tasks do not exist
    else:
        run_legacy(server)
