"""The paths a run takes through the product, each reduced to an `Outcome`: in memory (the
reference, and suspended then resumed in the same agent), suspended in one agent and resumed by
a fresh one from a store (SQLite, PostgreSQL), and over the server's SSE. Only public APIs: the
agent file loader, `Agent.run/resume/inject`, the server app as `jianmu-like serve` builds it."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel

from jianmu_like import Agent, AgentResult, human, load_agent
from jianmu_like.checkpoint import open_checkpointer
from jianmu_like.cli._serve import agent_factory
from jianmu_like.models import Usage
from jianmu_like.server import create_app
from jianmu_like.server._channels import ChannelMapper
from jianmu_like.telemetry.events import Event
from jianmu_like.testing import PATIENCE, wait_until
from tests.seams.seam_kit import Model, Outcome, Scenario, assert_cell
from tests.server.sse_live import answer_shown, live_server, read_events

SseEvents = list[tuple[int, str, dict[str, Any]]]
THREAD = "seam"


def _shown_from_events(events: list[Event], result: AgentResult) -> str:
    """The answer channel of a run made of these events (both agents' when resumed elsewhere),
    as the server maps it; and the `run.completed` of the last agent says the same."""
    mapper = ChannelMapper()
    channel = [message for event in events for message in mapper.map(event)]
    completed = [e.data["final_answer"] for e in events if e.type == "run.completed"]
    assert completed[-1] == result.final_answer, completed
    channel += mapper.finish(
        answer=result.final_answer,
        status=result.status,
        usage=result.usage.model_dump(),
        elapsed=result.elapsed,
        termination=result.termination,
        error=result.error,
    )
    return answer_shown(channel)


def _outcome(result: AgentResult, events: list[Event]) -> Outcome:
    return Outcome(
        status=result.status,
        final_answer=result.final_answer,
        shown=_shown_from_events(events, result),
        usage=result.usage,
        messages=[m.model_dump() for m in result.state.messages],
        artifacts=[a.name for a in result.artifacts],
        output=result.output.model_dump(mode="json")
        if isinstance(result.output, BaseModel)
        else result.output,
    )


def _agent(file: Path, model: Model, events: list[Event]) -> Agent:
    agent = load_agent(file, model_client=model.server.client())
    agent.telemetry.subscribe(events.append)
    model.expect_follow_up(agent.inject)
    return agent


def _approve_the_gate(result: AgentResult, scenario: Scenario) -> dict[str, str]:
    assert result.status == "suspended", (result.status, result.error, result.final_answer)
    [approval] = result.pending_approvals
    assert approval.tool == scenario.gate, approval
    return {approval.id: "approve"}


async def reference(scenario: Scenario, folder: Path, model: Model) -> Outcome:
    """The uninterrupted run: the ungated file, in memory."""
    events: list[Event] = []
    async with _agent(scenario.agent_file(folder, gated=False), model, events) as agent:
        result = await agent.run({"messages": [human(scenario.question)]})
    return _outcome(result, events)


async def in_memory(scenario: Scenario, folder: Path, model: Model) -> Outcome:
    """Suspended at the gate and resumed by the same agent, no store."""
    events: list[Event] = []
    async with _agent(scenario.agent_file(folder, gated=True), model, events) as agent:
        suspended = await agent.run({"messages": [human(scenario.question)]})
        result = await agent.resume(_approve_the_gate(suspended, scenario))
    return _outcome(result, events)


async def resumed(scenario: Scenario, folder: Path, model: Model, target: str) -> Outcome:
    """Suspended at the gate in one agent, resumed from the store at `target` by a fresh agent
    built from the same file (what a second process does)."""
    file = scenario.agent_file(folder, gated=True)
    thread = f"{THREAD}-{scenario.name}"  # the scenarios of a test process share one database
    events: list[Event] = []
    store = open_checkpointer(target)
    try:
        async with _agent(file, model, events) as first:
            first.use_checkpointer(store)
            suspended = await first.run({"messages": [human(scenario.question)]}, thread_id=thread)
            decisions = _approve_the_gate(suspended, scenario)
        async with _agent(file, model, events) as second:
            second.use_checkpointer(store)
            result = await second.resume(decisions, thread_id=thread)
    finally:
        store.close()
    return _outcome(result, events)


def over_sse(scenario: Scenario, folder: Path, model: Model, store: str | None = None) -> Outcome:
    """`jianmu-like serve FILE [--checkpoint STORE]` (its factory, so the path a served
    conversation takes: a `Conversation` of the file's template, or with a store a full agent
    saving into it): start the run over HTTP, read its stream to the approval, approve over
    HTTP, read on to `done`. The model's address comes from the environment, as for the command
    (the caller sets it)."""
    factory, cleanups, _ = agent_factory(str(scenario.agent_file(folder, gated=True)), checkpoint=store)
    app = create_app(factory, on_shutdown=cleanups)
    with live_server(app) as url, httpx.Client(base_url=url, timeout=PATIENCE) as http:
        run_id: list[str] = []

        def follow_up(content: str) -> None:
            wait_until(lambda: bool(run_id), "the run's id")
            sent = httpx.post(
                f"{url}/api/runs/{run_id[0]}/inject", json={"content": content}, timeout=PATIENCE
            )
            assert sent.status_code == 202, sent.text

        model.expect_follow_up(follow_up)
        started = http.post("/api/runs", json={"input": scenario.question})
        assert started.status_code == 201, started.text
        run_id.append(started.json()["run_id"])
        before = read_events(http, run_id[0], until="approval:pending")
        assert before[-1][2]["status"] == "pending", before[-1]
        [pending] = before[-1][2]["approvals"]
        assert pending["tool"] == scenario.gate
        decided = http.post(f"/api/approvals/{pending['id']}", json={"decision": "approve"})
        assert decided.status_code == 200, decided.text
        after = read_events(http, run_id[0], last_event_id=before[-1][0])
        events = before + after
        summary = http.get(f"/api/runs/{run_id[0]}").json()
        messages = http.get(f"/api/runs/{run_id[0]}/messages").json()
    done = events[-1][2]
    assert events[-1][1] == "done" and done["answer"] == summary["answer"], (done, summary)
    answer_done = [d["content"] for _, c, d in events if c == "answer" and d["status"] == "done"]
    assert answer_done == ([done["answer"]] if done["answer"] is not None else []), answer_done
    return Outcome(
        status=done["status"],
        final_answer=summary["answer"],
        shown=answer_shown((c, d) for _, c, d in events),
        usage=Usage.model_validate(done["usage"]),
        messages=messages["messages"] if isinstance(messages, dict) else messages,
        artifacts=[d["artifact"]["name"] for _, c, d in events if c == "artifact"],
        gives_output=False,
    )


Cli = Callable[..., tuple[int, str]]
"""`jianmu-like ARGS` run in this process: (exit code, what it printed)."""
SUMMARY = re.compile(r"^✓ success · .*?(\d+) tokens in (\d+) model calls? · ")
NOT_ANSWER = (
    "▶",
    "→",
    "←",
    "⏸",
    "✓ approved",
    "✓ answered",
    "✗",
    "↻",
    "↺",
    "approve:",
    "deny:",
    "then:",
    "continue with",
)


def cli_answer(printed: str) -> tuple[str, tuple[int, int]]:
    """What a reader of `jianmu-like`'s transcript takes for the answer (the text after the
    last tool, approval or status line, before the summary), and the summary's (total tokens,
    model calls)."""
    lines = printed.rstrip("\n").split("\n")
    summary = SUMMARY.match(lines[-1])
    assert summary is not None, printed
    block: list[str] = []
    for line in lines[:-1]:
        if line.startswith(NOT_ANSWER):
            block = []
        else:
            block.append(line)
    return "\n".join(block).strip(), (int(summary.group(1)), int(summary.group(2)))


def via_cli(scenario: Scenario, folder: Path, target: str, cli: Cli) -> Outcome:
    """`jianmu-like run FILE Q --checkpoint STORE` (it suspends at the gate), `approvals
    approve STORE T ID`, `jianmu-like resume FILE --checkpoint STORE`: each a fresh agent made
    by the command line from the file, as three processes would. The answer shown is what the
    resume prints; the run's own record is the thread's newest version, read back by a fresh
    agent through `history` and `state_at`."""
    file = str(scenario.agent_file(folder, gated=True))
    code, printed = cli(
        "run", file, scenario.question, "--checkpoint", target, "--thread", THREAD, "--no-live"
    )
    assert code == 3, printed  # suspended: waiting for approvals
    approve = re.search(rf"approvals approve \S+ {THREAD} (\S+)", printed)
    assert approve is not None, printed
    code, printed = cli("approvals", "approve", target, THREAD, approve.group(1))
    assert code == 0, printed
    code, printed = cli("resume", file, "--checkpoint", target, "--thread", THREAD, "--no-live")
    assert code == 0, printed
    answer, (total_tokens, model_calls) = cli_answer(printed)
    agent = load_agent(file)
    store = open_checkpointer(target)
    try:
        agent.use_checkpointer(store)
        newest = agent.history(THREAD)[0]
        state: Any = agent.state_at(THREAD, newest.seq)
    finally:
        store.close()
    assert newest.status == "success", newest
    assert (total_tokens, model_calls) == (state.usage.total_tokens, state.usage.calls), printed
    output = state.output
    return Outcome(
        status=newest.status,
        final_answer=state.final_answer,
        shown=answer,
        usage=state.usage,
        messages=[m.model_dump() for m in state.messages],
        artifacts=[a.name for a in state.artifacts],
        output=output.model_dump(mode="json") if isinstance(output, BaseModel) else output,
    )


def over_openai_compat(scenario: Scenario, folder: Path, model: Model, *, stream: bool) -> Outcome:
    """The served agent as a model of the OpenAI-compatible face, asked by the official `openai`
    client (streamed or not). A run that waits for approval cannot answer there, so this path
    serves the ungated file: the answer shown is the completion's text, its usage the one
    reported to the client; the conversation and the artifacts are read back from the run the
    completion names."""
    import openai

    factory, cleanups, _ = agent_factory(str(scenario.agent_file(folder, gated=False)))
    app = create_app(factory, on_shutdown=cleanups)
    with live_server(app) as url, httpx.Client(base_url=url, timeout=PATIENCE) as http:

        def follow_up(content: str) -> None:
            running: list[dict[str, Any]] = []

            def started() -> bool:
                running[:] = http.get("/api/runs", params={"status": "running"}).json()["runs"]
                return bool(running)

            wait_until(started, "the run to start")
            sent = http.post(f"/api/runs/{running[0]['run_id']}/inject", json={"content": content})
            assert sent.status_code == 202, sent.text

        model.expect_follow_up(follow_up)
        name = http.get("/v1/models").json()["data"][0]["id"]
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=PATIENCE)
        question = [{"role": "user", "content": scenario.question}]
        if stream:
            chunks = list(
                client.chat.completions.create(
                    model=name, messages=question, stream=True, stream_options={"include_usage": True}
                )
            )
            text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            reported, ident = chunks[-1].usage, chunks[0].id
        else:
            completion = client.chat.completions.create(model=name, messages=question)
            text, reported, ident = (
                completion.choices[0].message.content or "",
                completion.usage,
                completion.id,
            )
        client.close()
        run_id = ident.removeprefix("chatcmpl-")
        summary = http.get(f"/api/runs/{run_id}").json()
        messages = http.get(f"/api/runs/{run_id}/messages").json()["messages"]
        events = read_events(http, run_id)  # an ordinary run of the server: its stream is kept
    usage = Usage.model_validate(summary["usage"])
    assert reported is not None
    told = (reported.prompt_tokens, reported.completion_tokens, reported.total_tokens)
    assert told == (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens), (told, usage)
    return Outcome(
        status=summary["status"],
        final_answer=summary["answer"],
        shown=text,
        usage=usage,
        messages=messages,
        artifacts=[d["artifact"]["name"] for _, c, d in events if c == "artifact"],
        gives_output=False,
    )


class References:
    """The uninterrupted in-memory run of each scenario, made once per test process."""

    def __init__(self, folder: Path, model: Model) -> None:
        self.folder, self.model = folder, model
        self._runs: dict[str, Outcome] = {}

    async def of(self, scenario: Scenario) -> Outcome:
        if scenario.name not in self._runs:
            served = self.model.since(scenario)
            run = await reference(scenario, self.folder, self.model)
            assert_cell(scenario, run, run, served)
            self._runs[scenario.name] = run
        return self._runs[scenario.name]
