"""`jianmu-like run --thread T` continues T (it used to start over and overwrite it), and
`jianmu-like threads list|show|history` read the store, as subprocesses against the scripted
server and a real SQLite file / PostgreSQL database."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from jianmu_like.testing import ScriptedOpenAIServer, reply
from tests.cli.running import PRESETS
from tests.cli.running import jianmu as run_cli


def jianmu(cwd: Path, *args: str, base_url: str | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI 200 columns wide: a thread's history table on one line per version."""
    return run_cli(cwd, *args, base_url=base_url, COLUMNS="200")


def test_run_thread_continues_and_threads_commands_show_it(tmp_path: Path, store_target: str) -> None:
    agent = str(PRESETS / "react.yaml")
    script = [reply("Paris is the capital of France."), reply("Berlin is the capital of Germany.")]
    with ScriptedOpenAIServer(script) as srv:
        one = jianmu(
            tmp_path,
            "run",
            agent,
            "Capital of France?",
            "--checkpoint",
            store_target,
            "--thread",
            "chat",
            base_url=srv.base_url,
        )
        two = jianmu(
            tmp_path,
            "run",
            agent,
            "And Germany?",
            "--checkpoint",
            store_target,
            "--thread",
            "chat",
            base_url=srv.base_url,
        )
        requests = srv.requests
    assert one.returncode == 0, one.stderr
    assert two.returncode == 0, two.stderr
    said = [m["content"] for m in requests[1]["messages"] if m["role"] in ("user", "assistant")]
    assert said == ["Capital of France?", "Paris is the capital of France.", "And Germany?"]

    listed = jianmu(tmp_path, "threads", "list", store_target, "--json")
    assert listed.returncode == 0, listed.stderr
    [head] = [json.loads(line) for line in listed.stdout.splitlines()]
    assert head["thread_id"] == "chat" and head["status"] == "success" and head["messages"] == 4

    shown = jianmu(tmp_path, "threads", "show", store_target, "chat")
    assert shown.returncode == 0, shown.stderr
    assert "thread chat: success" in shown.stdout and "4 messages" in shown.stdout
    assert "Paris is the capital of France." in shown.stdout and "And Germany?" in shown.stdout

    history = jianmu(tmp_path, "threads", "history", store_target, "chat", "--json")
    assert history.returncode == 0, history.stderr
    versions = [json.loads(line) for line in history.stdout.splitlines()]
    assert [v["seq"] for v in versions] == sorted((v["seq"] for v in versions), reverse=True)
    assert [v["status"] for v in versions].count("success") == 2  # the first run's end is kept
    table = jianmu(tmp_path, "threads", "history", store_target, "chat")
    assert table.returncode == 0 and "versions of chat" in table.stdout

    missing = jianmu(tmp_path, "threads", "show", store_target, "nope")
    assert missing.returncode == 2 and "no thread 'nope' (threads: chat)" in missing.stderr
