"""A damaged SQLite checkpoint store is a clear error on every command that opens one: exit 2,
the file named, what to do said, and the file left byte for byte as it was.

A real store is written by a real run, then garbage is written over its pages: every page after
the schema (the damage shows when the store is opened), or only the pages of the checkpoints
table (the store opens, and the damage shows at the first read of a thread). The commands run
in-process through the CLI's `main` (a subprocess each would cost seconds); `serve` opens its
store before it listens, so a damaged one ends it before any socket is bound.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from jianmu_like import Agent, create_react_node, human
from jianmu_like.checkpoint import SQLiteCheckpointer
from jianmu_like.testing import ScriptedOpenAIServer, reply
from tests.cli.running import PRESETS, in_process

AGENT = str(PRESETS / "react.yaml")


def _write_store(path: Path, base_url: str) -> None:
    """A store with a few threads of real runs (enough rows for several pages)."""
    from jianmu_like.models import ModelClient

    store = SQLiteCheckpointer(path)
    try:
        client = ModelClient.resolve(base_url=base_url, api_key="x", model="m")
        agent = Agent(create_react_node(model_client=client), checkpointer=store)

        async def runs() -> None:
            for index in range(6):
                await agent.run(
                    {"messages": [human(f"question {index} " + "x" * 3000)]}, thread_id=f"t{index}"
                )

        asyncio.run(runs())
    finally:
        store.close()
    with sqlite3.connect(path) as conn:  # everything in the main file: no WAL left beside it
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _damage(path: Path, *, only_table: str | None) -> None:
    """Garbage over every page after the schema page, or over the pages of one table only."""
    data = bytearray(path.read_bytes())
    size = int.from_bytes(data[16:18], "big")
    pages = range(2, len(data) // size + 1)
    if only_table is not None:
        with sqlite3.connect(path) as conn:
            [(root,)] = conn.execute("SELECT rootpage FROM sqlite_master WHERE name=?", (only_table,))
        pages = range(root, root + 1)
    for page in pages:
        data[(page - 1) * size : page * size] = b"\xde\xad\xbe\xef" * (size // 4)
    path.write_bytes(bytes(data))


COMMANDS = [
    ("approvals", "list", "{db}"),
    ("approvals", "approve", "{db}", "t1", "call_1"),
    ("approvals", "deny", "{db}", "t1", "call_1", "--reason", "no"),
    ("threads", "list", "{db}"),
    ("threads", "show", "{db}", "t1"),
    ("threads", "history", "{db}", "t1"),
    ("run", AGENT, "hi", "--checkpoint", "{db}", "--thread", "t1"),
    ("run", AGENT, "hi", "--checkpoint", "{db}"),
    ("resume", AGENT, "--checkpoint", "{db}", "--thread", "t1"),
    ("serve", AGENT, "--checkpoint", "{db}", "--port", "0"),
]


@pytest.mark.parametrize("damage", ["every page", "the checkpoints table"])
def test_every_command_that_opens_a_damaged_store_exits_2_naming_it_and_leaves_it_unchanged(
    tmp_path: Path, damage: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "runs.db"
    with ScriptedOpenAIServer(lambda request: reply("fine")) as srv:
        _write_store(db, srv.base_url)
        _damage(db, only_table=None if damage == "every page" else "jianmu_checkpoints")
        before = db.read_bytes()
        monkeypatch.chdir(tmp_path)
        cli = in_process(srv.base_url, monkeypatch, capsys)
        for command in COMMANDS:
            args = [part.format(db=db) for part in command]
            if (
                damage != "every page"
                and args[:2] in (["run", AGENT], ["serve", AGENT])
                and "--thread" not in args
            ):
                continue  # no thread is read: a new run or a server never touches the damaged table
            code, output = cli(*args)
            assert code == 2, (args, output)
            assert f"{db}: the checkpoint store is damaged" in output, (args, output)
            assert "restore it from a backup, or move it aside" in output, (args, output)
            assert "Traceback" not in output and "DatabaseError:" not in output, (args, output)
            assert db.read_bytes() == before, args
