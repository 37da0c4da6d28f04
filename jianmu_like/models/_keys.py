"""The state keys the nodes read and write, by their logical names.

Every node of `jianmu_like.nodes` (the LLM node, the tool executor, the answer check, ...) reads
and writes its state through these names, never through hard-coded field names, so a preset maps
its own state class onto them (the ReAct preset's `ReActState` uses the defaults). They live
outside the state kernel: the kernel stores any pydantic schema and knows nothing
of messages, tool calls or answers. The module sits just below `guard` and `checkpoint`, whose
approval review and thread views read the same keys.
"""

from __future__ import annotations

from pydantic import BaseModel


class StateKeys(BaseModel):
    """Maps the logical keys the ReAct nodes use to the state's field names.

    Override a key when your schema names a field differently; the nodes never hard-code names.
    """

    messages: str = "messages"
    actions: str = "actions"
    done: str = "done"
    final_answer: str = "final_answer"
    rounds: str = "rounds"
    usage: str = "llm.usage"
    streaming_output: str = "streaming_output"
    tool_effects: str = "tool_effects"
    termination: str = "termination"
    error: str = "error"
    call_counts: str = "call_counts"
    pending_approvals: str = "pending_approvals"
    approval_decisions: str = "approval_decisions"
    tool_results: str = "tool_results"
    output: str = "output"
    """The validated structured answer (agents with an `output_type` only)."""
    output_retries: str = "output_retries"
    tool_failures: str = "tool_failures"
    """Failed tool calls in a row (the ReAct loop stops at its `max_tool_failures`)."""
    answer_retries: str = "answer_retries"
    """How often this run's final answer was re-asked by the answer-quality check."""
    fallback_answer: str = "fallback_answer"
    """What a ReAct run that stopped without an answer ran and found (`AgentResult.fallback_answer`)."""
    selected_tools: str = "selected_tools"
    """The tools chosen for this run by tool selection (agents with a selection step only)."""
    artifacts: str = "artifacts"
    """Artifacts the run's tools produced (`AgentResult.artifacts`)."""
    text_output: str = "text_output"
    """The text a single-call node (`LLMCallNode`) produced, for downstream readers."""
    skill_result: str = "skill_result"
    """What a skill (a node of your own acting as one) returns to skill-aware callers."""
    client_tools: str = "client_tools"
    """Tools a caller offered for this run and runs itself (`nodes._client_tools`)."""
    output_schema: str = "output_schema"
    """A JSON schema this run's final answer must match (a caller's per-run output type)."""
