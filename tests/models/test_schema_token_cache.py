"""Tool schemas are counted once per list of schema objects; a changed list is counted again."""

from __future__ import annotations

import json

from jianmu_like import ContextConfig, Tool
from jianmu_like.models._tokens import TokenCounter
from jianmu_like.nodes import ContextGuard
from jianmu_like.testing import scripted_client


def _tool(name: str, description: str = "") -> Tool:
    def fn(text: str) -> str:
        return text

    return Tool.from_function(fn, name=name, description=description)


def _counting() -> tuple[TokenCounter, list[str]]:
    texts: list[str] = []

    def encode(text: str) -> int:
        texts.append(text)
        return len(text)

    return TokenCounter("test", encode), texts


def test_the_same_schema_objects_are_counted_once() -> None:
    counter, texts = _counting()
    a, b = _tool("a"), _tool("b", "A longer description than a's.")
    assert counter.schemas([a.schema()]) == len(json.dumps([a.schema()]))
    assert counter.schemas([a.schema()]) == len(json.dumps([a.schema()]))  # a new list, same dicts
    assert len(texts) == 1
    both = counter.schemas([a.schema(), b.schema()])
    assert both == len(json.dumps([a.schema(), b.schema()])) and len(texts) == 2
    assert counter.schemas([b.schema(), a.schema()]) == both and len(texts) == 3  # another order
    assert counter.schemas([]) == 0 and counter.schemas(None) == 0


def test_the_guard_counts_a_changed_tool_list() -> None:
    counter, _ = _counting()
    guard = ContextGuard(scripted_client([]), ContextConfig(), counter=counter)
    a, b, c = _tool("a"), _tool("b"), _tool("c", "Much longer than b's description, to change the count.")
    first = guard._schema_tokens([a.schema(), b.schema()])
    assert first == len(json.dumps([a.schema(), b.schema()]))
    # same first schema, same length: still another list of tools
    assert guard._schema_tokens([a.schema(), c.schema()]) == len(json.dumps([a.schema(), c.schema()]))
    assert guard._schema_tokens([a.schema(), b.schema()]) == first
