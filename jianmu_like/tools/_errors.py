"""Errors of the tools layer.

Messages are written for two readers: the developer reading a traceback and the model reading
an observation. They therefore name the tool and each problem precisely and say what to do
instead, rather than echoing a raw pydantic dump.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from contextlib import suppress
from typing import Any, ClassVar

from ..errors import JianmuError


class ToolError(JianmuError):
    """Base class of every error the tools layer raises itself."""


class ToolArgumentsError(ToolError):
    """The arguments a model sent do not fit the tool's parameters.

    `problems` holds one readable sentence per bad, missing or unexpected argument, so an
    executor can hand `str(error)` back to the model and the model can fix its call.
    """

    def __init__(self, tool_name: str, problems: Sequence[str]) -> None:
        self.tool_name = tool_name
        self.problems = list(problems) or ["the arguments are invalid"]
        super().__init__(f"invalid arguments for tool '{tool_name}': " + "; ".join(self.problems))

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.tool_name, self.problems))


class UnknownToolError(ToolError):
    """The model asked for a tool the agent does not have; the message lists what exists."""

    def __init__(self, name: str, available: Sequence[str] = ()) -> None:
        self.name = name
        self.available = list(available)
        message = f"unknown tool '{name}'"
        close = difflib.get_close_matches(name, self.available, n=1)
        if close:
            message += f"; did you mean '{close[0]}'?"
        if self.available:
            message += f" Available tools: {', '.join(self.available)}"
        else:
            message += "; no tools are available"
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.name, self.available))


class ToolProviderError(ToolError):
    """A tool provider failed while initialising, listing its tools or closing.

    Raised with the provider's own exception as `__cause__`, so the message can stay short
    while the traceback keeps the full story. A run whose tools cannot be set up ends with
    termination reason "provider_error" (see `bt._fault`).
    """

    failure_kind: ClassVar[str] = "provider_error"

    def __init__(self, provider: str, stage: str, cause: BaseException | str) -> None:
        self.provider = provider
        self.stage = stage
        detail = cause if isinstance(cause, str) else f"{type(cause).__name__}: {cause}"
        self.detail = detail
        super().__init__(f"tool provider {provider} failed during {stage}: {detail}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.provider, self.stage, self.detail))


class ToolExitError(ToolError):
    """A tool's code tried to stop the process (`sys.exit()`, argparse rejecting its input,
    a `KeyboardInterrupt` raised in its worker thread): only that call fails, not the agents
    sharing the event loop."""

    def __init__(self, cause: BaseException | str) -> None:
        if isinstance(cause, str):
            detail = cause
        elif isinstance(cause, SystemExit):
            detail = "SystemExit()" if cause.code is None else f"SystemExit({safe_message(cause.code)})"
        else:
            detail = type(cause).__name__
        self.detail = detail
        super().__init__(f"tried to stop the process ({detail}); only this call was stopped")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.detail,))


def safe_message(value: object) -> str:
    """`str(value)`, or a fallback naming its type when its `__str__` (and `__repr__`) raise:
    an error that cannot be rendered must still become an observation."""
    for render in (str, repr):  # each failure falls through to the next rendering
        with suppress(Exception):
            return render(value)
    return f"<{type(value).__name__} object: its message could not be rendered>"
