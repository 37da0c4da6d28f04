"""The seam matrix's parts: the scenarios (one per feature), the scripted model that plays them
all over real HTTP and counts what it served, and what every path's run is reduced to.

Each scenario is an agent file (written by `write_agent_files`) and the model's side of one
conversation. Every scenario calls one gated tool (its `gate`): in the matrix its call waits for
a human's approval, so the run suspends there and is resumed (in the same agent, in a fresh
agent from SQLite or PostgreSQL, over the server's API, on a durable worker); the reference run
of the same file without the gate never stops. Where a feature keeps something across the run
(a re-ask already spent, the selected tools, the trace synthesis reads, a follow-up, an
artifact) the scenario puts it before the suspension, so the resume has to carry it.
"""

from __future__ import annotations

import itertools
import json
import shutil
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from jianmu_like.models import Usage
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, ScriptedReply, call, calls, reply
from jianmu_like.testing._script import ScriptItem

HERE = Path(__file__).resolve().parent
MODEL = "scripted-model"
TOOLS_MODULE = "matrix_tools"
"""The name of `seam_tools.py` beside the agent files (another than its own, so that the agent
files' module can never be confused with the test package's; an agent file may name only the
modules of its own folder)."""


@dataclass(frozen=True)
class Turn:
    """A request of the ReAct loop, as a scenario reads it."""

    body: Mapping[str, Any]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body["messages"])

    @property
    def tool_results(self) -> int:
        return sum(m["role"] == "tool" for m in self.messages)

    @property
    def answers(self) -> int:
        """Assistant messages so far (replies and tool-call turns)."""
        return sum(m["role"] == "assistant" for m in self.messages)


Injector = Callable[[str], None]


@dataclass(frozen=True)
class Scenario:
    """One feature's agent file and the model's side of its conversation."""

    name: str
    question: str
    answer: str
    loop: Callable[[Turn, Model], ScriptItem]
    """The loop's replies (selection and synthesis requests are answered by `Model`)."""
    spec: dict[str, Any] = field(default_factory=dict)
    gate: str = "lookup"
    tools: tuple[str, ...] = ("lookup",)

    def agent_file(self, folder: Path, *, gated: bool) -> Path:
        return folder / f"{self.name}{'' if gated else '_ungated'}.yaml"

    def document(self, *, gated: bool) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "kind": "react",
            "name": self.name.title().replace("_", ""),
            "model": MODEL,
            "tools": [f"{TOOLS_MODULE}:{name}" for name in self.tools],
            "limits": {"max_iterations": 8},
            "llm": {"stream": True},
            **self.spec,
        }
        if gated:
            doc["guard"] = {"require_approval": {"tools": [self.gate], "reason": "the seam matrix's gate"}}
        return doc


SYNTHESISED = "Paris has about 2.1 million inhabitants."
FOLLOW_UP = "And how many people live in Paris?"
CITY_JSON = '{"city": "Paris", "population": 2.1}'


def _synthesis(turn: Turn, model: Model) -> ScriptItem:
    return call("lookup", city="Paris") if turn.tool_results == 0 else reply("DRAFT: 2.1 million")


def _answer_check(turn: Turn, model: Model) -> ScriptItem:
    if turn.answers == 0:
        return reply("No")  # too short: re-asked before the suspension
    if turn.tool_results == 0:
        return call("lookup", city="Paris")
    return reply("It is 2.1 million, after checking.")


def _output_type(turn: Turn, model: Model) -> ScriptItem:
    if turn.answers == 0:
        return reply("Paris, 2.1 million.")  # not the output type: re-asked before the suspension
    if turn.tool_results == 0:
        return call("lookup", city="Paris")
    return reply(CITY_JSON)


def _interrupt(turn: Turn, model: Model) -> ScriptItem:
    if turn.answers == 0:
        model.inject(FOLLOW_UP)  # arrives while the model writes its answer: held back
        return reply("X is 1, as far as I know.")
    if turn.tool_results == 0:
        return call("lookup", city="Paris")
    return reply("X is 1, and Paris has 2.1 million inhabitants.")


def _tool_selection(turn: Turn, model: Model) -> ScriptItem:
    return call("lookup", city="Paris") if turn.tool_results == 0 else reply("Paris: 2.1 million people.")


def _context_guard(turn: Turn, model: Model) -> ScriptItem:
    return call("census", city="Paris") if turn.tool_results == 0 else reply("The census counts 2.1 million.")


def _artifacts(turn: Turn, model: Model) -> ScriptItem:
    if turn.tool_results == 0:
        return call("report", city="Paris")
    if turn.tool_results == 1:
        return call("lookup", city="Paris")
    return reply("The report is ready: 2.1 million.")


CONTEXT_WINDOW = 1200
SCENARIOS: tuple[Scenario, ...] = (
    Scenario("synthesis", "Synthesis: how many people live in Paris?", SYNTHESISED, _synthesis,
             {"synthesize": True}),
    Scenario("answer_check", "Answer check: how many people live in Paris?",
             "It is 2.1 million, after checking.", _answer_check, {"answer_check": {"min_chars": 5}}),
    Scenario("output_type", "Output type: the population of Paris as JSON", CITY_JSON, _output_type,
             {"output_schema": {
                 "type": "object",
                 "properties": {"city": {"type": "string"}, "population": {"type": "number"}},
                 "required": ["city", "population"],
             }}),
    Scenario("interrupts", "Interrupts: what is X?", "X is 1, and Paris has 2.1 million inhabitants.",
             _interrupt),
    Scenario("tool_selection", "Tool selection: how many people live in Paris?",
             "Paris: 2.1 million people.", _tool_selection,
             {"tool_selection": {"threshold": 2, "max_tools": 2}},
             tools=("lookup", "area", "founded", "census", "report")),
    Scenario("context_guard", "Context guard: what does the census of Paris say?",
             "The census counts 2.1 million.", _context_guard,
             {"context": {"window": CONTEXT_WINDOW, "reserve_tokens": 200, "tokenizer": "estimate"}},
             gate="census", tools=("census",)),
    Scenario("artifacts", "Artifacts: a report on Paris, please.", "The report is ready: 2.1 million.",
             _artifacts, tools=("report", "lookup")),
)  # fmt: skip
BY_NAME = {scenario.name: scenario for scenario in SCENARIOS}
SELECTED = ["lookup", "area"]


Requests = list[dict[str, Any]]


def _contents(body: Mapping[str, Any]) -> list[str]:
    return [m.get("content") or "" for m in body["messages"]]


def _synthesis_requests(requests: Requests) -> None:
    """One synthesis call, the last, and its trace spans the run: the question and the tool
    result of the approved call (made before the suspension, run after it)."""
    drafts = [i for i, body in enumerate(requests) if "Draft answer:" in json.dumps(body["messages"])]
    assert drafts == [len(requests) - 1], drafts
    prompt = "\n".join(_contents(requests[-1]))
    assert BY_NAME["synthesis"].question in prompt
    assert '1. lookup({"city": "Paris"}) -> 2.1 million' in prompt, prompt


def _one_correction(prefix: str) -> Callable[[Requests], None]:
    def check(requests: Requests) -> None:
        """The rejected answer was re-asked once, and the correction stays in the history."""
        corrections = [c for c in _contents(requests[-1]) if c.startswith(prefix)]
        assert len(corrections) == 1, _contents(requests[-1])

    return check


def _interrupt_requests(requests: Requests) -> None:
    """The last call sees the question and the one follow-up, once each."""
    last = _contents(requests[-1])
    assert last.count(BY_NAME["interrupts"].question) == 1, last
    assert last.count(f"[USER INTERRUPT] {FOLLOW_UP}") == 1, last


def _selection_requests(requests: Requests) -> None:
    """Tools are selected once per run (not again after the resume), and every loop call sends
    only the selected schemas."""
    sent = [[t["function"]["name"] for t in body.get("tools") or ()] for body in requests]
    assert sent[0] == ["select_tools"] and sent.count(["select_tools"]) == 1, sent
    assert all(names == SELECTED for names in sent[1:]), sent


def _guarded_requests(requests: Requests) -> None:
    """Every request fits the window (the census alone is about twice its size)."""
    for body in requests:
        tokens = sum(len(c) for c in _contents(body)) / 4  # the guard's `estimate` tokenizer
        assert tokens <= CONTEXT_WINDOW, tokens


def _artifact_requests(requests: Requests) -> None:
    """The report reached the user whole, never the model."""
    assert all("<p>row</p><p>row</p>" not in json.dumps(body) for body in requests)


REQUEST_CHECKS: dict[str, Callable[[Requests], None]] = {
    "synthesis": _synthesis_requests,
    "answer_check": _one_correction("Your final answer is too short"),
    "output_type": _one_correction("Your final answer is not valid"),
    "interrupts": _interrupt_requests,
    "tool_selection": _selection_requests,
    "context_guard": _guarded_requests,
    "artifacts": _artifact_requests,
}
"""What each feature's requests must show in every cell, across the resume."""


def write_agent_files(folder: Path) -> Path:
    """Every scenario's agent file, gated and not, beside a copy of their tools module."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(HERE / "seam_tools.py", folder / f"{TOOLS_MODULE}.py")
    for scenario in SCENARIOS:
        for gated in (True, False):
            text = yaml.safe_dump(scenario.document(gated=gated), sort_keys=False)
            scenario.agent_file(folder, gated=gated).write_text(text)
    return folder


class Model:
    """The scripted OpenAI-compatible server playing every scenario (told apart by its question,
    which every request of a run quotes), counting the usage of each reply it served.

    Each reply reports a different usage, so a usage counted twice or lost across a resume
    shows in the sums."""

    def __init__(self) -> None:
        self.server = ScriptedOpenAIServer(self.respond)
        self._lock = threading.Lock()
        self._served: list[tuple[str, Usage]] = []
        self._bodies: list[tuple[str, dict[str, Any]]] = []
        self._numbers = itertools.count(1)
        self.injector: Injector | None = None
        self._injector_set = threading.Event()

    def __enter__(self) -> Model:
        self.server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop()

    @property
    def base_url(self) -> str:
        return self.server.base_url

    # ------------------------------------------------------------------ follow-ups
    def expect_follow_up(self, injector: Injector | None) -> None:
        """How the current run takes a follow-up (`Agent.inject`, the server's inject route);
        None: not known yet (the responder waits for it)."""
        self.injector = injector
        if injector is None:
            self._injector_set.clear()
        else:
            self._injector_set.set()

    def inject(self, content: str) -> None:
        if not self._injector_set.wait(PATIENCE) or self.injector is None:
            raise RuntimeError("the scenario sends a follow-up, but the path gave no way to send one")
        self.injector(content)

    # ------------------------------------------------------------------ replies
    def respond(self, body: dict[str, Any]) -> ScriptItem:
        text = json.dumps(body["messages"])
        scenario = next((s for s in SCENARIOS if json.dumps(s.question)[1:-1] in text), None)
        if scenario is None:
            raise AssertionError(f"no scenario asks this: {text[:300]}")
        tools = [t["function"]["name"] for t in body.get("tools") or ()]
        if tools == ["select_tools"]:
            item: ScriptItem = calls(call("select_tools", tools=SELECTED))
        elif not tools and "Draft answer:" in text:
            item = reply(SYNTHESISED)
        else:
            item = scenario.loop(Turn(body), self)
        return self._served_as(scenario.name, item, body)

    def _served_as(self, scenario: str, item: ScriptItem, body: dict[str, Any]) -> ScriptedReply:
        found = item if isinstance(item, ScriptedReply) else calls(item)
        n = next(self._numbers)
        usage = Usage(prompt_tokens=100 + n, completion_tokens=n % 7 + 1, calls=1)
        usage = usage.model_copy(update={"total_tokens": usage.prompt_tokens + usage.completion_tokens})
        with self._lock:
            self._served.append((scenario, usage))
            self._bodies.append((scenario, body))
        return found.model_copy(update={"usage": usage})

    def since(self, scenario: Scenario) -> Served:
        """What the server serves `scenario` from now on (read when the cell's run is over)."""
        with self._lock:
            return Served(self, scenario.name, len(self._served))

    def served_since(self, mark: int, scenario: str) -> Usage:
        """The sum of the usage the server reported for `scenario`'s replies since `mark`."""
        with self._lock:
            served = [usage for name, usage in self._served[mark:] if name == scenario]
        return sum(served, Usage())

    def requests_since(self, mark: int, scenario: str) -> list[dict[str, Any]]:
        """The bodies of `scenario`'s requests answered since `mark`, oldest first."""
        with self._lock:
            return [body for name, body in self._bodies[mark:] if name == scenario]


@dataclass
class Outcome:
    """What one path's run amounts to, for the same assertions everywhere."""

    status: str
    final_answer: str | None
    shown: str
    """What the user was shown as the answer (the answer channel, a `done`, a CLI's output)."""
    usage: Usage
    messages: list[dict[str, Any]]
    artifacts: list[str] = field(default_factory=list)
    output: Any = None
    """The structured answer as JSON data."""
    gives_output: bool = True
    """Whether the path hands the structured answer back (the server shows only the text)."""


def normalised(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A conversation without what legitimately differs between two runs of it: tool-call ids
    (the server numbers them) become their order of appearance."""
    ids: dict[str, int] = {}
    out: list[dict[str, Any]] = []
    for m in messages:
        entry: dict[str, Any] = {"role": m["role"], "content": m.get("content")}
        for tool_call in m.get("tool_calls") or ():
            ids.setdefault(tool_call["id"], len(ids))
        if m.get("tool_calls"):
            entry["tool_calls"] = [(ids[c["id"]], *_name_and_arguments(c)) for c in m["tool_calls"]]
        if m.get("tool_call_id") is not None:
            entry["tool_call_id"] = ids.setdefault(m["tool_call_id"], len(ids))
        out.append(entry)
    return out


def _name_and_arguments(tool_call: Mapping[str, Any]) -> tuple[str, Any]:
    """A tool call as the framework dumps it (`name`, `arguments`) or as OpenAI's wire has it
    (`function.name`, `function.arguments` as JSON text)."""
    if "function" in tool_call:
        function = tool_call["function"]
        return function["name"], json.loads(function["arguments"] or "{}")
    return tool_call["name"], tool_call.get("arguments")


def usage_of(value: Usage | Mapping[str, Any]) -> tuple[int, int, int, int]:
    usage = value if isinstance(value, Usage) else Usage.model_validate(value)
    return usage.prompt_tokens, usage.completion_tokens, usage.total_tokens, usage.calls


@dataclass(frozen=True)
class Served:
    """A scenario's replies served by `model` after `mark`: their usage summed, the requests."""

    model: Model
    scenario: str
    mark: int

    @property
    def usage(self) -> Usage:
        return self.model.served_since(self.mark, self.scenario)

    @property
    def requests(self) -> Requests:
        return self.model.requests_since(self.mark, self.scenario)


def assert_cell(scenario: Scenario, got: Outcome, uninterrupted: Outcome, served: Served) -> None:
    """What every cell of the matrix must show: the run's answer is the scenario's, and it is
    what the user was shown; its usage is what the model server reported, call for call; its
    conversation is the uninterrupted run's, nothing lost or repeated across the resume."""
    assert got.status == "success", got
    assert got.final_answer == scenario.answer
    assert got.shown == got.final_answer
    assert usage_of(got.usage) == usage_of(served.usage)
    assert normalised(got.messages) == normalised(uninterrupted.messages)
    assert got.artifacts == (["report.html"] if scenario.name == "artifacts" else [])
    REQUEST_CHECKS[scenario.name](served.requests)
    if got.gives_output:
        assert got.output == (json.loads(CITY_JSON) if scenario.name == "output_type" else None)
