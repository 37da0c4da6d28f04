"""The fast paths, fenced: each trick that leans on another library's internals, by name, with
the plain way beside it, and one setting choosing between them.

A ReAct iteration in memory is a few hundred thousand instructions, and a handful of tricks take
a large share off it (bench/RESULTS.md, "fast paths", measures each one's gain). Each relies on
something a dependency does not promise, so each has a plain fallback that uses only public APIs,
and the suite runs once on the fallbacks (`.ci/run`), so the library still works the day a
dependency changes what a trick relies on:

- `eager`: a new task's first step runs at once, the loop's current task swapped with CPython's
  private `asyncio.tasks._enter_task` / `_leave_task`. Plain: `loop.create_task`.
- `inline`: an exclusive node's coroutine is carried by the runner's own task, with no task of
  its own. Plain: a task per activation.
- `lean_ticks`: py_trees' `Behaviour.tick` and `Sequence.tick`, statement for statement, as plain
  calls instead of generator chains. Plain: py_trees' own `tick()` generators.
- `construct`: pydantic models built by writing their `__dict__` and pydantic's private slots.
  Plain: `BaseModel.model_construct`.
- `clone`: trees cloned by copying each node's `__dict__`, node ids made without
  `uuid.UUID.__init__`. Plain: `copy.copy` and `uuid.uuid4`.

`JIANMU_FAST_PATHS` (read once, at import): `all` (the default), `none`, or a comma-separated
list of the items to keep (`eager,lean_ticks`); a name that is not an item is an error.
"""

from __future__ import annotations

import os

ITEMS = ("eager", "inline", "lean_ticks", "construct", "clone")
"""Every fast path, by the name the setting uses."""

SETTING = "JIANMU_FAST_PATHS"


def parse(value: str) -> frozenset[str]:
    """The items a `JIANMU_FAST_PATHS` value keeps; ValueError naming an unknown item."""
    text = value.strip().lower()
    if text in ("", "all", "1", "true", "yes", "on"):
        return frozenset(ITEMS)
    if text in ("none", "0", "false", "no", "off"):
        return frozenset()
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in ITEMS]
    if unknown:
        raise ValueError(
            f"{SETTING}: unknown fast path(s) {', '.join(map(repr, unknown))}; "
            f"the items are {', '.join(ITEMS)} (or all / none)"
        )
    return frozenset(names)


ENABLED: frozenset[str] = parse(os.environ.get(SETTING, "all"))
"""The fast paths in use in this process."""


def fast(item: str) -> bool:
    """Whether the fast path `item` is in use (KeyError-like ValueError for a misspelt item)."""
    if item not in ITEMS:
        raise ValueError(f"unknown fast path {item!r}; the items are {', '.join(ITEMS)}")
    return item in ENABLED
