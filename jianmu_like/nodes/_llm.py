"""AgentLLMNode: one ReAct reasoning step — ask the model, record its answer or its tool calls."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from py_trees.common import Status

from ..bt._async_behaviour import AsyncBehaviour
from ..bt._hooks import forget, rebound
from ..bt._node import FAILURE, SUCCESS
from ..models._client import ModelClient, model_events
from ..models._construct import construct
from ..models._errors import ModelCallFailed, ModelError
from ..models._messages import Message
from ..models._structured import OutputSchema
from ..models._types import ModelRequest, Usage
from ..telemetry import events as ev
from ..tools._toolset import ToolSet
from ._client_tools import client_tools
from ._context import ContextBuilder, ContextBuilderProtocol
from ._settings import LLMNodeConfig, ModelCallConfig
from ._tool_selection import ToolView
from ._truncation import (
    continuation_request,
    is_continuation_request,
    is_length,
    mark_cut_call,
    truncated_error,
)

RequestTransform = Callable[[ModelRequest, Any], Awaitable[ModelRequest]]
"""Rewrites a node's request before the call, given the node (e.g. `ContextGuard`)."""


class AgentLLMNode(AsyncBehaviour):
    """Calls the model with the history and the tool schemas, then writes the ReAct contract:
    the assistant message, `actions`, `done = not actions`, `final_answer` when done,
    `rounds + 1` and the call's `usage` (accumulated by the state's reducer).

    `tool_choice` is sent only while `rounds == 0` — the first model call of a run, including
    its retries and fallbacks — so a forced tool cannot trap the model in a loop. A model error
    that survives the client's retries and fallbacks is written to the `error` key and the node
    fails (a `node.failed` event says so); the ReAct loop then stops with reason `model_error`
    instead of burning an iteration. Tool providers are set up before the first model call: one
    that cannot start raises `ToolProviderError`, which ends the run as "provider_error".
    A reply the tool protocol could not read (`ModelResponse.correction`) is recorded with the
    corrective message after it and is not an answer: the loop asks again (one iteration).
    With `selection_key`, only the tools named in that state key (tool selection) are sent.

    A run's client tools (`client_tools`, see `nodes._client_tools`) are sent beside the agent's
    own, with the client's `tool_choice` where it forces a call (on every call of the run: the
    run ends by calling a client tool); a run's `output_schema` is asked for in the system prompt.
    """

    def __init__(
        self,
        name: str,
        model_client: ModelClient,
        tools: ToolSet | None = None,
        *,
        config: LLMNodeConfig | None = None,
        namespace: str | None = None,
        context_builder: ContextBuilderProtocol | None = None,
        request_transform: RequestTransform | None = None,
        selection_key: str | None = None,
    ) -> None:
        super().__init__(name)
        self.request_transform = request_transform
        self.model_client = model_client
        self.tools = tools
        self.config = config or LLMNodeConfig()
        self.keys = self.config.keys
        self.namespace = namespace
        self.context_builder = context_builder or ContextBuilder(
            self.config.system_prompt, include_tool_descriptions=self.config.include_tool_descriptions
        )
        params = dict(self.config.extra_params)
        extra_choice = params.pop("tool_choice", None)
        choice = self.config.tool_choice if self.config.tool_choice is not None else extra_choice
        # Attributes are few on purpose, pairs kept as one: CPython 3.11 keeps an instance's
        # attributes inline (fast reads) only while its class has fewer than 30 of them, and this
        # node's are read on every model call (tests/nodes/test_react_nodes.py checks the count).
        self._request_defaults: tuple[Any, dict[str, Any]] = (choice, params)
        """(tool_choice of the first round, the other extra params) of every request."""
        self._client = configured_client(model_client, self.config)
        self._selection = (selection_key, ToolView()) if selection_key is not None else None
        """(the state key naming the tools to send, the view that filters them), or None."""
        self._providers = tools is not None and bool(tools.providers)
        """Whether the tools can change while the agent runs (providers; else no check per call)."""

    @property
    def selection_key(self) -> str | None:
        """The state key naming the tools each call sends (tool selection), or None: all."""
        return self._selection[0] if self._selection is not None else None

    def on_clone(self) -> None:
        """A request transform with per-conversation memory (`for_node`) gets a fresh copy."""
        self.request_transform = rebound(self.request_transform, self)

    def reset_run(self) -> None:
        """Back to as-built (bt._clone): a request transform with per-conversation memory (the
        context guard's counted history) forgets it, so a pooled tree holds no conversation."""
        super().reset_run()
        forget(self.request_transform)

    async def update_async(self) -> Status:
        sm, keys, ns = self.state_manager, self.keys, self.namespace
        tools = self.tools
        schemas: list[dict[str, Any]] | None = None
        if tools is not None:
            if self._providers and tools.stale:  # a server changed its tools since the last iteration
                await tools.refresh()
            if not tools.ready:
                await tools.ensure_ready()
            if self._selection is not None:
                key, view = self._selection
                tools = view.visible(tools, sm.get(key, ns))
            schemas = tools.schemas() or None
        rounds: int = sm.get(keys.rounds, ns) or 0
        tool_choice, extra_params = self._request_defaults
        if rounds:
            tool_choice = None
        client = client_tools(sm, keys, ns)
        if client is not None and self.tools is not None:  # e.g. an MCP server listed it since
            clash = sorted(client.names() & set(self.tools.names()))
            if clash:
                reason = (
                    f"client tool {', '.join(map(repr, clash))} has the name of one of the agent's own tools"
                )
                sm.update({keys.error: reason}, ns)
                self.feedback_message = reason
                return FAILURE
        if client is not None:
            offered = [t.schema_() for t in client.offered()]
            if offered:
                schemas = [*(schemas or ()), *offered]
                if client.forced:
                    tool_choice = "required"
                if not client.parallel:
                    extra_params = {**extra_params, "parallel_tool_calls": False}
        history = sm.get(keys.messages, ns)
        prompt = self.context_builder.build(history, tools)
        output_schema = sm.get_optional(keys.output_schema, ns)
        if output_schema is not None:
            prompt = with_output_instruction(prompt, output_schema)
        config = self.config
        request = construct(
            ModelRequest,
            {
                "messages": prompt,
                "model": config.model,
                "tools": schemas,
                "tool_choice": tool_choice if schemas else None,
                "temperature": config.temperature,
                "max_tokens": config.max_tokens,
                "top_p": config.top_p,
                "top_k": config.top_k,
                "timeout": config.timeout,
                "stream": config.stream,
                "extra_params": extra_params,
                # Read per call: a persona may be set once the tools are ready (an MCP prompt),
                # after this node (or the template it was cloned from) was built.
                "persona": getattr(self.context_builder, "persona", None),
            },
        )
        if self.request_transform is not None:
            request = await self.request_transform(request, self)
        hub = self.telemetry
        active = hub is not None and hub.active
        if active:
            self.emit(ev.ReplyStarted, round=rounds + 1)
        on_event = model_events(hub, self.emit) if active else None
        try:
            response = await self._client.complete(request, on_event=on_event)
        except ModelError as exc:
            reason = str(exc) if isinstance(exc, ModelCallFailed) else f"model call failed: {exc}"
            self.error = exc
            return fail_with_model_error(self, exc, reason, {keys.error: reason})
        message, correction = response.message, response.correction
        actions = list(message.tool_calls or ())
        answer: str | None = None
        if correction is None and not actions:
            answer = message.content or ""
            if history and is_continuation_request(history[-1]) and len(history) > 1:
                answer = (history[-2].content or "") + answer  # the continuation of a cut answer
        if is_length(response.finish_reason):
            if actions:
                actions = mark_cut_call(actions)
                message = message.model_copy(update={"tool_calls": actions})
            elif correction is None and config.on_truncated != "accept":
                return self._truncated(message, answer or "", history, response.usage, rounds)
        updates: dict[str, Any] = {
            keys.messages: [message] if correction is None else [message, correction],
            keys.actions: actions,
            keys.rounds: rounds + 1,
            keys.done: answer is not None,
            keys.usage: response.usage,
        }
        if answer is not None:
            updates[keys.final_answer] = answer
        if config.stream:
            updates[keys.streaming_output] = message.content or ""
        sm.update(updates, ns)
        if active:
            self.emit(
                ev.ReplyCompleted,
                round=rounds + 1,
                tool_calls=[a.name for a in actions],
                final=not actions and correction is None,
                corrected=correction is not None,
                tool_protocol=response.tool_protocol,
                content=message.content,
                usage=response.usage.model_dump(),
                model=response.model,
                reasoning=message.reasoning_content,
            )
        return SUCCESS

    def _truncated(
        self, message: Message, answer: str, history: list[Message], usage: Usage, rounds: int
    ) -> Status:
        """A final answer cut off by the length limit (see `nodes._truncation`): ask once to
        continue it, or end the run as `truncated` with the partial answer kept."""
        sm, keys, ns, config = self.state_manager, self.keys, self.namespace, self.config
        continued = bool(history) and is_continuation_request(history[-1])
        updates: dict[str, Any] = {keys.rounds: rounds + 1, keys.usage: usage, keys.actions: []}
        self.emit(
            ev.ReplyCompleted,
            round=rounds + 1,
            tool_calls=[],
            final=False,
            truncated=True,
            content=message.content,
            usage=usage.model_dump(),
            reasoning=message.reasoning_content,
        )
        if config.on_truncated == "continue" and not continued:
            updates[keys.messages] = [message, continuation_request()]
            updates[keys.done] = False
            sm.update(updates, ns)
            return SUCCESS
        reason = truncated_error(config.max_tokens, continued=continued)
        updates.update({keys.messages: [message], keys.final_answer: answer, keys.error: reason})
        self.feedback_message = reason
        sm.update(updates, ns)
        return FAILURE


def with_output_instruction(prompt: list[Message], schema: dict[str, Any]) -> list[Message]:
    """The prompt with a run's output schema asked for at the end of its system message (the
    output node validates the answer against it)."""
    ask = f"Final answer: {OutputSchema(schema).instruction()}"
    if prompt and prompt[0].role == "system":
        first = prompt[0].model_copy(update={"content": f"{prompt[0].content or ''}\n\n{ask}"})
        return [first, *prompt[1:]]
    return [Message(role="system", content=ask), *prompt]


def configured_client(model_client: ModelClient, config: ModelCallConfig) -> ModelClient:
    """The client a model-calling node asks: `config`'s resilience and tool protocol applied."""
    client = model_client.with_resilience(config.resilience) if config.resilience else model_client
    protocol = config.tool_protocol
    return client.with_tool_protocol(protocol) if protocol is not None else client


def fail_with_model_error(
    node: AsyncBehaviour, exc: Exception, reason: str, updates: dict[str, Any]
) -> Status:
    """A model call failed for good: write `updates` (the error key, ...), say why in the node's
    feedback and a `node.failed` event, and fail the node (the loop then stops as model_error)."""
    node.state_manager.update(updates, getattr(node, "namespace", None))
    node.feedback_message = reason
    kind = getattr(exc, "failure_kind", "model_error")
    node.emit(ev.NodeFailure, kind=kind, error_type=type(exc).__name__, error=reason)
    return FAILURE
