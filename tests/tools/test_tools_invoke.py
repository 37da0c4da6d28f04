"""Argument validation messages, sync/async execution and result rendering."""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import threading
from dataclasses import dataclass
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from jianmu_like.testing import PATIENCE
from jianmu_like.tools import Tool, ToolArgumentsError, render_result, tool


@tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


async def test_missing_argument_message() -> None:
    with pytest.raises(ToolArgumentsError) as info:
        await add.invoke({"a": 1})
    assert str(info.value) == "invalid arguments for tool 'add': b: required argument is missing"
    assert info.value.tool_name == "add"
    assert info.value.problems == ["b: required argument is missing"]


async def test_every_problem_is_listed() -> None:
    with pytest.raises(ToolArgumentsError) as info:
        await add.invoke({"a": "abc", "c": 1})
    message = str(info.value)
    assert "b: required argument is missing" in message
    assert "a: Input should be a valid number, unable to parse string as a number (got 'abc')" in message
    assert "c: unknown argument (expected one of: a, b)" in message


async def test_nested_error_paths() -> None:
    @tool
    def total(items: list[int]) -> int:
        return sum(items)

    with pytest.raises(ToolArgumentsError, match=r"items\[1\]: Input should be a valid integer"):
        await total.invoke({"items": [1, "x"]})


async def test_null_for_an_optional_non_nullable_argument_means_default() -> None:
    @tool
    def power(base: float, exponent: int = 2, label: str | None = "x") -> str:
        return f"{base**exponent} {label}"

    assert await power.invoke({"base": 3, "exponent": None, "label": None}) == "9.0 None"
    with pytest.raises(ToolArgumentsError, match="base: Input should be a valid number"):
        await power.invoke({"base": None})


async def test_arguments_must_be_an_object() -> None:
    with pytest.raises(ToolArgumentsError, match="arguments must be a JSON object, got list"):
        await add.invoke([1, 2])  # type: ignore[arg-type]


async def test_lax_coercion_of_numeric_strings() -> None:
    assert await add.invoke({"a": "1.5", "b": 2}) == "3.5"


async def test_unknown_key_rejected_for_user_model_with_default_extra() -> None:
    class Args(BaseModel):
        q: str

    @tool(name="search", args_model=Args)
    def search(q: str) -> str:
        return q

    with pytest.raises(ToolArgumentsError, match=r"qq: unknown argument \(did you mean 'q'\?\)"):
        await search.invoke({"q": "x", "qq": "y"})


async def test_no_arguments_and_none() -> None:
    @tool
    def ping() -> str:
        return "pong"

    assert await ping.invoke() == "pong"
    assert await ping.invoke({}) == "pong"
    with pytest.raises(ToolArgumentsError, match=r"x: unknown argument \(the tool takes no arguments\)"):
        await ping.invoke({"x": 1})


async def test_async_function_is_awaited() -> None:
    @tool
    async def fetch(url: str) -> str:
        await asyncio.sleep(0)
        return f"fetched {url}"

    assert await fetch.invoke({"url": "u"}) == "fetched u"


async def test_sync_tool_runs_off_the_event_loop_thread() -> None:
    seen: list[int] = []

    @tool
    def where() -> None:
        seen.append(threading.get_ident())

    await where.invoke({})
    assert seen and seen[0] != threading.get_ident()


async def test_run_inline_stays_on_the_loop_thread() -> None:
    seen: list[int] = []

    @tool(run_inline=True)
    def where() -> None:
        seen.append(threading.get_ident())

    await where.invoke({})
    assert seen == [threading.get_ident()]


async def test_sync_tools_run_in_parallel() -> None:
    barrier = threading.Barrier(2, timeout=PATIENCE)

    @tool
    def meet() -> str:
        barrier.wait()  # would time out if the two calls ran one after the other
        return "met"

    assert list(await asyncio.gather(meet.invoke({}), meet.invoke({}))) == ["met", "met"]


async def test_exceptions_propagate_unchanged() -> None:
    class Boom(RuntimeError):
        pass

    @tool
    def sync_fail() -> None:
        raise Boom("sync")

    @tool
    async def async_fail() -> None:
        raise Boom("async")

    with pytest.raises(Boom, match="sync"):
        await sync_fail.invoke({})
    with pytest.raises(Boom, match="async"):
        await async_fail.invoke({})


async def test_positional_only_keyword_only_partial_and_callable_object() -> None:
    def scale(value: float, /, *, factor: float = 2.0) -> float:
        return value * factor

    t = Tool.from_function(scale)
    assert await t.invoke({"value": 3, "factor": 3}) == "9.0"

    async def greet(greeting: str, name: str) -> str:
        return f"{greeting}, {name}"

    hello = Tool.from_function(functools.partial(greet, "hello"), name="hello")
    assert hello.parameters["required"] == ["name"]
    assert await hello.invoke({"name": "bob"}) == "hello, bob"

    class Counter:
        async def __call__(self, n: int) -> int:
            return n + 1

    assert await Tool.from_function(Counter(), name="counter").invoke({"n": 1}) == "2"


async def test_execute_returns_the_raw_result() -> None:
    assert await add.execute({"a": 1, "b": 2}) == 3.0


class Item(BaseModel):
    name: str
    price: float


@dataclass
class Pair:
    left: int
    right: int


class Opaque:
    def __str__(self) -> str:
        return "opaque!"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("text", "text"),
        (None, ""),
        (Item(name="tea", price=1.5), '{"name":"tea","price":1.5}'),
        ({"城市": "北京", "n": 1}, '{"城市": "北京", "n": 1}'),
        ([1, 2.5, None, True], "[1, 2.5, null, true]"),
        ((1, 2), "[1, 2]"),
        (42, "42"),
        (2.5, "2.5"),
        (True, "true"),
        (Pair(1, 2), '{"left": 1, "right": 2}'),
        ({"when": dt.date(2024, 1, 2)}, '{"when": "2024-01-02"}'),
        ({"item": Item(name="a", price=1)}, '{"item": {"name": "a", "price": 1.0}}'),
        (b"bytes", "bytes"),
        (Opaque(), "opaque!"),
    ],
)
def test_render_result(value: Any, expected: str) -> None:
    assert render_result(value) == expected


async def test_invoke_renders_results() -> None:
    @tool
    def info() -> dict[str, Any]:
        return {"ok": True, "items": ["é"]}

    assert await info.invoke({}) == '{"ok": true, "items": ["é"]}'


async def test_exactly_typed_arguments_skip_validation_and_the_rest_still_validates() -> None:
    seen: list[tuple[Any, ...]] = []

    @tool
    def plain(count: int, ratio: float, name: str, flag: bool) -> str:
        seen.append((count, ratio, name, flag))
        return "ok"

    assert plain._binder._exact is not None  # type: ignore[union-attr]
    await plain.execute({"count": 3, "ratio": 0.5, "name": " x ", "flag": True})
    # Anything not exactly of its type goes through pydantic as before: coerced or refused.
    await plain.execute({"count": "4", "ratio": 2, "name": "y", "flag": False})
    assert seen == [(3, 0.5, " x ", True), (4, 2.0, "y", False)]
    assert type(seen[1][1]) is float
    with pytest.raises(ToolArgumentsError, match="count"):
        await plain.execute({"count": 1.5, "ratio": 1.0, "name": "z", "flag": True})
    with pytest.raises(ToolArgumentsError, match="extra: unknown argument"):
        await plain.execute({"count": 1, "ratio": 1.0, "extra": "z", "flag": True})

    @tool
    def constrained(n: Annotated[int, Field(ge=0)], label: str = "d") -> str:
        return f"{n}{label}"

    assert constrained._binder._exact is None  # type: ignore[union-attr]
    with pytest.raises(ToolArgumentsError, match="greater than or equal to 0"):
        await constrained.execute({"n": -1, "label": "x"})
    assert await constrained.execute({"n": 2}) == "2d"  # a default still applies

    class Stripped(BaseModel):
        model_config = ConfigDict(str_strip_whitespace=True, extra="forbid")
        text: str

    @tool(args_model=Stripped)
    def echo(text: str) -> str:
        return text

    assert await echo.execute({"text": "  hi  "}) == "hi"  # the model's settings still apply
