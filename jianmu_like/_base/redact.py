"""Secret redaction for anything that leaves the process as a log line, an event or an error.

Two rules, both applied by `redact_text` (and so by `redact`, the hub's events, the log lines):

- **By pattern**: API-key-looking substrings (`sk-...`, `Bearer ...`) and the credentials of
  URLs (`user:password@`, `?token=...`).
- **By value**: every value the configuration declares secret is *registered* here, once, by
  whoever reads it (`register_secret`): MCP servers' `env` and `headers` values and the
  environment variables they expand (`tools.mcp._config`), the model clients' API keys
  (`models._client`), the server's token, and any credential a later feature holds (OAuth
  tokens register the same way). A registered value is masked wherever it appears, also
  URL-encoded or JSON-escaped, whatever quotes it: a server printing its environment on stderr,
  a tool echoing it in an error. Values shorter than `MIN_SECRET_LENGTH` are not registered
  (masking "1" or "true" everywhere would garble every text and protect nothing).

The registry is process-wide and only grows (a secret once seen stays masked). A text is
scanned for each registered form with `in` and masked with `str.replace` (C substring scans);
with nothing registered it costs one global read per text. A compiled alternation of every form
was measured first and dropped: its search is several times slower than the `in` scans on text
without a secret, and its `sub` took 13 s on a 50 MB tool error holding one (30 forms), where
`replace` takes milliseconds. Measured on a shared 2-core machine: 1 KB without a secret, 0.2 µs
with nothing registered, 5 µs with 10 forms, 46 µs with 100 (a value has up to 3 forms);
50 MB, about 1.3 s for 30 forms, in line with the JSON parse that cutting such an output
already costs. `redact_text`'s patterns alone take 45-60 µs per KB.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Mapping
from typing import Any, overload
from urllib.parse import quote, quote_plus, unquote

from pydantic_core import to_json

_SECRET_KEY = re.compile(r"(api[_-]?key|authorization|secret|password|passwd|bearer|access[_-]?token)", re.I)
_SECRET_VALUE = re.compile(r"\b(sk-[A-Za-z0-9_\-]{8,}|Bearer\s+[A-Za-z0-9._\-]{8,})")
_CLUES = (b"://", b"sk-")
_KEY_CLUES = (b"api", b"authorization", b"secret", b"passw", b"bearer", b"access")
"""What `might_hold_secret` looks for in ASCII text: `_CLUES` as written, `_KEY_CLUES` in the
lowered text. Each alternative of `_SECRET_KEY` (any case) and of `_SECRET_VALUE` contains one
(tests/replay keep them in step): C substring scans, ~20x faster than the two patterns."""
REDACTED = "***"
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s'\"<>`]+")
_USERINFO = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.\-]*://)[^/?#@]*@")
_SECRET_PARAMS = frozenset(
    {
        "api_key",
        "apikey",
        "api-key",
        "key",
        "token",
        "access_token",
        "refresh_token",
        "id_token",
        "auth",
        "authorization",
        "sig",
        "signature",
        "secret",
        "client_secret",
        "password",
        "passwd",
        "x-amz-signature",
        "x-amz-credential",
        "x-amz-security-token",
    }
)


MIN_SECRET_LENGTH = 8
"""Registered values shorter than this are not secrets but placeholders or settings ("x",
"none", "EMPTY" for local servers, `PORT: 8080`): masking them wherever they occur would garble
every message ("script e***hausted") and hide nothing worth hiding."""

_registry_lock = threading.Lock()
_registered: dict[str, str] = {}
"""Every registered form (the value, URL-encoded, JSON-escaped) -> what declared it."""
_by_value: tuple[str, ...] | None = None
"""Every registered form, longest first (a form holding another is masked whole). One tuple,
replaced whole when a value is registered: a reader on another thread sees the old list or the
new one, never half of each. None: nothing registered."""


def register_secret(value: object, *, source: str = "configuration") -> bool:
    """Mask `value` by value from now on, in every text `redact_text` sees (see the module).

    `source` says what declared it (for `registered_secrets`, never shown with the value).
    Returns False when the value is too short to be a secret (`MIN_SECRET_LENGTH`) or not text.
    """
    global _by_value
    if not isinstance(value, str):
        return False
    value = value.strip()
    if len(value) < MIN_SECRET_LENGTH:
        return False
    forms = {
        value,
        quote(value, safe=""),
        quote_plus(value, safe=""),
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
    }
    with _registry_lock:
        new = [form for form in forms if form not in _registered]
        if not new:
            return True
        for form in new:
            _registered[form] = source
        ordered = sorted(_registered, key=len, reverse=True)  # the longest form of overlapping ones
        _by_value = tuple(ordered)
    return True


def registered_secrets() -> dict[str, int]:
    """How many forms each source registered (never the values): for tests and diagnostics."""
    counts: dict[str, int] = {}
    for source in list(_registered.values()):
        counts[source] = counts.get(source, 0) + 1
    return counts


def redact_secrets(text: str) -> str:
    """`text` with every registered secret value masked (by value only, no patterns): the rule
    for text that must stay as it is but for secrets, like a tool's output the model reads."""
    forms = _by_value
    if forms is None:
        return text
    for form in forms:
        if form in text:  # C substring scans: no regex (see the module)
            text = text.replace(form, REDACTED)
    return text


def redact_secrets_in(value: Any) -> Any:
    """A copy of `value` (mappings, lists, strings) with registered secret values masked by
    value only: for data whose secret-looking *names* must stay as they are (a form asking the
    user for a `password` keeps its field)."""
    if _by_value is None:
        return value
    if isinstance(value, Mapping):
        return {k: redact_secrets_in(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_secrets_in(v) for v in value]
    if isinstance(value, str):
        return redact_secrets(value)
    return value


@overload
def redact_url(url: str) -> str: ...
@overload
def redact_url(url: None) -> None: ...
def redact_url(url: str | None) -> str | None:
    """The URL without `user:password@` and with secret-looking query values masked
    (`api_key`, `key`, `token`, `access_token`, `sig`...), for showing it anywhere."""
    if not url:
        return url
    url = _USERINFO.sub(r"\1", url)
    base, sep, query = url.partition("?")
    if not sep:
        return url
    query, hash_, fragment = query.partition("#")
    parts = []
    for part in query.split("&"):
        name, eq, _value = part.partition("=")
        plain = unquote(name).lower()
        secret = plain in _SECRET_PARAMS or _SECRET_KEY.search(plain) is not None
        parts.append(f"{name}={REDACTED}" if eq and secret else part)
    return f"{base}?{'&'.join(parts)}{hash_}{fragment}"


def redact_text(text: str) -> str:
    """Mask registered secret values (`register_secret`), API-key-looking substrings (`sk-...`,
    `Bearer ...`) and the credentials of the URLs in free text."""
    if _by_value is not None:
        text = redact_secrets(text)
    if "://" in text:
        text = _URL.sub(lambda m: redact_url(m.group(0)), text)
    return _SECRET_VALUE.sub(REDACTED, text)


class RedactingFilter(logging.Filter):
    """A `logging` filter that masks secrets in a record's text (`redact_text`): on the standard
    loggers of the modules that log what an outside program said (MCP servers' errors, stderr,
    task messages). Their records are rendered here, once, so no handler formats the original."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = redact_text(message)
        if masked != message:
            record.msg, record.args = masked, None
        if record.exc_info and not record.exc_text:  # a traceback may quote what was parsed
            record.exc_text = redact_text(_FORMATTER.formatException(record.exc_info))
        return True


_FORMATTER = logging.Formatter()


def redacting_logger(name: str) -> logging.Logger:
    """`logging.getLogger(name)` whose records have secrets masked (`RedactingFilter`)."""
    logger = logging.getLogger(name)
    if not any(isinstance(f, RedactingFilter) for f in logger.filters):
        logger.addFilter(RedactingFilter())
    return logger


def is_secret_key(name: object) -> bool:
    """Whether a key or field name (`api_key`, `password`, `authorization`...) holds a secret."""
    return isinstance(name, str) and _SECRET_KEY.search(name) is not None


def redact(value: Any) -> Any:
    """A copy of `value` with secret-named keys masked and key-looking strings masked, in keys
    too: a key can be data (the state's `call_counts` is keyed by each call's arguments)."""
    if isinstance(value, Mapping):
        return {
            (redact_text(k) if isinstance(k, str) else k): (REDACTED if is_secret_key(k) else redact(v))
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [redact(v) for v in value]
    if isinstance(value, str):
        return redact_text(value)
    return value


def might_hold_secret(data: bytes) -> bool:
    """Whether the JSON text `data` may hold something `redact` masks: a secret-named key or a
    secret-looking value, a URL, a registered secret. Conservative (a match anywhere, key or
    value, says yes: the caller then redacts the value), and cheap on ASCII text, where it
    looks for fixed clues (`_KEY_CLUES`) instead of running the patterns."""
    text = data.decode("utf-8", "replace")
    if data.isascii():
        lowered = data.lower()
        if any(clue in data for clue in _CLUES) or any(clue in lowered for clue in _KEY_CLUES):
            return True
    elif "://" in text or _SECRET_KEY.search(text) is not None or _SECRET_VALUE.search(text) is not None:
        return True
    forms = _by_value
    return forms is not None and any(form in text for form in forms)


def redact_bulk(value: Any) -> Any:
    """`redact(value)` for bulk JSON data (a recording's run input): when the value's JSON text
    holds nothing `redact` would mask (`might_hold_secret`) the value itself is returned, which
    is far cheaper than walking it; otherwise `redact(value)`."""
    return redact(value) if might_hold_secret(to_json(value, fallback=repr)) else value
