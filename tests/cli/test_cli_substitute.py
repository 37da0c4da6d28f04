"""`jianmu-like run --substitute RULES` and `jianmu-like replay [--substitute RULES]`: a rules
file (YAML or JSON) scripts a tool's output for a command-line run, the recording keeps the rules
so a plain replay answers the same, and a rule naming a tool the agent lacks is an error at its
line (exit 2), before any model call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jianmu_like.testing import ScriptedOpenAIServer, call, reply
from tests.cli.running import PRESETS, in_process


def answer(body: dict[str, Any]) -> Any:
    last = body["messages"][-1]
    if last["role"] == "tool":
        return reply(f"It is {last['content']}.")
    return call("calculator", expression="25 * 4 + 10")


def test_run_and_replay_under_a_rules_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    rules = tmp_path / "rules.yaml"
    rules.write_text("substitutions:\n  - tool: calculator\n    output: '111'\n")
    bad = tmp_path / "bad.json"
    bad.write_text('[\n  {"tool": "calculator", "output": "1"},\n  {"tool": "search", "output": "x"}\n]\n')
    recording = tmp_path / "run.jsonl"
    react = str(PRESETS / "react.yaml")
    with ScriptedOpenAIServer(answer) as srv:
        cli = in_process(srv.base_url, monkeypatch, capsys)
        code, out = cli("run", react, "25 * 4 + 10?", "--no-live", "--substitute", str(bad))
        assert code == 2, out
        assert "bad.json:3: substitutions.1: no tool 'search'" in out and srv.requests == []
        code, out = cli(
            "run", react, "25 * 4 + 10?", "--no-live", "--substitute", str(rules), "--record", str(recording)
        )
        assert code == 0, out
        assert "It is 111." in out and len(srv.requests) == 2

    # The server is gone: the replay applies the recorded rules and answers the same.
    code, out = cli("replay", str(recording))
    assert code == 0, out
    assert "replay matches the recording" in out and "It is 111." in out
    # Under other rules, the replay differs from its recording at the scripted call's event.
    other = tmp_path / "other.yaml"
    other.write_text("- tool: calculator\n  output: '222'\n")
    code, out = cli("replay", str(recording), "--substitute", str(other))
    assert code == 1 and 'data.output: recorded "111", now "222"' in out, out
