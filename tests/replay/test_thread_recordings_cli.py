"""A thread's kept recordings from the command line (`threads recordings`, `replay --checkpoint
--thread`), turned on by the configuration as a CLI user does; and a run SIGKILLed mid-way: its
partial recording lists as incomplete and replays with a clear error, and the thread runs on."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jianmu_like import Agent, create_react_node, human
from jianmu_like._base.config import get_config
from jianmu_like._run.thread_recordings import replayable_recording
from jianmu_like.checkpoint import SQLiteCheckpointer
from jianmu_like.replay import RecordingError
from jianmu_like.testing import (
    PATIENCE,
    ScriptedOpenAIServer,
    call,
    calls,
    reply,
    scripted_client,
    wait_until,
)
from tests.cli.running import PRESETS, in_process

SCRIPT = [calls(call("calculator", expression="25 * 4 + 10")), reply("It is 110.")]


@pytest.fixture
def keeping(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "jianmu.yaml"
    config.write_text("checkpoints:\n  recordings: {max_runs: 5, max_bytes: 8MiB}\n")
    monkeypatch.setenv("JIANMU_CONFIG", str(config))
    get_config(reload=True)


@pytest.mark.usefixtures("keeping")
def test_list_export_and_replay_a_threads_recording(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "runs.db"
    with ScriptedOpenAIServer(SCRIPT) as srv:
        cli = in_process(srv.base_url, monkeypatch, capsys)
        code, out = cli(
            "run",
            str(PRESETS / "react.yaml"),
            "25 * 4 + 10?",
            "--no-live",
            "--checkpoint",
            str(db),
            "--thread",
            "t1",
        )
        assert code == 0, out
    code, out = cli("threads", "recordings", str(db), "t1", "--json")
    assert code == 0, out
    [listed] = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert listed["status"] == "success" and listed["thread_id"] == "t1" and listed["size"] > 0
    run_id = listed["run_id"]
    code, out = cli("threads", "recordings", str(db), "t1")
    assert code == 0 and run_id in out and "success" in out
    code, out = cli("threads", "recordings", str(db), "t1", "--run", run_id, "-o", "out.jsonl")
    assert code == 0, out
    store = SQLiteCheckpointer(db, readonly=True)
    assert (tmp_path / "out.jsonl").read_bytes() == store.read_recording("t1", run_id)
    store.close()
    # The server is gone: the replay contacts nothing.
    code, out = cli("replay", "--checkpoint", str(db), "--thread", "t1")
    assert code == 0, out
    assert "replay matches the recording" in out and "It is 110." in out
    code, file_out = cli("replay", "out.jsonl")
    assert code == 0 and file_out.splitlines()[0] == out.splitlines()[0]  # the same events, the same count
    code, out = cli(
        "replay", "--checkpoint", str(db), "--thread", "t1", "--run", run_id, "--export-mock", "m.yaml"
    )
    assert code == 0 and "It is 110." in (tmp_path / "m.yaml").read_text()
    for args, message in (
        (
            ("replay", "--checkpoint", str(db), "--thread", "t1", "--run", "nope"),
            "no recording of run 'nope'",
        ),
        (("replay", "--checkpoint", str(db), "--thread", "t9"), "has no recordings"),
        (("replay", "out.jsonl", "--thread", "t1"), "not both"),
        (("replay", "--thread", "t1"), "--checkpoint STORE --thread ID"),
        (("threads", "recordings", str(db), "t9"), "no thread 't9'"),
        (("threads", "recordings", str(db), "t1", "--run", "nope"), "no recording of run 'nope'"),
    ):
        code, out = cli(*args)
        assert code == 2 and message in out, (args, out)


KILLED = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from jianmu_like import Agent, create_react_node, human, tool
    from jianmu_like.testing import call, calls, scripted_client

    @tool
    async def block(note: str) -> str:
        \"\"\"Wait forever.

        Args:
            note: Anything.
        \"\"\"
        Path(sys.argv[2]).write_text("in the tool")
        await asyncio.Event().wait()
        return "never"

    client = scripted_client([calls(call("block", note="x"), content="Blocking.")])
    root = create_react_node(model_client=client, tools=[block])
    agent = Agent(root, checkpointer=sys.argv[1], keep_recordings=True)
    asyncio.run(agent.run({"messages": [human("go")]}, thread_id="t"))
    """
)


def test_a_run_killed_mid_way_leaves_an_incomplete_recording_that_replay_refuses(tmp_path: Path) -> None:
    db, marker, script = tmp_path / "runs.db", tmp_path / "in-tool", tmp_path / "killed.py"
    script.write_text(KILLED)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(Path.cwd()), os.environ.get("PYTHONPATH")])),
    }
    proc = subprocess.Popen([sys.executable, str(script), str(db), str(marker)], env=env)
    try:
        wait_until(
            marker.exists,
            "the killed run to reach its tool",
            abort=lambda: None if proc.poll() is None else f"the run ended first (exit {proc.returncode})",
        )
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=PATIENCE)
    store = SQLiteCheckpointer(db)
    [stored] = store.recordings("t")
    assert stored.status == "running" and stored.size > 0  # as the killed process left it
    with pytest.raises(RecordingError, match="incomplete: its run stopped mid-way"):
        replayable_recording(store, "t", label="runs.db")  # its process is gone: not running any more
    # The thread runs on; the killed run's recording is marked incomplete in the store.
    agent = Agent(
        create_react_node(model_client=scripted_client([reply("Done.")]), tools=[]),
        checkpointer=store,
        keep_recordings=True,
    )
    result = agent.run_sync({"messages": [human("again")]}, thread_id="t")
    assert result.status == "success"
    newest, killed = store.recordings("t")
    assert (newest.run_id, newest.status) == (result.run_id, "success")
    assert killed.status == "incomplete" and not killed.replayable
    store.close()
