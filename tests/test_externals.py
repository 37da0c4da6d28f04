"""What the test command does about what lies outside Python (issue 34): server-everything is
installed by the session itself (tests/mcp/everything.py), once, or its tests skip saying why; and
the last line of the output names every missing external and how to get it (tests/conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from jianmu_like.testing import PATIENCE
from tests.mcp import everything

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def fake_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tests/mcp/everything.py pointed at an empty folder, with node "installed"."""
    entry = tmp_path / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    monkeypatch.setattr(everything, "HERE", tmp_path)
    monkeypatch.setattr(everything, "ENTRY", entry)
    monkeypatch.setattr(everything, "NODE", sys.executable)  # any executable: never run here
    monkeypatch.delenv(everything._FAILED, raising=False)
    return tmp_path


def npm_script(folder: Path, body: str) -> str:
    """An `npm` that runs `body` (sh) with the install's arguments: the real command is the
    network's; what is tested here is what the session does with its outcome."""
    script = folder / "npm"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return str(script)


def test_a_missing_server_is_installed_once(fake_checkout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = fake_checkout / "calls"
    creates = f'echo "$@" >> {calls}; mkdir -p "$(dirname {everything.ENTRY})"; touch {everything.ENTRY}'
    monkeypatch.setattr(everything, "NPM", npm_script(fake_checkout, creates))
    assert everything.problem() is not None
    done = everything.install()
    assert done is not None and "server-everything installed" in done
    assert everything.problem() is None
    assert everything.install() is None  # installed: nothing to do
    [arguments] = calls.read_text().splitlines()
    assert arguments.startswith(f"install --prefix {fake_checkout} --no-audit")


def test_a_failed_install_is_the_reason_its_tests_skip(
    fake_checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        everything, "NPM", npm_script(fake_checkout, "echo 'npm ERR! network down' >&2; exit 1")
    )
    done = everything.install()
    assert done is not None and "failed" in done and "network down" in done
    why = everything.problem()
    assert why is not None and "did not install" in why and "network down" in why
    with pytest.raises(pytest.skip.Exception, match="network down"):
        everything.everything_command("stdio")


def test_without_node_nothing_is_installed_and_the_reason_says_so(
    fake_checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(everything, "NODE", None)
    assert everything.install() is None
    assert "needs Node.js" in (everything.problem() or "")


def test_the_last_line_names_what_was_missing_and_how_to_get_it(tmp_path: Path) -> None:
    (tmp_path / "test_needs.py").write_text(
        "import pytest\n\n"
        "def test_store():\n    pytest.skip('no PostgreSQL for this test: no initdb')\n\n"
        "@pytest.mark.needs_everything\ndef test_mcp():\n    pass\n\n"
        "@pytest.mark.needs_everything\ndef test_mcp_again():\n    pass\n\n"
        "def test_other():\n    pytest.skip('for another reason')\n"
    )
    no_node = tmp_path / "bin"
    no_node.mkdir()
    # The suite's configuration and conftest, on a file of its own.
    options = [
        "-c",
        str(ROOT / "pyproject.toml"),
        "-p",
        "tests.conftest",
        "-n",
        "0",
        "-p",
        "no:cacheprovider",
    ]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *options, str(tmp_path / "test_needs.py")],
        cwd=ROOT,
        env={**os.environ, "PATH": str(no_node)},  # no node, no npm
        capture_output=True,
        text=True,
        timeout=PATIENCE,
    )
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stdout + done.stderr
    assert lines[-1].startswith("4 skipped")
    assert lines[-2] == (
        "skipped for a missing external: "
        f"PostgreSQL (1: {'apt-get install postgresql (initdb on PATH or under /usr/lib/postgresql)'}); "
        "server-everything (2: Node.js and npm on PATH (the test command then installs it in tests/mcp))"
    )
    assert any("short test summary info" in line for line in lines[:-2])
