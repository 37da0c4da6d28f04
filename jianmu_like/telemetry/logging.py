"""structlog set-up for jianmu_like: level filtering, console or JSON lines, secrets redacted.

The framework only ever logs through structlog; call `configure_logging()` once (the CLI does)
to choose the level and format. Every log line passes through `redact_processor`, so API keys
never reach a terminal or a log file, whatever a caller put into an event.

structlog is imported on first use, not with the package: it brings `rich` along and costs about
a tenth of a second, which every `import jianmu_like` (and every CLI call) would otherwise pay.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any, TextIO

from .._base.redact import redact


class LazyLogger:
    """A structlog logger named `name`, resolved when it first logs (see the module docstring)."""

    __slots__ = ("_logger", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: Any = None

    def __getattr__(self, attr: str) -> Any:
        if self._logger is None:
            import structlog

            self._logger = structlog.get_logger(self._name)
        return getattr(self._logger, attr)


class _CurrentStderr:
    """Writes to whatever `sys.stderr` is at the time of writing, not at configuration time: a
    replaced stream (a test's capture, a closed console) must not break every later log line."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def get_logger(name: str) -> Any:
    """A logger for module-level use that does not import structlog until it logs."""
    return LazyLogger(name)


def redact_processor(
    _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """structlog processor masking secret-named keys and key-looking strings."""
    return redact(dict(event_dict))  # type: ignore[no-any-return]


def configure_logging(
    level: str | int = "WARNING", *, json: bool = False, stream: TextIO | None = None
) -> None:
    """Configure structlog globally: minimum `level`, console or JSON rendering, redaction."""
    import structlog

    numeric = logging.getLevelName(level.upper()) if isinstance(level, str) else level
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level {level!r}")
    renderer: Any = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            redact_processor,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(stream or _CurrentStderr()),  # type: ignore[arg-type]
        cache_logger_on_first_use=False,
    )
