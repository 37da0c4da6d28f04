"""StateCondition: SUCCESS when a predicate over the state holds, else FAILURE."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from py_trees.common import Status

from ._node import FAILURE, SUCCESS, Node


class StateCondition(Node):
    """A synchronous check of the state.

    Give either `predicate(state) -> bool` (receives the state model) or `key=` (truthiness of
    that key in `namespace`, read through the StateManager so namespaced keys work).
    """

    def __init__(
        self,
        name: str,
        predicate: Callable[[Any], bool] | None = None,
        *,
        key: str | None = None,
        namespace: str | None = None,
    ) -> None:
        if (predicate is None) == (key is None):
            raise ValueError("StateCondition needs exactly one of predicate= or key=")
        super().__init__(name)
        self.predicate = predicate
        self.key = key
        self.namespace = namespace

    def update(self) -> Status:
        if self.key is not None:
            holds = bool(self.state_manager.get(self.key, self.namespace))
        else:
            assert self.predicate is not None
            holds = bool(self.predicate(self.state_manager.state))
        return SUCCESS if holds else FAILURE
