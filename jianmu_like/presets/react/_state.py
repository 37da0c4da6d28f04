"""ReActState: the state contract of the ReAct preset (see StateKeys for the logical keys)."""

from __future__ import annotations

import operator
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from ...guard._approvals import Approval, ApprovalDecision
from ...models._keys import StateKeys
from ...models._messages import Message, ToolCall
from ...models._types import Usage
from ...nodes._client_tools import ClientTools
from ...nodes._results import ResultReader
from ...nodes._tool_outcome import ToolOutcome
from ...state._schema import Ephemeral, merge_dicts
from ...tools._artifact import Artifact


class ReActState(BaseModel):
    """Conversation history plus the per-run bookkeeping of a ReAct loop.

    `messages` and `tool_effects` persist across runs of one agent (a conversation continues);
    the rest is reset at every fresh run, and `actions` at every loop iteration. Extra keys are
    allowed so namespaced agents (`<namespace>.<field>`) can share the state.
    """

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    task: str | None = None
    messages: Annotated[list[Message], operator.add] = Field(default_factory=list)
    actions: Annotated[list[ToolCall], Ephemeral(scope="step")] = Field(default_factory=list)
    done: Annotated[bool, Ephemeral(scope="run")] = False
    final_answer: Annotated[str | None, Ephemeral(scope="run")] = None
    rounds: Annotated[int, Ephemeral(scope="run")] = 0
    usage: Annotated[Usage, operator.add, Ephemeral(scope="run")] = Field(
        default_factory=Usage, alias="llm.usage"
    )
    streaming_output: Annotated[str, Ephemeral(scope="run")] = ""
    tool_effects: list[str] = Field(default_factory=list)
    termination: Annotated[dict[str, Any] | None, Ephemeral(scope="run")] = None
    error: Annotated[str | None, Ephemeral(scope="run")] = None
    call_counts: Annotated[dict[str, int], Ephemeral(scope="run")] = Field(default_factory=dict)
    """How often each exact (tool, arguments) call was made this run: feeds the repeat hint."""
    tool_results: Annotated[dict[str, ToolOutcome], merge_dicts, Ephemeral(scope="step")] = Field(
        default_factory=dict
    )
    """Outcomes of the current batch by tool call id, kept as each call finishes, so a batch
    interrupted by a suspension or a crash never runs a finished call twice."""
    pending_approvals: Annotated[list[Approval], Ephemeral(scope="step")] = Field(default_factory=list)
    approval_decisions: Annotated[dict[str, ApprovalDecision], merge_dicts, Ephemeral(scope="step")] = Field(
        default_factory=dict
    )
    output: Annotated[Any, Ephemeral(scope="run")] = None
    """The validated structured answer of an agent with an `output_type`."""
    output_retries: Annotated[int, Ephemeral(scope="run")] = 0
    tool_failures: Annotated[int, Ephemeral(scope="run")] = 0
    """Failed tool calls in a row: the loop stops at `ReActConfig.max_tool_failures`."""
    answer_retries: Annotated[int, Ephemeral(scope="run")] = 0
    fallback_answer: Annotated[str | None, Ephemeral(scope="run")] = None
    """Set when the loop stops without an answer (max_iterations, budget, tool failures): which
    tools ran and what they returned."""
    selected_tools: Annotated[list[str] | None, Ephemeral(scope="run")] = None
    """The tools tool selection chose for this run (None: not selected yet; the LLM node then
    sends every tool)."""
    artifacts: Annotated[list[Artifact], operator.add, Ephemeral(scope="run")] = Field(default_factory=list)
    """Artifacts this run's tools produced; the model saw only their placeholders."""
    text_output: Annotated[str | None, Ephemeral(scope="run")] = None
    """The text of a single-call node (`LLMCallNode`) this run."""
    skill_result: Annotated[Any, Ephemeral(scope="run")] = None
    """What a skill returned this run (written by your own skill nodes; nothing built in does)."""
    client_tools: Annotated[ClientTools | None, Ephemeral(scope="run")] = None
    """Tools the caller offered for this run and runs itself (the OpenAI endpoint's `tools`): a
    call of one suspends the run until the caller's result arrives (`nodes._client_tools`)."""
    output_schema: Annotated[dict[str, Any] | None, Ephemeral(scope="run")] = None
    """A JSON schema this run's final answer must match (the OpenAI endpoint's
    `response_format`), validated into `output` like an `output_type`."""


def react_reader(keys: StateKeys) -> ResultReader:
    """How a tree on `ReActState` is read (the schema `Agent` defaults to for it, and `keys`):
    what the ReAct preset and the presets built from its nodes attach to their roots."""
    return ResultReader(ReActState, keys, _HINT)


_HINT = "Subclass jianmu_like.ReActState (it has every field the ReAct preset uses)"
