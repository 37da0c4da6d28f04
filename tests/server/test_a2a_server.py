"""The A2A face of the server, driven by `a2a-sdk`'s own client over real HTTP against
`create_app`, the agent's model the scripted OpenAI-compatible server: the card, send, stream,
get, cancel, resubscribe, `input-required` answered (approve, deny), the token, a foreign Host."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

pytest.importorskip("a2a.client")

from a2a.client import ClientConfig, create_client
from a2a.client.errors import A2AClientError
from a2a.helpers import proto_helpers
from a2a.helpers.proto_helpers import get_artifact_text, new_data_part
from a2a.types import a2a_pb2 as pb

from jianmu_like import Agent, ReActConfig, create_react_node, tool
from jianmu_like._base.config import DEFAULT_MAX_BODY_BYTES
from jianmu_like.guard import GuardEnforcer, RequireApproval
from jianmu_like.server import create_app
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, call, reply
from tests.server.sse_live import live_server

TOKEN = "a2a-test-token-0123456789abcdef"
gate = threading.Event()
entered = threading.Event()
deleted: list[str] = []


@tool
async def wait(label: str) -> str:
    """Wait until released."""
    entered.set()
    released = await asyncio.to_thread(gate.wait, PATIENCE)
    return f"{label} released" if released else f"{label} timed out"


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    deleted.append(path)
    return f"deleted {path}"


def responder(body: dict[str, Any]) -> Any:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return reply(f"result: {last['content']}")
    verb, _, arg = str(last["content"]).partition(" ")
    if verb == "wait":
        return call("wait", label=arg)
    if verb == "delete":
        return call("delete_file", path=arg)
    return reply(f"echo {last['content']}")


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    with ScriptedOpenAIServer(responder) as model:

        def factory() -> Agent:
            return Agent(
                create_react_node(
                    model_client=model.client(),
                    tools=[wait, delete_file],
                    constraints=GuardEnforcer([RequireApproval(tools="delete_file")]),
                    config=ReActConfig(stream=True, max_iterations=5),
                    name="Keeper",
                ),
                log_events=False,
            )

        with live_server(create_app(factory, token=TOKEN)) as url:
            yield url


def new_text_message(text: str, **ids: str) -> pb.Message:
    return proto_helpers.new_text_message(text, role=pb.Role.ROLE_USER, **ids)


def new_message(parts: list[pb.Part], **ids: str) -> pb.Message:
    return proto_helpers.new_message(parts, role=pb.Role.ROLE_USER, **ids)


def auth() -> httpx.AsyncClient:
    return httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=PATIENCE)


async def client(url: str, *, streaming: bool = True) -> Any:
    return await create_client(url, client_config=ClientConfig(streaming=streaming, httpx_client=auth()))


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, PATIENCE))


async def collect(events: AsyncIterator[pb.StreamResponse]) -> list[pb.StreamResponse]:
    return [event async for event in events]


def final_task(events: list[pb.StreamResponse]) -> pb.Task:
    tasks = [e.task for e in events if e.HasField("task")]
    assert tasks, events
    return tasks[-1]


def answer(task: pb.Task) -> str:
    [found] = [a for a in task.artifacts if a.name == "answer"]
    return get_artifact_text(found)


def states(events: list[pb.StreamResponse]) -> list[str]:
    out = []
    for e in events:
        if e.HasField("status_update"):
            out.append(pb.TaskState.Name(e.status_update.status.state))
        elif e.HasField("task"):
            out.append(pb.TaskState.Name(e.task.status.state))
    return out


def test_the_card_names_the_agent_its_tools_the_endpoint_and_the_bearer_scheme(served: str) -> None:
    card = httpx.get(f"{served}/.well-known/agent-card.json", timeout=PATIENCE).json()
    assert card["name"] == "Keeper"
    assert {s["id"] for s in card["skills"]} == {"wait", "delete_file"}
    [interface] = card["supportedInterfaces"]
    assert interface["url"] == f"{served}/a2a/" and interface["protocolBinding"] == "JSONRPC"
    assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "bearer"
    assert card["capabilities"]["streaming"] is True


def test_send_answers_with_a_completed_task_and_its_answer_artifact(served: str) -> None:
    async def go() -> pb.Task:
        a2a = await client(served, streaming=False)
        events = await collect(a2a.send_message(pb.SendMessageRequest(message=new_text_message("hello"))))
        return final_task(events)

    task = run(go())
    assert pb.TaskState.Name(task.status.state) == "TASK_STATE_COMPLETED"
    assert answer(task) == "echo hello"


def test_stream_reports_work_then_the_answer_and_get_reads_the_task(served: str) -> None:
    async def go() -> tuple[list[pb.StreamResponse], pb.Task]:
        a2a = await client(served)
        events = await collect(a2a.send_message(pb.SendMessageRequest(message=new_text_message("hi there"))))
        task_id = next(e.task.id for e in events if e.HasField("task"))
        got = await a2a.get_task(pb.GetTaskRequest(id=task_id))
        return events, got

    events, got = run(go())
    seen = states(events)
    assert "TASK_STATE_WORKING" in seen and seen[-1] == "TASK_STATE_COMPLETED", seen
    assert any(e.HasField("artifact_update") and e.artifact_update.artifact.name == "answer" for e in events)
    assert pb.TaskState.Name(got.status.state) == "TASK_STATE_COMPLETED" and answer(got) == "echo hi there"


def test_a_context_id_is_a_conversation(served: str) -> None:
    async def go() -> list[str]:
        a2a = await client(served, streaming=False)
        first = final_task(
            await collect(a2a.send_message(pb.SendMessageRequest(message=new_text_message("one"))))
        )
        message = new_text_message("two", context_id=first.context_id)
        second = final_task(await collect(a2a.send_message(pb.SendMessageRequest(message=message))))
        return [first.context_id, second.context_id, first.id, second.id]

    c1, c2, t1, t2 = run(go())
    assert c1 == c2 and t1 != t2
    threads = httpx.get(
        f"{served}/api/runs", params={"thread_id": c1}, headers={"Authorization": f"Bearer {TOKEN}"}
    ).json()["runs"]
    assert [r["input"] for r in threads] == ["one", "two"]


@pytest.mark.parametrize("how", ["data", "text"])
def test_input_required_is_approved_by_the_next_message(served: str, how: str) -> None:
    path = f"/tmp/approve-{how}"

    async def go() -> tuple[list[pb.StreamResponse], list[pb.StreamResponse]]:
        a2a = await client(served)
        first = await collect(
            a2a.send_message(pb.SendMessageRequest(message=new_text_message(f"delete {path}")))
        )
        task = final_task(first) if any(e.HasField("task") for e in first) else None
        task_id = task.id if task is not None else first[-1].status_update.task_id
        context_id = task.context_id if task is not None else first[-1].status_update.context_id
        assert path not in deleted
        if how == "data":
            parts = [new_data_part({"decision": "approve", "reason": "fine"})]
            message = new_message(parts, context_id=context_id, task_id=task_id)
        else:
            message = new_text_message("approve", context_id=context_id, task_id=task_id)
        second = await collect(a2a.send_message(pb.SendMessageRequest(message=message)))
        return first, second

    first, second = run(go())
    assert states(first)[-1] == "TASK_STATE_INPUT_REQUIRED", states(first)
    assert states(second)[-1] == "TASK_STATE_COMPLETED", states(second)
    assert deleted.count(path) == 1
    texts = [get_artifact_text(e.artifact_update.artifact) for e in second if e.HasField("artifact_update")]
    assert f"result: deleted {path}" in texts


def test_input_required_is_denied_with_a_reason_and_nothing_runs(served: str) -> None:
    path = "/tmp/deny-me"

    async def go() -> pb.Task:
        a2a = await client(served, streaming=False)
        first = final_task(
            await collect(a2a.send_message(pb.SendMessageRequest(message=new_text_message(f"delete {path}"))))
        )
        assert pb.TaskState.Name(first.status.state) == "TASK_STATE_INPUT_REQUIRED"
        parts = [new_data_part({"decision": "deny", "reason": "keep it"})]
        message = new_message(parts, context_id=first.context_id, task_id=first.id)
        return final_task(await collect(a2a.send_message(pb.SendMessageRequest(message=message))))

    task = run(go())
    assert pb.TaskState.Name(task.status.state) == "TASK_STATE_COMPLETED"
    assert path not in deleted
    assert "keep it" in answer(task) or "denied" in answer(task).lower()


def test_a_message_that_decides_nothing_keeps_the_task_waiting(served: str) -> None:
    async def go() -> tuple[pb.Task, pb.Task]:
        a2a = await client(served, streaming=False)
        first = final_task(
            await collect(a2a.send_message(pb.SendMessageRequest(message=new_text_message("delete /tmp/x"))))
        )
        message = new_text_message("maybe later", context_id=first.context_id, task_id=first.id)
        again = final_task(await collect(a2a.send_message(pb.SendMessageRequest(message=message))))
        deny = new_text_message("deny no", context_id=first.context_id, task_id=first.id)
        final_task(await collect(a2a.send_message(pb.SendMessageRequest(message=deny))))
        return first, again

    _first, again = run(go())
    assert pb.TaskState.Name(again.status.state) == "TASK_STATE_INPUT_REQUIRED"
    assert "waits for a decision" in again.status.message.parts[0].text


def test_cancel_ends_the_run_and_resubscribe_follows_a_running_task(served: str) -> None:
    gate.clear()
    entered.clear()

    async def go() -> tuple[pb.Task, list[pb.StreamResponse], dict[str, Any]]:
        a2a = await client(served)
        request = pb.SendMessageRequest(message=new_text_message("wait long"))
        request.configuration.return_immediately = True
        stream = a2a.send_message(request)
        first = await anext(stream)
        await stream.aclose()  # the client goes away: the task goes on
        task_id = first.task.id if first.HasField("task") else first.status_update.task_id
        await asyncio.to_thread(entered.wait, PATIENCE)
        resubscribed = a2a.subscribe(pb.SubscribeToTaskRequest(id=task_id))
        seen = [await anext(resubscribed)]
        cancelled = await a2a.cancel_task(pb.CancelTaskRequest(id=task_id))
        seen += [e async for e in resubscribed]
        async with auth() as http:
            runs = (await http.get(f"{served}/api/runs", params={"thread_id": cancelled.context_id})).json()
        return cancelled, seen, runs

    try:
        cancelled, seen, runs = run(go())
    finally:
        gate.set()
    assert pb.TaskState.Name(cancelled.status.state) == "TASK_STATE_CANCELED"
    assert seen and seen[0].HasField("task")
    assert [r["status"] for r in runs["runs"]] == ["cancelled"]


def test_the_token_is_required_and_a_foreign_host_is_refused(served: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}
    no_token = httpx.post(f"{served}/a2a/", json=body, timeout=PATIENCE)
    assert no_token.status_code == 401
    foreign = httpx.post(
        f"{served}/a2a/", json=body, headers={"Authorization": f"Bearer {TOKEN}", "Host": "evil.example"}
    )
    assert foreign.status_code == 421
    card = httpx.get(f"{served}/.well-known/agent-card.json", headers={"Host": "evil.example"})
    assert card.status_code == 421

    async def go() -> None:
        a2a = await create_client(served, client_config=ClientConfig(streaming=False))
        await collect(a2a.send_message(pb.SendMessageRequest(message=new_text_message("hello"))))

    with pytest.raises((A2AClientError, httpx.HTTPStatusError)):
        run(go())


def test_a_retried_send_follows_the_first_run_and_never_runs_the_agent_twice(served: str) -> None:
    path = "/tmp/retried"

    async def go() -> tuple[pb.Task, pb.Task]:
        a2a = await client(served, streaming=False)
        message = new_text_message(f"delete {path}")
        first = final_task(await collect(a2a.send_message(pb.SendMessageRequest(message=message))))
        again = new_text_message(f"delete {path}")
        again.message_id = message.message_id  # the client's retry of the same message
        second = final_task(await collect(a2a.send_message(pb.SendMessageRequest(message=again))))
        decide = new_text_message("approve", context_id=second.context_id, task_id=second.id)
        done = final_task(await collect(a2a.send_message(pb.SendMessageRequest(message=decide))))
        return first, done

    first, done = run(go())
    assert pb.TaskState.Name(first.status.state) == "TASK_STATE_INPUT_REQUIRED"
    assert pb.TaskState.Name(done.status.state) == "TASK_STATE_COMPLETED"
    assert deleted.count(path) == 1
    runs = httpx.get(f"{served}/api/runs", headers={"Authorization": f"Bearer {TOKEN}"}).json()["runs"]
    assert [r["input"] for r in runs].count(f"delete {path}") == 1


def test_a_body_over_the_limit_is_refused_before_the_sdk_reads_it(served: str) -> None:
    huge = "x" * (DEFAULT_MAX_BODY_BYTES + 1)
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {"message": {"parts": [{"text": huge}]}},
    }
    answer = httpx.post(
        f"{served}/a2a/", json=body, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=PATIENCE
    )
    assert answer.status_code == 413


WITHOUT_SDK = """
import asyncio, sys
sys.modules["a2a"] = None  # as if the a2a extra were not installed
from starlette.testclient import TestClient
from jianmu_like import Agent, create_react_node
from jianmu_like.server import create_app
from jianmu_like.testing import scripted_client
from jianmu_like.tools import A2AAgentError, A2AAgentProvider

agent = lambda: Agent(create_react_node(model_client=scripted_client(["x"])))
app = create_app(agent, allowed_hosts=["testserver"])
with TestClient(app) as http:
    card = http.get("/.well-known/agent-card.json")
    rpc = http.post("/a2a/", json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {}})
    runs = http.get("/api/runs")
print(card.status_code, rpc.status_code, runs.status_code)
print(card.json()["error"])
try:
    asyncio.run(A2AAgentProvider(name="far", url="http://127.0.0.1:9").initialize())
except A2AAgentError as exc:
    print(exc)
"""


def test_without_the_a2a_extra_the_routes_and_the_provider_name_it() -> None:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_SDK], capture_output=True, text=True, timeout=PATIENCE, check=False
    )
    assert done.returncode == 0, done.stderr
    statuses, card_error, provider_error = done.stdout.splitlines()
    assert statuses == "501 501 200"
    assert "pip install 'jianmu_like[a2a]'" in card_error and "jianmu_like[a2a]" in provider_error


def test_two_answers_to_one_task_at_once_decide_once(served: str) -> None:
    path = "/tmp/two-at-once"

    async def go() -> tuple[list[Any], pb.Task]:
        a2a = await client(served, streaming=False)
        first = final_task(
            await collect(a2a.send_message(pb.SendMessageRequest(message=new_text_message(f"delete {path}"))))
        )

        async def answer(text: str) -> Any:
            message = new_text_message(text, context_id=first.context_id, task_id=first.id)
            try:
                return final_task(await collect(a2a.send_message(pb.SendMessageRequest(message=message))))
            except A2AClientError as exc:
                return exc

        outcomes = await asyncio.gather(answer("approve"), answer("deny too late"))
        return outcomes, await a2a.get_task(pb.GetTaskRequest(id=first.id))

    outcomes, task = run(go())
    assert pb.TaskState.Name(task.status.state) == "TASK_STATE_COMPLETED"
    assert deleted.count(path) == 1 or path not in deleted  # one decision, whichever came first
    assert not any(
        isinstance(o, pb.Task) and o.status.state == pb.TaskState.TASK_STATE_FAILED for o in outcomes
    )


def test_an_approval_decided_elsewhere_moves_the_task_on(served: str) -> None:
    """Decided through `/api/approvals` (the console's and the CLI's way), not by the client's
    next message: the task leaves `input-required` by itself, for `GetTask` and for a
    resubscribed stream (which sees it go on to `completed`)."""
    path = "/tmp/approve-elsewhere"

    async def go() -> tuple[list[pb.StreamResponse], pb.Task]:
        a2a = await client(served, streaming=False)
        first = final_task(
            await collect(a2a.send_message(pb.SendMessageRequest(message=new_text_message(f"delete {path}"))))
        )
        assert pb.TaskState.Name(first.status.state) == "TASK_STATE_INPUT_REQUIRED"
        streaming = await client(served)
        resubscribed = streaming.subscribe(pb.SubscribeToTaskRequest(id=first.id))
        seen = [await anext(resubscribed)]  # the task as it stands: still waiting
        async with auth() as http:
            [waiting] = [
                a
                for a in (await http.get(f"{served}/api/approvals")).json()["approvals"]
                if a["thread_id"] == first.context_id
            ]
            decided = await http.post(
                f"{served}/api/approvals/{waiting['id']}",
                json={"decision": "approve", "thread_id": first.context_id},
            )
            assert decided.status_code == 200, decided.text
        seen += [e async for e in resubscribed]
        task = await a2a.get_task(pb.GetTaskRequest(id=first.id))
        return seen, task

    seen, task = run(go())
    assert states(seen)[0] == "TASK_STATE_INPUT_REQUIRED" and states(seen)[-1] == "TASK_STATE_COMPLETED"
    assert "TASK_STATE_WORKING" in states(seen)
    assert pb.TaskState.Name(task.status.state) == "TASK_STATE_COMPLETED", task.status
    assert answer(task) == f"result: deleted {path}" and deleted.count(path) == 1
