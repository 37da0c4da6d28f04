"""ToolSet merging, provider lifecycle and lookups."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import pytest

from jianmu_like.tools import (
    StaticToolProvider,
    Tool,
    ToolProvider,
    ToolProviderError,
    ToolSet,
    UnknownToolError,
    builtin_tools,
)


def make_tool(name: str, marker: str) -> Tool:
    def fn() -> str:
        return marker

    return Tool.from_function(fn, name=name, description=f"{name} from {marker}")


class CountingProvider:
    """A provider that records its lifecycle calls and can be told to fail."""

    def __init__(
        self,
        name: str,
        tools: Sequence[Tool],
        *,
        fail_on: str | None = None,
        delay: float = 0.0,
    ) -> None:
        self.name = name
        self.tools = list(tools)
        self.fail_on = fail_on
        self.delay = delay
        self.initialized = 0
        self.listed = 0
        self.closed = 0
        self.kwargs: list[dict[str, Any]] = []

    async def initialize(self) -> None:
        self.initialized += 1
        await asyncio.sleep(self.delay)
        if self.fail_on == "initialize":
            raise ConnectionError("server unreachable")

    async def get_tools(self, **kwargs: Any) -> Sequence[Tool]:
        self.listed += 1
        self.kwargs.append(kwargs)
        if self.fail_on == "get_tools":
            raise RuntimeError("listing failed")
        return list(self.tools)

    async def close(self) -> None:
        self.closed += 1
        if self.fail_on == "close":
            raise OSError("close failed")


def test_static_only_set_is_ready_at_once() -> None:
    def shout(text: str) -> str:
        return text.upper()

    ts = ToolSet([make_tool("a", "static"), shout])
    assert ts.ready
    assert ts.names() == ["a", "shout"]
    assert "shout" in ts and "nope" not in ts and 3 not in ts
    assert len(ts) == 2
    assert [t.name for t in ts] == ["a", "shout"]
    assert ts.get("nope") is None


async def test_override_order_two_providers_and_static(caplog: pytest.LogCaptureFixture) -> None:
    first = CountingProvider("first", [make_tool("a", "p1"), make_tool("b", "p1"), make_tool("c", "p1")])
    second = CountingProvider("second", [make_tool("b", "p2"), make_tool("c", "p2")])
    static = [make_tool("c", "s1"), make_tool("d", "s1"), make_tool("d", "s2")]
    ts = ToolSet(static, providers=[first, second])
    assert not ts.ready
    await ts.ensure_ready()
    with caplog.at_level(logging.INFO, logger="jianmu_like.tools._toolset"):
        winners = {t.name: t() for t in ts}  # merging happens lazily, on this first lookup
    assert winners == {"a": "p1", "b": "p2", "c": "s1", "d": "s2"}
    assert ts.names() == ["a", "b", "c", "d"]
    messages = [r.getMessage() for r in caplog.records]
    assert any("'b' from provider #1 CountingProvider 'second' overrides" in m for m in messages)
    assert any("static tool 'c' overrides the one from provider #1" in m for m in messages)
    assert any("static tool 'd' overrides the one from static tools" in m for m in messages)


async def test_lookups_before_ready_fail_clearly() -> None:
    ts = ToolSet.from_providers([CountingProvider("p", [make_tool("a", "p")])])
    for lookup in (ts.names, ts.schemas, ts.describe, lambda: ts.get("a"), lambda: len(ts)):
        with pytest.raises(RuntimeError, match=r"await toolset.ensure_ready\(\)"):
            lookup()
    assert "ready=False" in repr(ts)


async def test_ensure_ready_is_lazy_idempotent_and_concurrency_safe() -> None:
    provider = CountingProvider("slow", [make_tool("a", "p")], delay=0.01)
    ts = ToolSet.from_providers([provider])
    assert provider.initialized == 0
    await asyncio.gather(*(ts.ensure_ready() for _ in range(5)))
    await ts.ensure_ready()
    assert (provider.initialized, provider.listed) == (1, 1)
    assert ts.ready and ts.names() == ["a"]


async def test_context_is_passed_only_when_given() -> None:
    plain = CountingProvider("plain", [])
    await ToolSet.from_providers([plain]).ensure_ready()
    with_ctx = CountingProvider("ctx", [])
    await ToolSet.from_providers([with_ctx], context={"user": "u1"}).ensure_ready()
    assert plain.kwargs == [{}]
    assert with_ctx.kwargs == [{"context": {"user": "u1"}}]


@pytest.mark.parametrize("stage", ["initialize", "get_tools"])
async def test_provider_failure_names_provider_and_cause(stage: str) -> None:
    ok = CountingProvider("ok", [make_tool("a", "ok")])
    bad = CountingProvider("mcp-fs", [], fail_on=stage)
    ts = ToolSet.from_providers([ok, bad])
    with pytest.raises(ToolProviderError) as info:
        await ts.ensure_ready()
    message = str(info.value)
    assert "#1 CountingProvider 'mcp-fs'" in message and stage in message
    assert isinstance(info.value.__cause__, ConnectionError | RuntimeError)
    assert not ts.ready
    bad.fail_on = None
    await ts.ensure_ready()  # a retry does not re-initialise the provider that succeeded
    assert ok.initialized == 1 and ts.names() == ["a"]


async def test_provider_returning_non_tools_is_an_error() -> None:
    class Sloppy(StaticToolProvider):
        async def get_tools(self, **kwargs: Any) -> Sequence[Tool]:
            return ["not a tool"]  # type: ignore[list-item]

    with pytest.raises(ToolProviderError, match="returned str instead of Tool"):
        await ToolSet.from_providers([Sloppy([])]).ensure_ready()


def test_non_provider_is_rejected() -> None:
    with pytest.raises(TypeError, match="does not implement ToolProvider"):
        ToolSet(providers=[object()])  # type: ignore[list-item]


async def test_aclose_closes_all_even_when_one_raises() -> None:
    providers = [
        CountingProvider("a", []),
        CountingProvider("b", [], fail_on="close"),
        CountingProvider("c", []),
    ]
    ts = ToolSet.from_providers(providers)
    await ts.ensure_ready()
    with pytest.raises(ToolProviderError, match="'b' failed during close"):
        await ts.aclose()
    assert [p.closed for p in providers] == [1, 1, 1]
    await ts.aclose()  # idempotent
    assert [p.closed for p in providers] == [1, 1, 1]
    with pytest.raises(RuntimeError, match="closed"):
        await ts.refresh()


async def test_with_tools_returns_new_set_sharing_providers() -> None:
    provider = CountingProvider("p", [make_tool("a", "p")])
    base = ToolSet.from_providers([provider])
    await base.ensure_ready()
    extended = base.with_tools([make_tool("a", "static"), make_tool("b", "static")])
    assert extended is not base and extended.ready
    assert base.names() == ["a"] and base.get("a") is not extended.get("a")
    assert extended.names() == ["a", "b"]
    assert provider.initialized == 1


async def test_refresh_relists_and_invalidates_caches() -> None:
    provider = CountingProvider("p", [make_tool("a", "p")])
    ts = ToolSet.from_providers([provider])
    await ts.ensure_ready()
    before = ts.schemas()
    provider.tools.append(make_tool("b", "p"))
    assert ts.schemas() == before
    await ts.refresh()
    assert [s["function"]["name"] for s in ts.schemas()] == ["a", "b"]
    assert provider.initialized == 1 and provider.listed == 2


async def test_async_context_manager() -> None:
    provider = CountingProvider("p", [make_tool("a", "p")])
    async with ToolSet.from_providers([provider]) as ts:
        assert ts.names() == ["a"]
    assert provider.closed == 1


def test_schemas_cached_and_describe() -> None:
    def search(query: str, limit: int = 5) -> str:
        """Search the web.

        Args:
            query: What to look for.
        """
        return query

    ts = ToolSet([search])
    assert ts.schemas() == [ts.get("search").schema()]  # type: ignore[union-attr]
    assert ts.schemas()[0] is ts.schemas()[0]
    assert ts.describe() == (
        "search: Search the web.\n"
        "  - query (string, required): What to look for.\n"
        "  - limit (integer, optional, default 5)"
    )
    assert ToolSet().describe() == "(no tools)"


def test_require_suggests_close_names() -> None:
    ts = ToolSet(builtin_tools())
    assert ts.require("calculator").name == "calculator"
    with pytest.raises(UnknownToolError) as info:
        ts.require("calculater")
    assert str(info.value) == (
        "unknown tool 'calculater'; did you mean 'calculator'? Available tools: calculator, think"
    )
    assert info.value.available == ["calculator", "think"]


def test_static_provider_satisfies_the_protocol() -> None:
    provider = StaticToolProvider([make_tool("a", "s")], name="fixed")
    assert isinstance(provider, ToolProvider)
    assert "fixed" in repr(provider)


def test_rejects_non_tools() -> None:
    with pytest.raises(TypeError, match="expected a Tool or a callable"):
        ToolSet(["calculator"])  # type: ignore[list-item]
