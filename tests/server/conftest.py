"""Lets tests import the helper module beside them (sse_live.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
