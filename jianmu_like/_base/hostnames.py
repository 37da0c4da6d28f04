"""Host names with an optional port (`localhost`, `agents.example.com:443`, `[::1]:8321`).

One parser for the three places that name a host: the `Host` header a request arrives with, the
`Origin` header of a browser's request, and the `server.allowed_hosts` setting. It lives outside
`jianmu_like.server` so that the configuration validates without the `serve` extra installed.
"""

from __future__ import annotations

import ipaddress
import re
from typing import NamedTuple
from urllib.parse import urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
_NAME = re.compile(r"[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?")


class Authority(NamedTuple):
    """A host (lowercase, an IPv6 address without brackets) and its port (None: any/unstated)."""

    host: str
    port: int | None

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port is None else f"{host}:{self.port}"

    def matches(self, other: Authority) -> bool:
        """Whether `other` (a request's host and port) is this allowed one: same host, and the
        same port unless this one names none."""
        return self.host == other.host and (self.port is None or self.port == other.port)


def parse_authority(text: str) -> Authority:
    """`host`, `host:port`, `[ipv6]` or `[ipv6]:port`; a ValueError says what is wrong.

    Names are compared case-insensitively and without a trailing dot (`LocalHost.` is
    `localhost`), as DNS does."""
    value = text.strip()
    if not value:
        raise ValueError("a host name is empty")
    if "://" in value or "/" in value or "@" in value:
        raise ValueError(f"{text!r} is not a host name or host:port (no scheme, path or user)")
    if value.startswith("["):
        inside, bracket, rest = value[1:].partition("]")
        if not bracket:
            raise ValueError(f"{text!r} opens a bracket it does not close")
        try:
            host = str(ipaddress.IPv6Address(inside))
        except ValueError:
            raise ValueError(f"{text!r}: {inside!r} in brackets is not an IPv6 address") from None
        if rest and not rest.startswith(":"):
            raise ValueError(f"{text!r} has {rest!r} after the address")
        return Authority(host, _port(text, rest[1:]) if rest else None)
    if value.count(":") > 1:
        raise ValueError(f"{text!r}: an IPv6 address goes in brackets, e.g. [::1]:8321")
    name, colon, port = value.partition(":")
    host = name.lower().rstrip(".")
    if not _NAME.fullmatch(host):
        raise ValueError(f"{text!r}: {name!r} is not a host name or IP address")
    return Authority(host, _port(text, port) if colon else None)


def _port(text: str, port: str) -> int:
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{text!r}: the port {port!r} is not a number from 1 to 65535")
    return int(port)


def origin_authority(origin: str) -> Authority:
    """The host and port of an `Origin` header (`http://localhost:8321`); the port is filled in
    from the scheme when the origin states none. A ValueError for `null` and anything that is
    not an http(s) origin."""
    parts = urlsplit(origin.strip())
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.netloc or parts.path or parts.query or parts.fragment:
        raise ValueError(f"{origin!r} is not an http(s) origin")
    found = parse_authority(parts.netloc)
    return found if found.port is not None else Authority(found.host, DEFAULT_PORTS[scheme])
