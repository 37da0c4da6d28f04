"""Secret redaction for anything that leaves the process as a log line or an event."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_SECRET_KEY = re.compile(r"(api[_-]?key|authorization|secret|password|passwd|bearer|access[_-]?token)", re.I)
_SECRET_VALUE = re.compile(r"\b(sk-[A-Za-z0-9_\-]{8,}|Bearer\s+[A-Za-z0-9._\-]{8,})")
REDACTED = "***"


def redact_text(text: str) -> str:
    """Mask API-key-looking substrings (`sk-...`, `Bearer ...`) in free text."""
    return _SECRET_VALUE.sub(REDACTED, text)


def redact(value: Any) -> Any:
    """A copy of `value` with secret-named keys masked and key-looking strings masked."""
    if isinstance(value, Mapping):
        return {
            k: (REDACTED if isinstance(k, str) and _SECRET_KEY.search(k) else redact(v))
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [redact(v) for v in value]
    if isinstance(value, str):
        return redact_text(value)
    return value
