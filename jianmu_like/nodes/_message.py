"""MessageNode: write a templated message into a namespace — how declarative trees pass data.

`"Research this: {plan.final_answer}"` reads `final_answer` in namespace `plan`; `{task}` reads the
top-level `task`. A missing key renders as an empty string rather than failing the run, and a
malformed template is rejected when the node is built.
"""

from __future__ import annotations

import string
from typing import Any, Literal

from py_trees.common import Status

from ..bt._node import Node
from ..models._keys import StateKeys
from ..models._messages import Message
from ..state._contract import StateContract, declare
from ..state._manager import StateManager


class _Namespace:
    """`{ns.key}` in a template: attribute access reads `key` in namespace `ns`."""

    def __init__(self, sm: StateManager, namespace: str) -> None:
        self._sm = sm
        self._namespace = namespace

    def __getattr__(self, key: str) -> Any:
        value = self._sm.get(key, self._namespace)
        return "" if value is None else value

    def __format__(self, spec: str) -> str:
        return ""


class _Scope(dict[str, Any]):
    def __init__(self, sm: StateManager) -> None:
        super().__init__()
        self._sm = sm

    def __missing__(self, name: str) -> Any:
        try:
            value = self._sm.get(name)
        except KeyError:
            value = None
        # Unknown or unset: maybe a namespace (`{plan.final_answer}`); renders "" on its own.
        return _Namespace(self._sm, name) if value is None else value


def render(template: str, sm: StateManager) -> str:
    """Fill `template` from the state (see module docstring)."""
    return string.Formatter().vformat(template, (), _Scope(sm))


def placeholder_keys(template: str) -> tuple[str, ...]:
    """The keys a template reads: `{task}` -> "task", `{plan.final_answer[0]}` -> "plan.final_answer"."""
    found: list[str] = []
    for _, field, _, _ in string.Formatter().parse(template):
        if field:
            head, _, rest = field.partition(".")
            key = head.split("[", 1)[0]
            if rest:
                key += "." + rest.split(".", 1)[0].split("[", 1)[0]
            found.append(key)
    return tuple(dict.fromkeys(found))


class MessageNode(Node):
    """Appends `Message(role, render(template))` to the messages of `namespace`."""

    def __init__(
        self,
        name: str,
        template: str,
        *,
        namespace: str | None = None,
        role: Literal["user", "system"] = "user",
        keys: StateKeys | None = None,
    ) -> None:
        super().__init__(name)
        try:
            list(string.Formatter().parse(template))
        except ValueError as exc:
            raise ValueError(f"message template {template!r} is malformed: {exc}") from exc
        self.template = template
        declare(self, StateContract(f"message {name!r}", reads=placeholder_keys(template)))
        self.namespace = namespace
        self.role = role
        self.keys = keys or StateKeys()

    def update(self) -> Status:
        sm = self.state_manager
        content = render(self.template, sm)
        sm.update({self.keys.messages: [Message(role=self.role, content=content)]}, self.namespace)
        return Status.SUCCESS
