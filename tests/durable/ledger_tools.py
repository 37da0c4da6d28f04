"""Tools of the durable-run test agents: each call appends a line to `$LEDGER_LOG` (with the
worker's pid), so a test counts side effects across processes. `slow` then waits while the file
`$LEDGER_BLOCK` exists (the test kills its worker there)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from jianmu_like import current_tool_call, tool


def _write(line: str) -> None:
    context = current_tool_call()
    key = context.idempotency_key if context is not None else "-"
    with Path(os.environ["LEDGER_LOG"]).open("a") as log:
        log.write(f"{line} pid={os.getpid()} key={key}\n")


@tool
def append(item: str) -> str:
    """Append an item to the ledger."""
    _write(f"append {item}")
    return f"appended {item}"


@tool
def slow() -> str:
    """Take a long time."""
    _write("slow started")
    while Path(os.environ["LEDGER_BLOCK"]).exists():
        time.sleep(0.02)
    return "slow done"


@tool
def transfer(amount: int) -> str:
    """Transfer money (needs a human's approval)."""
    _write(f"transfer {amount}")
    return f"transferred {amount}"
