"""Run dependencies: what the caller of a run hands its tools (a database handle, the user's id).

`agent.run(input, deps=obj)` (and `resume(..., deps=obj)`, `Conversation.run`) makes `obj`
available to every tool during that run, two ways:

- a tool parameter annotated `RunContext[T]` (any name) receives `RunContext(deps=obj, ...)`;
  it is not part of the tool's JSON schema, so the model never sees or fills it;
- `current_run().deps` from anywhere inside the run (a tool, a helper it calls, a policy).

The deps are live objects of the caller's process, so they are never part of the state and
never serialized into a checkpoint: a resume, in this process or another, takes `deps=` again
(a resume without it runs with `deps=None`). Outside a run `current_run()` is a RuntimeError,
and a `RunContext` parameter of a tool called directly receives `RunContext(deps=None)`.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping, Sequence
from contextlib import suppress
from contextvars import ContextVar, Token
from typing import Any, Generic, TypeVar

from ._arguments import ArgumentBinder, BoundCall

DepsT = TypeVar("DepsT")


class RunContext(Generic[DepsT]):
    """The run a tool serves: the caller's `deps`, the run's id and its thread's id."""

    __slots__ = ("deps", "outer_runs", "run_id", "thread_id")

    def __init__(self, deps: DepsT, *, run_id: str | None = None, thread_id: str | None = None) -> None:
        self.deps = deps
        self.run_id = run_id
        self.thread_id = thread_id
        self.outer_runs: tuple[str, ...] = ()
        """The ids of the runs this one runs inside (an agent called as a tool of another run),
        innermost first: set by `enter_run`. What waits on this run waits on those too."""

    def lineage(self) -> tuple[str, ...]:
        """This run's id, then the ids of the runs it runs inside."""
        return self.outer_runs if self.run_id is None else (self.run_id, *self.outer_runs)

    def __repr__(self) -> str:
        return f"RunContext(deps={self.deps!r}, run_id={self.run_id!r}, thread_id={self.thread_id!r})"


_current: ContextVar[RunContext[Any] | None] = ContextVar("jianmu_run", default=None)


def current_run() -> RunContext[Any]:
    """The run in progress in this task or worker thread; RuntimeError outside a run."""
    context = _current.get()
    if context is None:
        raise RuntimeError("current_run() is only available inside an agent run (agent.run / resume)")
    return context


def enter_run(context: RunContext[Any]) -> Token[RunContext[Any] | None]:
    """Make `context` the current run (the Agent does this around a run's ticks); a run entered
    inside another (an agent called as a tool) knows the runs around it (`outer_runs`)."""
    outer = _current.get()
    if outer is not None and outer is not context:
        context.outer_runs = outer.lineage()
    return _current.set(context)


def leave_run(token: Token[RunContext[Any] | None]) -> None:
    """Undo `enter_run`. A run whose coroutine is closed from elsewhere (its loop stopped, the
    generator finalised in another context) has no value of ours to restore there: nothing to do."""
    with suppress(ValueError):  # "created in a different Context"
        _current.reset(token)


def is_run_context(annotation: Any) -> bool:
    """Whether a parameter annotation is `RunContext` or `RunContext[...]`."""
    return annotation is RunContext or typing.get_origin(annotation) is RunContext


class ContextBinder:
    """A tool's binder that also passes the current `RunContext` to the parameters declared
    for it (they are left out of the schema, so the inner binder never sees them)."""

    __slots__ = ("inner", "params")

    def __init__(self, inner: ArgumentBinder, params: Sequence[str]) -> None:
        self.inner = inner
        self.params = tuple(params)

    def bind(self, tool_name: str, arguments: Mapping[str, Any]) -> BoundCall:
        call = self.inner.bind(tool_name, arguments)
        context = _current.get() or RunContext(None)
        kwargs = dict(call.kwargs)
        for name in self.params:
            kwargs[name] = context
        return BoundCall(call.args, kwargs)
