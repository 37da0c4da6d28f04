"""`jianmu-like run --record` and `jianmu-like replay` in-process, against the shipped react
agent file and the real openai client over HTTP: a clean replay with the server gone, `--json`,
a changed agent file reported at the first model request (exit 1), `--export-mock`, and
`--until 1 --live` continuing against another server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jianmu_like.testing import RepliesFile, ScriptedOpenAIServer, call, calls, reply
from tests.cli.running import PRESETS, in_process

SCRIPT = [calls(call("calculator", expression="25 * 4 + 10")), reply("It is 110.")]


@pytest.fixture
def recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[Path, object]:
    path = tmp_path / "run.jsonl"
    monkeypatch.chdir(tmp_path)
    with ScriptedOpenAIServer(SCRIPT) as srv:
        cli = in_process(srv.base_url, monkeypatch, capsys)
        code, out = cli(
            "run", str(PRESETS / "react.yaml"), "25 * 4 + 10?", "--no-live", "--record", str(path)
        )
        assert code == 0, out
        assert len(srv.requests) == 2
    # the server is gone: a replay that asked it would fail to connect
    return path, cli


def test_replay_matches_offline_and_prints_json_lines(recorded: tuple[Path, object]) -> None:
    path, cli = recorded
    code, out = cli("replay", str(path))  # type: ignore[operator]
    assert code == 0, out
    assert "replay matches the recording" in out and "It is 110." in out
    code, out = cli("replay", str(path), "--json")  # type: ignore[operator]
    assert code == 0, out
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert lines[0]["type"] == "run.started" and lines[-1]["type"] == "run.completed"
    assert "tool.call.completed" in {line["type"] for line in lines}


def test_a_changed_agent_file_is_a_divergence_naming_the_model_request(
    recorded: tuple[Path, object], tmp_path: Path
) -> None:
    path, cli = recorded
    changed = tmp_path / "changed.yaml"
    text = (PRESETS / "react.yaml").read_text()
    changed.write_text(text.replace("You are a careful assistant.", "You are a hasty assistant."))
    code, out = cli("replay", str(path), "--agent", str(changed))  # type: ignore[operator]
    assert code == 1
    assert "model request differs at messages[0].content" in out
    assert "careful" in out and "hasty" in out and "tick 1" in out


def test_export_mock_writes_a_replies_file(recorded: tuple[Path, object], tmp_path: Path) -> None:
    path, cli = recorded
    out_file = tmp_path / "replies.yaml"
    code, out = cli("replay", str(path), "--export-mock", str(out_file))  # type: ignore[operator]
    assert code == 0, out
    replies = RepliesFile.load(out_file)
    assert replies.replies[0].tool_calls[0].name == "calculator"
    assert replies.replies[1].content == "It is 110."


def test_until_needs_live_and_live_goes_on_against_the_model(
    recorded: tuple[Path, object], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, cli = recorded
    code, out = cli("replay", str(path), "--until", "1")  # type: ignore[operator]
    assert code == 2 and "add --live" in out
    forked = tmp_path / "forked.jsonl"
    with ScriptedOpenAIServer([reply("Live: 110.")]) as live:
        monkeypatch.setenv("OPENAI_BASE_URL", live.base_url)
        code, out = cli("replay", str(path), "--until", "1", "--live", "--record", str(forked))  # type: ignore[operator]
        assert len(live.requests) == 1
    assert code == 0, out
    assert "forked live after 1 model call" in out and "Live: 110." in out
    header = json.loads(forked.read_text().splitlines()[0])
    assert header["forked_from"]["iteration"] == 1


def test_until_tick_goes_live_from_the_recordings_tick(
    recorded: tuple[Path, object], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, cli = recorded
    code, out = cli("replay", str(path), "--until-tick", "2")  # type: ignore[operator]
    assert code == 2 and "add --live" in out
    code, out = cli("replay", str(path), "--until", "1", "--until-tick", "2", "--live")  # type: ignore[operator]
    assert code == 2 and "not both" in out
    second = [json.loads(x) for x in path.read_text().splitlines() if '"kind":"model"' in x][1]
    with ScriptedOpenAIServer([reply("Live: 110.")]) as live:
        monkeypatch.setenv("OPENAI_BASE_URL", live.base_url)
        code, out = cli("replay", str(path), "--until-tick", str(second["tick"]), "--live")  # type: ignore[operator]
        assert len(live.requests) == 1  # the second model call, made at that tick when recorded
    assert code == 0, out
    assert f"forked live after tick {second['tick']}" in out and "Live: 110." in out
