"""The command line treats agent files and ./jianmu.yaml as data: refused modules, YAML bombs and
wiring errors end with exit 2 and a clear message, before any model is called."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer

CLI = [sys.executable, "-m", "jianmu_like"]
PRESETS = Path(__file__).resolve().parents[2] / "presets"
BILLION_LAUGHS = (Path(__file__).resolve().parents[1] / "agentfile" / "billion_laughs.yaml").read_text()


def jianmu(cwd: Path, *args: str, base_url: str | None = None) -> subprocess.CompletedProcess[str]:
    skip = ("JIANMU", "OPENAI_", "FORCE_COLOR", "TTY_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(skip)}
    env.update(PYTHONIOENCODING="utf-8", NO_COLOR="1")
    if base_url is not None:
        env.update(OPENAI_BASE_URL=base_url, OPENAI_API_KEY="x")
    return subprocess.run([*CLI, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=PATIENCE)


def test_a_stdlib_tool_is_refused_until_allowed(tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text("kind: react\ntools: ['os:system', 'json:dumps']\n")
    refused = jianmu(tmp_path, "validate", "agent.yaml")
    assert refused.returncode == 2, refused.stderr
    assert "agent.yaml:2: tools[0]: module 'os'" in refused.stderr
    assert "--allow-module os" in refused.stderr and "agents.allowed_modules" in refused.stderr
    # One module allowed by the configuration, the other by the flag.
    (tmp_path / "jianmu.yaml").write_text("agents:\n  allowed_modules: [json]\n")
    allowed = jianmu(tmp_path, "validate", "agent.yaml", "--allow-module", "os")
    assert allowed.returncode == 0, allowed.stderr
    assert "agent.yaml: ok" in allowed.stdout


def test_a_yaml_bomb_as_the_config_file_fails_fast(tmp_path: Path) -> None:
    (tmp_path / "jianmu.yaml").write_text(BILLION_LAUGHS)
    done = jianmu(tmp_path, "validate", str(PRESETS / "react.yaml"))
    assert done.returncode == 2
    assert "error: jianmu.yaml:6: YAML refused: the document expands to more than" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_misspelt_placeholder_stops_the_run_before_any_model_call(tmp_path: Path) -> None:
    (tmp_path / "tree.yaml").write_text(
        "kind: tree\noutput: write\ntree:\n  react: {namespace: write, input: 'Answer: {tsk}'}\n"
    )
    with ScriptedOpenAIServer(["never used"]) as srv:
        done = jianmu(tmp_path, "run", "tree.yaml", "hi", "--no-live", base_url=srv.base_url)
        assert srv.requests == []
    assert done.returncode == 2
    assert "tree.yaml:4: tree.react.input: {tsk}: no such input key (did you mean 'task'?)" in done.stderr


def test_validate_and_show_list_the_mcp_servers_a_file_would_start(tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text(
        "kind: tree\n"
        "mcp_servers:\n"
        "  - {name: files, command: npx, args: ['-y', '@modelcontextprotocol/server-filesystem', '/srv']}\n"
        "tree:\n"
        "  react:\n"
        "    name: web\n"
        "    mcp_servers:\n"
        "      - {name: search, url: 'https://user:hunter2@search.example/mcp?token=s3cret',\n"
        "         protocol: legacy}\n"
    )
    done = jianmu(tmp_path, "validate", "agent.yaml")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "agent.yaml: ok"
    assert "mcp server files: starts npx -y @modelcontextprotocol/server-filesystem /srv" in lines[1]
    assert "mcp server search: reaches https://search.example/mcp" in lines[2]
    assert lines[2].endswith("(protocol legacy)") and "(protocol" not in lines[1]  # auto: unsaid
    assert "hunter2" not in done.stdout and "s3cret" not in done.stdout
    shown = jianmu(tmp_path, "show", "agent.yaml")
    assert shown.returncode == 0, shown.stderr
    assert "mcp server files: starts npx" in shown.stdout
