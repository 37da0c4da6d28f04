"""The CLI says why a run failed, with an exit code per kind of failure."""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from jianmu_like import AgentResult
from jianmu_like.bt._fault import NodeFault
from jianmu_like.cli._common import EXIT_FAILED, EXIT_NODE_ERROR, EXIT_PROVIDER_ERROR
from jianmu_like.cli._run import report
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer

BROKEN_MCP_AGENT = """\
kind: react
name: Files
tools: [think]
mcp_servers:
  - {name: files, command: no-such-mcp-server-jianmu, args: ["--root", "/srv"]}
"""


def explain(result: AgentResult) -> tuple[int, str]:
    out = io.StringIO()
    code = report(result, argparse.Namespace(preset="a.yaml"), Console(file=out, width=300), store_path=None)
    return code, out.getvalue()


def test_a_tool_provider_that_cannot_start_exits_5_naming_its_command(tmp_path: Path) -> None:
    (tmp_path / "files.yaml").write_text(BROKEN_MCP_AGENT)
    with ScriptedOpenAIServer(["never asked"]) as srv:
        done = subprocess.run(
            [sys.executable, "-m", "jianmu_like", "run", "files.yaml", "list", "--no-live"],
            cwd=tmp_path,
            env={**_clean_env(), "OPENAI_BASE_URL": srv.base_url, "OPENAI_API_KEY": "x"},
            capture_output=True,
            text=True,
            timeout=PATIENCE,
        )
        assert srv.requests == []
    assert done.returncode == EXIT_PROVIDER_ERROR, done.stderr
    assert "error: a tool provider could not start (provider_error)" in done.stderr
    assert "no-such-mcp-server-jianmu --root /srv" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_node_exception_exits_4_naming_the_node() -> None:
    fault = NodeFault(node="Root/Step", kind="node_error", error_type="KeyError", message="'x'")
    termination = {"reason": "node_error", "failed_node": "Root/Step", "error": fault.error}
    result = AgentResult(status="failure", termination=termination, error=fault.error, fault=fault)
    code, text = explain(result)
    assert code == EXIT_NODE_ERROR
    assert "error: node 'Root/Step' raised an exception (node_error)" in text
    assert "KeyError: 'x'" in text


def test_a_read_error_is_not_called_unreachable() -> None:
    detail = (
        "model call failed after 3 attempt(s) on m; last error: connection lost while reading the response"
    )
    result = AgentResult(
        status="failure",
        termination={"reason": "model_error", "error": detail + " model=m url=http://127.0.0.1:1/v1"},
    )
    code, text = explain(result)
    assert code == EXIT_FAILED
    assert "cannot reach" not in text
    assert text.startswith("error: model call failed after 3 attempt(s) on m; last error: connection lost")


def _clean_env() -> dict[str, str]:
    skip = ("JIANMU", "OPENAI_", "FORCE_COLOR", "TTY_")
    return {k: v for k, v in os.environ.items() if not k.startswith(skip)} | {"NO_COLOR": "1"}
