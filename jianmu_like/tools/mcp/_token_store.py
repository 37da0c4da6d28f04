"""Where the OAuth tokens and client registrations of MCP servers are kept between runs.

Both stores implement the MCP SDK's `TokenStorage` protocol (tokens, then the client record a
registration produced), one per server URL, so the SDK's `OAuthClientProvider` refreshes and
re-registers on its own. `FileTokenStore` keeps them in one JSON file readable by the user only
(mode 0600 in a 0700 folder, written whole and renamed into place so a crash never leaves half a
file, read and written under an advisory lock so two processes cannot lose each other's logins);
`MemoryTokenStore` forgets them with the process (tests, machines that log in every time).

What is stored are bearer secrets: nothing here logs them, and `repr()` of a store names only
its file.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..._base.redact import redact_url

if TYPE_CHECKING:
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

TOKEN_FILE_NAME = "mcp-tokens.json"


def default_token_file() -> Path:
    """`$XDG_CONFIG_HOME/jianmu_like/mcp-tokens.json` (by default under `~/.config`), beside the
    user's configuration file; `JIANMU_MCP_TOKENS` names another file."""
    override = os.environ.get("JIANMU_MCP_TOKENS")
    if override:
        return Path(override).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "jianmu_like" / TOKEN_FILE_NAME


def server_key(url: str) -> str:
    """The key of a server's entry: its URL without a trailing slash or fragment (a token is
    issued for a resource, the URL; the agent file's server name may differ between files)."""
    return url.split("#", 1)[0].rstrip("/")


def _expires_at(tokens: OAuthToken) -> float | None:
    return time.time() + tokens.expires_in if tokens.expires_in is not None else None


class MemoryTokenStore:
    """Tokens and client record of one server, for the life of the process."""

    def __init__(self) -> None:
        self._tokens: OAuthToken | None = None
        self._expires_at: float | None = None
        self._client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self._tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._tokens = tokens
        self._expires_at = _expires_at(tokens)

    def expires_at(self) -> float | None:
        """When the stored access token expires (the epoch's seconds), if the server said."""
        return self._expires_at

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self._client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._client = client_info

    def __repr__(self) -> str:
        return f"MemoryTokenStore(logged_in={self._tokens is not None})"


class FileTokenStore:
    """One server's entry (keyed by its URL) in the user's token file."""

    def __init__(self, url: str, path: Path | str | None = None) -> None:
        self.key = server_key(url)
        self.path = Path(path) if path is not None else default_token_file()

    # -- the SDK's TokenStorage ------------------------------------------------------------

    async def get_tokens(self) -> OAuthToken | None:
        from mcp.shared.auth import OAuthToken

        raw = self._entry().get("tokens")
        return OAuthToken.model_validate(raw) if isinstance(raw, dict) else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._update("tokens", tokens.model_dump(mode="json", exclude_none=True))
        self._update("expires_at", _expires_at(tokens))

    def expires_at(self) -> float | None:
        """When the stored access token expires (the epoch's seconds), if the server said: the
        SDK only knows `expires_in`, relative to when it was issued, so a later process would
        otherwise present an expired token instead of refreshing it."""
        value = self._entry().get("expires_at")
        return float(value) if isinstance(value, int | float) else None

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        from mcp.shared.auth import OAuthClientInformationFull

        raw = self._entry().get("client")
        return OAuthClientInformationFull.model_validate(raw) if isinstance(raw, dict) else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._update("client", client_info.model_dump(mode="json", exclude_none=True))

    # -- ours ------------------------------------------------------------------------------

    def logged_in(self) -> bool:
        """Whether tokens are stored for this server."""
        return isinstance(self._entry().get("tokens"), dict)

    def forget(self) -> bool:
        """Remove this server's tokens and client record; whether there was anything."""
        with self._locked():
            data = self._read()
            found = data.pop(self.key, None) is not None
            if found:
                self._write(data)
        return found

    def version(self) -> tuple[int, int] | None:
        """Changes whenever the file is written (by any process): its mtime and inode."""
        try:
            found = self.path.stat()
        except FileNotFoundError:
            return None
        return (found.st_mtime_ns, found.st_ino)

    def forget_tokens(self) -> None:
        """Remove this server's tokens, keeping its client registration (a fresh login)."""
        with self._locked():
            data = self._read()
            entry = data.get(self.key)
            if isinstance(entry, dict) and entry.pop("tokens", None) is not None:
                entry.pop("expires_at", None)
                self._write(data)

    def _entry(self) -> dict[str, Any]:
        with self._locked():
            entry = self._read().get(self.key)
        return entry if isinstance(entry, dict) else {}

    def _update(self, field: str, value: Any) -> None:
        with self._locked():
            data = self._read()
            entry = data.get(self.key)
            entry = entry if isinstance(entry, dict) else {}
            entry[field] = value
            data[self.key] = entry
            self._write(data)

    def _read(self) -> dict[str, Any]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        try:
            data = json.loads(text)
        except ValueError:
            # A damaged file holds nothing usable; the next login writes a good one.
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, data: dict[str, Any]) -> None:
        folder = self.path.parent
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".mcp-tokens.", dir=folder)  # created 0600
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, indent=1, sort_keys=True)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """An advisory lock on a sibling file (POSIX), held for one read-modify-write."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: one process at a time is assumed
            yield
            return
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(f"{self.path}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def __repr__(self) -> str:
        return f"FileTokenStore(key={redact_url(self.key)!r}, path={str(self.path)!r})"
