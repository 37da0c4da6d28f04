"""OutputNode: turns a ReAct agent's final answer into a validated structured value.

It runs after the loop's done-check: the final answer (JSON, tolerantly extracted) is validated
against the agent's `output_type`; a valid value goes to the `output` key. An invalid one is
re-asked once — a corrective message quoting the error, `done` cleared, and the loop iterates —
and a second invalid answer ends the run (`invalid_output`) with the error, since an agent that
promised a typed result must not return an untyped one silently.

Without an `output_type` the node checks the run's own output schema (the `output_schema` run
input: a caller's `response_format`) the same way, and passes when the run has none.
"""

from __future__ import annotations

import json
from typing import Any

from py_trees.common import Status

from ..bt._node import Node
from ..models._keys import StateKeys
from ..models._messages import human
from ..models._structured import OutputSchema
from ..telemetry import events as ev

INVALID_OUTPUT = "invalid output"
"""Starts the `error` written when the answer stays invalid (the loop's abort reason reads it)."""


class OutputNode(Node):
    """Validate `final_answer` against `schema` (None: the run's `output_schema`, if any) into
    `output` (see the module docstring).

    `retries` is how often an invalid answer is re-asked (each costs a loop iteration).
    """

    def __init__(
        self,
        name: str,
        schema: OutputSchema | None,
        *,
        keys: StateKeys | None = None,
        namespace: str | None = None,
        retries: int = 1,
    ) -> None:
        super().__init__(name)
        self.schema = schema
        self.keys = keys or StateKeys()
        self.namespace = namespace
        self.retries = retries
        self._run_schema: tuple[str, OutputSchema] | None = None
        """The last run schema compiled (its JSON text, and it): compiled once per schema."""

    def schema_for_run(self) -> OutputSchema | None:
        """The schema this run's answer must match: the node's, else the run's own."""
        if self.schema is not None:
            return self.schema
        raw: dict[str, Any] | None = self.state_manager.get_optional(self.keys.output_schema, self.namespace)
        if raw is None:
            return None
        text = json.dumps(raw, sort_keys=True)
        cached = self._run_schema
        if cached is None or cached[0] != text:
            cached = self._run_schema = (text, OutputSchema(raw))
        return cached[1]

    def update(self) -> Status:
        sm, keys, ns = self.state_manager, self.keys, self.namespace
        schema = self.schema_for_run()
        if schema is None:
            return Status.SUCCESS  # nothing asked of this run's answer
        answer: str = sm.get(keys.final_answer, ns) or ""
        try:
            _, value = schema.parse_text(answer)
        except ValueError as exc:
            retried: int = sm.get(keys.output_retries, ns) or 0
            again = retried < self.retries
            self.emit(ev.OutputInvalid, error=str(exc), retry=again)
            if again:
                correction = human(
                    f"Your final answer is not valid: {exc}. Give the final answer again. "
                    + schema.instruction()
                )
                sm.update(
                    {keys.messages: [correction], keys.done: False, keys.output_retries: retried + 1}, ns
                )
            else:
                reason = f"{INVALID_OUTPUT}: the final answer {exc} (after {retried} retry)"
                sm.update({keys.error: reason}, ns)
                self.feedback_message = reason
            return Status.FAILURE
        sm.update({keys.output: value}, ns)
        self.emit(ev.OutputValidated, schema=schema.name)
        return Status.SUCCESS
