"""Secret redaction for anything that leaves the process as a log line or an event."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, overload
from urllib.parse import unquote

_SECRET_KEY = re.compile(r"(api[_-]?key|authorization|secret|password|passwd|bearer|access[_-]?token)", re.I)
_SECRET_VALUE = re.compile(r"\b(sk-[A-Za-z0-9_\-]{8,}|Bearer\s+[A-Za-z0-9._\-]{8,})")
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
    """Mask API-key-looking substrings (`sk-...`, `Bearer ...`) and the credentials of the
    URLs in free text."""
    if "://" in text:
        text = _URL.sub(lambda m: redact_url(m.group(0)), text)
    return _SECRET_VALUE.sub(REDACTED, text)


def is_secret_key(name: object) -> bool:
    """Whether a key or field name (`api_key`, `password`, `authorization`...) holds a secret."""
    return isinstance(name, str) and _SECRET_KEY.search(name) is not None


def redact(value: Any) -> Any:
    """A copy of `value` with secret-named keys masked and key-looking strings masked."""
    if isinstance(value, Mapping):
        return {k: (REDACTED if is_secret_key(k) else redact(v)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v) for v in value]
    if isinstance(value, str):
        return redact_text(value)
    return value
