"""What a recording keeps when its process dies: the lines are written at the end of every tick
(one write each, unbuffered), so a run killed with SIGKILL leaves every line of its finished
ticks, and the replay of such a recording stops at its end with a clear `RecordingError`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from jianmu_like.replay import RecordingError, areplay, read_recording
from jianmu_like.telemetry.events import Event
from jianmu_like.testing import PATIENCE, ScriptedReply, scripted_client, wait_until

from . import hanging

ROOT = Path(__file__).resolve().parents[2]


def killed_recording(tmp_path: Path) -> Path:
    """The recording of `hanging`'s run, its process killed (SIGKILL) while the second tool call
    hangs (its lines fit in a buffer of a few KiB: buffered, they would all be lost)."""
    path, marker = tmp_path / "run.jsonl", tmp_path / "hanging.txt"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.replay.hanging", str(path), str(marker)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(
            marker.exists,
            "the second tool call to start",
            abort=lambda: None if proc.poll() is None else proc.communicate()[1],
        )
        proc.send_signal(signal.SIGKILL)  # no shutdown, nothing flushed on the way out
        proc.wait(timeout=PATIENCE)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=PATIENCE)
    assert proc.returncode == -signal.SIGKILL
    return path


async def test_a_run_killed_mid_way_leaves_every_finished_tick_and_replays_to_a_clear_error(
    tmp_path: Path,
) -> None:
    path = killed_recording(tmp_path)
    text = path.read_text()
    assert text.endswith("\n")
    lines = read_recording(path)  # every line parses
    assert [json.loads(raw)["kind"] for raw in text.splitlines()] == [line["kind"] for line in lines]
    assert lines[-1]["kind"] != "result"  # the run never ended
    started = [
        line["data"]["arguments"]
        for line in lines
        if line["kind"] == "event" and line["type"] == "tool.call.started"
    ]
    # The hanging call's tick ended (the runner waits for the call): its lines were written.
    assert started == [{"n": 1}, {"n": 2}]
    assert [line["output"] for line in lines if line["kind"] == "tool"] == ["step 1 done"]
    with pytest.raises(RecordingError, match="ends early") as caught:
        await areplay(path, agent=lambda: hanging.build(scripted_client([])))
    assert "after 2 model call(s)" in str(caught.value) and "'step'" in str(caught.value)
    # What the error advises: go on live from the recording's end (the tool runs, the model answers).
    until = int(str(caught.value).split("until_tick=")[1].split(" ")[0])
    live = hanging.build(scripted_client([ScriptedReply(content="all done")]), hangs=False)
    seen: list[Event] = []
    result = await areplay(path, agent=live, live=True, until_tick=until, on_event=seen.append)
    assert result.status == "success" and result.final_answer == "all done"
    assert [e.data["output"] for e in seen if e.type == "tool.call.completed"] == [
        "step 1 done",
        "step 2 done quickly",
    ]
    assert [e.type for e in seen].count("replay.forked") == 1


def test_a_last_line_cut_short_is_left_out_and_the_recording_ends_early(tmp_path: Path) -> None:
    path = killed_recording(tmp_path)
    whole = read_recording(path)
    cut = tmp_path / "cut.jsonl"
    text = path.read_text()
    cut.write_text(text + text.splitlines()[-1][:25])  # a process that died inside a write
    assert read_recording(cut) == whole
    cut.write_text(text + '{"kind": "event"\n')  # a bad line that was written whole is refused
    with pytest.raises(RecordingError, match="not JSON"):
        read_recording(cut)
