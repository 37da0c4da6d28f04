"""Tool providers: sources of tools that need async set-up (MCP servers, plugin registries...).

`ToolProvider` is the protocol; `StaticToolProvider` is the trivial implementation. The
`ProviderPool` runs their lifecycle for a `ToolSet`: each provider is initialised once, its
tools are listed once (until `refresh`), and closing reaches every provider even when one
fails. The pool is shared by ToolSets derived with `with_tools`, so deriving a set never
initialises a provider twice.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

from .._base.redact import redacting_logger
from ._base import Tool
from ._errors import ToolProviderError

logger = redacting_logger(__name__)  # they quote what servers and tools say


@runtime_checkable
class ToolProvider(Protocol):
    """Something that can list tools after async initialisation and must be closed after.

    A provider whose tools can change while an agent runs (an MCP server's `list_changed`) may
    also have a `stale` attribute (bool): while it is true, the agent lists the tools again
    before its next model call (`ToolSet.stale`, `refresh`)."""

    async def initialize(self) -> None:
        """Connect / load; called once before the first `get_tools`."""
        ...

    async def get_tools(self, **kwargs: Any) -> Sequence[Tool]:
        """The tools currently offered; `context=` is passed when the ToolSet has one."""
        ...

    async def close(self) -> None:
        """Release resources; must be safe to call even if `initialize` never ran."""
        ...


class StaticToolProvider:
    """A provider over a fixed list of tools (plain callables are wrapped with `from_function`)."""

    def __init__(self, tools: Iterable[Tool | Callable[..., Any]], *, name: str | None = None) -> None:
        self.name = name or "static"
        self.tools = [t if isinstance(t, Tool) else Tool.from_function(t) for t in tools]

    async def initialize(self) -> None:
        return None

    async def get_tools(self, **kwargs: Any) -> Sequence[Tool]:
        return list(self.tools)

    async def close(self) -> None:
        return None

    def __repr__(self) -> str:
        return f"StaticToolProvider(name={self.name!r}, tools={[t.name for t in self.tools]})"


def provider_label(provider: object, index: int) -> str:
    """How errors and logs name a provider: its position, class and `name` attribute if any."""
    label = f"#{index} {type(provider).__name__}"
    name = getattr(provider, "name", None)
    return f"{label} {name!r}" if isinstance(name, str) and name else label


class ProviderPool:
    """Lifecycle of an ordered group of providers and the tools each one listed."""

    def __init__(self, providers: Sequence[ToolProvider], context: Any = None) -> None:
        for index, provider in enumerate(providers):
            if not isinstance(provider, ToolProvider):
                raise TypeError(
                    f"provider #{index} ({type(provider).__name__}) does not implement ToolProvider "
                    "(async initialize(), get_tools(**kwargs) and close())"
                )
        self.providers: tuple[ToolProvider, ...] = tuple(providers)
        self.context = context
        self.version = 0
        """Bumped whenever the listed tools change, so ToolSets know to re-merge."""
        self.closed = False
        self._initialized = [False] * len(self.providers)
        self._listed: tuple[tuple[Tool, ...], ...] | None = None
        self._lock: asyncio.Lock | None = None
        self._lock_loop: asyncio.AbstractEventLoop | None = None

    @property
    def ready(self) -> bool:
        return self._listed is not None

    @property
    def stale(self) -> bool:
        """Listed, and a provider says its tools changed since (its `stale` attribute)."""
        return self._listed is not None and any(getattr(p, "stale", False) for p in self.providers)

    @property
    def listed(self) -> tuple[tuple[Tool, ...], ...]:
        """The tools of each provider, in registration order (only once ready)."""
        if self._listed is None:
            raise RuntimeError("providers are not initialised yet")
        return self._listed

    def _get_lock(self) -> asyncio.Lock:
        # Created lazily and per event loop: ToolSets are often built at import time, outside
        # any loop, and reused across `asyncio.run` calls.
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock_loop is not loop:
            self._lock = asyncio.Lock()
            self._lock_loop = loop
        return self._lock

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError("this ToolSet's providers are closed; build a new ToolSet")

    async def ensure_ready(self) -> None:
        """Initialise and list every provider once; concurrent callers wait for the first."""
        if self._listed is not None:
            return
        self._check_open()
        async with self._get_lock():
            if self._listed is None:
                self._check_open()
                await self._list_all()

    async def refresh(self) -> None:
        """List every provider's tools again (initialising any that is not yet)."""
        self._check_open()
        async with self._get_lock():
            self._check_open()
            await self._list_all()

    async def _list_all(self) -> None:
        listed: list[tuple[Tool, ...]] = []
        for index, provider in enumerate(self.providers):
            label = provider_label(provider, index)
            if not self._initialized[index]:
                try:
                    await provider.initialize()
                except Exception as exc:
                    raise ToolProviderError(label, "initialize", exc) from exc
                self._initialized[index] = True
            try:
                if self.context is None:
                    tools = await provider.get_tools()
                else:
                    tools = await provider.get_tools(context=self.context)
            except Exception as exc:
                raise ToolProviderError(label, "get_tools", exc) from exc
            bad = [type(t).__name__ for t in tools if not isinstance(t, Tool)]
            if bad:
                raise ToolProviderError(label, "get_tools", f"returned {', '.join(bad)} instead of Tool")
            listed.append(tuple(tools))
        self._listed = tuple(listed)
        self.version += 1

    async def aclose(self) -> None:
        """Close every provider once; one failing does not stop the others.

        The first failure is re-raised (as `ToolProviderError`) after all were tried, the
        rest are logged, like `contextlib.AsyncExitStack` would not swallow them either.
        """
        if self.closed:
            return
        async with self._get_lock():
            if self.closed:
                return
            self.closed = True
            failures: list[ToolProviderError] = []
            for index, provider in enumerate(self.providers):
                label = provider_label(provider, index)
                try:
                    await provider.close()
                except Exception as exc:
                    error = ToolProviderError(label, "close", exc)
                    error.__cause__ = exc
                    logger.warning("closing tool provider %s failed: %r", label, exc)
                    failures.append(error)
        if failures:
            first = failures[0]
            if len(failures) > 1:
                first.add_note(f"{len(failures) - 1} more provider(s) also failed to close; see the log")
            raise first
