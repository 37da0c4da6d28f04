"""`jianmu-like mock REPLIES [--port N]`: scripted replies served as an OpenAI-compatible server
(`testing._mock`, which defines the arguments and serves until Ctrl-C)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console


def mock_command(args: argparse.Namespace, console: Console, errors: Console) -> int:
    from ..testing._mock import main

    return main(args.arguments, prog="jianmu-like mock")
