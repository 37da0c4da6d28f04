"""The event catalogue: every event type declared once with a typed payload, emitters held to
it, no event type spelled as a string literal outside it, and the README's table matching it."""

from __future__ import annotations

import ast
import dataclasses
import re
import typing
from pathlib import Path

import pytest
from pydantic import ValidationError

import jianmu_like
import jianmu_like.telemetry._hub as hub_module
from jianmu_like import Agent, ReActConfig, create_react_node, human
from jianmu_like.errors import JianmuError, UnknownEventType
from jianmu_like.telemetry import TelemetryHub
from jianmu_like.telemetry import events as ev
from jianmu_like.testing import ScriptedOpenAIServer, call, reply
from jianmu_like.tools.builtin import calculator

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(jianmu_like.__file__).parent
TABLE_HEADER = "| event | emitted by | data |"


def _fields(name: str) -> set[str]:
    envelope = {f.name for f in dataclasses.fields(ev.TypedEvent)}
    own = {f.name for f in dataclasses.fields(ev.CATALOGUE[name].payload)} - envelope - {"extra"}
    return {"data" if field == "log_data" else field for field in own}  # mcp.log's `data`


# ------------------------------------------------------------------ the catalogue and its check
def test_every_constant_of_the_module_is_a_declared_type() -> None:
    constants = {value for key, value in vars(ev).items() if key.isupper() and isinstance(value, str)}
    assert constants == set(ev.CATALOGUE)
    with pytest.raises(ValueError, match="declared twice"):
        ev.declare(ev.TOOL_CALL_STARTED, ev.ToolCallStarted)


def test_each_type_is_a_frozen_class_named_by_its_literal_type_and_the_union_lists_them_all() -> None:
    classes = [entry.payload for entry in ev.CATALOGUE.values()]
    assert len(set(classes)) == len(classes)  # one class per type: `match` tells them apart
    assert set(typing.get_args(ev.CatalogueEvent)) == set(classes)
    for name, entry in ev.CATALOGUE.items():
        assert entry.payload.type == name
    started = ev.ToolCallStarted(tool="calculator", call_id="c1", arguments={}, node="root/tools")
    with pytest.raises(dataclasses.FrozenInstanceError):
        started.tool = "other"  # type: ignore[misc]
    assert started.data == {"tool": "calculator", "call_id": "c1", "arguments": {}}
    failed = ev.ToolCallFailed(tool="calculator", call_id="c1", error="boom", denied=False)
    assert "arguments" not in failed.data  # an optional field left unset is not on the wire
    assert failed.wire() == {
        "type": "tool.call.failed",
        "node": None,
        "namespace": None,
        "data": {"tool": "calculator", "call_id": "c1", "error": "boom", "denied": False},
        "ts": failed.ts,
        "run_id": None,
    }


def test_a_payload_model_in_the_old_style_is_refused_with_what_an_event_class_is() -> None:
    class Drafted(ev.Payload):  # how a payload was declared before events were classes
        step: int

    with pytest.raises(TypeError, match=re.escape("type: ClassVar[Literal['draft.made']]")):
        ev.declare("draft.made", Drafted)
    assert "draft.made" not in ev.CATALOGUE


def test_a_hub_builds_the_class_from_a_class_or_a_name_and_keeps_extra_termination_keys() -> None:
    hub = TelemetryHub(run_id="r1")
    seen: list[ev.AnyEvent] = []
    hub.subscribe(seen.append)
    hub.emit(ev.ToolCallStarted, tool="calculator", call_id="c1", arguments={"api_key": "sk-abcdefghijkl"})
    hub.emit(ev.TOOL_CALL_STARTED, node="root", tool="calculator", call_id="c2", arguments={})
    hub.emit(ev.LOOP_TERMINATED, reason="budget", iterations=3, spent=12)
    first, second, terminated = seen
    assert isinstance(first, ev.ToolCallStarted) and first.run_id == "r1"
    assert first.arguments == {"api_key": "***"}  # redacted as the dict events were
    assert isinstance(second, ev.ToolCallStarted) and second.node == "root" and second.call_id == "c2"
    assert isinstance(terminated, ev.LoopTerminated) and terminated.extra == {"spent": 12}
    assert terminated.data == {"reason": "budget", "iterations": 3, "spent": 12}
    # data is what was sent: an explicit None stays (the wire before classes), an unsent one is absent
    hub.emit(ev.ToolProgress, tool="t", call_id="c4", server="s", progress=1.0, total=None)
    assert seen[-1].data == {"tool": "t", "call_id": "c4", "server": "s", "progress": 1.0, "total": None}
    hub.emit(ev.MCP_LOG, tool="t", call_id="c3", server="s", level="info", data={"line": 1})
    log = seen[-1]
    assert isinstance(log, ev.MCPLog) and log.log_data == {"line": 1}  # `data` is every event's dict
    assert log.data == {"tool": "t", "call_id": "c3", "server": "s", "level": "info", "data": {"line": 1}}


def test_an_event_built_by_hand_is_typed_by_payload() -> None:
    event = ev.Event(type=ev.REPLY_STARTED, node="root", data={"round": 2})
    typed = event.payload()
    assert isinstance(typed, ev.ReplyStarted) and typed.round == 2 and typed.node == "root"
    assert typed.payload() is typed


def test_the_suite_checks_every_event_against_the_catalogue() -> None:
    assert hub_module.CHECK_EVENTS  # tests/conftest.py: a drifting emitter fails the suite


def test_a_checked_hub_refuses_an_undeclared_type_and_a_drifted_payload(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(hub_module, "CHECK_EVENTS", True)
    hub = TelemetryHub()
    seen: list[ev.Event] = []
    hub.subscribe(seen.append)
    with pytest.raises(UnknownEventType, match=re.escape("'tool.call.strated' is not in the catalogue")):
        hub.emit("tool.call.strated", tool="calculator")
    with pytest.raises(ValidationError, match="colour"):
        hub.emit(
            ev.TOOL_CALL_FAILED, tool="calculator", call_id="c1", error="boom", denied=False, colour="red"
        )
    with pytest.raises(ValidationError, match="denied"):
        hub.emit(ev.TOOL_CALL_FAILED, tool="calculator", call_id="c1", error="boom")
    hub.emit(ev.TOOL_CALL_FAILED, tool="calculator", call_id="c1", error="boom", denied=False)
    assert [e.type for e in seen] == [ev.TOOL_CALL_FAILED]
    assert issubclass(UnknownEventType, JianmuError)


def test_an_unchecked_hub_publishes_what_it_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    """Outside the suite nothing is validated on the hot path: a user's own event type passes."""
    monkeypatch.setattr(hub_module, "CHECK_EVENTS", False)
    hub = TelemetryHub()
    seen: list[ev.Event] = []
    hub.subscribe(seen.append)
    hub.emit("my.own.event", anything=1)
    assert seen[0].data == {"anything": 1}
    with pytest.raises(UnknownEventType):
        seen[0].payload()


async def test_a_real_run_gives_typed_payloads() -> None:
    script = [call("calculator", expression="6*7"), reply("42")]
    with ScriptedOpenAIServer(script) as srv:
        root = create_react_node(
            model_client=srv.client(), tools=[calculator], config=ReActConfig(stream=True)
        )
        hub = TelemetryHub()
        events: list[ev.Event] = []
        hub.subscribe(events.append)
        result = await Agent(root, telemetry=hub, log_events=False).run({"messages": [human("6*7?")]})
    assert result.status == "success" and result.final_answer == "42"
    payloads = [e.payload() for e in events]
    started = next(p for p in payloads if isinstance(p, ev.ToolCallStarted))
    assert started.tool == "calculator" and started.arguments == {"expression": "6*7"}
    done = next(p for p in payloads if isinstance(p, ev.ToolCallCompleted))
    assert done.output == "42" and done.duration >= 0
    completed = payloads[-1]
    assert isinstance(completed, ev.RunCompleted) and completed.status == "success"
    assert {e.type for e in events} >= {
        ev.RUN_STARTED, ev.REPLY_STARTED, ev.MODEL_CALL_STARTED, ev.TEXT_DELTA, ev.MODEL_CALL_COMPLETED,
        ev.REPLY_COMPLETED, ev.TOOL_CALL_STARTED, ev.TOOL_CALL_COMPLETED, ev.LOOP_ITERATION,
        ev.LOOP_TERMINATED, ev.RUN_COMPLETED,
    }  # fmt: skip


# ------------------------------------------------------------------ no literals outside it
def _literal_event_types(source: str) -> list[tuple[int, str]]:
    """String literals naming an event type where code emits or dispatches on one: the first
    argument of an `emit`/`on_event` call, a side of a comparison."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if (name.endswith("emit") or name == "on_event") and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    found.append((node.lineno, first.value))
        elif isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                items = side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
                found += [
                    (node.lineno, item.value)
                    for item in items
                    if isinstance(item, ast.Constant) and item.value in ev.CATALOGUE
                ]
    return found


def test_no_event_type_is_a_string_literal_outside_the_catalogue() -> None:
    strays = [
        f"{path.relative_to(PACKAGE)}:{line}: {value!r}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != PACKAGE / "telemetry" / "events.py"
        for line, value in _literal_event_types(path.read_text(encoding="utf-8"))
    ]
    assert strays == []


def test_the_literal_scan_finds_what_it_looks_for() -> None:
    code = 'self.emit("loop.iteration", iteration=1)\nif kind == "tool.call.started": pass\n'
    assert _literal_event_types(code) == [(1, "loop.iteration"), (2, "tool.call.started")]


# ------------------------------------------------------------------ the README's table
def _event_table() -> tuple[Path, list[tuple[list[str], set[str]]]]:
    """The documentation's event table (the README, or a docs page it moved to): per row, the
    event names and the data fields it lists."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    page = next(p for p in pages if p.exists() and TABLE_HEADER in p.read_text(encoding="utf-8"))
    text = page.read_text(encoding="utf-8")
    lines = text[text.index(TABLE_HEADER) :].splitlines()[2:]
    rows = []
    for line in lines:
        if not line.startswith("|"):
            break
        names_cell, _, data_cell = (cell.strip() for cell in line.strip("|").split("|"))
        names = re.findall(r"`([^`]+)`", names_cell)
        data = re.sub(r"\([^)]*\)", "", data_cell).replace("`", "")
        fields = {token.strip() for token in re.split(r"[,;]", data) if token.strip() not in ("", "…")}
        rows.append((names, fields))
    return page, rows


def test_the_event_table_names_every_declared_type_and_nothing_else() -> None:
    page, rows = _event_table()
    named = [name for names, _ in rows for name in names]
    assert set(named) == set(ev.CATALOGUE), f"{page.name}: table vs catalogue"


def test_the_event_table_lists_each_type_s_fields() -> None:
    page, rows = _event_table()
    documented: dict[str, set[str]] = {}
    for names, fields in rows:
        bad = [f for f in fields if not re.fullmatch(r"[a-z_]+", f)]
        assert bad == [], f"{page.name}: not field names in the row of {names}: {bad}"
        declared = set().union(*(_fields(name) for name in names))
        assert fields <= declared, f"{page.name}: {names} lists fields no payload has: {fields - declared}"
        for name in names:
            documented.setdefault(name, set()).update(fields)
    missing = {name: sorted(_fields(name) - documented[name]) for name in ev.CATALOGUE}
    assert {name: gap for name, gap in missing.items() if gap} == {}
