"""TelemetryHub: fan-out of events to subscribers (event streams, structlog, user callbacks).

Emitting is free when nobody listens (`active` is False): an emitter hands the hub the event's
class with its fields (`emit(ev.ToolCallStarted, tool=..., ...)`), and the event is built only for
subscribers, so telemetry costs nothing in the hot loop of an unobserved agent.

`emit("tool.call.started", **data)`, the name as a string, builds the class the catalogue
declares for it (`telemetry.events`); a name it does not declare is published as a plain `Event`.
`JIANMU_CHECK_EVENTS=1` in the environment (the test suite sets it) validates every published
event against its class instead: an emitter that drifts from the catalogue, or an event type it
does not declare, raises instead of passing unnoticed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any, ParamSpec, cast, overload

from .._base.redact import redact
from .events import CATALOGUE, AnyEvent, CatalogueEvent, Event, check
from .logging import get_logger

Subscriber = Callable[[AnyEvent], None]
P = ParamSpec("P")

CHECK_EVENTS = os.environ.get("JIANMU_CHECK_EVENTS") == "1"
"""Validate each published event against the catalogue (read once, at import)."""


class TelemetryHub:
    """Publishes `Event`s to subscribers; a failing subscriber never breaks the agent."""

    def __init__(self, run_id: str | None = None) -> None:
        self._subscribers: list[Subscriber] | None = None
        """Created by the first `subscribe`: an unobserved hub (one per conversation) holds no list."""
        self.run_id = run_id
        self.capture_content = False
        """Whether a subscriber captures content (has a true `capture_content`, as
        `OTelSubscriber(capture_content=True)`): model-calling nodes then put what the model is
        asked on `model.call.started`; otherwise nobody pays for building it."""

    @property
    def active(self) -> bool:
        return bool(self._subscribers)

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Add a subscriber; returns a function that removes it."""
        subscribers = self._subscribers
        if subscribers is None:
            subscribers = self._subscribers = []
        subscribers.append(subscriber)
        self._captures()

        def unsubscribe() -> None:
            if subscriber in subscribers:
                subscribers.remove(subscriber)
                self._captures()

        return unsubscribe

    def _captures(self) -> None:
        self.capture_content = any(
            getattr(s, "capture_content", False) is True for s in self._subscribers or ()
        )

    @overload
    def emit(self, event: Callable[P, CatalogueEvent], /, *args: P.args, **data: P.kwargs) -> None: ...
    @overload
    def emit(
        self, event: str, /, *, node: str | None = None, namespace: str | None = None, **data: Any
    ) -> None: ...
    def emit(  # type: ignore[misc]  # node and namespace: P's own keywords in the first form
        self,
        event: Callable[..., CatalogueEvent] | str,
        /,
        *args: Any,
        node: str | None = None,
        namespace: str | None = None,
        **data: Any,
    ) -> None:
        """Publish an event: its class and fields (the event is built only when someone
        listens), or its catalogue name and fields (the compatibility path)."""
        subscribers = self._subscribers
        if not subscribers:
            return
        if CHECK_EVENTS:
            check(event if isinstance(event, str) else event.type, data)  # type: ignore[attr-defined]
        published: AnyEvent
        if isinstance(event, str):
            published = self._named(event, node, namespace, data)
        else:
            data = redact(data)
            kept = None if event.adapts else data  # type: ignore[attr-defined]  # adapts: keys != fields
            published = event(*args, node=node, namespace=namespace, run_id=self.run_id, _data=kept, **data)
        for subscriber in tuple(subscribers):
            try:
                subscriber(published)
            except Exception:  # a broken listener must not take the agent down
                get_logger("jianmu_like.telemetry").exception(
                    "telemetry subscriber failed", event_type=published.type
                )

    def _named(self, name: str, node: str | None, namespace: str | None, data: dict[str, Any]) -> AnyEvent:
        """The event `emit(name, **data)` publishes: its catalogue class, else a plain `Event`
        (a user's own type; also an emitter whose fields drifted, outside the suite: the event
        still goes out as it was sent rather than failing the agent)."""
        entry = CATALOGUE.get(name)
        data = redact(data)
        if entry is not None:
            cls = entry.payload
            try:
                return cast(
                    "CatalogueEvent",
                    cls(
                        node=node,
                        namespace=namespace,
                        run_id=self.run_id,
                        **(cls.kwargs(data) if cls.adapts else data),
                    ),
                )
            except TypeError:
                pass
        return Event.model_construct(
            type=name, node=node, namespace=namespace, data=data, ts=time.time(), run_id=self.run_id
        )


def structlog_sink(logger_name: str = "jianmu_like.events") -> Subscriber:
    """A subscriber that logs every event through structlog (data already redacted)."""
    log = get_logger(logger_name)

    def sink(event: AnyEvent) -> None:
        log.info(event.type, node=event.node, namespace=event.namespace, run_id=event.run_id, **event.data)

    return sink
