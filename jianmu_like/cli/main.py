"""The `jianmu-like` command line: run, resume, show and validate agent files; review approvals;
explain the configuration.

Exit codes: 0 success, 1 the agent failed, 2 usage or configuration error (every problem is
printed, never a traceback), 3 suspended waiting for approvals, 4 a node raised (node_error),
5 a tool provider could not start (provider_error), 130 interrupted (Ctrl-C); see
`common.EXIT_CODES_HELP`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from importlib import metadata

from rich.console import Console
from rich.text import Text

from ..agentfile.yaml_source import SourceError
from ..checkpoint.store import CheckpointError
from ..config import ConfigError, get_config
from ..guard.approvals import ApprovalError
from ..telemetry.logging import configure_logging
from . import approvals as cli_approvals
from . import inspect as cli_inspect
from . import run as cli_run
from .common import (
    EXIT_CODES_HELP,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    CliError,
    make_console,
    print_problems,
)

Command = Callable[[argparse.Namespace, Console, Console], int]

EPILOG = """\
examples:
  jianmu-like run presets/react.yaml "What is 25 * 4 + 10?"
  jianmu-like run presets/react.yaml "2**10?" --json
  jianmu-like show presets/research.yaml --dot
  jianmu-like approvals list runs.db

"""


def _version() -> str:
    try:
        return metadata.version("jianmu_like")
    except metadata.PackageNotFoundError:
        return "unknown"


def _global_options(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    """-v and --log-json, accepted before or after the command (a command's copy never
    overrides the value given before it)."""
    default: object = False if defaults else argparse.SUPPRESS
    parser.add_argument("-v", "--verbose", action="store_true", default=default, help="log at INFO level")
    parser.add_argument("--log-json", action="store_true", default=default, help="log as JSON lines")


def _agent_file_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--allow-module",
        action="append",
        default=[],
        metavar="NAME",
        help="let the agent file name tools from module NAME (and its submodules); repeatable. "
        "Modules under the agent file's directory are allowed; see agents.allowed_modules",
    )


def _run_options(parser: argparse.ArgumentParser) -> None:
    _agent_file_options(parser)
    parser.add_argument(
        "--json", action="store_true", help="print every event as one JSON line, nothing else"
    )
    parser.add_argument("--max-ticks", type=int, default=100_000, metavar="N", help="stop after N ticks")
    parser.add_argument("--no-live", action="store_true", help="no live tree view (a plain transcript)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `jianmu-like`."""
    parser = argparse.ArgumentParser(
        prog="jianmu-like",
        description="LLM agents as behaviour trees: run and inspect YAML agent files.",
        epilog=EPILOG + EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    _global_options(parser, defaults=True)
    parent = argparse.ArgumentParser(add_help=False)
    _global_options(parent, defaults=False)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser(
        "run",
        parents=[parent],
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        help="answer a question with an agent file",
    )
    run.add_argument("preset", metavar="PRESET", help="agent file (e.g. presets/react.yaml)")
    run.add_argument("question", metavar="QUESTION")
    run.add_argument("--checkpoint", metavar="FILE", help="save the run in this SQLite file (resumable)")
    run.add_argument("--thread", metavar="ID", help="thread id in the checkpoint file (default: a new one)")
    _run_options(run)
    run.set_defaults(handler=cli_run.run_command)

    resume = commands.add_parser(
        "resume",
        parents=[parent],
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        help="continue a suspended or interrupted run",
    )
    resume.add_argument("preset", metavar="PRESET", help="the agent file the run was started with")
    resume.add_argument("--checkpoint", metavar="FILE", required=True, help="SQLite checkpoint file")
    resume.add_argument("--thread", metavar="ID", required=True, help="thread id")
    _run_options(resume)
    resume.set_defaults(handler=cli_run.resume_command)

    show = commands.add_parser("show", parents=[parent], help="print an agent's tree (no model contacted)")
    show.add_argument("preset", metavar="PRESET")
    show.add_argument("--dot", action="store_true", help="Graphviz dot instead of a text tree")
    _agent_file_options(show)
    show.set_defaults(handler=cli_inspect.show_command)

    validate = commands.add_parser("validate", parents=[parent], help="check agent files")
    validate.add_argument("presets", metavar="PRESET", nargs="+")
    _agent_file_options(validate)
    validate.set_defaults(handler=cli_inspect.validate_command)

    cli_approvals.add_parser(commands, parent)
    commands.choices["approvals"].set_defaults(handler=cli_approvals.approvals_command)

    config = commands.add_parser(
        "config", parents=[parent], help="the effective configuration and its sources"
    )
    config.add_argument("--json", action="store_true", help="as JSON")
    config.set_defaults(handler=cli_inspect.config_command)

    models = commands.add_parser(
        "models", add_help=False, help="pull or list the embedded local model's weights (models --help)"
    )
    models.add_argument("rest", nargs=argparse.REMAINDER)
    models.set_defaults(handler=_models_command, verbose=False, log_json=False)
    return parser


def _models_command(args: argparse.Namespace, _console: Console, _errors: Console) -> int:
    """`models pull|list`: delegated to the weights module's own command line."""
    from ..models.weights import main as models_main

    try:
        return models_main(args.rest)
    except SystemExit as exit_:  # argparse's --help and usage errors
        return int(exit_.code or 0)


def _configure_logging(verbose: bool, log_json: bool) -> None:
    """-v: INFO; otherwise the configured level (an invalid configuration is reported later, by
    the command that needs it)."""
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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `jianmu-like` and `python -m jianmu_like`; returns the exit code."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure") and (stream.encoding or "").lower() not in ("utf-8", "utf8"):
            stream.reconfigure(errors="replace")
    args = build_parser().parse_args(argv)
    console, errors = make_console(), make_console(stderr=True)
    handler: Command = args.handler
    try:
        _configure_logging(args.verbose, args.log_json)
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
        errors.print(Text("interrupted", style="yellow"))
        return EXIT_INTERRUPTED
    except Exception as exc:
        if args.verbose:
            errors.print_exception()
        print_problems(errors, [f"error: {type(exc).__name__}: {exc} (-v for details)"])
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
