"""An LLM judge over the project's own model client.

`pydantic-evals`' `LLMJudge` asks a pydantic-ai model (`openai:gpt-4o`...), configured by
pydantic-ai's environment variables; an agent here reaches its models through `ModelClient`
(`provider.base_url`, named providers, `OPENAI_BASE_URL`, fallbacks, retries, redaction). `Judge`
asks whatever model that configuration resolves, so the judge runs against the same servers as
the agent (a local llama.cpp, a gateway) and is tested against the scripted server like the rest.
The verdict is a structured call (`structured_llm_call`: native JSON schema, then prompted JSON),
so any OpenAI-compatible server can answer it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from ..models._client import ModelClient
from ..models._messages import human, system
from ..models._structured import structured_llm_call
from ._evaluators import answer_text
from ._library import EvaluationReason, Evaluator, EvaluatorContext

PROMPT = (
    "You grade an AI agent's answer against a rubric. Read the rubric, the question and the "
    "answer; decide whether the answer satisfies the rubric. Reply with JSON only: "
    '{"passed": true|false, "score": a number from 0 to 1, "reason": "one sentence"}.'
)


class Verdict(BaseModel):
    """The judge's reply."""

    passed: bool
    score: float = Field(ge=0.0, le=1.0)
    reason: str = ""


@dataclass(repr=False)
class Judge(Evaluator[Any, Any, Any]):
    """Ask a model whether the answer satisfies `rubric`: an assertion (`Judge`) with the
    judge's reason, and its score (`Judge_score`, 0 to 1). `model` is any model name the
    configuration resolves (default: the configured default model); the question is shown to
    the judge unless `include_input` is false, the expected output when `include_expected`."""

    rubric: str
    model: str | None = None
    include_input: bool = True
    include_expected: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.rubric, str) or not self.rubric.strip():
            raise ValueError("rubric must be a non-empty text")

    async def evaluate(self, ctx: EvaluatorContext[Any, Any, Any]) -> dict[str, Any]:
        parts = [f"Rubric:\n{self.rubric}"]
        if self.include_input:
            question = getattr(ctx.inputs, "question", ctx.inputs)
            parts.append(f"Question:\n{answer_text(question)}")
        if self.include_expected and ctx.expected_output is not None:
            parts.append(f"Expected answer:\n{answer_text(ctx.expected_output)}")
        parts.append(f"Answer:\n{answer_text(ctx.output)}")
        client = ModelClient.resolve(self.model)
        try:
            result = await structured_llm_call(
                client, [system(PROMPT), human("\n\n".join(parts))], Verdict, name="verdict", temperature=0.0
            )
        finally:
            await client.aclose()
        verdict = result.value if isinstance(result.value, Verdict) else Verdict.model_validate(result.value)
        name = self.get_default_evaluation_name()
        return {
            name: EvaluationReason(value=verdict.passed, reason=verdict.reason or None),
            f"{name}_score": verdict.score,
        }
