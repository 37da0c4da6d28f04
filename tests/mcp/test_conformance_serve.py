"""The official conformance suite's server scenarios against `jianmu-like mcp serve --http`.

An agent server offers one tool (the agent); most of the suite's server scenarios call the
reference server's fixtures instead (`test_simple_text`, `test://static-resource`, prompts,
`logging/setLevel`, completions), which no agent server has. The scenarios about the protocol
itself apply and must pass; every other scenario of the release is named here with the fixture
it needs, so a scenario the suite adds is noticed (`test_every_server_scenario_is_accounted_for`).
The agent's model is never called (no scenario calls the agent).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from jianmu_like.testing import PATIENCE, wait_until
from tests.mcp.test_conformance import CLI, SUITE, _node
from tests.server.guarded_agent import environment
from tests.server.sse_live import free_port

PRESET = Path(__file__).resolve().parents[2] / "presets" / "react.yaml"

APPLICABLE = [
    "server-initialize",
    "ping",
    "tools-list",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
    "resources-list",  # the artifacts of the runs it holds (none yet: an empty list, well formed)
]
FIXTURES = {
    "logging-set-level": "logging/setLevel (deprecated in 2026-07-28; an agent server offers no logging)",
    "completion-complete": "completion/complete of the reference server's prompt",
    **{
        f"tools-call-{name}": "the reference server's fixture tool"
        for name in (
            "simple-text",
            "image",
            "audio",
            "embedded-resource",
            "mixed-content",
            "with-logging",
            "error",
            "with-progress",
            "sampling",
            "elicitation",
        )
    },
    "json-schema-2020-12": "the reference server's fixture tool",
    "elicitation-sep1034-defaults": "the reference server's fixture tool",
    "elicitation-sep1330-enums": "the reference server's fixture tool",
    "server-sse-polling": "the reference server's fixture tool",
    **{
        f"resources-{name}": "the reference server's fixture resources"
        for name in ("read-text", "read-binary", "templates-read", "subscribe", "unsubscribe")
    },
    **{
        f"prompts-{name}": "the reference server's fixture prompts"
        for name in ("list", "get-simple", "get-with-args", "get-embedded-resource", "get-with-image")
    },
}
"""Server scenarios that need the reference server's fixtures, and which."""


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    _node()
    folder = tmp_path_factory.mktemp("conformance-serve")
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "jianmu_like", "mcp", "serve", str(PRESET), "--http", "--port", str(port)],
        cwd=folder,
        env=environment("http://127.0.0.1:9/v1"),  # never called
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}/mcp"

    def up() -> bool:
        try:
            return httpx.get(url, timeout=1).status_code > 0
        except httpx.TransportError:
            return False

    try:
        wait_until(
            up, "mcp serve to come up", abort=lambda: None if proc.poll() is None else proc.communicate()[1]
        )
        yield url
    finally:
        proc.terminate()
        proc.communicate(timeout=PATIENCE)


@pytest.mark.parametrize("scenario", APPLICABLE)
def test_the_protocol_scenarios_pass(served: str, scenario: str, tmp_path: Path) -> None:
    node = _node()
    done = subprocess.run(
        [node, "--import", str(SUITE / "node20_shim.mjs"), str(CLI), "server", "--url", served,
         "--scenario", scenario, "-o", str(tmp_path)],
        capture_output=True, text=True, timeout=120, cwd=SUITE, check=False,
    )  # fmt: skip
    found = sorted(tmp_path.glob(f"server-{scenario}-*/checks.json"))
    assert found, done.stdout[-2000:] + done.stderr[-2000:]
    checks = json.loads(found[-1].read_text())
    failed = [c for c in checks if c.get("status") == "FAILURE"]
    assert checks and not failed, json.dumps(failed, indent=1)[:3000]


def test_every_server_scenario_is_accounted_for() -> None:
    node = _node()
    listed = subprocess.run(
        [node, "--import", str(SUITE / "node20_shim.mjs"), str(CLI), "list", "--server"],
        capture_output=True, text=True, timeout=60, cwd=SUITE, check=True,
    ).stdout  # fmt: skip
    names = {line.strip()[2:].split(" ")[0] for line in listed.splitlines() if line.strip().startswith("- ")}
    assert names == {*APPLICABLE, *FIXTURES}
