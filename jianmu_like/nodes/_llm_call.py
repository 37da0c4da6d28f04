"""LLMCallNode: one model call without tools — a summariser, a classifier, a writer step in a tree.

Not every step of a tree needs a ReAct loop: a node that asks once and writes the answer to a key
is cheaper and cannot wander. Its text also goes to the contract's `text_output` key. With an
`output_schema` the value comes from `structured_llm_call` (native tool call → JSON mode →
text), so any model can fill it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from py_trees.common import Status
from pydantic import BaseModel

from ..bt._async_behaviour import AsyncBehaviour
from ..models._client import ModelClient, model_events
from ..models._errors import ModelCallFailed, ModelError
from ..models._messages import Message, ai, human, system
from ..models._structured import StructuredOutputError
from ..models._types import ModelRequest
from ..state._contract import StateContract, declare
from ..telemetry import events as ev
from ._llm import configured_client, fail_with_model_error
from ._message import placeholder_keys, render
from ._one_call import reply_completed, request_for, spent, structured_call
from ._settings import ModelCallConfig


class LLMCallNode(AsyncBehaviour):
    """Asks the model once and writes its answer to `output_key` in `namespace`.

    The prompt is `system_prompt` (if any), the namespace's `messages`, then `prompt` rendered
    from the state (`"Summarise {r1.final_answer}"`, as in MessageNode) as a user message. The
    rendered prompt and the reply are appended to `messages`, and the call's usage to the
    usage key (so `AgentResult.usage` counts it). `output_key` defaults to `final_answer`; with
    `output_schema` (a pydantic model class or a JSON schema) the validated value goes to
    `output_key` (default `output`) and its JSON to `final_answer`. A model error, or no valid
    structured value, is written to the `error` key and the node fails.
    """

    def __init__(
        self,
        name: str,
        model_client: ModelClient,
        *,
        prompt: str | None = None,
        system_prompt: str | None = None,
        namespace: str | None = None,
        output_key: str | None = None,
        output_schema: type[BaseModel] | Mapping[str, Any] | None = None,
        config: ModelCallConfig | None = None,
    ) -> None:
        super().__init__(name)
        self.config = config or ModelCallConfig()
        self.model_client = configured_client(model_client, self.config)
        self.prompt = prompt
        self.system_prompt = system_prompt
        self.namespace = namespace
        self.output_schema = output_schema
        self.keys = keys = self.config.keys
        default_key = keys.output if output_schema is not None else keys.final_answer
        self.output_key = output_key or default_key
        # Template names are read at the top level (`{task}`) or in their namespace
        # (`{plan.final_answer}`), so the contract is stated from the top level.
        own = f"{namespace}.{keys.messages}" if namespace else keys.messages
        reads = (own, *placeholder_keys(prompt or ""))
        written = (keys.messages, keys.usage, keys.error, keys.final_answer, keys.text_output)
        owner = f"LLM call {name!r}" + (f" (namespace {namespace!r})" if namespace else "")
        declare(self, StateContract(owner, written, reads=reads))

    async def update_async(self) -> Status:
        sm, keys, ns, config = self.state_manager, self.keys, self.namespace, self.config
        asked: list[Message] = [human(render(self.prompt, sm))] if self.prompt is not None else []
        prompt = [*([system(self.system_prompt)] if self.system_prompt else []), *sm.get(keys.messages, ns)]
        prompt.extend(asked)
        on_event = model_events(self.telemetry, self.emit)
        self.emit(ev.ReplyStarted, round=1)
        updates: dict[str, Any] = {}
        try:
            if self.output_schema is None:
                response = await self.model_client.complete(self._request(prompt), on_event=on_event)
                answer = response.message.content or ""
                updates[self.output_key] = answer
                updates[keys.text_output] = answer
                reply, usage = response.message, response.usage
            else:
                result = await structured_call(
                    self.model_client, prompt, self.output_schema, config, on_event=on_event
                )
                answer = json.dumps(result.raw, ensure_ascii=False)
                updates[self.output_key] = result.value
                updates[keys.final_answer] = answer
                reply = ai(answer).model_copy(update={"reasoning_content": result.reasoning})
                usage = result.usage
        except (ModelError, StructuredOutputError) as exc:
            known = isinstance(exc, (ModelCallFailed, StructuredOutputError))
            reason = str(exc) if known else f"model call failed: {exc}"
            failed: dict[str, Any] = {keys.error: reason, keys.messages: asked}
            if (cost := spent(exc)) is not None:
                failed[keys.usage] = cost
            return fail_with_model_error(self, exc, reason, failed)
        updates[keys.messages] = [*asked, reply]
        updates[keys.usage] = usage
        sm.update(updates, ns)
        reply_completed(self.emit, answer, usage, reply.reasoning_content)
        return Status.SUCCESS

    def _request(self, prompt: list[Message]) -> ModelRequest:
        return request_for(self.config, prompt, stream=self.config.stream)
