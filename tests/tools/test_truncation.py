"""Cutting long tool results by their shape (a unit test of one pure function; the HTTP tests
in tests/integration/test_react_http.py show what reaches the model)."""

from __future__ import annotations

import json

from jianmu_like.tools._truncation import cut_output


def test_text_keeps_head_and_tail_with_the_omitted_count() -> None:
    text = "start " + "." * 5000 + " ERROR at the end"
    cut = cut_output(text, 300)
    assert cut.startswith("start ") and cut.endswith("ERROR at the end")
    assert f"[... {len(text) - 300} of {len(text)} characters omitted ...]" in cut
    assert cut_output("short", 300) == "short"


def test_a_json_list_keeps_its_first_items_as_valid_json_and_the_total() -> None:
    rows = [{"id": n, "name": f"item {n}"} for n in range(200)]
    cut = cut_output(json.dumps(rows), 500)
    body, note = cut.rsplit("\n", 1)
    kept = json.loads(body)
    assert kept == rows[: len(kept)] and 5 < len(kept) < 200
    assert note == f"[showing the first {len(kept)} of 200 items]" and len(cut) <= 500
    wrapped = cut_output(json.dumps({"total": 200, "results": rows}), 500)
    body, note = wrapped.rsplit("\n", 1)
    assert json.loads(body)["total"] == 200 and "of 200 items of 'results'" in note


def test_a_table_keeps_its_header_and_first_rows_and_the_row_count() -> None:
    markdown = "| id | name |\n|---|---|\n" + "\n".join(f"| {n} | item {n} |" for n in range(300))
    cut = cut_output(markdown, 400)
    lines = cut.splitlines()
    assert lines[:3] == ["| id | name |", "|---|---|", "| 0 | item 0 |"]
    assert lines[-1].startswith("[showing the first ") and lines[-1].endswith(" of 300 rows]")
    csv = "id,name\n" + "\n".join(f"{n},item {n}" for n in range(300))
    assert cut_output(csv, 200).splitlines()[0] == "id,name"
    assert cut_output(csv, 200).endswith("of 300 rows]")
