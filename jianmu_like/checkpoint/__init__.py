"""Durable runs: checkpoint stores (memory, SQLite, PostgreSQL) and the recorder that saves an
agent into them; `open_checkpointer` picks the store from a path or a `postgresql://` URL."""

from .target import is_database_url, open_checkpointer, store_label

__all__ = ["is_database_url", "open_checkpointer", "store_label"]
