"""`--otel` (or `telemetry._otel: true`): OpenTelemetry spans for the CLI's runs.

Checked before the agent file is loaded, so a missing extra or a bad `OTEL_*` variable is a
usage error (exit 2) that names its fix, not a failure halfway through a run.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ._common import CliError

if TYPE_CHECKING:
    from ..telemetry._otel import OTelSubscriber


def start_tracing(args: argparse.Namespace) -> OTelSubscriber | None:
    """The span subscriber when `--otel` or the configuration asks for tracing, else None."""
    from .._base.config import get_config

    if not (getattr(args, "otel", False) or get_config().telemetry.otel):
        return None
    from ..telemetry.otel_setup import OTelConfigError, OTelUnavailable, otel_subscriber

    try:
        return otel_subscriber()
    except (OTelUnavailable, OTelConfigError) as exc:
        raise CliError(f"--otel: {exc}") from None
