"""The older events of an interruption (`approval.*`, `elicitation.*`) are deprecated: the
catalogue names each one's replacement and the release that removes it, the docs say so, and
one module emits them beside the `interruption.*` pair (no emitter writes them itself)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from jianmu_like.telemetry import _interruption_events as interruption_events
from jianmu_like.telemetry import events as ev

ROOT = Path(__file__).resolve().parents[2]


def test_each_deprecated_event_names_a_declared_replacement_and_a_release() -> None:
    assert set(ev.DEPRECATED_EVENTS) == {
        "approval.requested",
        "approval.resolved",
        "elicitation.requested",
        "elicitation.resolved",
    }
    for name, deprecation in ev.DEPRECATED_EVENTS.items():
        assert name in ev.CATALOGUE and deprecation.replacement in ev.CATALOGUE
        assert deprecation.replacement.startswith("interruption.")
        assert re.fullmatch(r"\d+\.\d+\.\d+", deprecation.removed_in)


def test_the_events_reference_marks_them_deprecated_with_replacement_and_release() -> None:
    text = (ROOT / "docs" / "guides" / "telemetry.md").read_text()
    section = text[text.index("### Deprecated events") :]
    for name, deprecation in ev.DEPRECATED_EVENTS.items():
        row = next(line for line in section.splitlines() if line.startswith(f"| `{name}` |"))
        assert f"`{deprecation.replacement}`" in row
        assert deprecation.removed_in in section
    table = next(line for line in text.splitlines() if line.startswith("| `approval.requested` /"))
    assert "**Deprecated**" in table


def test_only_the_one_module_emits_the_deprecated_events() -> None:
    """Every emitter goes through `telemetry._interruption_events`: the day they go is one change."""
    classes = {ev.CATALOGUE[name].payload.__name__ for name in ev.DEPRECATED_EVENTS}
    pattern = re.compile(r"\b(" + "|".join(sorted(classes)) + r")\b")
    package = ROOT / "jianmu_like"
    users = sorted(
        str(path.relative_to(package)) for path in package.rglob("*.py") if pattern.search(path.read_text())
    )
    # the catalogue declares them, the emitter emits them, the SSE mapper drops them
    assert users == ["server/_channels.py", "telemetry/_interruption_events.py", "telemetry/events.py"]
    channels = (package / "server" / "_channels.py").read_text()
    assert not re.search(r"emit\(\s*ev\.(" + "|".join(classes) + ")", channels)


def emitted() -> tuple[list[tuple[str, dict[str, Any]]], interruption_events.Emit]:
    seen: list[tuple[str, dict[str, Any]]] = []

    def emit(cls: type[ev.TypedEvent], **data: Any) -> None:
        seen.append((cls.type, data))

    return seen, emit


def test_each_kind_emits_its_older_event_first_derived_from_the_pair() -> None:
    seen, emit = emitted()
    approval = {"id": "c1", "tool": "rm", "arguments": {"path": "x"}, "reason": "writes"}
    interruption_events.requested(emit, id="c1", kind="approval", tool_call=("rm", "c1"), request=approval)
    answer = {"approved": True, "reason": "ok", "arguments": {"path": "y"}, "output": None}
    interruption_events.decided(emit, id="c1", kind="approval", tool_call=("rm", "c1"), answer=answer)
    assert [t for t, _ in seen] == [
        "approval.requested",
        "interruption.requested",
        "approval.resolved",
        "interruption.decided",
    ]
    assert seen[0][1] == {"approval_id": "c1", "tool": "rm", "arguments": {"path": "x"}, "reason": "writes"}
    assert seen[2][1]["arguments"] == {"path": "y"} and seen[2][1]["approved"] is True

    seen, emit = emitted()
    question = {"id": "ev-1", "server": "ev", "message": "Name?"}
    interruption_events.requested(emit, id="ev-1", kind="question", request=question)
    interruption_events.decided(emit, id="ev-1", kind="question", answer={"action": "decline"}, server="ev")
    assert [t for t, _ in seen] == [
        "elicitation.requested",
        "interruption.requested",
        "elicitation.resolved",
        "interruption.decided",
    ]
    assert seen[2][1] == {"id": "ev-1", "server": "ev", "action": "decline"}

    seen, emit = emitted()  # a breakpoint never had an older event
    interruption_events.requested(emit, id="bp-1", kind="breakpoint", request={"id": "bp-1"})
    interruption_events.decided(emit, id="bp-1", kind="breakpoint", answer={"approved": True})
    assert [t for t, _ in seen] == ["interruption.requested", "interruption.decided"]
