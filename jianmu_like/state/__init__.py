"""The state kernel: a pydantic model as an agent's state, read and written through a
`StateManager` (namespaces, reducers, ephemeral fields), and the contracts nodes declare on
it."""

from typing import TYPE_CHECKING

from ..exports import lazy_exports

_EXPORTS = {
    "._contract": (
        "StateContract",
        "StateContractError",
        "declare",
    ),
    "._inputs": ("InputError",),
    "._manager": (
        "StateError",
        "StateManager",
    ),
    "._reducers": ("add_messages",),
    "._schema": ("Ephemeral",),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names for type checkers; tests/test_public_api.py checks they match
    from ._contract import StateContract as StateContract
    from ._contract import StateContractError as StateContractError
    from ._contract import declare as declare
    from ._inputs import InputError as InputError
    from ._manager import StateError as StateError
    from ._manager import StateManager as StateManager
    from ._reducers import add_messages as add_messages
    from ._schema import Ephemeral as Ephemeral
