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
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import MetricExporter
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import TracerProvider

    from .._base.config import TelemetryConfig
    from ._hub import TelemetryHub
    from ._otel import OTelSubscriber

EXTRA = "otel"
INSTALL_HINT = "pip install 'jianmu_like[otel]'"
DEFAULT_SERVICE_NAME = "jianmu-like"
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
    return _exporters("traces", "span", environ)


def metric_exporters(environ: Mapping[str, str] | None = None) -> list[MetricExporter]:
    """The exporters `OTEL_METRICS_EXPORTER` names, as `span_exporters` for spans."""
    return _exporters("metrics", "metric", environ)


def _exporters(signal: str, what: str, environ: Mapping[str, str] | None) -> list[Any]:
    """The exporters `OTEL_<SIGNAL>_EXPORTER` names, from the installed packages' entry points."""
    env = os.environ if environ is None else environ
    variable, group = f"OTEL_{signal.upper()}_EXPORTER", f"opentelemetry_{signal}_exporter"
    names = [n.strip().lower() for n in env.get(variable, "otlp").split(",") if n.strip()]
    exporters: list[Any] = []
    for name in names:
        if name == "none":
            continue
        key = name
        if name == "otlp":
            protocol = env.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL") or env.get(
                "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"
            )
            key = _OTLP_PROTOCOLS.get(protocol.strip().lower(), "")
            if not key:
                raise OTelConfigError(
                    f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r} is not one of {', '.join(_OTLP_PROTOCOLS)}"
                )
        found = list(entry_points(group=group, name=key))
        if not found:
            known = sorted({e.name for e in entry_points(group=group)} | {"otlp", "none"})
            hint = ""
            if name == "otlp":
                hint = f"; the `{EXTRA}` extra brings otlp over http/protobuf: {INSTALL_HINT}"
            raise OTelConfigError(
                f"{variable} names {name!r}, but no installed package provides the "
                f"{what} exporter {key!r} (available: {', '.join(known)}){hint}"
            )
        exporter = found[0].load()
        # The console exporter writes to stderr: stdout carries the answer (or `--json` lines).
        exporters.append(exporter(out=sys.stderr) if name == "console" else exporter())
    return exporters


def _resource(env: Mapping[str, str]) -> Any:
    """The SDK resource of the `OTEL_*` variables; the service is called `jianmu-like` unless
    `OTEL_SERVICE_NAME` or `OTEL_RESOURCE_ATTRIBUTES` names it."""
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource

    resource = Resource.create()
    named = env.get("OTEL_SERVICE_NAME") or "service.name=" in env.get("OTEL_RESOURCE_ATTRIBUTES", "")
    if not named:
        resource = resource.merge(Resource({SERVICE_NAME: DEFAULT_SERVICE_NAME}))
    return resource


def tracer_provider_from_env(environ: Mapping[str, str] | None = None) -> TracerProvider:
    """An SDK `TracerProvider` configured by the `OTEL_*` variables (see `_resource`)."""
    require_otel()
    from opentelemetry.sdk.trace import TracerProvider as SDKTracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    env = os.environ if environ is None else environ
    provider = SDKTracerProvider(resource=_resource(env))
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


def meter_provider_from_env(environ: Mapping[str, str] | None = None) -> MeterProvider:
    """An SDK `MeterProvider` exporting to the exporters `OTEL_METRICS_EXPORTER` names (read
    every `OTEL_METRIC_EXPORT_INTERVAL` ms, and when flushed)."""
    require_otel()
    from opentelemetry.sdk.metrics import MeterProvider as SDKMeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    env = os.environ if environ is None else environ
    readers = [PeriodicExportingMetricReader(exporter) for exporter in metric_exporters(env)]
    return SDKMeterProvider(metric_readers=readers, resource=_resource(env))


def global_meter_provider() -> MeterProvider:
    """The process's meter provider: the SDK one already set, else one from the environment,
    then set as the global one."""
    require_otel()
    from opentelemetry import metrics
    from opentelemetry.sdk.metrics import MeterProvider as SDKMeterProvider

    current = metrics.get_meter_provider()
    if isinstance(current, SDKMeterProvider):
        return current
    provider = meter_provider_from_env()
    metrics.set_meter_provider(provider)
    return metrics.get_meter_provider()


def otel_subscriber(
    config: TelemetryConfig | None = None,
    *,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
) -> OTelSubscriber:
    """A span and metric subscriber set up by `config` (default: the configuration's
    `telemetry` section) on `tracer_provider` and `meter_provider` (default: the global ones,
    from the environment if none is set; given a tracer provider only, the global meter
    provider as it is)."""
    require_otel()
    from .._base.config import get_config
    from ._otel import OTelSubscriber

    cfg = config if config is not None else get_config().telemetry
    if tracer_provider is None:
        tracer_provider = global_tracer_provider()
        meter_provider = meter_provider if meter_provider is not None else global_meter_provider()
    return OTelSubscriber(
        tracer_provider,
        provider_name=cfg.provider_name,
        capture_content=cfg.capture_content,
        meter_provider=meter_provider,
    )


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
    """Export the spans and metrics still buffered (the CLI calls this before it exits)."""
    for name, getter in (
        ("opentelemetry.trace", "get_tracer_provider"),
        ("opentelemetry.metrics", "get_meter_provider"),
    ):
        module = sys.modules.get(name)
        if module is None:  # never started: nothing buffered
            continue
        flush = getattr(getattr(module, getter)(), "force_flush", None)
        if callable(flush):
            flush(timeout_millis)
