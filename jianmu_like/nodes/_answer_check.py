"""AnswerCheck: a final answer is re-asked once when it is no answer at all.

The hand-written loops' lesson: an empty reply, a two-character one, a bare "I don't know"
(`AnswerCheckConfig.non_answers`, in many languages), the previous question's answer again, or
a tool call the model wrote as text instead of making it (with native function calling; the
json/text protocols already correct that in `models._tool_protocol`) must not end a run as
"success". Such an answer gets a corrective message, `done` is cleared and the loop asks
again (an iteration). After `AnswerCheckConfig.retries` re-asks the answer is accepted as it is:
the check nudges, it never fails a run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from py_trees.common import Status

from .._base.config import AnswerCheckConfig
from ..bt._node import Node
from ..models._keys import StateKeys
from ..models._messages import Message, human
from ..models._react_text import TEXT_DIALECT, has_action
from ..models._text_protocol import CORRECTION_PREFIX, JSON_DIALECT, is_correction
from ..telemetry import events as ev
from ._trace import ANSWER_CORRECTION_PREFIX

REPEAT_MIN_CHARS = 20
"""Answers shorter than this ("4", "yes") may legitimately repeat: never rejected as repeats."""

TOOL_CALL_AS_TEXT = (
    f"{CORRECTION_PREFIX}: it is neither a tool call nor a final answer — it looks like a tool "
    "call written as text. Call tools through the function-calling interface (the system runs "
    "them), or reply with the final answer only."
)
"""The protocol's corrective message (same opening, see `models._tool_protocol`) for native calling."""


def _normal(text: str) -> str:
    return " ".join(text.split()).casefold()


_EDGE_PUNCTUATION = " \t\r\n.,!?;:…。，！？；：、\"'“”‘’「」()（）"


def _bare(text: str) -> str:
    """`text` compared as a non-answer: no case, one space between words, no punctuation at
    its ends, one apostrophe."""
    return " ".join(text.replace("’", "'").casefold().split()).strip(_EDGE_PUNCTUATION)


def _may_hold_call(text: str) -> bool:
    """A cheap test the two parsers' calls all pass: a JSON call (whole or cut off) needs a
    `{`, a text-protocol call an `Action:` line."""
    return "{" in text or has_action(text)


def _no_id() -> str:
    return "call_check"


class AnswerCheck(Node):
    """Check `final_answer` (see the module docstring); SUCCESS accepts it, FAILURE re-asks.

    `tool_names` are the agent's tools: an answer that parses as a call to one of them in the
    JSON or text protocol is a tool call written as text.
    """

    def __init__(
        self,
        name: str,
        config: AnswerCheckConfig,
        *,
        tool_names: Callable[[], Sequence[str]] = tuple,
        keys: StateKeys | None = None,
        namespace: str | None = None,
    ) -> None:
        super().__init__(name)
        self.config = config
        self._non_answers = frozenset(_bare(text) for text in config.non_answers)
        self.tool_names = tool_names
        self.keys = keys or StateKeys()
        self.namespace = namespace

    def update(self) -> Status:
        sm, keys, ns = self.state_manager, self.keys, self.namespace
        answer: str = sm.get(keys.final_answer, ns) or ""
        messages: list[Message] = sm.get(keys.messages, ns)
        problem, correction = self.problem(answer, messages)
        if problem is None:
            return Status.SUCCESS
        retried: int = sm.get(keys.answer_retries, ns) or 0
        again = retried < self.config.retries
        self.emit(ev.AnswerRejected, problem=problem, retry=again, answer=answer[:200])
        if not again:
            return Status.SUCCESS  # asked once already: the answer stands
        sm.update(
            {
                keys.messages: [human(correction)],
                keys.done: False,
                keys.final_answer: None,
                keys.answer_retries: retried + 1,
            },
            ns,
        )
        self.feedback_message = f"answer re-asked: {problem}"
        return Status.FAILURE

    def problem(self, answer: str, messages: Sequence[Message]) -> tuple[ev.AnswerProblem | None, str]:
        """What is wrong with `answer` (None: nothing) and the corrective message to send."""
        text = answer.strip()
        config = self.config
        if not text:
            return "empty", (
                f"{ANSWER_CORRECTION_PREFIX}was empty. Reply with the final answer to the question."
            )
        if self._tool_call_as_text(text, messages):
            return "tool_call_as_text", TOOL_CALL_AS_TEXT
        if config.non_answers and _bare(text) in self._non_answers:
            return "non_answer", (
                f"{ANSWER_CORRECTION_PREFIX}only says that you do not know. Use the tools to find "
                "the answer, or say what you found and what is still missing."
            )
        if len(text) < config.min_chars:
            return "too_short", (
                f"{ANSWER_CORRECTION_PREFIX}is too short ({len(text)} characters, at least "
                f"{config.min_chars} expected). Reply with a complete final answer to the question."
            )
        if config.reject_repeats and len(text) >= REPEAT_MIN_CHARS and self._repeats(text, messages):
            return "repeat", (
                f"{ANSWER_CORRECTION_PREFIX}repeats an earlier answer word for word. Answer the "
                "latest question itself."
            )
        return None, ""

    def _tool_call_as_text(self, text: str, messages: Sequence[Message]) -> bool:
        if len(messages) >= 2 and is_correction(messages[-2]):
            return False  # corrected once already, like the json/text protocols
        if not _may_hold_call(text):
            return False  # the common final answer: no parse
        names = set(self.tool_names())
        if not names:
            return False
        # Without an `Action:` line the text dialect reads the reply as JSON: read it once.
        for dialect in (JSON_DIALECT, TEXT_DIALECT) if has_action(text) else (JSON_DIALECT,):
            message, _ = dialect.parse(text, _no_id, names)
            if message.tool_calls and any(c.name in names for c in message.tool_calls):
                return True
        return False

    @staticmethod
    def _repeats(text: str, messages: Sequence[Message]) -> bool:
        """Whether an earlier final answer (an assistant message without tool calls, before
        the latest one) says exactly the same."""
        wanted = _normal(text)
        earlier = messages[:-1] if messages and messages[-1].role == "assistant" else messages
        return any(
            m.role == "assistant" and not m.tool_calls and m.content and _normal(m.content) == wanted
            for m in earlier
        )
