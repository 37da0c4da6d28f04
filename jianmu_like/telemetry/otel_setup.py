"""Switching OpenTelemetry tracing on: the extra's check, the SDK set up from `OTEL_*`, and
`enable_otel` to attach the span subscriber to an agent.

Importing this module imports no opentelemetry (the CLI checks for the extra before anything
else happens); the SDK is configured by its own environment variables wherever it reads them
(`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER`, `OTEL_BSP_*`,
`OTEL_EXPORTER_OTLP_*`, `OTEL_SDK_DISABLED`); only `OTEL_TRACES_EXPORTER`, which the SDK reads in
its auto-instrumentation alone, is mapped here onto the exporters the installed packages register.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from ..errors import JianmuError

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import TracerProvider

    from ..config import TelemetryConfig
    from .hub import TelemetryHub
    from .otel import OTelSubscriber

EXTRA = "otel"
INSTALL_HINT = "pip install 'jianmu_like[otel]'"
DEFAULT_SERVICE_NAME = "jianmu-like"
_EXPORTER_GROUP = "opentelemetry_traces_exporter"
_OTLP_PROTOCOLS = {
    "http/protobuf": "otlp_proto_http",
    "grpc": "otlp_proto_grpc",
    "http/json": "otlp_json_http",
}
_PACKAGES = (("opentelemetry-api", "opentelemetry.trace"), ("opentelemetry-sdk", "opentelemetry.sdk"))


class OTelUnavailable(RuntimeError, JianmuError):
    """Tracing was asked for but the `otel` extra is not installed (or is broken)."""


class OTelConfigError(ValueError, JianmuError):
    """An `OTEL_*` variable names something that is not there (e.g. an unknown exporter)."""


def require_otel() -> None:
    """Raise `OTelUnavailable`, naming the extra, unless opentelemetry's API and SDK import."""
    missing = [name for name, module in _PACKAGES if _find(module) is None]
    if missing:
        raise OTelUnavailable(
            f"OpenTelemetry tracing needs the `{EXTRA}` extra ({', '.join(missing)} not installed): "
            + INSTALL_HINT
        )


def _find(module: str) -> Any:
    try:
        return importlib.util.find_spec(module)
    except ModuleNotFoundError:
        return None


def span_exporters(environ: Mapping[str, str] | None = None) -> list[SpanExporter]:
    """The exporters `OTEL_TRACES_EXPORTER` names (comma-separated; default `otlp`, `none` for
    none), each built with no arguments so it reads its own `OTEL_EXPORTER_*` settings (the
    console one writes to stderr)."""
    env = os.environ if environ is None else environ
    names = [n.strip().lower() for n in env.get("OTEL_TRACES_EXPORTER", "otlp").split(",") if n.strip()]
    exporters: list[SpanExporter] = []
    for name in names:
        if name == "none":
            continue
        key = name
        if name == "otlp":
            protocol = env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get(
                "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"
            )
            key = _OTLP_PROTOCOLS.get(protocol.strip().lower(), "")
            if not key:
                raise OTelConfigError(
                    f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r} is not one of {', '.join(_OTLP_PROTOCOLS)}"
                )
        found = list(entry_points(group=_EXPORTER_GROUP, name=key))
        if not found:
            known = sorted({e.name for e in entry_points(group=_EXPORTER_GROUP)} | {"otlp", "none"})
            hint = ""
            if name == "otlp":
                hint = f"; the `{EXTRA}` extra brings otlp over http/protobuf: {INSTALL_HINT}"
            raise OTelConfigError(
                f"OTEL_TRACES_EXPORTER names {name!r}, but no installed package provides the "
                f"span exporter {key!r} (available: {', '.join(known)}){hint}"
            )
        exporter = found[0].load()
        # The console exporter writes to stderr: stdout carries the answer (or `--json` lines).
        exporters.append(exporter(out=sys.stderr) if name == "console" else exporter())
    return exporters


def tracer_provider_from_env(environ: Mapping[str, str] | None = None) -> TracerProvider:
    """An SDK `TracerProvider` configured by the `OTEL_*` variables; the service is called
    `jianmu-like` unless `OTEL_SERVICE_NAME` or `OTEL_RESOURCE_ATTRIBUTES` names it."""
    require_otel()
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider as SDKTracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    env = os.environ if environ is None else environ
    resource = Resource.create()
    named = env.get("OTEL_SERVICE_NAME") or "service.name=" in env.get("OTEL_RESOURCE_ATTRIBUTES", "")
    if not named:
        resource = resource.merge(Resource({SERVICE_NAME: DEFAULT_SERVICE_NAME}))
    provider = SDKTracerProvider(resource=resource)
    for exporter in span_exporters(env):
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def global_tracer_provider() -> TracerProvider:
    """The process's tracer provider: the one already set (by the application or
    `opentelemetry-instrument`), else one from the environment, then set as the global one."""
    require_otel()
    from opentelemetry import trace
    from opentelemetry.trace import ProxyTracerProvider

    current = trace.get_tracer_provider()
    if not isinstance(current, ProxyTracerProvider):
        return current
    provider = tracer_provider_from_env()
    trace.set_tracer_provider(provider)
    return trace.get_tracer_provider()


def otel_subscriber(
    config: TelemetryConfig | None = None, *, tracer_provider: TracerProvider | None = None
) -> OTelSubscriber:
    """A span subscriber set up by `config` (default: the configuration's `telemetry` section)
    on `tracer_provider` (default: `global_tracer_provider()`)."""
    require_otel()
    from ..config import get_config
    from .otel import OTelSubscriber

    cfg = config if config is not None else get_config().telemetry
    provider = tracer_provider if tracer_provider is not None else global_tracer_provider()
    return OTelSubscriber(provider, provider_name=cfg.provider_name, capture_content=cfg.capture_content)


def enable_otel(
    target: Any,
    *,
    subscriber: OTelSubscriber | None = None,
    config: TelemetryConfig | None = None,
    tracer_provider: TracerProvider | None = None,
) -> OTelSubscriber:
    """Trace every run of `target` (an `Agent`, a `Conversation` or a `TelemetryHub`) as spans;
    returns the subscriber (pass it on to trace more agents with the same settings)."""
    sub = subscriber if subscriber is not None else otel_subscriber(config, tracer_provider=tracer_provider)
    hub: TelemetryHub = getattr(target, "telemetry", target)
    hub.subscribe(sub)
    return sub


def flush_tracing(timeout_millis: int = 5_000) -> None:
    """Export the spans still buffered (the CLI calls this before it exits)."""
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:  # tracing never started: nothing buffered
        return
    flush = getattr(trace.get_tracer_provider(), "force_flush", None)
    if callable(flush):
        flush(timeout_millis)
