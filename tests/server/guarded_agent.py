"""A guarded agent file for tests that share a checkpoint store between `jianmu-like serve` and
`jianmu-like approvals`: its one tool, `delete_file`, waits for approval and then appends a line
to `effects.log` next to the file (so "ran exactly once" is a count of lines)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from jianmu_like.testing import call, reply

AGENT = """\
kind: react
name: Careful
tools: ["{module}:delete_file"]
guard:
  require_approval:
    tools: [delete_file]
"""
EFFECTS = '''\
from pathlib import Path

from jianmu_like import tool

LOG = Path(__file__).with_name("effects.log")


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    with LOG.open("a") as log:
        log.write(f"delete {path}\\n")
    return f"deleted {path}"
'''


def responder(body: dict[str, Any]) -> Any:
    """The user's message is a path: delete it; after the tool's result, report it."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return reply(f"result: {last['content']}")
    return call("delete_file", path=last["content"])


def environment(base_url: str) -> dict[str, str]:
    """The parent's environment without model or jianmu settings, pointed at `base_url`."""
    skip = ("JIANMU", "OPENAI_", "FORCE_COLOR", "TTY_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(skip)}
    env.update(OPENAI_BASE_URL=base_url, OPENAI_API_KEY="x", PYTHONIOENCODING="utf-8", NO_COLOR="1")
    return env


def write_agent(folder: Path, module: str = "effects") -> Path:
    """`agent.yaml` and its tool module in `folder`; the agent file's path. A test that loads
    the file in its own process names the module uniquely (a module is imported once)."""
    (folder / f"{module}.py").write_text(EFFECTS)
    agent = folder / "agent.yaml"
    agent.write_text(AGENT.format(module=module))
    return agent
