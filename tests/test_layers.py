"""The package's layers hold: `lint-imports` (import-linter, configured in pyproject.toml) keeps
every contract, function-level imports included. .ci/run runs it too; here a broken layer fails
the suite where the change was made, naming the import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"


def test_every_import_contract_is_kept() -> None:
    done = subprocess.run(
        [sys.executable, "-c", LINT, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout
    assert "Layers: base < kernel" in done.stdout  # the layers contract itself was checked
