"""One pass of `validate`: the references of a file checked in the same pass as its schema.

A file with a misspelt key used to report its unknown tools only once the key was fixed. Here the
file is validated again with every key that failed removed (only mapping keys, never list items,
so every other problem keeps its line), and the loader checks that spec's references too.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import ValidationError

from .._base.validation import error_locations
from ._spec import AgentFileSpec

_PRUNE_ROUNDS = 5
"""How many times a file is validated again without its bad keys (a key removed can reveal no
new error but a required one missing; a few rounds settle every file seen in practice)."""


def without_bad_keys(data: Any, error: ValidationError) -> AgentFileSpec | None:
    """The spec of `data` with every mapping key that failed validation removed, so that its
    references can be checked in the same pass as its schema; None when the file is not valid
    enough for that (an error in a list item, a required key missing). Only keys are removed,
    never list items: every other problem keeps its place (its line)."""
    pruned = copy.deepcopy(data)
    for _ in range(_PRUNE_ROUNDS):
        if not all(_prune(pruned, loc) for loc in error_locations(error)):
            return None
        try:
            return AgentFileSpec.model_validate(pruned)
        except ValidationError as again:
            error = again
    return None


def _prune(data: Any, loc: tuple[int | str, ...]) -> bool:
    """Remove the mapping key at `loc` (a pydantic error location, whose union tags are not keys
    of the data and are stepped over); False when `loc` does not end at a mapping key."""
    if not loc:
        return False
    node = data
    for key in loc[:-1]:
        in_list = isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node)
        if in_list or (isinstance(node, dict) and key in node):
            node = node[key]
    last = loc[-1]
    if isinstance(node, dict) and last in node:
        del node[last]
        return True
    return False
