"""A remote A2A agent as a tool, end to end over real HTTP: agent A (`A2AAgentProvider`) calls
agent B, served by this package's A2A face (`create_app`), both on scripted OpenAI-compatible
model servers. B's approval becomes A's question, answered here; B's failures and silence are
observations A's model reads; the token comes from the environment and is never shown."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("a2a.client")

from jianmu_like import (
    Agent,
    AgentFileError,
    ReActConfig,
    ReActState,
    create_react_node,
    human,
    load_agent,
    tool,
    validate_agent_file,
)
from jianmu_like.guard import GuardEnforcer, RequireApproval
from jianmu_like.nodes import A2AAgentNode
from jianmu_like.server import A2ACard, create_app
from jianmu_like.state._journal import JournalEntry
from jianmu_like.telemetry import events as ev
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, call, reply, wait_until, wait_until_async
from jianmu_like.tools._a2a import A2AAgentError, A2AAgentProvider
from tests.server.guarded_agent import environment
from tests.server.sse_live import free_port, live_server

TOKEN = "a2a-client-token-0123456789abcdef"
gate = threading.Event()
stalled = threading.Event()
deleted: list[str] = []


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    deleted.append(path)
    return f"deleted {path}"


@tool
async def stall(label: str) -> str:
    """Wait until released."""
    stalled.set()
    released = await asyncio.to_thread(gate.wait, PATIENCE)
    return f"{label} released" if released else f"{label} timed out"


def last_of(body: dict[str, Any]) -> dict[str, Any]:
    """The last message that is not the system's (an agent file's runtime note may come last)."""
    found: dict[str, Any] = [m for m in body["messages"] if m["role"] != "system"][-1]
    return found


def remote_model(body: dict[str, Any]) -> Any:
    last = last_of(body)
    if last["role"] == "tool":
        return reply(f"B: {last['content']}")
    verb, _, arg = str(last["content"]).partition(" ")
    if verb == "delete":
        return call("delete_file", path=arg)
    if verb == "stall":
        return call("stall", label=arg)
    return reply(f"B echoes {last['content']}")


def local_model(body: dict[str, Any]) -> Any:
    last = last_of(body)
    if last["role"] == "tool":
        return reply(f"A read: {last['content']}")
    return call("keeper", message=last["content"])


@pytest.fixture(scope="module")
def remote() -> Iterator[str]:
    with ScriptedOpenAIServer(remote_model) as model:

        def factory() -> Agent:
            return Agent(
                create_react_node(
                    model_client=model.client(),
                    tools=[delete_file, stall],
                    constraints=GuardEnforcer([RequireApproval(tools="delete_file")]),
                    config=ReActConfig(max_iterations=5),
                    name="Keeper",
                ),
                log_events=False,
            )

        card = A2ACard(description="Keeps files; deletes them when approved.")
        with live_server(create_app(factory, token=TOKEN, a2a=card)) as url:
            yield url


@pytest.fixture(scope="module")
def local_server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(local_model) as model:
        yield model


def agent_a(model: ScriptedOpenAIServer, url: str, **options: Any) -> Agent:
    provider = A2AAgentProvider(name="keeper", url=url, auth={"token_env": "KEEPER_TOKEN"}, **options)
    return Agent(
        create_react_node(
            model_client=model.client(), tool_providers=[provider], config=ReActConfig(max_iterations=4)
        ),
        log_events=False,
    )


def answer_of(result: Any) -> str:
    return str(result.final_answer)


def test_the_remote_agent_answers_and_its_card_describes_the_tool(
    remote: str, local_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KEEPER_TOKEN", TOKEN)

    async def go() -> tuple[str, list[dict[str, Any]], list[Any]]:
        agent = agent_a(local_server, remote)
        events: list[Any] = []
        agent.telemetry.subscribe(events.append)
        try:
            result = await agent.run({"messages": [human("hello there")]})
        finally:
            await agent.aclose()
        return answer_of(result), local_server.requests, events

    text, requests, events = asyncio.run(asyncio.wait_for(go(), PATIENCE))
    assert text == "A read: B echoes hello there"
    [keeper] = [t["function"] for t in requests[-1]["tools"] if t["function"]["name"] == "keeper"]
    assert "Keeper" in keeper["description"] and "deletes them when approved" in keeper["description"]
    progress = [e for e in events if e.type == "tool.progress"]
    assert progress and any("TASK_STATE_COMPLETED" in str(e.data.get("message")) for e in progress)
    assert TOKEN not in repr([e.data for e in events])


@pytest.mark.parametrize("decision", ["approve", "deny"])
def test_a_remote_approval_is_a_question_answered_here(
    remote: str, local_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch, decision: str
) -> None:
    monkeypatch.setenv("KEEPER_TOKEN", TOKEN)
    path = f"/tmp/remote-{decision}"

    async def go() -> tuple[str, Any]:
        agent = agent_a(local_server, remote)
        try:
            running = asyncio.create_task(agent.run({"messages": [human(f"delete {path}")]}))
            [question] = await wait_until_async(agent.pending_elicitations, "B's question to reach A")
            assert path not in deleted
            agent.respond_elicitation(question.id, "accept", {"decision": decision, "reason": "checked"})
            return answer_of(await running), question
        finally:
            await agent.aclose()

    text, question = asyncio.run(asyncio.wait_for(go(), PATIENCE))
    assert "delete_file" in question.message and question.requested_schema["required"] == ["decision"]
    if decision == "approve":
        assert deleted.count(path) == 1 and text == f"A read: B: deleted {path}"
    else:
        assert path not in deleted and text.startswith("A read: B:")


def test_a_remote_that_never_answers_is_an_observation_within_the_timeout(
    remote: str, local_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KEEPER_TOKEN", TOKEN)
    gate.clear()

    async def go() -> str:
        agent = agent_a(local_server, remote, timeout=1.0)
        try:
            return answer_of(await agent.run({"messages": [human("stall forever")]}))
        finally:
            await agent.aclose()

    try:
        text = asyncio.run(asyncio.wait_for(go(), PATIENCE))
    finally:
        gate.set()
    assert "did not finish within 1 s" in text and "cancelled" in text


def test_a_wrong_token_and_a_missing_one_are_clear(
    remote: str, local_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KEEPER_TOKEN", "wrong-token-0123456789abcdef")

    async def go() -> str:
        agent = agent_a(local_server, remote)
        try:
            return answer_of(await agent.run({"messages": [human("hello")]}))
        finally:
            await agent.aclose()

    text = asyncio.run(asyncio.wait_for(go(), PATIENCE))
    assert "A read:" in text and "failed" in text and "401" in text
    assert "wrong-token-0123456789abcdef" not in text

    monkeypatch.delenv("KEEPER_TOKEN")
    with pytest.raises(A2AAgentError, match="KEEPER_TOKEN"):
        asyncio.run(
            A2AAgentProvider(name="keeper", url=remote, auth={"token_env": "KEEPER_TOKEN"}).initialize()
        )


def test_an_unreachable_agent_is_refused_at_start(local_server: ScriptedOpenAIServer) -> None:
    provider = A2AAgentProvider(name="gone", url="http://127.0.0.1:9", connect_timeout=2)
    with pytest.raises(A2AAgentError, match="cannot read its card"):
        asyncio.run(provider.initialize())


AGENT_B = """\
kind: react
name: Echo
description: Echoes what it is told.
a2a:
  version: "2.1"
  skills:
    - {id: echo, name: Echo, description: Says it back, tags: [text]}
"""
AGENT_A = """\
kind: react
name: Caller
a2a_agents:
  - name: keeper
    url: {url}
    auth: {{token_env: KEEPER_TOKEN}}
"""


def test_agent_files_serve_a_card_and_call_a_remote_agent_over_http(
    tmp_path: Path, local_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`jianmu-like serve` publishes the `a2a:` card of its file; an agent file's `a2a_agents`
    calls it with the token from the environment (the file only names the variable)."""
    (tmp_path / "echo.yaml").write_text(AGENT_B)
    port = free_port()
    b_model = ScriptedOpenAIServer(remote_model).start()
    env = environment(b_model.base_url) | {"JIANMU_SERVER_TOKEN": TOKEN}
    proc = subprocess.Popen(
        [sys.executable, "-m", "jianmu_like", "serve", "echo.yaml", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:

        def card() -> dict[str, Any] | None:
            assert proc.poll() is None, proc.communicate()[1]
            try:
                found: dict[str, Any] = httpx.get(f"{url}/.well-known/agent-card.json").json()
                return found
            except httpx.TransportError:
                return None

        served = wait_until(card, "the served card")
        (tmp_path / "caller.yaml").write_text(AGENT_A.format(url=url))
        monkeypatch.setenv("KEEPER_TOKEN", TOKEN)

        async def go() -> str:
            agent = load_agent(tmp_path / "caller.yaml", model_client=local_server.client())
            try:
                result = await agent.run({"task": "ping", "messages": [human("ping")]})
                assert result.status == "success", (result.status, result.error, result.termination)
                return answer_of(result)
            finally:
                await agent.aclose()

        text = asyncio.run(asyncio.wait_for(go(), PATIENCE))
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=PATIENCE)
        b_model.stop()
    assert served["name"] == "Echo" and served["description"] == "Echoes what it is told."
    assert served["version"] == "2.1" and [s["id"] for s in served["skills"]] == ["echo"]
    assert served["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "bearer"
    assert text == "A read: B echoes ping"


def test_an_a2a_entry_with_a_token_in_the_file_is_refused_at_its_line(tmp_path: Path) -> None:
    agent = tmp_path / "bad.yaml"
    agent.write_text(
        "kind: react\na2a_agents:\n  - name: keeper\n    url: http://x\n"
        "    auth: {token: s3cret-value-123456}\n"
    )
    with pytest.raises(AgentFileError) as caught:
        validate_agent_file(agent)
    assert "bad.yaml:5" in str(caught.value) and "token" in str(caught.value)


def test_a_remote_approval_reaches_the_client_of_a_served_agent_and_its_answer_goes_back(
    remote: str, local_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client -> A (served) -> B (served): B's approval is A's question, which A's A2A face shows
    as `input-required`; the client's decision goes through A back to B."""
    from a2a.client import ClientConfig, create_client
    from a2a.helpers.proto_helpers import get_artifact_text, new_data_part, new_message, new_text_part
    from a2a.types import a2a_pb2 as pb

    monkeypatch.setenv("KEEPER_TOKEN", TOKEN)
    path = "/tmp/through-a"
    with live_server(create_app(lambda: agent_a(local_server, remote))) as a_url:

        async def go() -> tuple[pb.Task, pb.Task]:
            async with httpx.AsyncClient(timeout=PATIENCE) as http:
                a2a = await create_client(
                    a_url, client_config=ClientConfig(streaming=False, httpx_client=http)
                )
                ask = new_message([new_text_part(f"delete {path}")], role=pb.Role.ROLE_USER)
                first = [e async for e in a2a.send_message(pb.SendMessageRequest(message=ask))][-1].task
                parts = [new_data_part({"decision": "approve"})]
                answer = new_message(
                    parts, context_id=first.context_id, task_id=first.id, role=pb.Role.ROLE_USER
                )
                done = [e async for e in a2a.send_message(pb.SendMessageRequest(message=answer))][-1].task
                return first, done

        first, done = asyncio.run(asyncio.wait_for(go(), PATIENCE))
    assert pb.TaskState.Name(first.status.state) == "TASK_STATE_INPUT_REQUIRED"
    assert "keeper asks" in first.status.message.parts[0].text
    assert pb.TaskState.Name(done.status.state) == "TASK_STATE_COMPLETED"
    [answer] = [get_artifact_text(a) for a in done.artifacts if a.name == "answer"]
    assert answer == f"A read: B: deleted {path}" and deleted.count(path) == 1


def test_a_cancelled_run_cancels_the_remote_task(
    remote: str, local_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KEEPER_TOKEN", TOKEN)
    gate.clear()
    stalled.clear()

    async def go() -> list[dict[str, Any]]:
        agent = agent_a(local_server, remote)
        try:
            running = asyncio.create_task(agent.run({"messages": [human("stall cancelme")]}))
            await asyncio.to_thread(stalled.wait, PATIENCE)  # B is in its tool
            running.cancel()
            with pytest.raises(asyncio.CancelledError):
                await running
        finally:
            await agent.aclose()
        async with httpx.AsyncClient(base_url=remote, headers={"Authorization": f"Bearer {TOKEN}"}) as http:

            async def b_runs() -> list[dict[str, Any]]:
                runs: list[dict[str, Any]] = (await http.get("/api/runs")).json()["runs"]
                return [r for r in runs if r["input"] == "stall cancelme"]

            deadline = asyncio.get_running_loop().time() + PATIENCE
            while (found := await b_runs()) and found[0]["status"] == "running":
                assert asyncio.get_running_loop().time() < deadline, found
                await asyncio.sleep(0.05)
            return found

    try:
        found = asyncio.run(asyncio.wait_for(go(), PATIENCE))
    finally:
        gate.set()
    assert [r["status"] for r in found] == ["cancelled"]


# -- a remote agent as a node of a tree (`A2AAgentNode`) -----------------------------------------


class Journal:
    """A tool journal as the checkpoint recorder keeps one (`state._journal.ToolJournal`), with
    entries a test can set as a crash would have left them."""

    thread_id = "th"

    def __init__(self, **entries: dict[str, Any]) -> None:
        self.found = {
            key: JournalEntry(key=key, tool_call_id=key, tool="keeper", **e) for key, e in entries.items()
        }

    def entries(self) -> dict[str, JournalEntry]:
        return self.found

    async def started(self, calls: Any, *, serial: bool) -> None:
        for key, call_id, name in calls:
            self.found[key] = JournalEntry(key=key, tool_call_id=call_id, tool=name, status="started")

    async def finished(self, key: str, outcome: dict[str, Any]) -> None:
        self.found[key] = self.found[key].model_copy(update={"status": "finished", "outcome": outcome})


def node_agent(url: str, *, journal: Journal | None = None, **node: Any) -> Agent:
    ask = A2AAgentNode(
        "Ask",
        {"name": "keeper", "url": url, "auth": {"token_env": "KEEPER_TOKEN"}},
        output_key="reply",
        **node,
    )
    agent = Agent(ask, ReActState, log_events=False)
    agent.state_manager.journal = journal
    return agent


async def remote_runs(url: str, text: str) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        runs: list[dict[str, Any]] = (await http.get("/api/runs")).json()["runs"]
    return [r for r in runs if r["input"] == text]


def test_a_tree_node_asks_the_remote_agent_and_writes_its_answer(
    remote: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KEEPER_TOKEN", TOKEN)

    async def go() -> tuple[Any, list[Any]]:
        agent = node_agent(remote)
        events: list[Any] = []
        agent.telemetry.subscribe(events.append)
        try:
            return await agent.run({"messages": [human("node hello")]}), events
        finally:
            await agent.aclose()

    result, events = asyncio.run(asyncio.wait_for(go(), PATIENCE))
    assert result.status == "success" and result.state.model_extra["reply"] == "B echoes node hello"
    progress = [e for e in events if e.type == "tool.progress"]
    assert any("TASK_STATE_COMPLETED" in str(e.data.get("message")) for e in progress)
    assert TOKEN not in repr([e.data for e in events])


def test_a_tree_node_sends_a_state_field_and_its_failure_fails_the_node(
    remote: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KEEPER_TOKEN", "wrong-token-0123456789abcdef")

    async def go() -> tuple[Any, list[Any]]:
        agent = node_agent(remote, message_key="question")
        events: list[Any] = []
        agent.telemetry.subscribe(events.append)
        try:
            return await agent.run({"question": "from a field"}), events
        finally:
            await agent.aclose()

    result, events = asyncio.run(asyncio.wait_for(go(), PATIENCE))
    [failed] = [e for e in events if e.type == "tool.call.failed"]
    assert result.status == "failure" and "reply" not in (result.state.model_extra or {})
    assert "401" in failed.data["error"] and "wrong-token" not in repr([e.data for e in events])


def test_a_tree_node_with_nothing_to_send_fails_with_a_catalogue_event(
    remote: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KEEPER_TOKEN", TOKEN)

    async def go() -> tuple[Any, list[Any]]:
        agent = node_agent(remote, message_key="question")
        events: list[Any] = []
        agent.telemetry.subscribe(events.append)
        try:
            return await agent.run({"question": ""}), events
        finally:
            await agent.aclose()

    result, events = asyncio.run(asyncio.wait_for(go(), PATIENCE))
    [failed] = [e for e in events if e.type == "tool.call.failed"]
    assert result.status == "failure"
    assert isinstance(failed, ev.ToolCallFailed) and failed.denied is False  # the class, every field
    assert "nothing to send" in failed.error


def test_a_remote_approval_asked_by_a_tree_node_is_answered_here(
    remote: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KEEPER_TOKEN", TOKEN)
    path = "/tmp/remote-node"

    async def go() -> tuple[Any, Any]:
        agent = node_agent(remote)
        try:
            running = asyncio.create_task(agent.run({"messages": [human(f"delete {path}")]}))
            [question] = await wait_until_async(agent.pending_elicitations, "B's question to reach the node")
            assert path not in deleted
            agent.respond_elicitation(question.id, "accept", {"decision": "approve"})
            return await running, question
        finally:
            await agent.aclose()

    result, question = asyncio.run(asyncio.wait_for(go(), PATIENCE))
    assert "delete_file" in question.message and question.requested_schema["required"] == ["decision"]
    assert result.state.model_extra["reply"] == f"B: deleted {path}" and deleted.count(path) == 1


def test_a_tree_node_call_is_journaled_and_never_sent_twice(
    remote: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finished: replayed, not sent; started with no outcome (a crash mid-call): a failure saying
    so, not sent; a finished failure: a retry sends the next attempt."""
    monkeypatch.setenv("KEEPER_TOKEN", TOKEN)
    key = "a2a-node//Ask/1"
    ok = {"status": "finished", "outcome": {"content": "replayed answer"}}
    failed = {"status": "finished", "outcome": {"content": "boom", "failed": True}}

    async def run(journal: Journal, text: str) -> Any:
        agent = node_agent(remote, journal=journal)
        try:
            return await agent.run({"messages": [human(text)]})
        finally:
            await agent.aclose()

    async def go() -> None:
        done = await run(Journal(**{f"{key}#0": ok}), "journal replayed")
        assert done.status == "success" and done.state.model_extra["reply"] == "replayed answer"
        unknown = Journal(**{f"{key}#0": {"status": "started"}})
        crashed = await run(unknown, "journal unknown")
        assert crashed.status == "failure" and unknown.found[f"{key}#0"].outcome["failed"]  # type: ignore[index]
        assert "outcome is unknown" in unknown.found[f"{key}#0"].outcome["content"]  # type: ignore[index]
        assert (
            await remote_runs(remote, "journal replayed")
            == await remote_runs(remote, "journal unknown")
            == []
        )
        retried = Journal(**{f"{key}#0": failed})
        again = await run(retried, "journal retried")
        assert again.state.model_extra["reply"] == "B echoes journal retried"
        assert (
            retried.found[f"{key}#1"].status == "finished"
            and len(await remote_runs(remote, "journal retried")) == 1
        )

    asyncio.run(asyncio.wait_for(go(), PATIENCE))


RELAY = """\
kind: tree
name: Relay
inputs: [question]
tree:
  sequence:
    children:
      - a2a_agent:
          name: keeper
          url: {url}
          auth: {{token_env: KEEPER_TOKEN}}
          message_key: {key}
          output_key: final_answer
"""


def test_an_agent_file_places_a_remote_agent_in_its_tree(
    remote: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KEEPER_TOKEN", TOKEN)
    relay = tmp_path / "relay.yaml"
    relay.write_text(RELAY.format(url=remote, key="questoin"))
    with pytest.raises(AgentFileError) as caught:
        validate_agent_file(relay)
    assert "relay.yaml:11" in str(caught.value) and "(did you mean 'question'?)" in str(caught.value)
    relay.write_text(RELAY.format(url=remote, key="question"))

    async def go() -> Any:
        agent = load_agent(relay)
        try:
            return await agent.run({"question": "yaml hello"})
        finally:
            await agent.aclose()

    result = asyncio.run(asyncio.wait_for(go(), PATIENCE))
    assert result.status == "success" and result.final_answer == "B echoes yaml hello"
