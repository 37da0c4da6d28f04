"""`jianmu-like eval` and `jianmu_like.evals`: datasets run through an agent file over real HTTP
against the scripted OpenAI-compatible server, scored, reported and compared."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from jianmu_like.evals import EvalError, compare, evaluate, load_dataset, load_report
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, ScriptItem, call, error_reply, reply
from tests.cli.running import PRESETS, environment, in_process

SECRET = "eval-secret-abcdefghijklmnop"  # no key-like pattern: masked by value
JUDGE_PASS = '{"passed": true, "score": 0.9, "reason": "the sum is right"}'
JUDGE_FAIL = '{"passed": false, "score": 0.2, "reason": "no number given"}'


class Backend:
    """Answers by question (cases run concurrently, so order is not fixed) and counts how many
    requests are in flight at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.in_flight = 0
        self.most = 0

    def __call__(self, body: dict[str, Any]) -> ScriptItem:
        with self.lock:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
        try:
            return self.answer(body)
        finally:
            with self.lock:
                self.in_flight -= 1

    def answer(self, body: dict[str, Any]) -> ScriptItem:
        messages = body["messages"]
        if str(messages[0].get("content", "")).startswith("You grade"):
            graded = "\n".join(str(m.get("content")) for m in messages)
            if "unanswerable rubric" in graded:
                return error_reply(400, "the judge model refuses")
            return reply(JUDGE_FAIL if "Answer:\nsoon" in graded else JUDGE_PASS)
        question = next(m["content"] for m in messages if m["role"] == "user")
        tools_done = sum(m["role"] == "tool" for m in messages)
        if question == "My name is Ada." and messages[-1]["content"] == "What is my name?":
            return reply("Ada")  # the thread came before the question
        if question.startswith("slow"):
            time.sleep(0.25)
            return reply("done")
        if "2 + 3" in question:
            return reply("5") if tools_done else call("calculator", expression="2 + 3")
        if "think first" in question:  # think, then calculate
            steps = [call("think", thought="plan"), call("calculator", expression="1 + 1"), reply("2")]
            return steps[tools_done]
        if "leak" in question:
            return reply(f"the key is {SECRET}")
        if "broken" in question:
            return error_reply(400, "the model refuses this request")
        if "when" in question:
            return reply("soon")
        return reply("forty-two")


@pytest.fixture(scope="module")
def backend() -> Iterator[tuple[Backend, str]]:
    responder = Backend()
    with ScriptedOpenAIServer(responder) as srv:
        yield responder, srv.base_url


@pytest.fixture
def model(backend: tuple[Backend, str], monkeypatch: pytest.MonkeyPatch) -> Backend:
    responder, base_url = backend
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    for name in ("JIANMU_CONFIG", "JIANMU__LLM__STREAM"):
        monkeypatch.delenv(name, raising=False)
    return responder


Cli = Callable[..., tuple[int, str]]


@pytest.fixture
def cli(
    backend: tuple[Backend, str],
    model: Backend,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> Cli:
    """The CLI's `main` in this process against the scripted server."""
    run = in_process(backend[1], monkeypatch, capsys)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    return run


DATASET = """\
cases:
  - name: sum
    inputs: "What is 2 + 3?"
    expected_output: "5"
    metadata: {topic: arithmetic}
    evaluators:
      - EqualsExpected
      - ToolCalls: {calls: [{name: calculator, arguments: {expression: "2 + 3"}}], order: exact}
      - NodesRan: {nodes: [Tools], absent: [Synthesize]}
      - Limits: {max_iterations: 2, max_tokens: 100}
  - name: answer
    inputs: {question: "What is six times seven?"}
    expected_output: "42"
    evaluators: [EqualsExpected]
evaluators:
  - Regex: {pattern: "\\\\S"}
"""


def write(tmp_path: Path, text: str, name: str = "cases.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_eval_cli_table_reports_and_exit_code(tmp_path: Path, cli: Cli) -> None:
    dataset = write(tmp_path, DATASET)
    paths = [tmp_path / "r.json", tmp_path / "r.html", tmp_path / "r.md"]
    reports = [a for p in paths for a in ("--report", str(p))]
    code, out = cli("eval", str(dataset), str(PRESETS / "react.yaml"), *reports)
    assert code == 1, out  # a case failed
    assert "│ sum " in out and "✓ pass" in out and "✓ ToolCalls" in out
    assert "│ answer " in out and "✗ FAIL" in out and "✗ EqualsExpected" in out
    assert "2 cases: 1 passed, 1 failed" in out
    assert "2/2 cases run" in out  # progress (on stderr)
    data = json.loads(paths[0].read_text())
    assert data["format"] == "jianmu-eval/1"
    by_name = {c["name"]: c for c in data["cases"]}
    assert by_name["sum"]["passed"] and by_name["sum"]["metadata"] == {"topic": "arithmetic"}
    trace = by_name["sum"]["trace"]
    assert [c["name"] for c in trace["tool_calls"]] == ["calculator"]
    assert trace["tool_calls"][0]["arguments"] == {"expression": "2 + 3"}
    assert trace["iterations"] == 2 and trace["total_tokens"] == 30
    assert "Calculator.Tools" in trace["nodes"]
    assert not by_name["answer"]["passed"] and by_name["answer"]["output"] == "forty-two"
    assert by_name["answer"]["assertions"]["Regex"]["value"] is True  # dataset-wide evaluator
    page = paths[1].read_text()
    assert page.startswith("<!doctype html>") and "<script" not in page
    assert "<td>answer</td>" in page and 'class="fail">FAIL' in page and "1 passed, 1 failed" in page
    md = paths[2].read_text()
    assert "| sum | pass |" in md and "| answer | **FAIL** |" in md


def test_eval_cli_all_pass_exits_0_and_json(tmp_path: Path, cli: Cli) -> None:
    dataset = write(tmp_path, "cases:\n  - inputs: 'What is 2 + 3?'\n    expected_output: '5'\n"
                    "    evaluators: [EqualsExpected, {Contains: '5'}]\n")  # fmt: skip
    code, out = cli("eval", str(dataset), str(PRESETS / "react.yaml"), "--json")
    assert code == 0, out
    report, _ = json.JSONDecoder().raw_decode(out, out.index("{"))  # stdout, then stderr's progress
    assert report["cases"][0]["passed"] and report["cases"][0]["assertions"]["Contains"]["value"] is True


async def test_a_trajectory_assertion_fails_when_the_tool_order_differs(
    tmp_path: Path, model: Backend
) -> None:
    dataset = write(
        tmp_path,
        """\
cases:
  - name: planned
    inputs: "think first, then add 1 + 1"
    evaluators:
      - ToolCalls: {calls: [think, calculator], order: exact}
  - name: reversed
    inputs: "think first, then add 1 + 1"
    evaluators:
      - ToolCalls: {calls: [calculator, think], order: in_order}
  - name: any order
    inputs: "think first, then add 1 + 1"
    evaluators:
      - ToolCalls: {calls: [calculator, think], order: any_order, forbidden: [search]}
  - name: wrong arguments
    inputs: "think first, then add 1 + 1"
    evaluators:
      - ToolCalls: {calls: [{name: calculator, arguments: {expression: "2 + 2"}}]}
""",
    )
    report = await evaluate(dataset, PRESETS / "react.yaml", concurrency=2)
    verdicts = {c.name: c.passed for c in report.cases}
    assert verdicts == {"planned": True, "reversed": False, "any order": True, "wrong arguments": False}
    why = report.case("reversed")
    assert why is not None
    assert why.assertions["ToolCalls"].reason == (
        "expected calculator, think (in_order); "
        'calls: think({"thought": "plan"}), calculator({"expression": "1 + 1"})'
    )


async def test_llm_judge_over_the_project_model_client(tmp_path: Path, model: Backend) -> None:
    dataset = write(
        tmp_path,
        """\
cases:
  - name: right
    inputs: "What is 2 + 3?"
  - name: vague
    inputs: "when is it done?"
evaluators:
  - Judge: {rubric: "The answer gives a number."}
""",
    )
    report = await evaluate(dataset, PRESETS / "react.yaml")
    right, vague = report.case("right"), report.case("vague")
    assert right is not None and vague is not None
    assert right.passed and right.assertions["Judge"].reason == "the sum is right"
    assert right.scores["Judge_score"].value == 0.9
    assert not vague.passed and vague.assertions["Judge"].reason == "no number given"
    assert vague.scores["Judge_score"].value == 0.2


async def test_a_judge_that_cannot_answer_fails_the_case_naming_it(tmp_path: Path, model: Backend) -> None:
    dataset = write(
        tmp_path,
        "cases:\n  - {name: q, inputs: 'What is 2 + 3?', evaluators: [{Judge: unanswerable rubric}]}\n",
    )
    case = (await evaluate(dataset, PRESETS / "react.yaml")).cases[0]
    assert not case.passed and case.error is None  # the run was fine: the evaluator raised
    assert "Judge" in case.evaluator_errors and "the judge model refuses" in case.evaluator_errors["Judge"]
    assert case.reasons()[0].startswith("Judge raised: ")


async def test_a_case_continues_the_thread_it_gives(tmp_path: Path, model: Backend) -> None:
    dataset = write(
        tmp_path,
        """\
cases:
  - name: thread
    inputs:
      question: "What is my name?"
      messages: [{role: user, content: "My name is Ada."}, {role: assistant, content: "Hello Ada."}]
    expected_output: Ada
    evaluators: [EqualsExpected]
""",
    )
    report = await evaluate(dataset, PRESETS / "react.yaml")
    assert report.cases[0].passed, report.cases[0]


async def test_a_failing_run_is_a_failed_case_with_its_reason(tmp_path: Path, model: Backend) -> None:
    dataset = write(
        tmp_path, "cases:\n  - {name: broken, inputs: 'broken request'}\n  - {name: fine, inputs: 'hi'}\n"
    )
    report = await evaluate(dataset, PRESETS / "react.yaml")
    broken = report.case("broken")
    assert broken is not None and not broken.passed
    assert broken.error is not None and "CaseRunFailed: the run failed (model_error)" in broken.error
    assert "the model refuses this request" in broken.error
    assert broken.trace is not None and broken.trace.status == "failure"
    fine = report.case("fine")
    assert fine is not None and fine.passed  # the other case ran and was scored


async def test_concurrency_bounds_the_runs_in_flight(tmp_path: Path, model: Backend) -> None:
    cases = "".join(f"  - {{name: c{i}, inputs: 'slow {i}'}}\n" for i in range(6))
    dataset = write(tmp_path, f"cases:\n{cases}")
    model.most = 0
    seen: list[tuple[int, int]] = []
    report = await evaluate(
        dataset, PRESETS / "react.yaml", concurrency=2, on_progress=lambda d, t: seen.append((d, t))
    )
    assert report.passed == 6
    assert model.most == 2  # two at once, never more
    assert seen[-1] == (6, 6) and len(seen) == 6


async def test_secrets_are_redacted_from_reports(tmp_path: Path, model: Backend) -> None:
    dataset = write(tmp_path, "cases:\n  - {name: leak, inputs: 'leak it', expected_output: 'x'}\n")
    report = await evaluate(dataset, PRESETS / "react.yaml")
    assert SECRET not in report.model_dump_json()
    assert report.cases[0].output == "the key is ***"


def test_compare_names_each_regression(tmp_path: Path, cli: Cli) -> None:
    old = load_report_from(tmp_path, "old", passed={"sum": True, "words": True}, score=0.9)
    new = load_report_from(tmp_path, "new", passed={"sum": False, "words": True}, score=0.5)
    comparison = compare(load_report(old), load_report(new))
    assert [str(r) for r in comparison.regressions] == [
        "sum: passed, now fails: EqualsExpected: expected 5",
        "sum: score Judge_score dropped 0.9 → 0.5",
        "words: score Judge_score dropped 0.9 → 0.5",
    ]
    code, out = cli("eval", "compare", str(old), str(new))
    assert code == 1
    assert "regression: sum: passed, now fails" in out and "3 regression(s)" in out
    code, out = cli("eval", "compare", str(old), str(old))
    assert code == 0 and "no regression" in out
    code, out = cli("eval", "compare", str(old), str(tmp_path / "missing.json"))
    assert code == 2 and "cannot read the report" in out


def load_report_from(tmp_path: Path, name: str, *, passed: dict[str, bool], score: float) -> Path:
    from jianmu_like.evals import CaseResult, EvalReport, Outcome

    cases = [
        CaseResult(
            name=case,
            passed=ok,
            question="q",
            assertions={"EqualsExpected": Outcome(value=ok, reason=None if ok else "expected 5")},
            scores={"Judge_score": Outcome(value=score)},
        )
        for case, ok in passed.items()
    ]
    path = tmp_path / f"{name}.json"
    path.write_text(EvalReport(dataset="d", agent="a", cases=cases).model_dump_json())
    return path


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            "cases:\n  - {inputs: q, evaluators: [Regx]}\n",
            "cases[0].evaluators[0]: unknown evaluator 'Regx' (did you mean 'Regex'?)",
        ),
        ("cases:\n  - {inputs: q}\nevaluators: [{MaxToolCalls: 3}]\n", "use Limits (max_tool_calls)"),
        ("cases:\n  - {inputs: q, evaluators: [{Regex: '('}]}\n", "is not a regular expression"),
        (
            "cases:\n  - {inputs: q, evaluators: [{ToolCalls: {calls: [a], order: sideways}}]}\n",
            "order must be one of",
        ),
        (
            "cases:\n  - {inputs: q, evaluators: [{Limits: {max_turns: 3}}]}\n",
            "Limits: Limits.__init__() got an unexpected keyword argument 'max_turns'",
        ),
        (
            "cases:\n  - {inputs: {question: q, thread: x}}\n",
            "cases[0].inputs.thread: unknown key",
        ),
        ("cases: {}\n", "a dataset is a mapping with a list of `cases:`"),
        ("cases: []\n", "the dataset has no cases"),
        (
            "cases:\n  - {inputs: {question: q, messages: [{role: robot, content: hi}]}}\n",
            "cases[0].inputs.messages[0].role",
        ),
        ("cases:\n  - {name: a, inputs: q}\n  - {name: a, inputs: r}\n", "Duplicate case name: 'a'"),
    ],
)
def test_a_bad_dataset_is_an_error_naming_the_place(tmp_path: Path, text: str, problem: str) -> None:
    with pytest.raises(EvalError) as info:
        load_dataset(write(tmp_path, text))
    assert problem in str(info.value)


def test_the_cli_refuses_a_bad_dataset_and_report_suffix(tmp_path: Path, cli: Cli) -> None:
    bad = write(tmp_path, "cases:\n  - {inputs: q, evaluators: [Contian]}\n")
    code, out = cli("eval", str(bad), str(PRESETS / "react.yaml"))
    assert code == 2 and "did you mean 'Contains'?" in out
    good = write(tmp_path, "cases:\n  - {inputs: q}\n", "good.yaml")
    code, out = cli("eval", str(good), str(PRESETS / "react.yaml"), "--report", str(tmp_path / "r.txt"))
    assert code == 2 and "a report is .json, .html or .md" in out
    code, out = cli("eval", str(good))
    assert code == 2 and "usage: jianmu-like eval DATASET AGENT_FILE" in out
    code, out = cli("eval", str(good), str(tmp_path / "nosuch.yaml"))
    assert code == 2 and "nosuch.yaml: no such file" in out  # before any case runs


def test_without_the_extra_the_cli_names_it(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['pydantic_evals'] = None\n"
        "from jianmu_like.cli._main import main\n"
        "sys.exit(main(['eval', 'cases.yaml', 'react']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=PATIENCE,
    )
    assert done.returncode == 2, done.stderr
    assert "pip install 'jianmu_like[evals]'" in done.stderr


@pytest.mark.usefixtures("cli")  # the scripted model's environment
def test_progress_goes_to_stderr_and_json_alone_to_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from jianmu_like.cli._main import main

    dataset = write(tmp_path, "cases:\n  - {name: sum, inputs: 'What is 2 + 3?', expected_output: '5'}\n")
    assert main(["eval", str(dataset), "react", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["cases"][0]["passed"] is True  # stdout is the report, nothing else
    assert "1/1 cases run" in err and "evaluating 1 case(s)" in err


async def test_cases_replayed_from_recordings_call_no_model(
    tmp_path: Path, model: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jianmu_like import human, load_agent

    agent = load_agent(PRESETS / "react.yaml")
    async with agent:
        question = "What is 2 + 3?"
        await agent.run({"task": question, "messages": [human(question)]}, record=tmp_path / "sum.jsonl")
    changed = tmp_path / "changed.yaml"
    changed.write_text((PRESETS / "react.yaml").read_text().replace("You are a careful", "You are a hasty"))
    dataset = write(
        tmp_path,
        """\
cases:
  - name: replayed
    inputs: {recording: sum.jsonl}
    expected_output: "5"
    evaluators:
      - EqualsExpected
      - ToolCalls: {calls: [{name: calculator, arguments: {expression: "2 + 3"}}], order: exact}
""",
    )
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens: no model reachable
    report = await evaluate(dataset, PRESETS / "react.yaml")
    replayed = report.case("replayed")
    assert replayed is not None and replayed.passed, replayed
    assert replayed.question == "(replay of sum.jsonl)"
    assert replayed.trace is not None and replayed.trace.total_tokens == 30
    diverged = (await evaluate(dataset, changed)).case("replayed")
    assert diverged is not None and not diverged.passed
    assert diverged.error is not None and diverged.error.startswith("ReplayDivergence: replay diverged")
    assert (
        "node Calculator/Calculator.Loop/Calculator.LLM" in diverged.error
        and "You are a hasty" in diverged.error
    )
