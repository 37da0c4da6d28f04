"""How a long tool result is cut to what the model reads, keeping what matters of its shape.

One global "first N characters" cut loses the end of a log (where the error usually is) and
turns a JSON list into invalid JSON with no hint of how much there was. So a result over its
limit (the tool's `max_output_chars`, else the agent's) is cut by what it is:

- a JSON list (or an object whose biggest member is a list, e.g. `{"results": [...]}`): the
  first items that fit, still valid JSON, and a line saying how many there were in all;
- a table (Markdown pipes, CSV or TSV): the header, the first rows that fit, and the row count;
- any other text: its head and its tail, with the number of characters omitted between them.

Every cut says so in the text, so the model knows it did not see everything.
"""

from __future__ import annotations

import json
import re
from typing import Any

HEAD_SHARE = 2 / 3
"""Of a head-and-tail cut, the share of the limit given to the head (the tail gets the rest)."""

_MARKDOWN_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")
_TABLE_SAMPLE = 5
"""Lines a table's delimiter count must agree on to be read as a table."""


def cut_output(text: str, limit: int) -> str:
    """`text` within about `limit` characters (see the module docstring); unchanged if it fits."""
    if len(text) <= limit:
        return text
    return _cut_json(text, limit) or _cut_table(text, limit) or head_and_tail(text, limit)


def head_and_tail(text: str, limit: int) -> str:
    """The first and the last characters of `text`, the omitted count between them."""
    head = int(limit * HEAD_SHARE)
    tail = max(limit - head, 0)
    omitted = len(text) - head - tail
    end = text[len(text) - tail :] if tail else ""
    return f"{text[:head]}\n\n[... {omitted} of {len(text)} characters omitted ...]\n\n{end}"


def _cut_json(text: str, limit: int) -> str | None:
    stripped = text.lstrip()
    if not stripped.startswith(("[", "{")):
        return None
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):
        return None
    if isinstance(value, list):
        return _first_items(value, None, {}, limit)
    if isinstance(value, dict):
        lists = [(key, item) for key, item in value.items() if isinstance(item, list)]
        if lists:
            key, items = max(lists, key=lambda pair: len(json.dumps(pair[1], ensure_ascii=False)))
            return _first_items(items, key, value, limit)
    return None


def _first_items(items: list[Any], key: str | None, around: dict[str, Any], limit: int) -> str | None:
    """The first items of `items` that fit (inside `around[key]` when `key` is given)."""
    note = f"\n[showing the first {{shown}} of {len(items)} items{f' of {key!r}' if key else ''}]"
    rest = {k: v for k, v in around.items() if k != key} if key is not None else {}
    room = limit - len(note) - (len(json.dumps(rest, ensure_ascii=False)) + len(key) + 6 if key else 2)
    used, shown = 0, 0
    for item in items:
        size = len(json.dumps(item, ensure_ascii=False)) + 2
        if used + size > room:
            break
        used += size
        shown += 1
    if shown == 0:
        return None  # not even one item fits: a text cut shows more
    kept: Any = items[:shown] if key is None else {**around, key: items[:shown]}
    return json.dumps(kept, ensure_ascii=False) + note.format(shown=shown)


def _cut_table(text: str, limit: int) -> str | None:
    lines = text.splitlines()
    if len(lines) < 3:
        return None
    header = 2 if _MARKDOWN_RULE.match(lines[1]) and "|" in lines[0] else 1
    if header == 1 and not any(_consistent(lines, d) for d in ("\t", ",", "|")):
        return None
    rows = len(lines) - header
    note = f"\n[showing the first {{shown}} of {rows} rows]"
    kept = lines[:header]
    used = sum(len(line) + 1 for line in kept) + len(note)
    for line in lines[header:]:
        if used + len(line) + 1 > limit:
            break
        kept.append(line)
        used += len(line) + 1
    shown = len(kept) - header
    if shown == 0:
        return None
    return "\n".join(kept) + note.format(shown=shown)


def _consistent(lines: list[str], delimiter: str) -> bool:
    """Whether the first lines all split into the same number (> 1) of columns."""
    counts = {line.count(delimiter) for line in lines[:_TABLE_SAMPLE]}
    return len(counts) == 1 and counts.pop() > 0
