"""The state kernel: a pydantic model as an agent's state, read and written through a
`StateManager` (namespaces, reducers, ephemeral fields), and the contracts nodes declare on
it."""

from typing import TYPE_CHECKING

from ..exports import lazy_exports

if not TYPE_CHECKING:  # hidden from type checkers, so a misspelt name is an error there
    __all__, __getattr__, __dir__ = lazy_exports(__name__)

if TYPE_CHECKING:  # the public names, one source: jianmu_like.exports reads them at run time
    from ._contract import StateContract as StateContract
    from ._contract import StateContractError as StateContractError
    from ._contract import declare as declare
    from ._inputs import InputError as InputError
    from ._manager import StateError as StateError
    from ._manager import StateManager as StateManager
    from ._reducers import add_messages as add_messages
    from ._schema import Ephemeral as Ephemeral
