"""Did-you-mean: what a name that does not exist was probably meant to be.

A rule, a template or a key that names something absent must be an error, and the error is
most useful when it names the likely intended spelling (`send_mail` for `send_email`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """` (did you mean 'x'?)` for the closest of `choices`, or "" when none is close."""
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
