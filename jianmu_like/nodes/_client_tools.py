"""Client tools: tools a caller offers for one run and runs itself (the OpenAI-compatible
endpoint's `tools`), and the output schema a caller asks of one run (`response_format`).

Both are run inputs kept in the state (run-scoped), so a suspended run and a resume in another
process see the same ones. The model is offered a client tool beside the agent's own; a call of
one is not run here: the tool executor makes it a waiting call of kind `client_tool` (the same
suspension as a human approval), and the client's result, given as that call's decision
(`ApprovalDecision.output`), becomes its observation.

What a client's `tool_choice` means for an agent (the agent's model decides how many rounds it
takes; the client sees only the run's end):

- `auto` (default): client tools are offered; the agent's own `tool_choice` (first round only)
  applies as configured.
- `none`: client tools are not offered; the agent works with its own tools and answers.
- `required`: every model call of the run must call a tool (its own or the client's), so the run
  ends by calling a client tool, never with prose.
- a named function: only that client tool is offered among the client's, and every model call
  must call a tool: the agent may use its own tools first and ends by calling the named one.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..models._keys import StateKeys
from ..state._manager import StateManager


class ClientTool(BaseModel):
    """One tool the client offers: the OpenAI function definition."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    strict: bool | None = None

    def schema_(self) -> dict[str, Any]:
        """The tool as the model is offered it (an OpenAI `tools` entry)."""
        function: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
        }
        if self.strict is not None:
            function["strict"] = self.strict
        return {"type": "function", "function": function}


class ClientTools(BaseModel):
    """The tools a client offered for one run and how it wants them used."""

    tools: list[ClientTool] = Field(default_factory=list)
    choice: Literal["auto", "none", "required"] | str = "auto"
    """`auto`, `none`, `required`, or the name of one client tool (see the module docstring)."""
    parallel: bool = True
    """`parallel_tool_calls`: False sends the client one call at a time."""

    def offered(self) -> list[ClientTool]:
        """The client tools the model sees, per `choice`."""
        if self.choice == "none":
            return []
        if self.choice in ("auto", "required"):
            return list(self.tools)
        return [t for t in self.tools if t.name == self.choice]

    def names(self) -> set[str]:
        """Every client tool's name (a call of one waits for the client, whatever `choice`)."""
        return {t.name for t in self.tools}

    @property
    def forced(self) -> bool:
        """Whether every model call must call a tool (`required` or a named tool)."""
        return self.choice not in ("auto", "none")


def client_tools(sm: StateManager, keys: StateKeys, namespace: str | None) -> ClientTools | None:
    """The run's client tools, if the caller offered any."""
    value = sm.get_optional(keys.client_tools, namespace)
    if value is None or isinstance(value, ClientTools):
        return value
    return ClientTools.model_validate(value)
