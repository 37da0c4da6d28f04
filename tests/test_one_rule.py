"""Each rule is written once (issue 19, "one of each rule"): two copies drift apart, and the bugs
came from there (a kind forgotten in one of five lists, shorthands merged two ways). These tests
find a second copy in the package source, so it cannot come back unnoticed; the behaviour of each
rule is tested where it is used."""

from __future__ import annotations

import re
from pathlib import Path

from jianmu_like.models import _json_text as json_text
from jianmu_like.models import _react_text as react_text
from jianmu_like.models import _structured as structured
from jianmu_like.models import _text_protocol as text_protocol

PACKAGE = Path(__file__).resolve().parents[1] / "jianmu_like"


def places(pattern: str) -> list[str]:
    """`file:line` of every line of the package source matching `pattern`."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(pattern, line):
                found.append(f"{path.relative_to(PACKAGE)}:{number}")
    return found


def files(pattern: str) -> list[str]:
    """The files of `places(pattern)`, one entry per match."""
    return [place.rsplit(":", 1)[0] for place in places(pattern)]


def test_one_fence_rule() -> None:
    assert places(r"re\.compile\(r?\"```") == [
        "models/_json_text.py:" + places(r"^_FENCE = ")[0].split(":")[1]
    ]
    for module in (react_text, structured, text_protocol):
        assert module.unfenced is json_text.unfenced
    assert json_text.unfenced('```json\n{"a": 1}\n```') == '{"a": 1}\n'


def test_the_tool_protocol_literal_is_declared_once() -> None:
    assert places(r"Literal\[\"native\", \"json\", \"text\", \"auto\"\]") == [
        "_base/config.py:" + _line("_base/config.py")
    ]


def _line(file: str) -> str:
    text = (PACKAGE / file).read_text().splitlines()
    return str(next(i for i, line in enumerate(text, 1) if line.startswith("ToolProtocol = ")))


def test_one_class_per_name() -> None:
    """Two public classes of one name (the plan-and-execute `PlanStep` data and the supervisor's
    `PlanStep` node) read as one thing in docs, tracebacks and `show`."""
    names: dict[str, list[str]] = {}
    for place in places(r"^class [A-Za-z]\w*"):  # public classes
        file, number = place.rsplit(":", 1)
        line = (PACKAGE / file).read_text().splitlines()[int(number) - 1]
        names.setdefault(line.split()[1].split("(")[0].rstrip(":"), []).append(file)
    assert {name: files for name, files in names.items() if len(files) > 1} == {}


def test_one_formatter_of_validation_errors() -> None:
    """pydantic's errors are read in `validation` only (six formatters worded them six ways)."""
    assert sorted(set(files(r"\.errors\(|\[\"msg\"\]"))) == ["_base/validation.py"]


def test_one_json_schema_path() -> None:
    """JSON schemas are validated through `json_schema` only (its public `jsonschema` and
    `referencing` use); tool arguments had a hand-written subset, structured output its own call."""
    assert sorted(set(files(r"^\s*(from|import) (jsonschema|referencing)\b"))) == [
        "_base/json_schema.py",
        "_base/schema_refs.py",
    ]
    assert places(r"jsonschema\.\w*\._|\._resolver\b") == []  # no private API


def test_one_run_status_vocabulary() -> None:
    """`bt.runner.RunStatus` (three types of that name had three vocabularies; DBOS's workflow
    statuses are its own wire format, named `WorkflowStatus`)."""
    assert places(r"^RunStatus = ") == [f"bt/_runner.py:{_line_of('bt/_runner.py', 'RunStatus = ')}"]
    assert places(r"Literal\[\"success\", \"failure\", \"suspended\"") == [
        f"bt/_runner.py:{_line_of('bt/_runner.py', 'EndStatus = ')}"
    ]


def _line_of(file: str, start: str) -> int:
    lines = (PACKAGE / file).read_text().splitlines()
    return next(number for number, line in enumerate(lines, 1) if line.startswith(start))


def test_tools_are_described_by_one_module() -> None:
    """`tool_text` renders tools for prompts (`tools.describe` for a Tool, the text tool
    protocols for a request's functions); there were two `describe_tool`s with two type rules."""
    for name in ("describe_tool", "type_label", "_first_sentence"):
        assert len(places(rf"^def {name}\b")) == 1, name
    from jianmu_like._base.tool_text import function_line

    schema = {"type": "object", "properties": {"ids": {"type": "array", "items": {"type": "integer"}}}}
    line = function_line({"name": "get", "description": "Fetch rows. Slow.", "parameters": schema})
    assert line == "- get(ids: array of integer (optional)): Fetch rows."
