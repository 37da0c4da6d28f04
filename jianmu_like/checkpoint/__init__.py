"""Durable runs: checkpoint stores (memory, SQLite) and the recorder that saves an agent into them."""
