"""Unit tests of the streamed tool-call / content merge (no server)."""

from __future__ import annotations

from jianmu_like.models._streaming import StreamAccumulator


def test_content_deltas_are_concatenated_in_order() -> None:
    acc = StreamAccumulator()
    for piece in ("Hel", "lo, ", "world"):
        acc.add_content(piece)
    message = acc.message()
    assert message.role == "assistant"
    assert message.content == "Hello, world"
    assert message.tool_calls is None


def test_no_content_is_none_not_empty_string() -> None:
    acc = StreamAccumulator()
    acc.add_tool_call(0, "call_a", "ping", "{}")
    assert acc.content is None
    assert acc.message().content is None


def test_argument_fragments_merge_by_index() -> None:
    acc = StreamAccumulator()
    acc.add_tool_call(0, "call_a", "add", "")
    acc.add_tool_call(1, "call_b", "mul", "")
    acc.add_tool_call(0, None, None, '{"a": ')
    acc.add_tool_call(1, None, None, '{"x": 2,')
    acc.add_tool_call(0, None, None, "1}")
    acc.add_tool_call(1, None, None, ' "y": 3}')
    calls = acc.tool_calls()
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("call_a", "add", {"a": 1}),
        ("call_b", "mul", {"x": 2, "y": 3}),
    ]
    assert calls[0].raw_arguments == '{"a": 1}'


def test_name_fragments_concatenate_but_repeated_full_name_does_not() -> None:
    acc = StreamAccumulator()
    acc.add_tool_call(0, "call_a", "get_", None)
    acc.add_tool_call(0, None, "weather", '{"city":')
    acc.add_tool_call(1, "call_b", "lookup", "{")
    acc.add_tool_call(1, "call_b", "lookup", "}")  # server resending id and name every delta
    acc.add_tool_call(0, None, None, '"Paris"}')
    calls = acc.tool_calls()
    assert [(c.id, c.name) for c in calls] == [("call_a", "get_weather"), ("call_b", "lookup")]
    assert calls[0].arguments == {"city": "Paris"}
    assert calls[1].arguments == {}


def test_new_id_at_same_index_starts_a_new_call() -> None:
    acc = StreamAccumulator()
    acc.add_tool_call(0, "call_a", "one", "{}")
    acc.add_tool_call(0, "call_b", "two", '{"k": 1}')
    calls = acc.tool_calls()
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("call_a", "one", {}),
        ("call_b", "two", {"k": 1}),
    ]


def test_missing_index_continues_latest_call_and_missing_id_is_synthesised() -> None:
    acc = StreamAccumulator()
    acc.add_tool_call(None, None, "search", '{"q"')
    acc.add_tool_call(None, None, None, ': "bt"}')
    (call,) = acc.tool_calls()
    assert call.id == "call_0"
    assert call.name == "search"
    assert call.arguments == {"q": "bt"}


def test_malformed_arguments_are_kept_with_an_error() -> None:
    acc = StreamAccumulator()
    acc.add_tool_call(0, "call_a", "add", '{"a": 1')
    (call,) = acc.tool_calls()
    assert call.arguments == {}
    assert call.raw_arguments == '{"a": 1'
    assert call.arguments_error is not None and "not valid JSON" in call.arguments_error


def test_call_without_arguments_has_empty_object() -> None:
    acc = StreamAccumulator()
    acc.add_tool_call(0, "call_a", "now")
    (call,) = acc.tool_calls()
    assert call.arguments == {}
    assert call.arguments_error is None
