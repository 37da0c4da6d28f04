"""The user's MCP token file (`FileTokenStore`): readable by the user only, whatever was there
before; two processes writing at once lose nothing; a damaged file is replaced, not fatal; an
entry per server URL."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from mcp.shared.auth import OAuthToken

from jianmu_like.testing import PATIENCE
from jianmu_like.tools.mcp._token_store import FileTokenStore, server_key

ROOT = Path(__file__).resolve().parents[2]


def test_the_file_is_the_user_s_only_even_over_a_readable_one(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text("{}")
    os.chmod(path, 0o644)
    store = FileTokenStore("https://mcp.example.com/mcp/", path)
    asyncio.run(store.set_tokens(OAuthToken(access_token="a" * 20, expires_in=60, refresh_token="r" * 20)))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert store.key == server_key("https://mcp.example.com/mcp") == "https://mcp.example.com/mcp"
    assert store.logged_in() and "a" * 20 not in repr(store)
    expires_at = store.expires_at()
    assert expires_at is not None
    store.forget_tokens()
    assert not store.logged_in() and store.expires_at() is None


def test_two_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    writer = (
        "import asyncio, sys\n"
        "from mcp.shared.auth import OAuthToken\n"
        "from jianmu_like.tools.mcp._token_store import FileTokenStore\n"
        "for i in range(40):\n"
        "    store = FileTokenStore(f'https://{sys.argv[1]}.example/{i}', sys.argv[2])\n"
        "    asyncio.run(store.set_tokens(OAuthToken(access_token=f'{sys.argv[1]}-{i}')))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    processes = [
        subprocess.Popen([sys.executable, "-c", writer, name, str(path)], env=env) for name in ("one", "two")
    ]
    for process in processes:
        assert process.wait(PATIENCE) == 0
    data = json.loads(path.read_text())
    assert len(data) == 80
    assert data["https://two.example/39"]["tokens"]["access_token"] == "two-39"


def test_a_damaged_file_is_replaced_and_forgetting_keeps_the_other_servers(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text("{not json")
    first, second = (
        FileTokenStore("https://a.example/mcp", path),
        FileTokenStore("https://b.example/mcp", path),
    )
    assert asyncio.run(first.get_tokens()) is None
    asyncio.run(first.set_tokens(OAuthToken(access_token="token-of-a")))
    asyncio.run(second.set_tokens(OAuthToken(access_token="token-of-b")))
    assert first.forget() and not first.forget()
    assert not first.logged_in() and second.logged_in()
