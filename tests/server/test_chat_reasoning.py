"""The model's reasoning on the OpenAI-compatible face (`/v1/chat/completions`), over real HTTP
end to end: the scripted OpenAI server plays a reasoning model for the agent's real `openai`
client, uvicorn serves the agent, and the official `openai` client reads it as a chat front-end
does — `delta.reasoning_content` while streamed (llama.cpp's and DeepSeek's shape), the whole on
`message.reasoning_content`; the answer never carries it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import openai
import pytest

from jianmu_like import AgentTemplate, ReActConfig, create_react_node
from jianmu_like.server import create_app
from jianmu_like.server._chat_reasoning import SEPARATOR, ChatReasoning
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, call, calls, fault_reply, reply
from jianmu_like.testing._script import ScriptItem
from jianmu_like.tools.builtin import calculator
from tests.server.sse_live import live_server

THINK_1 = "Six times seven: I should use the calculator."
THINK_2 = "The tool said 42, so that is the answer."
WHOLE = THINK_1 + SEPARATOR + THINK_2
QUESTION = [{"role": "user", "content": "What is 6 * 7?"}]


@contextmanager
def _served(script: list[ScriptItem], *, stream: bool, retries: int = 0) -> Iterator[openai.OpenAI]:
    with ScriptedOpenAIServer(script) as model:
        config = ReActConfig(stream=stream, max_iterations=4)
        root = create_react_node(
            model_client=model.client(max_retries=retries), tools=[calculator], config=config
        )
        template = AgentTemplate.from_prototype(root, log_events=False)
        with live_server(create_app(template.conversation, model_name="agent")) as url:
            yield openai.OpenAI(base_url=f"{url}/v1", api_key="x", timeout=PATIENCE, max_retries=0)


def _script() -> list[ScriptItem]:
    return [
        calls(call("calculator", expression="6 * 7"), reasoning_content=THINK_1),
        reply("It is 42.", reasoning_content=THINK_2),
    ]


@pytest.fixture(params=[True, False], ids=["streamed-model", "whole-model"])
def agent(request: pytest.FixtureRequest) -> Iterator[openai.OpenAI]:
    with _served(_script(), stream=request.param) as client:
        yield client


def _read_stream(client: openai.OpenAI) -> tuple[list[str], str]:
    """(the reasoning pieces, the answer) of a streamed completion, as a front-end reads them."""
    pieces: list[str] = []
    answer = ""
    for chunk in client.chat.completions.create(model="agent", messages=QUESTION, stream=True):  # type: ignore[arg-type]
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        extra: dict[str, Any] = delta.model_extra or {}
        if extra.get("reasoning_content"):
            assert not delta.content, delta  # reasoning and answer never share a delta
            pieces.append(extra["reasoning_content"])
        answer += delta.content or ""
    return pieces, answer


def test_a_streamed_completion_streams_the_runs_reasoning_before_the_answer(agent: openai.OpenAI) -> None:
    pieces, answer = _read_stream(agent)
    assert "".join(pieces) == WHOLE and answer == "It is 42."


def test_the_whole_completion_carries_the_runs_reasoning_on_its_message(agent: openai.OpenAI) -> None:
    completion = agent.chat.completions.create(model="agent", messages=QUESTION)  # type: ignore[arg-type]
    message = completion.choices[0].message
    assert message.content == "It is 42."
    assert (message.model_extra or {}).get("reasoning_content") == WHOLE


def test_a_streamed_model_reasoning_arrives_in_pieces() -> None:
    """A streaming model's reasoning is passed on as it arrives, not whole at the end."""
    with _served(_script(), stream=True) as client:
        pieces, _ = _read_stream(client)
        assert len(pieces) > 2, pieces


def test_a_run_without_reasoning_sends_none() -> None:
    with _served([reply("It is 42."), reply("It is 42.")], stream=True) as client:
        pieces, answer = _read_stream(client)
        assert pieces == [] and answer == "It is 42."
        completion = client.chat.completions.create(model="agent", messages=QUESTION)  # type: ignore[arg-type]
        assert "reasoning_content" not in (completion.choices[0].message.model_extra or {})


def test_an_attempt_cut_off_mid_stream_is_left_out_of_the_whole_reply() -> None:
    """A stream cannot take back what it sent; the whole reply has only the retry's reasoning."""
    script: list[ScriptItem] = [
        fault_reply("truncated_stream", content=None, reasoning_content="a first try that is lost"),
        reply("It is 42.", reasoning_content=THINK_2),
    ]
    with _served(script, stream=True, retries=1) as client:
        completion = client.chat.completions.create(model="agent", messages=QUESTION)  # type: ignore[arg-type]
        assert (completion.choices[0].message.model_extra or {}).get("reasoning_content") == THINK_2


def _done(iteration: int, reasoning: str | None) -> dict[str, Any]:
    return {"type": "thinking", "status": "done", "iteration": iteration, "reasoning_content": reasoning}


def test_the_reasoning_reader_keeps_model_calls_apart_and_drops_a_withdrawn_attempt() -> None:
    reasoning = ChatReasoning()
    sent = [
        reasoning.take("reasoning", {"status": "delta", "iteration": 1, "content": "a"}),
        reasoning.take("reasoning", {"status": "delta", "iteration": 1, "content": "b"}),
        reasoning.take("step", _done(1, "ab")),
        reasoning.take("step", _done(2, None)),
        reasoning.take("reasoning", {"status": "delta", "iteration": 3, "content": "lost"}),
        reasoning.take("reasoning", {"status": "reset", "iteration": 3, "content": ""}),
        reasoning.take("step", _done(3, "c")),
        reasoning.take("answer", {"status": "delta", "content": "not reasoning"}),
    ]
    assert sent == ["a", "b", "", "", SEPARATOR + "lost", "", SEPARATOR + "c", ""]
    assert reasoning.whole == "ab" + SEPARATOR + "c"
    assert ChatReasoning().whole is None
