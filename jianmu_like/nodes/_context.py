"""Prompt assembly for LLM nodes: system prompt, ReAct protocol, tool descriptions, history."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from typing import Protocol

from ..models._messages import Message, system
from ..tools._toolset import ToolSet

DEFAULT_PERSONA = "You are a helpful assistant that solves the user's task accurately and concisely."

REACT_PROTOCOL = (
    "Work step by step. When a tool would help, call it: the system runs tool calls for you and "
    "returns their results as tool messages, so do not write tool calls as text. Read each result "
    "before deciding the next step. When you have what you need, reply with the final answer "
    "only, without calling a tool. If a tool reports an error, fix the call or try another way."
)


TOOLS_HEADER = "Available tools:"
"""The heading of the tool listing in the native-calling system prompt."""

DATE = "{date}"
"""Written in any preset prompt (persona, research, supervisor, planner, compress, critic): the
current date, so a model that searches knows what "latest" means."""


def with_date(text: str) -> str:
    """`text` with every `{date}` replaced by today's date (ISO, local time); other braces stay."""
    return text.replace(DATE, datetime.date.today().isoformat()) if DATE in text else text


PromptRuntime = Callable[[], "str | None"]
"""A system prompt supplied while the agent runs (the primary spec's `prompt_runtime`): asked
before every model call; text replaces the default prompt (persona and ReAct protocol), None
keeps it."""


class ContextBuilderProtocol(Protocol):
    """Builds the message list sent to the model from the conversation history.

    A builder may also have a `persona` attribute (str): its system prompt's own text, which the
    LLM node sends as `ModelRequest.persona` so a json/text tool protocol writes its prompt
    around it; without one, that protocol takes the first system message as it is."""

    def build(self, history: Sequence[Message], tools: ToolSet | None) -> list[Message]: ...


class ContextBuilder:
    """The default ReAct context: one system message (persona + protocol + tools), the opening
    messages (if any), then history.

    The system message is built once per tool set and reused, so prompt assembly costs one list
    copy per call however long the conversation grows. A `prompt_runtime` is consulted first,
    as the primary spec orders the sources of a prompt (an explicit context builder, then the
    runtime's prompt, then the default one): when it returns text, that text (with the tool
    listing) is the system message and the persona of the call.
    """

    def __init__(
        self,
        system_prompt: str | None = None,
        *,
        include_tool_descriptions: bool = True,
        prompt_runtime: PromptRuntime | None = None,
    ) -> None:
        self.include_tool_descriptions = include_tool_descriptions
        self.prompt_runtime = prompt_runtime
        self._runtime_cached: tuple[str, ToolSet | None, int, Message] | None = None
        self.opening: tuple[Message, ...] = ()
        """Messages every prompt opens with, after the system message and before the history
        (an agent's `first_messages`, e.g. from an MCP prompt); never part of the history."""
        self.set_system_prompt(system_prompt)

    def set_system_prompt(self, system_prompt: str | None) -> None:
        """Use `system_prompt` (None: the default persona) from the next prompt on: for a persona
        known only after construction (an MCP prompt, read once the agent's servers are ready).
        Shared by every clone of the tree, so one resolution serves them all."""
        self.system_prompt = system_prompt
        self._persona = system_prompt or DEFAULT_PERSONA
        self._cached: tuple[ToolSet | None, int, Message] | None = None
        """(tool set, its version, the message): the set itself, not its id, which a new set
        could reuse once the old one is gone."""
        self._dated = DATE in (system_prompt or "")
        """The prompt names `{date}`: the message is rebuilt when the day changes."""
        self._day = ""
        self.persona = with_date(self._persona)
        """The persona alone (no protocol, no tool listing; `{date}` filled in as of the last
        `build`), sent as data with each request. A plain attribute, read once per model call."""

    def system_message(self, tools: ToolSet | None) -> Message:
        version = tools.version if tools is not None else 0
        if self.prompt_runtime is not None:
            runtime = self.prompt_runtime()
            if runtime:
                return self._runtime_message(runtime, tools, version)
            self.persona = with_date(self._persona)
        if self._dated and (today := datetime.date.today().isoformat()) != self._day:
            self._day, self._cached = today, None
            self.persona = with_date(self._persona)
        cached = self._cached
        if cached is not None and cached[0] is tools and cached[1] == version:
            return cached[2]
        parts = [self.persona, REACT_PROTOCOL]
        if tools is not None and self.include_tool_descriptions and len(tools):
            parts.append(TOOLS_HEADER + "\n" + tools.describe())
        message = system("\n\n".join(parts))
        self._cached = (tools, version, message)
        return message

    def _runtime_message(self, text: str, tools: ToolSet | None, version: int) -> Message:
        """The system message of a runtime prompt (rebuilt only when the text or tools change)."""
        self.persona = text
        cached = self._runtime_cached
        if cached is not None and cached[0] == text and cached[1] is tools and cached[2] == version:
            return cached[3]
        parts = [text]
        if tools is not None and self.include_tool_descriptions and len(tools):
            parts.append(TOOLS_HEADER + "\n" + tools.describe())
        message = system("\n\n".join(parts))
        self._runtime_cached = (text, tools, version, message)
        return message

    def build(self, history: Sequence[Message], tools: ToolSet | None) -> list[Message]:
        prompt = [self.system_message(tools)]
        if self.opening:
            prompt.extend(self.opening)
        prompt.extend(history)
        return prompt
