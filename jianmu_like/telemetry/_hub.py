"""TelemetryHub: fan-out of events to subscribers (event streams, structlog, user callbacks).

Emitting is free when nobody listens (`active` is False), so telemetry costs nothing in the hot
loop of an unobserved agent.

`JIANMU_CHECK_EVENTS=1` in the environment (the test suite sets it) validates every published
event against its payload model in the catalogue (`telemetry.events`): an emitter that drifts
from the catalogue, or an event type it does not declare, raises instead of passing unnoticed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from .._redact import redact
from .events import Event, check
from .logging import get_logger

Subscriber = Callable[[Event], None]

CHECK_EVENTS = os.environ.get("JIANMU_CHECK_EVENTS") == "1"
"""Validate each published event against the catalogue (read once, at import)."""


class TelemetryHub:
    """Publishes `Event`s to subscribers; a failing subscriber never breaks the agent."""

    def __init__(self, run_id: str | None = None) -> None:
        self._subscribers: list[Subscriber] | None = None
        """Created by the first `subscribe`: an unobserved hub (one per conversation) holds no list."""
        self.run_id = run_id

    @property
    def active(self) -> bool:
        return bool(self._subscribers)

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Add a subscriber; returns a function that removes it."""
        subscribers = self._subscribers
        if subscribers is None:
            subscribers = self._subscribers = []
        subscribers.append(subscriber)

        def unsubscribe() -> None:
            if subscriber in subscribers:
                subscribers.remove(subscriber)

        return unsubscribe

    def emit(
        self, event_type: str, *, node: str | None = None, namespace: str | None = None, **data: Any
    ) -> None:
        subscribers = self._subscribers
        if not subscribers:
            return
        if CHECK_EVENTS:
            check(event_type, data)
        event = Event.model_construct(
            type=event_type,
            node=node,
            namespace=namespace,
            data=redact(data),
            ts=time.time(),
            run_id=self.run_id,
        )
        for subscriber in tuple(subscribers):
            try:
                subscriber(event)
            except Exception:  # a broken listener must not take the agent down
                get_logger("jianmu_like.telemetry").exception(
                    "telemetry subscriber failed", event_type=event_type
                )


def structlog_sink(logger_name: str = "jianmu_like.events") -> Subscriber:
    """A subscriber that logs every event through structlog (data already redacted)."""
    log = get_logger(logger_name)

    def sink(event: Event) -> None:
        log.info(event.type, node=event.node, namespace=event.namespace, run_id=event.run_id, **event.data)

    return sink
