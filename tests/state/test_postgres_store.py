"""The PostgreSQL store on a real server: a versioned schema created once by concurrent openers,
read-only opens that never write, concurrent writers (different threads all land, one thread
has one winner), and URLs shown without their credentials."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest

from jianmu_like.checkpoint import open_checkpointer, store_label
from jianmu_like.checkpoint._contract import Checkpoint, CheckpointError, ThreadConflictError
from jianmu_like.checkpoint._postgres import SCHEMA_VERSION, PostgresCheckpointer
from jianmu_like.testing._postgres import TemporaryPostgres


def checkpoint(thread: str, seq: int, state: dict[str, object] | None = None) -> Checkpoint:
    return Checkpoint(
        thread_id=thread,
        seq=seq,
        schema_name="S",
        schema_fingerprint="s",
        tree_fingerprint="t",
        state=state if state is not None else {"n": seq},
    )


def versions(url: str) -> list[int]:
    with psycopg.connect(url) as conn:
        return [row[0] for row in conn.execute("SELECT version FROM jianmu_schema_version ORDER BY 1")]


def test_concurrent_openers_migrate_once_and_readonly_never_writes(postgres_url: str) -> None:
    with pytest.raises(CheckpointError, match="no checkpoint store in this database"):
        open_checkpointer(postgres_url, readonly=True)
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT to_regclass('jianmu_schema_version')").fetchone() == (None,)

    with ThreadPoolExecutor(4) as pool:
        stores = list(pool.map(lambda _: PostgresCheckpointer(postgres_url, pool_size=1), range(4)))
    assert versions(postgres_url) == list(range(1, SCHEMA_VERSION + 1))  # each version applied once
    stores[0].save(checkpoint("t", 1))
    for store in stores:
        store.close()

    reader = open_checkpointer(postgres_url, readonly=True)
    assert reader.threads() == ["t"]
    with pytest.raises(CheckpointError, match="opened read-only; cannot save checkpoint"):
        reader.save(checkpoint("t", 2))
    reader.close()

    with psycopg.connect(postgres_url) as conn:
        conn.execute("INSERT INTO jianmu_schema_version (version) VALUES (%s)", (SCHEMA_VERSION + 1,))
    with pytest.raises(CheckpointError, match=f"schema version {SCHEMA_VERSION + 1} is newer"):
        open_checkpointer(postgres_url)


def test_concurrent_writers_different_threads_all_land_one_thread_has_one_winner(postgres_url: str) -> None:
    store = PostgresCheckpointer(postgres_url, pool_size=8)
    threads = [f"t{i}" for i in range(16)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda t: store.save(checkpoint(t, 1), expected_seq=0), threads))
    assert store.threads() == sorted(threads)

    def claim(n: int) -> str:
        try:
            store.save(checkpoint("t0", 2, {"writer": n}), expected_seq=1)
        except ThreadConflictError as exc:
            assert exc.thread_id == "t0"
            return str(exc)
        return "won"

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(claim, range(8)))
    assert outcomes.count("won") == 1
    assert all("thread 't0': saved by another process" in o for o in outcomes if o != "won")
    loaded = store.load("t0")
    assert loaded is not None and loaded.seq == 2
    store.close()


def test_text_that_jsonb_would_refuse_round_trips(postgres_url: str) -> None:
    store = open_checkpointer(postgres_url)
    store.save(checkpoint("nul", 1, {"output": "a\x00b", "emoji": "✓"}))
    loaded = store.load("nul")
    assert loaded is not None and loaded.state == {"output": "a\x00b", "emoji": "✓"}
    store.close()


def test_urls_are_shown_without_credentials(postgres_cluster: TemporaryPostgres) -> None:
    url = postgres_cluster.url("postgres", password="hunter2")
    assert store_label(url) == f"postgresql://127.0.0.1:{postgres_cluster.port}/postgres"
    missing = url.replace("/postgres", "/no_such_db")
    with pytest.raises(CheckpointError) as info:
        open_checkpointer(missing)
    assert "no_such_db" in str(info.value) and "does not exist" in str(info.value)
    assert "hunter2" not in str(info.value) and "jianmu:" not in str(info.value)
    with pytest.raises(CheckpointError, match="unsupported checkpoint store URL scheme 'mysql'"):
        open_checkpointer("mysql://root:hunter2@localhost/db")
