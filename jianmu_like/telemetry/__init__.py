"""Telemetry: the catalogue of events an agent emits, the hub that fans them out to
subscribers, structlog set-up, and OpenTelemetry spans (loaded only when asked for)."""

from typing import TYPE_CHECKING

from ..exports import lazy_exports

if not TYPE_CHECKING:  # hidden from type checkers, so a misspelt name is an error there
    __all__, __getattr__, __dir__ = lazy_exports(__name__)

if TYPE_CHECKING:  # the public names, one source: jianmu_like.exports reads them at run time
    from ._hub import Subscriber as Subscriber
    from ._hub import TelemetryHub as TelemetryHub
    from ._hub import structlog_sink as structlog_sink
    from .events import Event as Event
    from .logging import configure_logging as configure_logging
    from .otel_setup import enable_otel as enable_otel
