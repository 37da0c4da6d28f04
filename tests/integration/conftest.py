"""Lets tests import the helper modules that sit beside them (approval_agent.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
