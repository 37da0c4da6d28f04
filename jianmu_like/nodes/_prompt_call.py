"""PromptCall: one model call whose prompt a subclass builds from the state (planner, writer,
compressor of the presets).

`LLMCallNode` renders a template and appends its exchange to the namespace's conversation; a
preset's internal call (a plan, a compressed summary) must do neither: its prompt is assembled in
code from several keys, and the conversation keeps only what the user should see. This base does
the call (plain text, or a structured value through `structured_llm_call`), the usage
accounting, the events and the model-error path; the subclass says what to ask and what to write.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Callable, Mapping
from typing import Any

from py_trees.common import Status
from pydantic import BaseModel

from ..bt._async_behaviour import AsyncBehaviour
from ..models._client import ModelClient, model_events
from ..models._errors import ModelCallFailed, ModelError
from ..models._messages import Message
from ..models._structured import StructuredOutputError
from ..telemetry import events as ev
from ._llm import configured_client, fail_with_model_error
from ._one_call import reply_completed, request_for, spent, structured_call
from ._settings import LLMNodeConfig


class PromptCall(AsyncBehaviour):
    """Asks the model once: `prompt()` gives the messages, `accept(value, text)` the updates to
    write in `namespace` (the call's usage is added to the usage key). With `schema` the value is
    a validated structured value (`parse` may check it further: raise ValueError to re-ask)."""

    def __init__(
        self,
        name: str,
        model_client: ModelClient,
        *,
        namespace: str | None = None,
        config: LLMNodeConfig | None = None,
        schema: type[BaseModel] | Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(name)
        self.config = config or LLMNodeConfig()
        self.model_client = configured_client(model_client, self.config)
        self.namespace = namespace
        self.schema = schema
        self.keys = self.config.keys

    @abc.abstractmethod
    def prompt(self) -> list[Message]:
        """The messages to send, built from the state."""

    @abc.abstractmethod
    def accept(self, value: Any, text: str) -> dict[str, Any]:
        """The state updates for the answer (`value` is the text, or the structured value)."""

    parse: Callable[[dict[str, Any]], Any] | None = None
    """Optional validation of a structured value (see `structured_llm_call`'s `parse_fn`)."""

    async def update_async(self) -> Status:
        keys, config = self.keys, self.config
        messages = self.prompt()
        on_event = model_events(self.telemetry, self.emit)
        self.emit(ev.ReplyStarted, round=1)
        try:
            if self.schema is None:
                request = request_for(config, messages)
                response = await self.model_client.complete(request, on_event=on_event)
                value: Any = response.message.content or ""
                text, usage, reasoning = value, response.usage, response.message.reasoning_content
            else:
                result = await structured_call(
                    self.model_client, messages, self.schema, config, parse_fn=self.parse, on_event=on_event
                )
                value, text, usage = result.value, json.dumps(result.raw, ensure_ascii=False), result.usage
                reasoning = result.reasoning
        except (ModelError, StructuredOutputError) as exc:
            known = isinstance(exc, (ModelCallFailed, StructuredOutputError))
            reason = f"{self.name}: " + (str(exc) if known else f"model call failed: {exc}")
            failed: dict[str, Any] = {keys.error: reason}
            if (cost := spent(exc)) is not None:
                failed[keys.usage] = cost
            return fail_with_model_error(self, exc, reason, failed)
        updates = self.accept(value, text)
        updates[keys.usage] = usage
        self.state_manager.update(updates, self.namespace)
        reply_completed(self.emit, text, usage, reasoning)
        return Status.SUCCESS
