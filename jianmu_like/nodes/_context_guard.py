"""ContextGuard: every request an LLM node sends fits the model's context window.

A request transformer (`AgentLLMNode(request_transform=...)`), applied after the prompt is
built and before the model is called; the state keeps the whole history, only the request is
compacted. Under the budget it costs a comparison: message sizes are counted once, as the
history grows. Over it, in order:

1. tool results larger than `max_tool_result_share` of the budget are cut with a note;
2. old turns leave the prompt, newest kept, down to `target` of the budget: summarised by one
   model call (`strategy: summarize`; dropped when that call fails) or dropped with a note
   (`strategy: drop`). System messages, pinned messages (`compaction.is_pinned`: injected
   interrupts) and the current user turn (the newest user message that is not a framework's
   correction, and everything after it) always stay, and an assistant tool-call message
   leaves or stays with its results;
3. if what stays is still too large, its tool results are cut further (the current turn's
   question is never dropped to make room: its tool results are cut instead).

A compaction is remembered (the summary stands for the turns it covers), so the next requests
reuse it and the summary call is made once per compaction, not once per request. Each new
compaction emits `context.compacted` (the server's `compact` channel) with the message and
token counts before and after.

The budget is the window (`ContextConfig.window`, else the client's `context_window`, else
`DEFAULT_CONTEXT_WINDOW`) less the reply's room (the request's `max_tokens`, else
`reserve_tokens`); messages and tool schemas count (see `models._tokens`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .._base.config import DEFAULT_CONTEXT_WINDOW, ContextConfig
from ..models._client import ModelClient
from ..models._errors import ModelError
from ..models._keys import StateKeys
from ..models._messages import Message, human, system
from ..models._tokens import MESSAGE_OVERHEAD, TokenCounter, token_counter
from ..models._types import ModelRequest
from ..models._usage import CHARS_PER_TOKEN
from ..state._manager import StateManager
from ..telemetry import events as ev
from ._compaction import SUMMARY_PREFIX, cut_text, cut_tool_result, is_pinned, transcript, turn_units
from ._trace import is_corrective

SUMMARY_PROMPT = (
    "You compress the earlier part of a conversation between a user and an AI assistant that "
    "uses tools, so the assistant can continue without it. Write a concise summary: the user's "
    "requests, the facts, numbers and tool results found, decisions taken, and what is still "
    "open. Keep names, figures and identifiers exactly. No preamble."
)


CUT_NOTE_TOKENS = 24
"""About what the "[... N more characters cut: ...]" note of a cut tool result takes."""


class GuardHost(Protocol):
    """What the guard needs of the node it serves: the state (to add the summary's usage) and
    the node's telemetry."""

    state_manager: StateManager
    namespace: str | None
    keys: StateKeys

    def emit(self, event: type[ev.ContextCompacted], /, **data: Any) -> None: ...


@dataclass(frozen=True)
class _Compaction:
    """The first `covered` history messages (the last of them `anchor`) stand as `replacement`."""

    covered: int
    anchor: Message
    replacement: tuple[Message, ...]
    removed: int
    question: Message | None = None
    """The current turn's question, kept in `replacement` while older units of its turn left."""


class ContextGuard:
    """Keeps each request of one LLM node within the context budget (see the module)."""

    def __init__(
        self,
        model_client: ModelClient,
        config: ContextConfig | None = None,
        *,
        model: str | None = None,
        pinned: Callable[[Message], bool] = is_pinned,
        counter: TokenCounter | None = None,
    ) -> None:
        self.client = model_client
        self.config = config or ContextConfig()
        self.model = model
        self.pinned = pinned
        self.window = self.config.window or model_client.context_window or DEFAULT_CONTEXT_WINDOW
        self.counter = counter or token_counter(self.config.tokenizer)
        self._schemas: tuple[list[dict[str, Any]] | None, int] = (None, 0)
        """The last tool schemas counted and their tokens."""
        self._reserve = self.config.reserve_tokens
        self.reset()

    def for_node(self, node: Any) -> ContextGuard:
        """The same guard with its own memory, for a cloned node (another conversation)."""
        return ContextGuard(
            self.client, self.config, model=self.model, pinned=self.pinned, counter=self.counter
        )

    def reset(self) -> None:
        """Forget the conversation (its node's tree goes back to a pool): no message is held."""
        self._seen: list[Message] = []
        self._sizes: list[int] = []
        self._total = 0
        self._memory: _Compaction | None = None
        self._cut: set[int] = set()

    def budget(self, request: ModelRequest) -> int:
        """Tokens the request's messages and tool schemas may take."""
        reserve = request.max_tokens if request.max_tokens is not None else self.config.reserve_tokens
        return self.window - reserve

    async def __call__(self, request: ModelRequest, host: GuardHost) -> ModelRequest:
        messages = request.messages
        seen = self._seen
        n = len(seen)
        # the usual case, inline: the history grew by a message or two since the last request
        if n and len(messages) >= n and messages[n - 1] is seen[-1] and messages[0] is seen[0]:
            if len(messages) > n:  # `_add`, inlined
                count = self.counter.message
                for message in messages[n:]:
                    size = count(message)
                    seen.append(message)
                    self._sizes.append(size)
                    self._total += size
        else:
            self._recount(messages)
        schemas = request.tools
        total = self._total + (self._schema_tokens(schemas) if schemas else 0)
        budget = self.window - (request.max_tokens if request.max_tokens is not None else self._reserve)
        if total <= budget:
            return request
        return await self._compact(request, host, total, budget)

    # ------------------------------------------------------------------ counting
    def _add(self, fresh: list[Message]) -> None:
        count = self.counter.message
        sizes = [count(m) for m in fresh]
        self._seen.extend(fresh)
        self._sizes.extend(sizes)
        self._total += sum(sizes)

    def _recount(self, messages: list[Message]) -> None:
        """Another history than the last request's (a new conversation, a restored one)."""
        self._seen.clear()
        self._sizes.clear()
        self._total = 0
        self._add(messages)

    def _schema_tokens(self, schemas: list[dict[str, Any]]) -> int:
        # A tool set hands out a new list of the same cached dicts each time: the list compare
        # is an identity check per item (in C); equal schemas count the same anyway.
        cached = self._schemas
        if cached[0] != schemas:
            self._schemas = cached = (list(schemas), self.counter.schemas(schemas))
        return cached[1]

    # ------------------------------------------------------------------ compacting
    async def _compact(self, request: ModelRequest, host: GuardHost, total: int, budget: int) -> ModelRequest:
        """The request within `budget`, in three steps, each only while it is still over: cut
        oversized tool results (1), let old turns leave for a summary or a note (2), cut the
        remaining tool results further (3); the `context.compacted` event says what changed."""
        work = self._open(request, total)
        newly_cut = self._cut_results(work, budget)
        summarized = dropped = 0
        summary_error: str | None = None
        if work.size(self.counter) > budget:
            summarized, dropped, summary_error = await self._drop_old_turns(work, budget, host)
        squeezed = self._squeeze(work, budget)
        view = [*work.head, *work.kept, *work.rest]
        if newly_cut or summarized or dropped or squeezed:
            after = work.size(self.counter)
            host.emit(
                ev.ContextCompacted,
                messages_before=len(request.messages),
                messages_after=len(view),
                tokens_before=total,
                tokens_after=after,
                budget=budget,
                window=self.window,
                strategy="summarize" if summarized else "drop" if dropped else "cut",
                summarized=summarized,
                dropped=dropped,
                cut_tool_results=len(newly_cut) + squeezed,
                over_budget=after > budget,
                tokenizer=self.counter.name,
                **({"summary_error": summary_error} if summary_error else {}),
            )
        return request.model_copy(update={"messages": view})

    def _open(self, request: ModelRequest, total: int) -> _Work:
        """The request split into its system head, the turns an earlier compaction already
        stands for (still valid when the history still holds their last message) and the rest."""
        messages, sizes = request.messages, self._sizes
        start = 0
        while start < len(messages) and messages[start].role == "system":
            start += 1
        body = messages[start:]
        memory = self._memory
        if memory is not None and not (
            len(body) >= memory.covered and body[memory.covered - 1] is memory.anchor
        ):
            memory = self._memory = None
        return _Work(
            fixed=total - self._total,
            head=messages[:start],
            head_tokens=sum(sizes[:start]),
            body=body,
            body_start=start,
            memory=memory,
            covered=memory.covered if memory is not None else 0,
            kept=list(memory.replacement) if memory is not None else [],
            removed=memory.removed if memory is not None else 0,
        )

    def _cut_results(self, work: _Work, budget: int) -> set[int]:
        """1. Cut the oversized tool results of the turns not yet compacted; the ids of the
        results cut now and not at the last request (each is reported once)."""
        limit = max(int(budget * self.config.max_tool_result_share), 1)
        fresh = work.body[work.covered :]
        rest = [cut_tool_result(m, limit) if m.role == "tool" else m for m in fresh]
        work.rest = rest
        work.rest_sizes = [
            s if r is m else self.counter.message(r)
            for r, m, s in zip(rest, fresh, self._sizes[work.body_start + work.covered :], strict=True)
        ]
        cut_now = {id(m) for r, m in zip(rest, fresh, strict=True) if r is not m}
        newly_cut, self._cut = cut_now - self._cut, cut_now  # live messages: their ids are unique
        return newly_cut

    async def _drop_old_turns(self, work: _Work, budget: int, host: GuardHost) -> tuple[int, int, str | None]:
        """2. Old turns leave, summarized or dropped for a note, so that the newest turns fit
        the target: (messages summarized, messages dropped, why a summary failed)."""
        counter, rest = self.counter, work.rest
        reserve = self._summary_tokens(budget) + MESSAGE_OVERHEAD + 16
        units = turn_units(rest)
        pinned_tokens = counter.messages([m for m in work.kept if self.pinned(m)])
        spare = work.fixed + work.head_tokens + pinned_tokens + reserve
        turn = _current_turn_unit(rest, units)
        memory = work.memory
        held = memory.question if memory is not None and turn is None else None
        first, question = self._first_kept(
            work, units, turn, held, room=int(budget * self.config.target) - spare, ceiling=budget - spare
        )
        split = units[first][0] if units else 0
        if not split:
            return 0, 0, None
        old = [m for m in rest[:split] if m is not question]
        leaving = [m for m in old if not self.pinned(m)]
        previous = [m for m in work.kept if not self.pinned(m) and m is not held]
        keep_pinned = [m for m in work.kept if self.pinned(m)] + [m for m in old if self.pinned(m)]
        summarized = dropped = 0
        summary_error: str | None = None
        if leaving:
            note, summary_error = await self._replace(previous, leaving, work.removed, budget, host)
            work.removed += len(leaving)
            if (note.content or "").startswith(SUMMARY_PREFIX):
                summarized = len(leaving)
            else:
                dropped = len(leaving)
            previous = [note]
        current = question or held
        work.kept = [*keep_pinned, *previous, *([current] if current is not None else [])]
        work.covered += split
        self._memory = _Compaction(
            work.covered, work.body[work.covered - 1], tuple(work.kept), work.removed, current
        )
        work.rest, work.rest_sizes = rest[split:], work.rest_sizes[split:]
        return summarized, dropped, summary_error

    def _first_kept(
        self,
        work: _Work,
        units: Sequence[tuple[int, int]],
        turn: int | None,
        held: Message | None,
        *,
        room: int,
        ceiling: int,
    ) -> tuple[int, Message | None]:
        """The first unit of `work.rest` that stays, and the current turn's question when it
        stays apart from its unit. The current turn (its question and everything after it)
        stays: whole when cutting its tool results can make it fit the budget (`ceiling`), else
        its question and its newest units; older units then stay while they fit `room`."""
        rest, rest_sizes = work.rest, work.rest_sizes
        asked = rest[units[turn][0]] if turn is not None else held
        after = turn + 1 if turn is not None else 0
        question: Message | None = None
        if asked is None:  # no question of the user's in sight: the newest unit stays
            first = len(units) - 1
            used = sum(rest_sizes[units[first][0] :])
        else:
            asked_size = self.counter.message(asked)
            tail = units[after][0] if after < len(units) else len(rest)
            if asked_size + _squeezed(rest[tail:], rest_sizes[tail:]) <= ceiling:
                first = turn if turn is not None else 0
                used = sum(rest_sizes[units[first][0] :])
            elif after >= len(units):  # the question alone: nothing of its turn to drop
                first = len(units) - 1
                used = sum(rest_sizes[units[first][0] :])
            else:  # too large even cut: the question and the newest units that fit
                question, first = asked, len(units) - 1
                used = asked_size + sum(rest_sizes[units[first][0] :])
                while first - 1 >= after:
                    lo, hi = units[first - 1]
                    extra = sum(rest_sizes[lo:hi])
                    if used + extra > ceiling:
                        break
                    used += extra
                    first -= 1
        while question is None and first > 0:
            lo, hi = units[first - 1]
            extra = sum(rest_sizes[lo:hi])
            if used + extra > room:
                break
            used += extra
            first -= 1
        return first, question

    def _squeeze(self, work: _Work, budget: int) -> int:
        """3. Still too large: cut the remaining tool results further, largest first; how many."""
        rest, rest_sizes = work.rest, work.rest_sizes
        squeezed = 0
        over = work.size(self.counter) - budget
        if over <= 0:
            return 0
        order = sorted((i for i, m in enumerate(rest) if m.role == "tool"), key=lambda i: -rest_sizes[i])
        for i in order:
            if over <= 0:
                break
            # the cut adds a note of its own (about CUT_NOTE_TOKENS): leave room for it
            allowed = max(rest_sizes[i] - over - MESSAGE_OVERHEAD - CUT_NOTE_TOKENS, 50)
            cut = cut_tool_result(rest[i], allowed)
            if cut is not rest[i] and (new := self.counter.message(cut)) < rest_sizes[i]:
                over -= rest_sizes[i] - new
                rest[i], rest_sizes[i] = cut, new
                squeezed += 1
        return squeezed

    def _summary_tokens(self, budget: int) -> int:
        """Room for the message standing for removed turns: a summary takes at most a fifth of
        the budget; a note a few tokens."""
        if self.config.strategy == "summarize":
            return min(self.config.summary_max_tokens, max(budget // 5, 32))
        return 24

    async def _replace(
        self,
        previous: list[Message],
        leaving: list[Message],
        removed: int,
        budget: int,
        host: GuardHost,
    ) -> tuple[Message, str | None]:
        """The message standing for `previous` (an earlier summary or note) and `leaving`: a
        summary (one model call), or a note when dropping (by choice or because it failed)."""
        error: str | None = None
        if self.config.strategy == "summarize" and leaving:
            limit = self._summary_tokens(budget)
            room = self.window - limit - self.counter.text(SUMMARY_PROMPT) - 64
            text = transcript([*previous, *leaving], max_chars=max(room, 256) * CHARS_PER_TOKEN)
            request = ModelRequest(
                messages=[system(SUMMARY_PROMPT), human(text)],
                model=self.model,
                max_tokens=limit,
                temperature=0.0,
            )
            try:
                response = await self.client.complete(request)
            except ModelError as exc:
                error = str(exc)
            else:
                host.state_manager.update({host.keys.usage: response.usage}, host.namespace)
                # a server may ignore max_tokens: the summary must still fit its room
                summary = cut_text(
                    (response.message.content or "").strip(), limit * CHARS_PER_TOKEN, "too long"
                )
                if summary:
                    return human(f"{SUMMARY_PREFIX}\n{summary}"), None
                error = "the summary was empty"
        count = removed + len(leaving)
        note = f"[{count} earlier messages were removed to fit the context window.]"
        return human(note), error


@dataclass
class _Work:
    """A request being compacted (`ContextGuard._compact`): its system head, the messages that
    stand for turns compacted before (`kept`) and the turns after them (`rest`, with their
    token counts), as each step leaves them."""

    fixed: int
    """Tokens outside the messages (the tool schemas)."""
    head: list[Message]
    head_tokens: int
    body: list[Message]
    """The messages after the system head."""
    body_start: int
    memory: _Compaction | None
    """The earlier compaction that still holds for this history, if any."""
    covered: int
    """How many messages of `body` `kept` stands for."""
    kept: list[Message]
    removed: int
    """Messages removed so far in this conversation (a note says how many)."""
    rest: list[Message] = field(default_factory=list)
    rest_sizes: list[int] = field(default_factory=list)

    def size(self, counter: TokenCounter) -> int:
        """Tokens of the request as it stands."""
        return self.fixed + self.head_tokens + counter.messages(self.kept) + sum(self.rest_sizes)


def _current_turn_unit(messages: Sequence[Message], units: Sequence[tuple[int, int]]) -> int | None:
    """The index of the unit holding the newest user message that is the user's (not a
    correction, not a pinned interrupt, not a compaction's note): the current turn starts
    there. None when `messages` hold none."""
    for index in range(len(units) - 1, -1, -1):
        message = messages[units[index][0]]
        if message.role == "user" and not is_corrective(message) and not is_pinned(message):
            return index
    return None


def _squeezed(messages: Sequence[Message], sizes: Sequence[int]) -> int:
    """What `messages` take at least once their tool results are cut as far as step 3 cuts."""
    floor = 50 + MESSAGE_OVERHEAD + CUT_NOTE_TOKENS
    return sum(
        min(size, floor) if m.role == "tool" else size for m, size in zip(messages, sizes, strict=True)
    )
