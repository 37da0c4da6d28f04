"""The `jianmu-like` command line: run, resume, show and validate agent files; review approvals;
explain the configuration.

Exit codes: 0 success, 1 the agent failed, 2 usage or configuration error (every problem is
printed, never a traceback), 3 suspended waiting for approvals, 4 a node raised (node_error),
5 a tool provider could not start (provider_error), 6 `serve` cannot listen on its address,
130 interrupted (Ctrl-C); see
`common.EXIT_CODES_HELP`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ._common import (
    EXIT_BROKEN_PIPE,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    CliError,
    make_console,
    print_problems,
)
from ._parser import parse_arguments

if TYPE_CHECKING:
    from rich.console import Console

Command = Callable[[argparse.Namespace, "Console", "Console"], int]


def models_command(args: argparse.Namespace, _console: Console, _errors: Console) -> int:
    """`models pull|list`: delegated to the weights module's own command line."""
    from ..models.weights import main as models_main

    try:
        return models_main(args.rest)
    except SystemExit as exit_:  # argparse's --help and usage errors
        return int(exit_.code or 0)


def _configure_logging(verbose: bool, log_json: bool) -> None:
    """-v: INFO; otherwise the configured level (an invalid configuration is reported later, by
    the command that needs it)."""
    from .._base.config import ConfigError, get_config
    from ..telemetry.logging import configure_logging

    level, as_json = "WARNING", log_json
    try:
        config = get_config()
        level, as_json = config.logging.level, log_json or config.logging.json_logs
    except ConfigError:
        pass
    try:
        configure_logging("INFO" if verbose else level, json=as_json)
    except ValueError:
        configure_logging("WARNING", json=as_json)


def _discard_stdout() -> None:
    """Point standard output at /dev/null once its reader has gone (`... | head -1`): the
    interpreter flushes it again at exit, which would raise a second BrokenPipeError and print
    "Exception ignored" (the recipe of Python's `signal` documentation)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)


def _find_agent_files(args: argparse.Namespace) -> None:
    """An agent file argument may name a shipped preset (`run react "..."`) from any folder
    (`validate` resolves each of its files itself, to report every one)."""
    from ..agentfile._shipped import agent_file_path

    for key in ("preset", "agent_file"):
        value = getattr(args, key, None)
        if isinstance(value, str):
            setattr(args, key, str(agent_file_path(value)))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `jianmu-like` and `python -m jianmu_like`; returns the exit code."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure") and (stream.encoding or "").lower() not in ("utf-8", "utf8"):
            stream.reconfigure(errors="replace")
    args = parse_arguments(argv)
    if args.config:  # before anything reads the configuration (and for child processes)
        os.environ["JIANMU_CONFIG"] = args.config
    # Imported once the arguments are parsed (see parser.py): --help never pays for them.
    from .._base.config import ConfigError
    from .._base.sources import SourceError
    from ..checkpoint._store import CheckpointError
    from ..guard._approvals import ApprovalError

    console, errors = make_console(), make_console(stderr=True)
    module, function = str(args.handler).split(":")
    handler: Command = getattr(importlib.import_module(f"{__package__}.{module}"), function)
    try:
        _configure_logging(args.verbose, args.log_json)
        _find_agent_files(args)
        return handler(args, console, errors)
    except CliError as exc:
        print_problems(errors, [f"error: {p}" for p in exc.problems])
        return exc.code
    except SourceError as exc:  # an agent file or the configuration
        if len(exc.problems) == 1:
            print_problems(errors, [f"error: {exc.problems[0]}"])
        else:
            kind = "configuration" if isinstance(exc, ConfigError) else "agent file"
            print_problems(
                errors, exc.problems, title=f"error: invalid {kind} ({len(exc.problems)} problems):"
            )
        return EXIT_USAGE
    except (CheckpointError, ApprovalError) as exc:
        print_problems(errors, [f"error: {exc}"])
        return EXIT_USAGE
    except KeyboardInterrupt:
        print_problems(errors, ["interrupted"], style="yellow")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _discard_stdout()
        return EXIT_BROKEN_PIPE
    except Exception as exc:
        if args.verbose:
            errors.print_exception()
        print_problems(errors, [f"error: {type(exc).__name__}: {exc} (-v for details)"])
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
