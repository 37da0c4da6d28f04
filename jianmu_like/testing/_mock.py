"""`jianmu-like mock REPLIES [--port N]` (also `python -m jianmu_like.testing REPLIES`): a replies
file (`testing._replies_file`) served by the strict scripted OpenAI-compatible server on
127.0.0.1 until interrupted.

The first line on standard output is the base URL and nothing else, so a script can read it and
set `OPENAI_BASE_URL`; what to do with it goes to standard error. The server is the test kit's:
every request is checked as OpenAI checks it (`--lenient` turns that off), which is what makes it
worth trying an agent against before a real server.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType
from typing import TextIO

from .._base.sources import SourceError
from ._replies_file import RepliesFile
from ._server import ScriptedOpenAIServer

EXIT_USAGE = 2


def mock_server(path: str, *, port: int = 0, lenient: bool = False) -> ScriptedOpenAIServer:
    """The (not yet started) server for the replies file at `path`; `SourceError` when the file
    cannot be used."""
    replies = RepliesFile.load(path)
    return ScriptedOpenAIServer(replies.script(), models=(replies.model,), lenient=lenient, port=port)


def serve(
    path: str,
    *,
    port: int = 0,
    lenient: bool = False,
    out: TextIO | None = None,
    err: TextIO | None = None,
    stop: threading.Event | None = None,
) -> int:
    """Serve `path` until SIGINT or SIGTERM (or `stop`); the exit code."""
    out, err = out or sys.stdout, err or sys.stderr
    try:
        server = mock_server(path, port=port, lenient=lenient)
    except SourceError as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=err)
        return EXIT_USAGE
    try:
        server.start()
    except OSError as exc:
        print(f"error: cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}", file=err)
        return EXIT_USAGE
    stop = stop or threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        print(server.base_url, file=out, flush=True)
        print(
            f"serving the replies of {path} as model {server.models[0]!r}; try:\n"
            f'  OPENAI_BASE_URL={server.base_url} jianmu-like run AGENT.yaml "..."\n'
            "Ctrl-C stops it.",
            file=err,
            flush=True,
        )
        stop.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        server.stop()
    print(f"served {len(server.requests)} request(s)", file=err, flush=True)
    return 0


def _port(text: str) -> int:
    """A TCP port number (0: a free one)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535, not {port}")
    return port


def main(argv: Sequence[str] | None = None, *, prog: str = "python -m jianmu_like.testing") -> int:
    """`REPLIES [--port N] [--lenient]`: the command's arguments, defined here once (`jianmu-like
    mock` hands its arguments over unparsed)."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Serve the scripted replies of a YAML or JSON file as a strict OpenAI-compatible "
        "server on 127.0.0.1; the first line printed is its base URL (for OPENAI_BASE_URL).",
    )
    parser.add_argument("replies", metavar="REPLIES", help="replies file (YAML or JSON; see docs: testing)")
    parser.add_argument("--port", type=_port, default=0, help="port on 127.0.0.1 (default: a free one)")
    parser.add_argument(
        "--lenient", action="store_true", help="accept requests OpenAI's API refuses (no checks)"
    )
    args = parser.parse_args(argv)
    return serve(args.replies, port=args.port, lenient=args.lenient)
