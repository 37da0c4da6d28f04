"""Lets the tests import the live-server helper of the server tests (tests/server/sse_live.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
