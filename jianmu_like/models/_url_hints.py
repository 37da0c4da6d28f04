"""What to do about a model server URL that does not work: the three common mistakes, named.

A newcomer's `OPENAI_BASE_URL` is most often wrong in one of three ways, and the transport's own
words ("All connection attempts failed", "WRONG_VERSION_NUMBER", a 404) point nowhere near the
fix. Each mistake has a sign that can be read without guessing:

- the wrong port (or no server yet): the connection is refused, so nothing listens there;
- `https://` to a plain-HTTP server: the TLS handshake gets an HTTP answer (an `SSLError`);
- the `/v1` left out (`http://127.0.0.1:8000`): `<base>/models` is a 404 while `<base>/v1/models`
  answers, which one more GET shows (`missing_v1`, asked only once the first failed).

Every hint is a sentence the caller appends to its own message, so the model error, the CLI's
first line and the console all say the same thing.
"""

from __future__ import annotations

import ssl
from urllib.parse import urlsplit, urlunsplit

from .._base.redact import redact_url

_DEPTH = 12
"""How far down an exception's cause chain the signs are looked for (httpx wraps httpcore,
which wraps the socket's OSError, inside the SDK's APIConnectionError)."""


def _chain(exc: BaseException | None) -> list[BaseException]:
    found: list[BaseException] = []
    while exc is not None and len(found) < _DEPTH and exc not in found:
        found.append(exc)
        exc = exc.__cause__ or exc.__context__
    return found


def _host_port(base_url: str) -> str:
    parts = urlsplit(base_url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.hostname}:{port}"


def connect_hint(base_url: str, exc: BaseException | None) -> str | None:
    """What a failed connection to `base_url` means, from the exceptions that `exc` wraps: None
    when no sign says more than the transport did."""
    chain = _chain(exc)
    if any(isinstance(e, ssl.SSLError) for e in chain):
        if urlsplit(base_url).scheme == "https":
            plain = redact_url(urlunsplit(urlsplit(base_url)._replace(scheme="http"))).rstrip("/")
            return (
                f"the server at {_host_port(base_url)} does not speak TLS (https): "
                f"try {plain} (set OPENAI_BASE_URL or provider.base_url)"
            )
        return f"the TLS handshake with {_host_port(base_url)} failed"
    if any(isinstance(e, ConnectionRefusedError) for e in chain):
        return (
            f"nothing listens on {_host_port(base_url)} (connection refused): is the model server "
            "running, and on this port? (set OPENAI_BASE_URL or provider.base_url)"
        )
    return None


def v1_candidate(base_url: str) -> str | None:
    """`<base>/v1` for a base URL that lacks it (None when it ends with /v1 already, or names a
    path of its own beyond the root: a proxy's prefix is not second-guessed)."""
    parts = urlsplit(base_url)
    path = parts.path.rstrip("/")
    if path:  # `/v1` already, or a proxy's own prefix
        return None
    return urlunsplit(parts._replace(path="/v1"))


def missing_v1(base_url: str, candidate: str) -> str:
    """The hint once `<candidate>/models` answered where `<base_url>/models` did not."""
    return (
        f"{redact_url(base_url)} has no /models, but {redact_url(candidate)}/models answers: "
        f"did you mean OPENAI_BASE_URL={redact_url(candidate)} (the /v1 left out)?"
    )
