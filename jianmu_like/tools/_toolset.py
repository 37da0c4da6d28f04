"""`ToolSet`: the merged registry of tools one agent can call.

A ToolSet combines static tools (given in code) with tools listed by providers. Trees are
composed synchronously but providers initialise asynchronously, so a set with providers is
built cold and made usable by `await ensure_ready()`; lookups before that fail loudly instead
of silently offering the model no tools.

Merge rule: providers' tools in registration order (a later provider overrides an earlier one
on the same name), then static tools in order (static tools override providers, a later
static overrides an earlier one). Overrides are logged, since a silent collision between two
providers is a classic source of "the agent called the wrong tool".
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, Self

from .._base.redact import redacting_logger
from ._base import Tool
from ._describe import describe_tools
from ._errors import UnknownToolError
from ._provider import ProviderPool, ToolProvider, provider_label

logger = redacting_logger(__name__)  # they quote what servers and tools say

ToolLike = Tool | Callable[..., Any]
ReadyCheck = Callable[[], Awaitable[None]]
"""Run once the providers listed their tools; raises to keep the set from being used (a guard
whose rules name a tool that no provider listed)."""


def _as_tools(tools: Iterable[ToolLike] | Mapping[str, Tool]) -> tuple[Tool, ...]:
    items: Iterable[Any] = tools.values() if isinstance(tools, Mapping) else tools
    out: list[Tool] = []
    for item in items:
        if isinstance(item, Tool):
            out.append(item)
        elif callable(item):
            out.append(Tool.from_function(item))
        else:
            raise TypeError(f"expected a Tool or a callable, got {type(item).__name__}: {item!r}")
    return tuple(out)


class ToolSet:
    """An ordered, name-keyed collection of tools, possibly fed by async providers."""

    def __init__(
        self,
        tools: Iterable[ToolLike] | Mapping[str, Tool] = (),
        providers: Sequence[ToolProvider] = (),
        provider_context: Any = None,
    ) -> None:
        self._static = _as_tools(tools)
        self._pool = ProviderPool(providers, provider_context) if providers else None
        self._merged: dict[str, Tool] | None = None
        self._merged_version = -1
        self._schemas: list[dict[str, Any]] | None = None
        self._description: str | None = None
        self._checks: list[ReadyCheck] = []
        self._checked_version: int | None = None

    @classmethod
    def from_providers(cls, providers: Sequence[ToolProvider], context: Any = None) -> ToolSet:
        """A set fed only by providers; `await ensure_ready()` before use."""
        return cls(providers=providers, provider_context=context)

    def with_tools(self, tools: Iterable[ToolLike] | Mapping[str, Tool]) -> ToolSet:
        """A new set with these static tools added (overriding same-named ones).

        The new set shares this one's providers and their state: they are not initialised
        twice, and closing either set closes them for both.
        """
        derived = type(self).__new__(type(self))
        derived._static = self._static + _as_tools(tools)
        derived._pool = self._pool
        derived._merged = None
        derived._merged_version = -1
        derived._schemas = None
        derived._description = None
        derived._checks = []
        derived._checked_version = None
        return derived

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def listed(self) -> bool:
        """True when lookups work: no providers, or all of them listed their tools."""
        return self._pool is None or self._pool.ready

    @property
    def ready(self) -> bool:
        """True when the set may be used: listed, and its checks passed on the current tools."""
        return self.listed and (not self._checks or self._checked_version == self.version)

    @property
    def stale(self) -> bool:
        """A provider's tools changed since they were listed (an MCP server's `tools/list_changed`
        or `resources/list_changed`): `await refresh()` lists them again. The ReAct loop does so
        before each model call, so the model sees the change at its next iteration."""
        pool = self._pool
        return pool is not None and pool.stale

    def add_check(self, check: ReadyCheck) -> None:
        """Run `check` in `ensure_ready` once the tools are listed (again after a refresh);
        until it passes the set is not `ready`."""
        self._checks.append(check)
        self._checked_version = None

    @property
    def providers(self) -> tuple[ToolProvider, ...]:
        return () if self._pool is None else self._pool.providers

    async def ensure_ready(self) -> None:
        """Initialise providers and list their tools once (idempotent, concurrency-safe).

        Raises `ToolProviderError` naming the provider that failed; calling again retries,
        without re-initialising providers that already succeeded. Then runs the checks added
        with `add_check` (each call again until they pass), raising what they raise.
        """
        await self.ensure_listed()
        if self._checks and self._checked_version != self.version:
            version = self.version
            for check in self._checks:
                await check()
            self._checked_version = version

    async def ensure_listed(self) -> None:
        """Initialise providers and list their tools once, without the checks."""
        if self._pool is not None:
            await self._pool.ensure_ready()

    async def refresh(self) -> None:
        """Ask every provider for its current tools again (e.g. after a server changed them)."""
        if self._pool is not None:
            await self._pool.refresh()

    async def aclose(self) -> None:
        """Close all providers (idempotent). Static tools stay usable."""
        if self._pool is not None:
            await self._pool.aclose()

    async def __aenter__(self) -> Self:
        await self.ensure_ready()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # -- merging ---------------------------------------------------------------------------

    def _tools(self) -> dict[str, Tool]:
        pool = self._pool
        if pool is not None and not pool.ready:
            raise RuntimeError(
                f"this ToolSet has {len(pool.providers)} tool provider(s) that are not initialised "
                "yet; `await toolset.ensure_ready()` before looking tools up"
            )
        version = 0 if pool is None else pool.version
        if self._merged is None or version != self._merged_version:
            self._merged = self._merge()
            self._merged_version = version
            self._schemas = None
            self._description = None
        return self._merged

    def _merge(self) -> dict[str, Tool]:
        merged: dict[str, Tool] = {}
        origin: dict[str, str] = {}
        if self._pool is not None:
            for index, tools in enumerate(self._pool.listed):
                label = f"provider {provider_label(self._pool.providers[index], index)}"
                for item in tools:
                    if item.name in merged and merged[item.name] is not item:
                        logger.warning(
                            "tool %r from %s overrides the one from %s", item.name, label, origin[item.name]
                        )
                    merged[item.name] = item
                    origin[item.name] = label
        for item in self._static:
            if item.name in merged and merged[item.name] is not item:
                logger.info("static tool %r overrides the one from %s", item.name, origin[item.name])
            merged[item.name] = item
            origin[item.name] = "static tools"
        return merged

    @property
    def version(self) -> int:
        """Changes whenever the merged tool list may have changed (a provider refresh), so
        callers can cache what they derive from the set (prompts, schemas)."""
        return 0 if self._pool is None else self._pool.version

    # -- lookups ---------------------------------------------------------------------------

    def get(self, name: str) -> Tool | None:
        return self._tools().get(name)

    def require(self, name: str) -> Tool:
        """The tool called `name`, or `UnknownToolError` listing the available ones."""
        found = self._tools().get(name)
        if found is None:
            raise UnknownToolError(name, self.names())
        return found

    def names(self) -> list[str]:
        return list(self._tools())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._tools()

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools().values()))

    def __len__(self) -> int:
        return len(self._tools())

    def schemas(self) -> list[dict[str, Any]]:
        """The OpenAI `tools` request parameter (cached until the set changes)."""
        tools = self._tools()
        if self._schemas is None:
            self._schemas = [t.schema() for t in tools.values()]
        return list(self._schemas)

    def describe(self) -> str:
        """A readable listing for prompts: names, descriptions, typed parameters (cached until
        the set changes)."""
        tools = self._tools()
        if self._description is None:
            self._description = describe_tools(tools.values())
        return self._description

    def __repr__(self) -> str:
        if not self.listed:
            static = [t.name for t in self._static]
            return f"ToolSet(static={static}, providers={len(self.providers)}, ready=False)"
        return f"ToolSet(names={self.names()}, providers={len(self.providers)})"


def toolset_of(node: object) -> ToolSet | None:
    """The tool set a node of a tree calls (its `tools`: the tool executor, the LLM node, a
    `ToolNode`...), None for a node without one: the one place that reads it, for whoever lists
    a tree's tools (pooled conversations, a durable run's fingerprint, A2A skills, the CLI)."""
    tools = getattr(node, "tools", None)
    return tools if isinstance(tools, ToolSet) else None
