"""`@modelcontextprotocol/server-everything` (npm, pinned in tests/mcp/package.json), the
published MCP server many tests run: where it is, why it is missing, and the one way a test asks
for it.

The test command installs it: `install()` runs at session start (tests/conftest.py, in the
controller process only, under a file lock) when npm is on PATH and tests/mcp/node_modules lacks
it, so `pip install -e '.[dev]' && pytest` on a fresh clone needs no step of its own. Without node
or npm, or when the install fails, its tests skip saying why, and the session's last lines say
how to get it.

A test that needs it carries `needs_everything` (a module: `pytestmark`); and every helper that
starts it gets the command from `everything_command()`, which skips the calling test when the server is
missing, so a test without the mark skips too instead of failing on a fresh clone. No test
module reads the path on its own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ENTRY = HERE / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
NODE = shutil.which("node")
NPM = shutil.which("npm")
INSTALL = "npm install --prefix tests/mcp"
INSTALL_TIMEOUT = 240.0
"""Seconds for the whole npm install (a few MB), then its tests skip saying it timed out."""
_FAILED = "JIANMU_TESTS_NPM_FAILED"
"""Why the session's install failed, for the test workers (they inherit the environment)."""


def problem() -> str | None:
    """Why server-everything cannot run here (None when it can); the reason names it."""
    if NODE is None:
        return "server-everything needs Node.js (node and npm on PATH; the test command then installs it)"
    if not ENTRY.exists():
        failed = os.environ.get(_FAILED)
        if failed:
            return f"server-everything did not install ({INSTALL}): {failed}"
        return f"server-everything is not installed ({INSTALL}; the test command runs it when npm is on PATH)"
    return None


needs_everything = pytest.mark.needs_everything
"""The mark of every test that runs server-everything: tests/conftest.py skips it, saying why,
when `problem()` (asked at the test's setup, after the session's install) finds one."""


def everything_command(*args: str) -> list[str]:
    """`node <server-everything> *args`, or a skip of the calling test saying why it cannot run."""
    why = problem()
    if why is not None:
        pytest.skip(why)
    assert NODE is not None
    return [NODE, str(ENTRY), *args]


def install() -> str | None:
    """Install server-everything when it is missing and npm is there (`npm_install`)."""
    return npm_install(HERE, ENTRY, "server-everything", _FAILED)


def npm_install(prefix: Path, entry: Path, what: str, failed_var: str) -> str | None:
    """Install the npm packages of `prefix`'s package.json when `entry` is missing and npm is
    there; what was done (a line for the terminal), or None when nothing was to do. A failure is
    kept in `failed_var` (the environment the test workers inherit) for the skip reasons. Safe
    for concurrent sessions: one installs under an exclusive lock, the others wait for it
    (bounded) and find it installed."""
    if entry.exists() or NODE is None or NPM is None:
        return None
    import fcntl  # POSIX; the only platform the suite runs on

    where = f"npm install --prefix {prefix.relative_to(prefix.parents[1])}"
    started = time.monotonic()
    with open(prefix / ".npm-install.lock", "w") as lock:
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() - started > INSTALL_TIMEOUT:
                    os.environ[failed_var] = "another session's install held the lock too long"
                    return f"{where}: {os.environ[failed_var]}"
                time.sleep(0.5)  # another session installs: bounded by INSTALL_TIMEOUT
        if entry.exists():
            return None
        argv = [NPM, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--no-package-lock"]
        argv += ["--silent", "--fetch-retries=1", "--fetch-timeout=60000"]
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, stdin=subprocess.DEVNULL
            )
        except (subprocess.TimeoutExpired, OSError) as exc:
            os.environ[failed_var] = f"{type(exc).__name__}: {exc}"
        else:
            if done.returncode != 0 or not entry.exists():
                tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
                os.environ[failed_var] = f"exit {done.returncode}: {' / '.join(tail) or 'no output'}"
    seconds = time.monotonic() - started
    if failed_var in os.environ:
        return f"{where} failed after {seconds:.0f} s ({os.environ[failed_var]}): its tests will skip"
    return f"{where}: {what} installed for its tests in {seconds:.0f} s"
