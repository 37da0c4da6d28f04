"""The shipped `careful` preset shows a guard with approvals without writing a file: run it by
name, it suspends on its first calculation, a person approves, the run resumes to the answer."""

from __future__ import annotations

from pathlib import Path

from jianmu_like.cli._common import EXIT_OK, EXIT_SUSPENDED
from jianmu_like.testing import ScriptedOpenAIServer, call, reply
from tests.cli.running import jianmu


def test_the_careful_preset_waits_for_approval_then_answers(tmp_path: Path) -> None:
    script = [call("calculator", expression="25 * 4 + 10"), reply("25 * 4 + 10 = 110.")]
    with ScriptedOpenAIServer(script) as srv:
        url = srv.base_url
        run = (
            "run",
            "careful",
            "What is 25 * 4 + 10?",
            "--checkpoint",
            "runs.db",
            "--thread",
            "t1",
            "--no-live",
        )
        first = jianmu(tmp_path, *run, base_url=url)
        assert first.returncode == EXIT_SUSPENDED, first.stderr
        assert "call_1  calculator(" in first.stderr
        assert "every calculation is checked by a person" in first.stderr
        assert "jianmu-like approvals approve runs.db t1 call_1" in first.stderr
        assert len(srv.requests) == 1  # nothing ran: the calculation waits

        approved = jianmu(tmp_path, "approvals", "approve", "runs.db", "t1", "call_1")
        assert approved.returncode == EXIT_OK, approved.stderr

        resumed = jianmu(
            tmp_path, "resume", "careful", "--checkpoint", "runs.db", "--thread", "t1", base_url=url
        )
        assert resumed.returncode == EXIT_OK, resumed.stderr
        assert "← 110" in resumed.stdout and "25 * 4 + 10 = 110." in resumed.stdout
    assert srv.requests[1]["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "110"}
