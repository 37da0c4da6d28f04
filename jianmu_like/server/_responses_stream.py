"""A response's output items and its typed stream events (`POST /v1/responses`, `stream: true`).

The items are the Responses API's: a `reasoning` item (the model's reasoning as `reasoning_text`),
a `message` with one `output_text` part, `function_call` items for client tool calls; usage in
its names (`input_tokens`, `output_tokens`). The stream numbers its events by `sequence_number`
and sends each item as `response.output_item.added`, its parts and deltas, then
`response.output_item.done`, so the SDKs' accumulators (`client.responses.stream`) rebuild the
response that `response.completed` carries whole.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from sse_starlette import ServerSentEvent

from ._chat_reasoning import ChatReasoning
from ._openai_errors import OpenAIError
from ._v1_runs import usage_totals

__all__ = ["function_calls", "message_item", "reasoning_item", "typed_events", "usage_of"]


def usage_of(usage: dict[str, Any] | None, spent: dict[str, int] | None = None) -> dict[str, Any]:
    totals = usage_totals(usage, spent)
    return {
        "input_tokens": totals["prompt_tokens"],
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": totals["completion_tokens"],
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": totals["total_tokens"],
    }


def function_calls(tool_calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat completions' `tool_calls` as `function_call` items."""
    return [
        {
            "type": "function_call",
            "id": f"fc_{item['id']}",
            "call_id": item["id"],
            "name": item["function"]["name"],
            "arguments": item["function"]["arguments"],
            "status": "completed",
        }
        for item in tool_calls
    ]


def message_item(item_id: str, text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
    }


def reasoning_item(item_id: str, text: str) -> dict[str, Any]:
    return {
        "type": "reasoning",
        "id": item_id,
        "summary": [],
        "content": [{"type": "reasoning_text", "text": text}],
        "status": "completed",
    }


async def typed_events(
    skeleton: dict[str, Any],
    steps: Callable[[ChatReasoning], AsyncIterator[tuple[str, Any]]],
    error: Callable[[str, dict[str, Any]], OpenAIError],
    finished: Callable[[str, dict[str, Any], ChatReasoning], dict[str, Any]],
) -> AsyncIterator[ServerSentEvent]:
    """The response's typed events, numbered by `sequence_number`: created, in_progress, the
    reasoning item as it arrives, then the message (or function calls) and completed; a run
    that cannot answer ends with `error` (waiting for a human) or `response.failed`."""
    sequence = 0

    def event(kind: str, **fields: Any) -> ServerSentEvent:
        nonlocal sequence
        data = {"type": kind, "sequence_number": sequence, **fields}
        sequence += 1
        return ServerSentEvent(data=json.dumps(data, ensure_ascii=False), event=kind)

    rid = skeleton["id"][5:]
    working = {**skeleton, "status": "in_progress", "output": [], "usage": None}
    yield event("response.created", response=working)
    yield event("response.in_progress", response=working)
    reasoning = ChatReasoning()
    thinking = False
    kind: str = "failure"
    done: dict[str, Any] = {}
    async for kind, done in steps(reasoning):
        if kind == "reasoning":
            if not thinking:
                thinking = True
                item = {**reasoning_item(f"rs_{rid}", ""), "content": [], "status": "in_progress"}
                yield event("response.output_item.added", output_index=0, item=item)
            yield event(
                "response.reasoning_text.delta",
                item_id=f"rs_{rid}",
                output_index=0,
                content_index=0,
                delta=done,
            )
    if kind not in ("answer", "tool_calls"):
        problem = error(kind, done)
        if kind == "approval" or kind == "interrupted":
            yield event("error", code=problem.code, message=str(problem), param=None)
            return
        failed = {
            **working,
            "status": "failed",
            "error": {"code": problem.code or "server_error", "message": str(problem)},
        }
        yield event("response.failed", response=failed)
        return
    response = finished(kind, done, reasoning)
    for index, item in enumerate(response["output"]):
        if item["type"] == "reasoning":
            text = item["content"][0]["text"]
            if not thinking:  # the model's reasoning came whole: added now
                yield event("response.output_item.added", output_index=index, item={**item, "content": []})
            yield event(
                "response.reasoning_text.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                text=text,
            )
        elif item["type"] == "message":
            part = item["content"][0]
            text = part["text"]
            opened = {**item, "status": "in_progress", "content": []}
            yield event("response.output_item.added", output_index=index, item=opened)
            empty = {**part, "text": ""}
            yield event(
                "response.content_part.added",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=empty,
            )
            if text:
                yield event(
                    "response.output_text.delta",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    delta=text,
                    logprobs=[],
                )
            yield event(
                "response.output_text.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                text=text,
                logprobs=[],
            )
            yield event(
                "response.content_part.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=part,
            )
        else:
            opened = {**item, "status": "in_progress", "arguments": ""}
            yield event("response.output_item.added", output_index=index, item=opened)
            yield event(
                "response.function_call_arguments.delta",
                item_id=item["id"],
                output_index=index,
                delta=item["arguments"],
            )
            yield event(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                name=item["name"],
                arguments=item["arguments"],
            )
        yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.completed", response=response)
