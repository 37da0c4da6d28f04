"""The state kernel: a pydantic model as an agent's state, read and written through a
`StateManager` (namespaces, reducers, ephemeral fields), and the contracts nodes declare on
it."""

from typing import TYPE_CHECKING

from ..exports import lazy_exports

_EXPORTS = {
    ".contract": (
        "StateContract",
        "StateContractError",
        "declare",
    ),
    ".inputs": ("InputError",),
    ".manager": (
        "StateError",
        "StateManager",
    ),
    ".reducers": ("add_messages",),
    ".schema": (
        "Ephemeral",
        "StateKeys",
    ),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names for type checkers; tests/test_public_api.py checks they match
    from .contract import StateContract as StateContract
    from .contract import StateContractError as StateContractError
    from .contract import declare as declare
    from .inputs import InputError as InputError
    from .manager import StateError as StateError
    from .manager import StateManager as StateManager
    from .reducers import add_messages as add_messages
    from .schema import Ephemeral as Ephemeral
    from .schema import StateKeys as StateKeys
