"""ToolNode: one named tool call whose arguments come from the state — a fixed step of a tree.

When the tree's author, not a model, knows which tool to call (fetch the document, then let the
model summarise it), a ReAct loop is a detour. The call runs like a model's would — argument
validation, timeout, every failure turned into a readable reason — but a failure is the node's
FAILURE, which a Selector or a loop can act on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from py_trees.common import Status

from ..bt._async_behaviour import AsyncBehaviour
from ..models._messages import ToolCall
from ..state._contract import StateContract, declare
from ..state._inputs import resolve_key
from ..state._schema import schema_spec
from ..telemetry import events as ev
from ..tools._base import Tool
from ..tools._call_context import ToolCallContext, reset_current_tool_call, set_current_tool_call
from ..tools._toolset import ToolSet
from ._tool_calls import ToolCallRunner


class ToolNode(AsyncBehaviour):
    """Calls `tool` once and writes its output text to `output_key` in `namespace`.

    `arguments` maps each tool parameter to the state key it is read from (a key of
    `namespace`, or `"<ns>.<key>"` in another namespace); `constants` are fixed arguments. A
    state value that is None is left out (the tool's own validation then names a missing
    required argument). Any failure — invalid arguments, an exception, a timeout — makes the
    node fail with the reason as its feedback message and a `tool.call.failed` event. A tool
    returning an `Artifact` writes its placeholder and emits the whole one as an `artifact` event.
    """

    def __init__(
        self,
        name: str,
        tool: Tool | Callable[..., Any],
        *,
        arguments: Mapping[str, str] | None = None,
        constants: Mapping[str, Any] | None = None,
        output_key: str = "tool_output",
        namespace: str | None = None,
        timeout: float = 60.0,
        max_output_chars: int = 8000,
    ) -> None:
        super().__init__(name)
        self.tool = tool if isinstance(tool, Tool) else Tool.from_function(tool)
        self.tools = ToolSet([self.tool])
        self.arguments = dict(arguments or {})
        self.constants = dict(constants or {})
        self.output_key = output_key
        self.namespace = namespace
        self.calls = ToolCallRunner(
            self.tools, emit=self.emit, default_timeout=timeout, max_output_chars=max_output_chars
        )
        self._count = 0
        owner = f"tool node {name!r}" + (f" (namespace {namespace!r})" if namespace else "")
        declare(self, StateContract(owner, (), namespace, reads=tuple(self.arguments.values())))

    def on_clone(self) -> None:
        """A clone emits as itself (bt._clone)."""
        self.calls = ToolCallRunner(
            self.tools,
            emit=self.emit,
            default_timeout=self.calls.default_timeout,
            max_output_chars=self.calls.max_output_chars,
        )

    async def update_async(self) -> Status:
        sm, ns = self.state_manager, self.namespace
        spec = schema_spec(sm.schema)
        values = dict(self.constants)
        for parameter, key in self.arguments.items():
            where, name = resolve_key(key, ns, spec)
            value = sm.get(name, where)
            if value is not None:
                values[parameter] = value
        self._count += 1
        call = ToolCall(id=f"{self.name}-{self._count}", name=self.tool.name, arguments=values)
        context = ToolCallContext(call_id=call.id, tool=call.name, idempotency_key=call.id, emit=self.emit)
        token = set_current_tool_call(context)
        try:
            outcome = await self.calls.run(call, self.tool)
        finally:
            reset_current_tool_call(token)
        if outcome.failed:
            self.feedback_message = outcome.content
            return Status.FAILURE
        sm.update({self.output_key: outcome.content}, ns)
        for artifact in context.artifacts:  # the output holds placeholders: the documents go out here
            self.emit(ev.ArtifactProduced, tool=call.name, call_id=call.id, artifact=artifact.model_dump())
        return Status.SUCCESS
