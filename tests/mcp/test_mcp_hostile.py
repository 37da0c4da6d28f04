"""A hostile MCP server is bounded: what it can make the client spend, keep, show or open.

Against `mcp_hostile_server.py` (the official SDK, over stdio) and the scripted OpenAI-compatible
server: sampling stops when the run's token budget is spent (checked before each request), a
sampling request after the call returned is refused, log and progress floods become a bounded
number of events, `resources/updated` for unsubscribed URIs never reaches the model's text, open
elicitations are capped per server, and URL elicitations are offered only for https (http on a
loopback host).
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import pytest_asyncio

from jianmu_like import Agent, ReActConfig, create_react_node, human
from jianmu_like.models._types import Usage
from jianmu_like.telemetry import events as ev
from jianmu_like.telemetry.events import Event
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, call, calls, reply, wait_until_async
from jianmu_like.tools import MCPToolProvider
from jianmu_like.tools.mcp._bounds import url_refusal
from jianmu_like.tools.mcp._elicitation import ElicitationAnswer, ElicitationRequest
from tests.mcp.mcp_helpers import HERE

HOSTILE = HERE / "mcp_hostile_server.py"
pytestmark = [pytest.mark.asyncio(loop_scope="module")]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def provider() -> AsyncIterator[MCPToolProvider]:
    """One hostile server for the module, every bound set low enough to reach."""
    server = MCPToolProvider(
        name="hostile",
        command=sys.executable,
        args=[str(HOSTILE)],
        sampling="allow",
        elicitation="ask",
        max_open_elicitations=3,
        max_log_events=20,
        progress_interval=0.2,
    )
    async with server:
        yield server


@pytest.fixture(autouse=True)
def fresh_handler(provider: MCPToolProvider) -> Iterator[None]:
    yield
    provider.elicitations.handler = None
    provider.sampling_client = None


def _run_tool_then_answer(tool: str, **arguments: Any) -> Any:
    """The agent calls `tool`, then answers with its result; a request without tools is the
    server's sampling request: 100 tokens each."""

    def model(request: dict[str, Any]) -> Any:
        if "tools" not in request:
            return reply("sampled", usage=Usage(prompt_tokens=30, completion_tokens=70))
        results = [m for m in request["messages"] if m["role"] == "tool"]
        return reply(f"tool said: {results[-1]['content']}") if results else call(tool, **arguments)

    return model


async def _agent_run(
    srv: ScriptedOpenAIServer, provider: MCPToolProvider, **config: Any
) -> tuple[Any, list[Event]]:
    agent = Agent(
        create_react_node(model_client=srv.client(), tool_providers=[provider], config=ReActConfig(**config))
    )
    events: list[Event] = []
    agent.telemetry.subscribe(events.append)
    result = await agent.run({"messages": [human("go")]})
    return result, events


# -- sampling ----------------------------------------------------------------------------------


async def test_sampling_stops_when_the_runs_budget_is_spent_checked_before_each_request(
    provider: MCPToolProvider,
) -> None:
    """40 requests of 100 tokens under a 400-token budget: the first ones are answered (each
    capped by what is left), the rest refused before they reach the model."""
    budget = 400
    with ScriptedOpenAIServer(_run_tool_then_answer("flood_sampling", count=40, max_tokens=100)) as srv:
        result, events = await _agent_run(srv, provider, max_budget_tokens=budget)
        sampled = [r for r in srv.requests if "tools" not in r]
    answered = [e.data for e in events if e.type == ev.MCP_SAMPLING and e.data["status"] == "answered"]
    refused = [e.data for e in events if e.type == ev.MCP_SAMPLING and e.data["status"] == "refused"]
    # The agent's first call spent 15 tokens: 385 left, so 4 requests of 100 (the last capped).
    assert len(sampled) == len(answered) == 4, result.final_answer
    assert [r["max_tokens"] for r in sampled] == [100, 100, 100, 85]
    assert len(refused) == 36 and all(e["decided_by"] == "budget" for e in refused)
    assert "token budget is spent" in refused[0]["reason"]
    [observation] = [m.content for m in result.state.messages if m.role == "tool"]
    assert observation.startswith("answered 4 of 40; refusals: [\"refused: the run's token budget is spent")
    # Everything answered counts in the run's usage; the run stops on its budget.
    # (the model server reports at most max_tokens of completion: the last request's prompt is
    # all the budget can be overshot by)
    assert result.usage.calls == 5 and budget < result.usage.total_tokens <= budget + 30
    assert result.termination["reason"] == "budget_exhausted"  # no model call after the batch


async def test_parallel_calls_share_the_budget_and_cannot_overshoot_it_together(
    provider: MCPToolProvider,
) -> None:
    """Two calls of one batch flood sampling at once: each request is checked against what the
    run, both calls and the requests in flight (their maxTokens reserved) have spent."""
    budget = 400

    def model(request: dict[str, Any]) -> Any:
        if "tools" not in request:
            return reply("sampled", usage=Usage(prompt_tokens=30, completion_tokens=70))
        flood = call("flood_sampling", count=20, max_tokens=100)
        return calls(flood, call("flood_sampling", count=20, max_tokens=100))

    with ScriptedOpenAIServer(model) as srv:
        result, _events = await _agent_run(srv, provider, max_budget_tokens=budget)
        sampled = [r for r in srv.requests if "tools" not in r]
    assert sum(r["max_tokens"] for r in sampled) <= budget - 15  # never more asked than was left
    assert len(sampled) == 4 and result.termination["reason"] == "budget_exhausted"
    assert result.usage.total_tokens <= budget + 2 * 30  # at most one prompt per call over it


async def test_a_sampling_request_after_the_call_returned_is_refused(
    provider: MCPToolProvider, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "jianmu_like.tools.mcp")
    with ScriptedOpenAIServer(lambda request: reply("sampled")) as srv:
        provider.sampling_client = srv.client()
        try:
            tools = {tool.name: tool for tool in await provider.get_tools()}
            assert await tools["late_sampling"].invoke({}) == "returned"
            await wait_until_async(
                lambda: "asked for sampling while none of its tool calls was running" in caplog.text,
                "the late request to be refused",
            )
            outcome = await tools["late_outcome"].invoke({})
        finally:
            provider.sampling_client = None
        assert srv.requests == []  # the model never saw it
    assert outcome.startswith("refused:") and "none of its tool calls was running" in outcome


async def test_a_failure_of_ours_answering_sampling_is_logged_and_named_to_the_server(
    provider: MCPToolProvider, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Not the SDK's bare "Invalid request parameters": the server reads that the client failed."""
    from jianmu_like.tools.mcp import _provider

    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(_provider, "answer_sampling", broken)
    tool = {tool.name: tool for tool in await provider.get_tools()}["flood_sampling"]
    text = await tool.invoke({"count": 1, "max_tokens": 10})
    assert "the client failed to answer the sampling request: RuntimeError" in text
    assert "answering its sampling request failed" in caplog.text


# -- notifications -----------------------------------------------------------------------------


async def test_log_and_progress_floods_become_a_bounded_number_of_events(
    provider: MCPToolProvider, caplog: pytest.LogCaptureFixture
) -> None:
    """1,000 logs and 1,000 progress reports in one call: the first `max_log_events` logs and
    one event saying how many were dropped; progress coalesced to the latest, rate-limited."""
    caplog.set_level(logging.INFO, "jianmu_like.tools.mcp")
    flood = 1000
    with ScriptedOpenAIServer(
        _run_tool_then_answer("flood_notifications", logs=flood, progress=flood)
    ) as srv:
        loop = asyncio.get_running_loop()
        started = loop.time()
        result, events = await _agent_run(srv, provider)
        took = loop.time() - started
    assert f"sent {flood} logs" in (result.final_answer or "")
    logs = [e.data for e in events if e.type == ev.MCP_LOG]
    assert len(logs) == 21
    assert [entry["data"] for entry in logs[:2]] == ["log line 0", "log line 1"]
    assert (
        logs[-1]["data"]
        == f"{flood - 20} more log notifications of this call were dropped (max_log_events=20)"
    )
    assert logs[-1]["level"] == "warning" and logs[-1]["logger"] == "jianmu_like"
    assert len([r for r in caplog.records if "log line" in r.getMessage()]) == 20  # log lines capped too
    progress = [e.data for e in events if e.type == ev.TOOL_PROGRESS]
    assert 1 <= len(progress) <= took / 0.2 + 2, (len(progress), took)
    assert progress[-1]["progress"] == flood and progress[-1]["message"] == f"step {flood}"  # the latest


# -- resources/updated -------------------------------------------------------------------------


async def test_updates_of_unsubscribed_resources_never_reach_the_models_text(
    provider: MCPToolProvider,
) -> None:
    tools = {tool.name: tool for tool in await provider.get_tools()}
    assert await tools["flood_updates"].invoke({"count": 500}) == "sent 500 updates"
    assert provider.updated_resources == set()
    reader = {tool.name: tool for tool in await provider.get_tools()}["read_resource"]
    assert "notes://kept" in reader.description
    assert "IGNORE-PREVIOUS" not in reader.description and "Changed since last read" not in reader.description


async def test_the_description_names_at_most_thirty_updated_uris() -> None:
    from jianmu_like.tools.mcp._resources import LISTED_URIS, ResourceIndex

    text = ResourceIndex([], []).describe([f"notes://n{i}" for i in range(500)])
    assert "notes://n29" in text and "notes://n30" not in text and f"and {500 - LISTED_URIS} more" in text


# -- elicitations ------------------------------------------------------------------------------


async def test_open_elicitations_are_capped_per_server_and_the_rest_refused(
    provider: MCPToolProvider, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "jianmu_like.tools.mcp")
    release = asyncio.Event()
    open_now: list[str] = []

    async def hold(request: ElicitationRequest) -> ElicitationAnswer:
        open_now.append(request.id)
        await release.wait()
        return ElicitationAnswer(action="decline")

    def refusals() -> int:
        return caplog.text.count("elicitation refused: 3 questions of this server are open already")

    provider.elicitations.handler = hold
    tools = {tool.name: tool for tool in await provider.get_tools()}
    flood = asyncio.ensure_future(tools["flood_elicitations"].invoke({"count": 50}))
    try:
        await wait_until_async(lambda: len(open_now) + refusals() == 50, "every question answered or refused")
        assert len(open_now) == 3 and len(provider.pending_elicitations()) == 3
    finally:
        release.set()
    async with asyncio.timeout(PATIENCE):
        tally = await flood
    assert tally == "decline=3, refused=47"


async def test_sampling_questions_count_in_the_same_cap() -> None:
    """`sampling: ask` puts each request to a person: beyond the open questions' cap it is
    refused at once, not queued."""
    from jianmu_like.tools.mcp._config import MCPServerConfig
    from jianmu_like.tools.mcp._elicitation import ElicitationBox
    from jianmu_like.tools.mcp._sampling import SamplingRequest, _ask_person

    release = asyncio.Event()

    async def hold(request: ElicitationRequest) -> ElicitationAnswer:
        await release.wait()
        return ElicitationAnswer(action="decline")

    config = MCPServerConfig(name="s", command="x", sampling="ask", max_open_elicitations=1)
    box = ElicitationBox("s", 60, max_open=1)
    box.handler = hold
    asked = SamplingRequest(server="s", messages=[], max_tokens=10)
    first = asyncio.ensure_future(_ask_person(asked, config, box, None))
    await wait_until_async(box.pending, "the first question to be open")
    second = asyncio.ensure_future(_ask_person(asked, config, box, None))
    done, _ = await asyncio.wait({second}, timeout=2)  # refused at once, or queued behind the first
    release.set()
    async with asyncio.timeout(PATIENCE):
        await asyncio.gather(first, second)
    assert done == {second}, "the second question waited instead of being refused"
    assert second.result().decision == "deny" and "max_open_elicitations" in second.result().reason


@pytest.fixture(scope="module")
def url_cases() -> Iterator[dict[str, bool]]:
    yield {
        "https://example.com/sign-in": True,
        "http://127.0.0.1:8765/callback": True,
        "http://localhost/callback": True,
        "http://[::1]:9/cb": True,
        "javascript:alert(document.cookie)": False,
        "JavaScript:alert(1)": False,
        "data:text/html,<script>alert(1)</script>": False,
        "file:///etc/passwd": False,
        "http://example.com/sign-in": False,
        "https://user:secret@example.com/": False,
        "vbscript:msgbox": False,
        "//example.com/no-scheme": False,
    }


async def test_url_refusal_allows_only_https_and_loopback_http(url_cases: dict[str, bool]) -> None:
    assert {url: url_refusal(url) is None for url in url_cases} == url_cases


async def test_url_elicitations_with_other_schemes_are_refused_before_anyone_sees_them(
    provider: MCPToolProvider, url_cases: dict[str, bool]
) -> None:
    seen: list[str | None] = []

    async def accept(request: ElicitationRequest) -> ElicitationAnswer:
        seen.append(request.url)
        return ElicitationAnswer(action="accept")

    provider.elicitations.handler = accept
    tool = {tool.name: tool for tool in await provider.get_tools()}["url_elicitation"]
    answers = {url: await tool.invoke({"url": url}) for url in url_cases}
    for url, allowed in url_cases.items():
        if allowed:
            assert answers[url] == "accept", url
        else:
            assert answers[url].startswith("refused:") and "elicitation refused" in answers[url], (
                url,
                answers[url],
            )
    assert seen == [url for url, allowed in url_cases.items() if allowed]
