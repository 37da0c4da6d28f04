"""The `jianmu-like` command line, run as a subprocess against the scripted OpenAI-compatible server."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from jianmu_like.checkpoint import SQLiteCheckpointer
from jianmu_like.testing import PATIENCE, Responder, ScriptedOpenAIServer, call, exited, reply, wait_until

PRESETS = Path(__file__).resolve().parents[2] / "presets"
CLI = [sys.executable, "-m", "jianmu_like"]
GUARDED_AGENT = """\
kind: react
name: Careful
tools: [think, calculator]
guard:
  require_approval:
    tools: [think]
"""


def environment(base_url: str | None = None, **extra: str) -> dict[str, str]:
    """The parent's environment without any model or jianmu settings, plus `extra`."""
    skip = ("JIANMU", "OPENAI_", "FORCE_COLOR", "TTY_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(skip)}
    env.update(PYTHONIOENCODING="utf-8", NO_COLOR="1")
    if base_url is not None:
        env.update(OPENAI_BASE_URL=base_url, OPENAI_API_KEY="x")
    env.update(extra)
    return env


def jianmu(
    cwd: Path, *args: str, base_url: str | None = None, **extra: str
) -> subprocess.CompletedProcess[str]:
    """Run the CLI from `cwd` (an empty folder: no stray jianmu.yaml)."""
    return subprocess.run(
        [*CLI, *args],
        cwd=cwd,
        env=environment(base_url, **extra),
        capture_output=True,
        text=True,
        timeout=PATIENCE,
    )


def test_run_react_streams_the_answer(tmp_path: Path) -> None:
    script = [call("calculator", expression="25 * 4 + 10"), reply("25 * 4 + 10 = 110.")]
    with ScriptedOpenAIServer(script) as srv:
        done = jianmu(
            tmp_path, "run", str(PRESETS / "react.yaml"), "What is 25 * 4 + 10?", base_url=srv.base_url
        )
        requests = srv.requests
    assert done.returncode == 0, done.stderr
    assert '→ calculator({"expression": "25 * 4 + 10"})' in done.stdout
    assert "← 110" in done.stdout
    assert "25 * 4 + 10 = 110." in done.stdout
    assert done.stdout.count("25 * 4 + 10 = 110.") == 1  # streamed once, not repeated at the end
    assert "✓ success · 2 iterations · 30 tokens in 2 model calls" in done.stdout
    assert all(body["stream"] for body in requests)  # the CLI turns streaming on
    assert requests[0]["messages"][-1] == {"role": "user", "content": "What is 25 * 4 + 10?"}


def test_run_json_prints_only_event_lines(tmp_path: Path) -> None:
    script = [call("calculator", expression="2**10"), reply("1024")]
    with ScriptedOpenAIServer(script) as srv:
        done = jianmu(tmp_path, "run", str(PRESETS / "react.yaml"), "2**10?", "--json", base_url=srv.base_url)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    types = [event["type"] for event in events]
    assert types[0] == "run.started" and types[-1] == "run.completed"
    assert {"tool.call.started", "tool.call.completed", "text.delta"} <= set(types)
    assert events[-1]["data"]["final_answer"] == "1024"


def test_run_research_tree(tmp_path: Path, research_responder: Responder) -> None:
    with ScriptedOpenAIServer(research_responder) as srv:
        done = jianmu(
            tmp_path, "run", str(PRESETS / "research.yaml"), "Seconds in a leap year?", base_url=srv.base_url
        )
    assert done.returncode == 0, done.stderr
    assert '[r2] → calculator({"expression": "366 * 24 * 3600"})' in done.stdout
    assert "[r1] ← 366" in done.stdout
    assert done.stdout.splitlines()[-2] == "31622400 seconds."
    assert "90 tokens in 6 model calls" in done.stdout


def test_show_tree_and_dot(tmp_path: Path) -> None:
    text = jianmu(tmp_path, "show", str(PRESETS / "research.yaml"))
    assert text.returncode == 0, text.stderr
    assert "Research  (tree)" in text.stdout
    assert "Researchers  Parallel" in text.stdout
    assert "Researcher1.Tools  ToolExecutor  ns=r1  tools=[calculator, think]" in text.stdout
    dot = jianmu(tmp_path, "show", str(PRESETS / "react.yaml"), "--dot")
    assert dot.returncode == 0, dot.stderr
    assert dot.stdout.startswith("digraph Calculator {")  # named after the agent, not py_trees' default
    assert '"Calculator.Loop" -> "Calculator.LLM";' in dot.stdout


def test_validate(tmp_path: Path) -> None:
    ok = jianmu(tmp_path, "validate", str(PRESETS / "react.yaml"), str(PRESETS / "research.yaml"))
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.count(": ok") == 2
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: react\ntools: [calculator, no_such_tool]\nlimits:\n  max_iteration: 3\n")
    bad = jianmu(tmp_path, "validate", str(PRESETS / "react.yaml"), str(broken))
    assert bad.returncode == 2
    assert f"{broken}:4: limits.max_iteration: unknown key (did you mean 'max_iterations'?)" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_unknown_preset_and_malformed_yaml(tmp_path: Path) -> None:
    missing = jianmu(tmp_path, "run", "no/such/agent.yaml", "hi", base_url="http://127.0.0.1:9/v1")
    assert missing.returncode == 2
    assert "no/such/agent.yaml: no such file" in missing.stderr
    (tmp_path / "bad.yaml").write_text("kind: react\ntools: [calculator\n")
    malformed = jianmu(tmp_path, "run", "bad.yaml", "hi", base_url="http://127.0.0.1:9/v1")
    assert malformed.returncode == 2
    assert "bad.yaml:3: malformed YAML" in malformed.stderr
    assert "Traceback" not in missing.stderr + malformed.stderr


def test_invalid_configuration(tmp_path: Path) -> None:
    preset = str(PRESETS / "react.yaml")
    env_bad = jianmu(
        tmp_path, "run", preset, "hi", base_url="http://127.0.0.1:9/v1", JIANMU__LLM__TEMPERATURE="hot"
    )
    assert env_bad.returncode == 2
    assert "JIANMU__LLM__TEMPERATURE: llm.temperature:" in env_bad.stderr
    (tmp_path / "jianmu.yaml").write_text("llm:\n  temprature: 0.2\n")
    file_bad = jianmu(tmp_path, "config")
    assert file_bad.returncode == 2
    assert "jianmu.yaml:2: llm.temprature: unknown key (did you mean 'temperature'?)" in file_bad.stderr
    assert "Traceback" not in env_bad.stderr + file_bad.stderr


def test_config_sources(tmp_path: Path) -> None:
    (tmp_path / "jianmu.yaml").write_text("limits:\n  max_iterations: 4\n")
    done = jianmu(
        tmp_path, "config", "--json", JIANMU__LLM__TEMPERATURE="0.5", JIANMU__PROVIDER__API_KEY="s3cret"
    )
    assert done.returncode == 0, done.stderr
    values = json.loads(done.stdout)["values"]
    assert values["limits.max_iterations"] == {"value": 4, "source": "jianmu.yaml:2"}
    assert values["llm.temperature"] == {"value": 0.5, "source": "env JIANMU__LLM__TEMPERATURE"}
    assert values["llm.stream"]["source"] == "default"
    assert "s3cret" not in done.stdout
    table = jianmu(tmp_path, "config")
    assert table.returncode == 0, table.stderr
    assert "jianmu.yaml:2" in table.stdout and "limits.max_iterations" in table.stdout


def test_unreachable_server(tmp_path: Path) -> None:
    done = jianmu(
        tmp_path,
        "run",
        str(PRESETS / "react.yaml"),
        "hi",
        base_url="http://127.0.0.1:9/v1",
        JIANMU__RESILIENCE__MAX_RETRIES="0",
    )
    assert done.returncode == 1
    assert "cannot reach the model server at http://127.0.0.1:9/v1" in done.stderr
    assert "Traceback" not in done.stderr


def test_approval_flow(tmp_path: Path) -> None:
    agent = tmp_path / "careful.yaml"
    agent.write_text(GUARDED_AGENT)
    db = str(tmp_path / "runs.db")
    with ScriptedOpenAIServer([call("think", thought="plan it"), reply("All done.")]) as srv:
        url = srv.base_url
        first = jianmu(tmp_path, "run", str(agent), "Go.", "--checkpoint", db, "--thread", "t1", base_url=url)
        assert first.returncode == 3, first.stderr
        assert "call_1  think(" in first.stderr
        assert f"jianmu-like approvals approve {db} t1 call_1" in first.stderr

        listed = jianmu(tmp_path, "approvals", "list", db)
        assert listed.returncode == 0, listed.stderr
        assert "call_1" in listed.stdout and "waiting" in listed.stdout

        approved = jianmu(tmp_path, "approvals", "approve", db, "t1", "call_1", "--reason", "fine")
        assert approved.returncode == 0, approved.stderr
        assert "approved call_1 in thread t1" in approved.stdout
        hint = f"continue with: jianmu-like resume {agent.resolve()} --checkpoint {db} --thread t1"
        assert hint in approved.stdout  # the file that ran, recorded in the checkpoint
        again = jianmu(tmp_path, "approvals", "approve", db, "t1", "call_1")
        assert again.returncode == 2 and "already decided (approved)" in again.stderr
        unknown = jianmu(tmp_path, "approvals", "deny", db, "t1", "nope", "--reason", "no")
        assert unknown.returncode == 2 and "unknown approval id 'nope'" in unknown.stderr

        resumed = jianmu(tmp_path, "resume", str(agent), "--checkpoint", db, "--thread", "t1", base_url=url)
        assert resumed.returncode == 0, resumed.stderr
        assert "→ think(" in resumed.stdout and "All done." in resumed.stdout
    finished = jianmu(tmp_path, "resume", str(agent), "--checkpoint", db, "--thread", "t1", base_url=url)
    assert finished.returncode == 2 and "already finished" in finished.stderr


def test_approve_with_corrected_arguments(tmp_path: Path) -> None:
    agent = tmp_path / "careful.yaml"
    agent.write_text(GUARDED_AGENT)
    db = str(tmp_path / "runs.db")
    with ScriptedOpenAIServer([call("think", thought="plan it"), reply("All done.")]) as srv:
        url = srv.base_url
        first = jianmu(tmp_path, "run", str(agent), "Go.", "--checkpoint", db, "--thread", "t1", base_url=url)
        assert first.returncode == 3, first.stderr
        approve = ("approvals", "approve", db, "t1", "call_1", "--args")
        not_json = jianmu(tmp_path, *approve, "{thought")
        assert not_json.returncode == 2 and "--args is not JSON" in not_json.stderr
        not_object = jianmu(tmp_path, *approve, "[1]")
        assert not_object.returncode == 2 and "--args must be a JSON object" in not_object.stderr
        wrong = jianmu(tmp_path, *approve, '{"thought": 5}')
        assert wrong.returncode == 2, wrong.stderr
        assert "do not match tool 'think'" in wrong.stderr
        assert "thought must be of type string" in wrong.stderr
        assert "waiting" in jianmu(tmp_path, "approvals", "list", db).stdout  # nothing recorded

        edited = jianmu(tmp_path, *approve, '{"thought": "plan it better"}')
        assert edited.returncode == 0, edited.stderr
        resumed = jianmu(tmp_path, "resume", str(agent), "--checkpoint", db, "--thread", "t1", base_url=url)
        assert resumed.returncode == 0, resumed.stderr
        assert "All done." in resumed.stdout
        assert 'approved: call_1 with corrected arguments {"thought": "plan it better"}' in resumed.stdout
        tool_message = srv.requests[1]["messages"][-1]
    assert tool_message["role"] == "tool"
    assert tool_message["content"].startswith(
        '[a human reviewer approved this call with corrected arguments: {"thought": "plan it better"}]'
    )


def test_run_approve_resume_on_postgres(tmp_path: Path, postgres_url: str) -> None:
    agent = tmp_path / "careful.yaml"
    agent.write_text(GUARDED_AGENT)
    store = postgres_url.replace("jianmu@", "jianmu:hunter2@")  # trust auth: the password is unused
    shown = store.replace("jianmu:hunter2@", "")
    with ScriptedOpenAIServer([call("think", thought="plan it"), reply("All done.")]) as srv:
        url = srv.base_url
        first = jianmu(
            tmp_path, "run", str(agent), "Go.", "--checkpoint", store, "--thread", "t1", base_url=url
        )
        assert first.returncode == 3, first.stderr
        assert f"jianmu-like approvals approve {shown} t1 call_1" in first.stderr
        assert "hunter2" not in first.stderr

        from jianmu_like.cli._main import main

        assert main(["approvals", "approve", store, "t1", "call_1"]) == 0  # in-process: a decision row
        resumed = jianmu(
            tmp_path, "resume", str(agent), "--checkpoint", store, "--thread", "t1", base_url=url
        )
        assert resumed.returncode == 0, resumed.stderr
        assert "All done." in resumed.stdout


def test_approvals_on_a_foreign_or_missing_file(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a database, just text\n" * 100)
    foreign = jianmu(tmp_path, "approvals", "list", "notes.txt")
    assert foreign.returncode == 2 and "not a SQLite checkpoint file" in foreign.stderr
    missing = jianmu(tmp_path, "approvals", "list", "nothing.db")
    assert missing.returncode == 2 and "no such checkpoint file" in missing.stderr
    assert not (tmp_path / "nothing.db").exists()


def _lines(stream: Any) -> queue.Queue[str]:
    """Lines of a pipe, read in a thread (so the test can wait with a timeout)."""
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in stream], daemon=True).start()
    return lines


def _default_sigint() -> None:
    """Run in the child before exec: Ctrl-C's default action, as in a terminal's foreground job.
    A shell without job control starts background jobs (`pytest &`, as CI scripts do) with SIGINT
    ignored, children inherit that, and the CLI then rightly ignores the Ctrl-C sent to it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT delivery to a child is POSIX-only")
def test_ctrl_c_keeps_the_checkpoint(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    preset = str(PRESETS / "react.yaml")
    # The first reply would come long after the test's own bounds (stopping the server drops
    # it): the run can only end through the Ctrl-C, however slowly a loaded machine runs it.
    with ScriptedOpenAIServer([reply("too late", delay=10 * PATIENCE), reply("Resumed answer.")]) as srv:
        args = ["run", preset, "Take your time.", "--checkpoint", str(db), "--thread", "t-int"]
        proc = subprocess.Popen(
            [*CLI, *args],
            cwd=tmp_path,
            env=environment(srv.base_url),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=_default_sigint,
        )
        try:
            assert "run started" in _lines(proc.stdout).get(timeout=PATIENCE)
            wait_until(lambda: srv.requests, "the model call to be in flight", abort=exited(proc))
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=PATIENCE)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 130, err
        assert f"interrupted; checkpoint kept in {db} (thread t-int)" in err
        assert "Traceback" not in err
        store = SQLiteCheckpointer(db)
        assert store.load("t-int") is not None
        store.close()
        resumed = jianmu(
            tmp_path, "resume", preset, "--checkpoint", str(db), "--thread", "t-int", base_url=srv.base_url
        )
    assert resumed.returncode == 0, resumed.stderr
    assert "Resumed answer." in resumed.stdout


def test_usage_errors(tmp_path: Path) -> None:
    thread_only = jianmu(tmp_path, "run", str(PRESETS / "react.yaml"), "hi", "--thread", "t1")
    assert thread_only.returncode == 2 and "--thread needs --checkpoint" in thread_only.stderr
    version = jianmu(tmp_path, "--version")
    assert version.returncode == 0 and version.stdout.startswith("jianmu-like ")
