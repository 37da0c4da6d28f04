"""Messages and tool calls cache their wire form; a copy with changed fields must not serve the
cached form of the fields it replaced (the context guard cuts messages that were already sent)."""

from __future__ import annotations

import copy

from jianmu_like.models._messages import Message, ToolCall, tool_message
from jianmu_like.nodes._compaction import cut_tool_result


def test_a_copy_of_a_sent_message_is_sent_with_its_new_content() -> None:
    sent = tool_message("x" * 5000, "call_1", "fetch")
    assert sent.to_openai()["content"] == "x" * 5000  # cached now
    cut = cut_tool_result(sent, 100)
    assert cut is not sent and len(cut.content or "") < 1000
    assert cut.to_openai()["content"] == cut.content
    assert sent.to_openai()["content"] == "x" * 5000  # the original is untouched
    changed = Message(role="user", content="a")
    changed.to_openai()
    assert changed.model_copy(update={"content": "b"}).to_openai()["content"] == "b"
    assert copy.deepcopy(changed).to_openai() == changed.to_openai()


def test_a_copy_of_a_tool_call_encodes_its_new_arguments() -> None:
    call = ToolCall(id="1", name="add", arguments={"a": 1})
    assert call.arguments_json == '{"a": 1}'
    assert call.model_copy(update={"arguments": {"a": 2}}).arguments_json == '{"a": 2}'
    assert call.to_openai()["function"]["arguments"] == '{"a": 1}'
