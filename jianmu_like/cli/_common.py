"""Shared pieces of the `jianmu-like` command line: exit codes, the usage error, consoles."""

from __future__ import annotations

import errno
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..errors import JianmuError

if TYPE_CHECKING:
    from rich.console import Console


EXIT_OK = 0
EXIT_FAILED = 1
"""The agent ran and failed (model error, iteration or token limit, ...); `eval`: a case failed;
`eval compare`: a regression."""
EXIT_USAGE = 2
"""Bad arguments, agent file, configuration or checkpoint store."""
EXIT_SUSPENDED = 3
"""The run waits for human approvals."""
EXIT_NODE_ERROR = 4
"""A node of the tree raised an exception (a bug in a node or a tool runner)."""
EXIT_PROVIDER_ERROR = 5
"""A tool provider (an MCP server) could not start; no model was asked."""
EXIT_ADDRESS = 6
"""`serve` could not listen on its address: the port is in use (or not allowed, or the host is
not this machine's); checked before anything is printed or served."""
EXIT_INTERRUPTED = 130
"""Ctrl-C (SIGINT)."""
EXIT_BROKEN_PIPE = 141
"""The reader of standard output went away (`... | head -1`): 128 + SIGPIPE, as a shell reports
`git log | head`, and nothing printed about it."""
EXIT_TERMINATED = 143
"""SIGTERM (systemd, Docker, `timeout`): the run was cancelled and cleaned up, 128 + 15."""

EXIT_CODES_HELP = """\
exit codes:
  0    success
  1    the agent failed: model error (server unreachable, bad answers), iteration or token limit;
       eval: a case failed (an assertion, an evaluator or its run); eval compare: a regression
  2    usage, agent-file, configuration or checkpoint error (also guard_error: a guard rule
       names a tool that the agent's MCP servers did not list)
  3    suspended, waiting for approvals
  4    node_error: a node of the tree raised an exception
  5    provider_error: a tool provider (MCP server) could not start
  6    serve: its address is in use or cannot be bound (try another --port)
  130  interrupted (Ctrl-C)
  141  standard output was closed by its reader (e.g. `| head -1`); nothing more is printed
  143  terminated (SIGTERM); the run was stopped and its MCP servers with it
"""


class CliError(JianmuError):
    """A problem the user must fix; `problems` are printed one per line, then exit `code`."""

    def __init__(self, problems: list[str] | str, code: int = EXIT_USAGE) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems))
        self.code = code


def make_console(file: TextIO | None = None, *, stderr: bool = False) -> Console:
    """A Console that never wraps text it prints; wide tables when the output is not a terminal
    (a pipe or a file), so ids and paths stay on one line for scripts."""
    from rich.console import Console  # deferred: `--help` and usage errors need no rich

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            """The reader went away: raised on to `main`, which ends every command alike (exit
            141, nothing printed), where rich would exit 1 on its own."""
            self.quiet = True
            raise BrokenPipeError(errno.EPIPE, "the reader of the output went away")

    target = file if file is not None else (sys.stderr if stderr else sys.stdout)
    is_tty = bool(getattr(target, "isatty", lambda: False)())
    return _Console(file=target, highlight=False, soft_wrap=True, width=None if is_tty else 200)


def print_problems(
    console: Console, problems: list[str], *, title: str | None = None, style: str = "red"
) -> None:
    """Print every problem on its own line (red on a terminal), secrets masked (an exception's
    text may quote what a server printed)."""
    from rich.text import Text

    from .._base.redact import redact_text

    if title:
        console.print(Text(redact_text(title), style=f"bold {style}"))
    for problem in problems:
        console.print(Text(redact_text(problem), style=style))


def existing_store(target: str) -> str | Path:
    """A checkpoint store that must already exist (reading never creates one): a file's path,
    or a database URL as given (opening it read-only checks that it holds a store)."""
    from ..checkpoint._target import is_database_url  # deferred: `--help` needs no store code

    if is_database_url(target):
        return target
    file = Path(target)
    if not file.is_file():
        raise CliError(f"{file}: no such checkpoint file")
    return file


def json_object_option(raw: str, option: str, what: str) -> dict[str, Any]:
    """The value of a JSON-object option (`--args`, `--content`), or a CliError naming it."""
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise CliError(f"{option} is not JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise CliError(f"{option} must be a JSON object of {what}, not {type(value).__name__}")
    return value
