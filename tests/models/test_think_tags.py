"""`<think>` blocks of models run in-process (models/_think_tags.py): the reasoning is split off
the answer (the embedded provider's use: tests/models/test_local_provider.py)."""

from __future__ import annotations

import pytest

from jianmu_like.models._think_tags import split_think


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<think>6 times 7</think>\n\n42", ("6 times 7", "42")),
        ("\n <think>\nhm\n</think>42 ", ("hm", "42")),
        ("<think></think>42", (None, "42")),  # Qwen3 with thinking off writes an empty block
        ("<think>cut off while thinking", ("cut off while thinking", "")),
        ("42", (None, "42")),
        (
            "the tag <think>later</think> is not a block",
            (None, "the tag <think>later</think> is not a block"),
        ),
        ("<think>a</think>b</think>", ("a", "b</think>")),
    ],
)
def test_split_think(text: str, expected: tuple[str | None, str]) -> None:
    assert split_think(text) == expected
