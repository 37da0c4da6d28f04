"""The argument parser of `jianmu-like`, kept free of heavy imports.

`--help`, `--version` and usage errors need nothing but argparse, so this module imports nothing
of the framework: each command names its handler as `"module:function"` inside `jianmu_like.cli`,
and `main` imports that module only once the arguments are parsed.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from importlib import metadata

from ._common import EXIT_CODES_HELP

STORE_HELP = "SQLite checkpoint file or postgresql:// URL"
DATABASE_HELP = "the postgresql:// database of durable runs (DBOS; the `durable` extra)"

EPILOG = """\
examples:
  jianmu-like run presets/react.yaml "What is 25 * 4 + 10?"
  jianmu-like run presets/react.yaml "2**10?" --json
  jianmu-like show presets/research.yaml --dot
  jianmu-like approvals list runs.db
  jianmu-like elicitations list --url http://127.0.0.1:8321
  jianmu-like interruptions list --url http://127.0.0.1:8321
  jianmu-like threads history runs.db THREAD
  jianmu-like serve presets/react.yaml --port 8321
  jianmu-like worker presets/react.yaml --database postgresql://host/db
  jianmu-like submit presets/react.yaml "2**10?" --database postgresql://host/db --wait

"""


def _version() -> str:
    try:
        return metadata.version("jianmu_like")
    except metadata.PackageNotFoundError:
        return "unknown"


def _global_options(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    """-v, --log-json and --config, accepted before or after the command (a command's copy never
    overrides the value given before it)."""
    default: object = False if defaults else argparse.SUPPRESS
    parser.add_argument("-v", "--verbose", action="store_true", default=default, help="log at INFO level")
    parser.add_argument("--log-json", action="store_true", default=default, help="log as JSON lines")
    parser.add_argument(
        "--config",
        metavar="FILE",
        default=None if defaults else argparse.SUPPRESS,
        help="configuration file to read (sets JIANMU_CONFIG; default: ./jianmu.yaml, else "
        "~/.config/jianmu_like/jianmu.yaml)",
    )


def _agent_file_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--allow-module",
        action="append",
        default=[],
        metavar="NAME",
        help="let the agent file name tools from module NAME (and its submodules); repeatable. "
        "Modules under the agent file's directory are allowed; see agents.allowed_modules",
    )


def _positive_or_off(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 (no limit) or a positive number, got {value}")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {value}")
    return value


def _host_name(text: str) -> str:
    from .._base.hostnames import parse_authority

    try:
        parse_authority(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _seconds_or_off(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be 0 (never) or a positive number of seconds, got {text}")
    return value


def _positive_seconds(text: str) -> float:
    value = float(text)
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return value


def _otel_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--otel",
        action="store_true",
        help="trace runs with OpenTelemetry (the `otel` extra; exporter, endpoint and service name "
        "from the OTEL_* variables, e.g. OTEL_TRACES_EXPORTER=otlp|console); see telemetry.otel",
    )


def _run_options(parser: argparse.ArgumentParser) -> None:
    _agent_file_options(parser)
    _otel_option(parser)
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
    run.add_argument(
        "--checkpoint",
        metavar="STORE",
        help="save the run (resumable) in this SQLite file or postgresql:// database",
    )
    run.add_argument("--thread", metavar="ID", help="thread id in the checkpoint store (default: a new one)")
    run.add_argument(
        "--record",
        metavar="FILE",
        help="write the run to this recording (JSON Lines) for `jianmu-like replay`",
    )
    run.add_argument(
        "--substitute",
        metavar="FILE",
        help="force nodes' results and script tools' outputs by this rules file (YAML or JSON)",
    )
    _run_options(run)
    run.set_defaults(handler="_run:run_command")

    resume = commands.add_parser(
        "resume",
        parents=[parent],
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        help="continue a suspended or interrupted run",
    )
    resume.add_argument("preset", metavar="PRESET", help="the agent file the run was started with")
    resume.add_argument("--checkpoint", metavar="STORE", required=True, help=STORE_HELP)
    resume.add_argument("--thread", metavar="ID", required=True, help="thread id")
    _run_options(resume)
    resume.set_defaults(handler="_run:resume_command")

    show = commands.add_parser("show", parents=[parent], help="print an agent's tree (no model contacted)")
    show.add_argument("preset", metavar="PRESET")
    show.add_argument("--dot", action="store_true", help="Graphviz dot instead of a text tree")
    _agent_file_options(show)
    show.set_defaults(handler="_inspect:show_command")

    validate = commands.add_parser("validate", parents=[parent], help="check agent files")
    validate.add_argument("presets", metavar="PRESET", nargs="+")
    _agent_file_options(validate)
    validate.set_defaults(handler="_inspect:validate_command")

    replay = commands.add_parser(
        "replay",
        parents=[parent],
        help="re-run a recording offline (no model, no tool side effects) and report the first difference",
    )
    replay.add_argument(
        "file",
        metavar="FILE",
        nargs="?",
        help="a recording (`run --record FILE`); or --checkpoint and --thread",
    )
    replay.add_argument(
        "--checkpoint", metavar="STORE", help="replay a thread's recording kept in this " + STORE_HELP
    )
    replay.add_argument(
        "--thread", metavar="ID", help="with --checkpoint: the thread (see `threads recordings`)"
    )
    replay.add_argument(
        "--run", metavar="RUN_ID", help="with --thread: the recording of this run (default: the newest)"
    )
    replay.add_argument("--json", action="store_true", help="print every event as one JSON line")
    replay.add_argument(
        "--agent",
        metavar="AGENT",
        help="replay on this agent file or module:function (default: the recorded one)",
    )
    replay.add_argument(
        "--until", type=int, metavar="N", help="with --live: replay N model calls, then go live"
    )
    replay.add_argument(
        "--until-tick",
        type=int,
        metavar="T",
        help="with --live: replay up to tick T (the first model or tool call from it on goes live)",
    )
    replay.add_argument("--live", action="store_true", help="continue against the real model and tools")
    replay.add_argument("--record", metavar="OUT", help="with --live: record the forked run to OUT")
    replay.add_argument(
        "--substitute",
        metavar="FILE",
        help="replay under this rules file's substitutions (default: the recorded run's own)",
    )
    replay.add_argument(
        "--export-mock", metavar="OUT", help="write the recording as a `jianmu-like mock` replies file"
    )
    replay.set_defaults(handler="_replay:replay_command")

    _approvals_parser(commands, parent)
    _elicitations_parser(commands, parent)
    _interruptions_parser(commands, parent)
    _mcp_parser(commands, parent)
    _threads_parser(commands, parent)
    _serve_parser(commands, parent)
    mock = commands.add_parser(
        "mock",
        add_help=False,
        prefix_chars="\0",  # every argument goes to `testing._mock.main`, which defines them
        help="serve scripted replies from a YAML/JSON file as an OpenAI-compatible server on 127.0.0.1 "
        "(try agents offline; `mock --help`)",
    )
    mock.add_argument("arguments", nargs=argparse.REMAINDER)
    mock.set_defaults(handler="_mock:mock_command")
    _durable_parsers(commands, parent)
    _eval_parser(commands, parent)

    config = commands.add_parser(
        "config", parents=[parent], help="the effective configuration and its sources"
    )
    config.add_argument("--json", action="store_true", help="as JSON")
    config.set_defaults(handler="_inspect:config_command")

    models = commands.add_parser(
        "models", add_help=False, help="pull or list the embedded local model's weights (models --help)"
    )
    models.add_argument("rest", nargs=argparse.REMAINDER)
    models.set_defaults(handler="_main:models_command", verbose=False, log_json=False)
    return parser


def _eval_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], parent: argparse.ArgumentParser
) -> None:
    evaluation = commands.add_parser(
        "eval",
        parents=[parent],
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        help="score an agent file on a dataset of cases (the `evals` extra); `eval compare OLD NEW`",
        usage="jianmu-like eval DATASET AGENT_FILE [--report FILE]... [--json] [--concurrency N]\n"
        "       jianmu-like eval compare OLD.json NEW.json [--tolerance X]",
        description="jianmu-like eval DATASET AGENT_FILE [--report FILE]...: run every case and score it; "
        "jianmu-like eval compare OLD.json NEW.json: name each regression between two reports.",
    )
    evaluation.add_argument(
        "paths", nargs="+", metavar="PATH", help="DATASET AGENT_FILE, or compare OLD.json NEW.json"
    )
    evaluation.add_argument(
        "--report",
        action="append",
        metavar="FILE",
        help="also write the report to FILE: .json, .html or .md (repeatable)",
    )
    evaluation.add_argument(
        "--json", action="store_true", help="print the report as JSON instead of the table"
    )
    evaluation.add_argument(
        "--concurrency",
        type=_positive,
        default=4,
        metavar="N",
        help="run at most N cases at once (default 4)",
    )
    evaluation.add_argument(
        "--max-ticks", type=int, default=100_000, metavar="N", help="stop a case after N ticks"
    )
    evaluation.add_argument(
        "--tolerance",
        type=float,
        default=0.0,
        metavar="X",
        help="compare: a score must drop by more than X to be a regression (default 0)",
    )
    _agent_file_options(evaluation)
    evaluation.set_defaults(handler="_eval:eval_command")


def _approvals_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], parent: argparse.ArgumentParser
) -> None:
    """Register `approvals` and its three subcommands."""
    approvals = commands.add_parser(
        "approvals", parents=[parent], help="list, approve or deny tool calls waiting in a checkpoint store"
    )
    actions = approvals.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", parents=[parent], help="pending approvals of every suspended thread")
    listing.add_argument("file", metavar="STORE", nargs="?", help=STORE_HELP + " (not with --database)")
    listing.add_argument("--json", action="store_true", help="one JSON object per pending approval")
    listing.add_argument("--database", metavar="URL", help=DATABASE_HELP)
    for verb in ("approve", "deny"):
        action = actions.add_parser(
            verb,
            parents=[parent],
            help=f"{verb} one tool call",
            usage="%(prog)s STORE THREAD ID | %(prog)s --database URL RUN_ID ID",
        )
        action.add_argument("file", metavar="STORE", help=STORE_HELP + " (with --database: the run id)")
        action.add_argument("thread", metavar="THREAD", help="thread id (with --database: the approval id)")
        action.add_argument("approval_id", metavar="ID", nargs="?", help="approval id (see `approvals list`)")
        action.add_argument(
            "--reason", "-r", required=verb == "deny", default="", help="told to the model (deny: required)"
        )
        if verb == "approve":
            action.add_argument(
                "--args",
                metavar="JSON",
                dest="arguments",
                help="run the call with these corrected arguments (a JSON object, checked against "
                "the tool's schema)",
            )
        action.add_argument("--database", metavar="URL", help=DATABASE_HELP)
    approvals.set_defaults(handler="_approvals:approvals_command")


def _mcp_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], parent: argparse.ArgumentParser
) -> None:
    """Register `mcp login|logout` (OAuth with the HTTP MCP servers of an agent file) and
    `mcp serve` (the agent file as an MCP server)."""
    mcp = commands.add_parser(
        "mcp",
        parents=[parent],
        help="log in to (or out of) an agent file's MCP servers; serve an agent as an MCP server",
    )
    actions = mcp.add_subparsers(dest="action", required=True, metavar="ACTION")
    login = actions.add_parser(
        "login",
        parents=[parent],
        help="authorize with an OAuth server (browser; callback on 127.0.0.1) and store the tokens",
    )
    logout = actions.add_parser("logout", parents=[parent], help="forget a server's stored tokens")
    for action in (login, logout):
        action.add_argument(
            "agent_file", metavar="AGENT_FILE", help="the agent file whose mcp_servers names it"
        )
        action.add_argument("server", metavar="SERVER", help="the server's name in mcp_servers")
        _agent_file_options(action)
    login.add_argument("--no-browser", action="store_true", help="only print the URL to open")
    serve = actions.add_parser(
        "serve",
        parents=[parent],
        help="offer an agent file to MCP clients as one tool (stdio; --http: streamable HTTP)",
    )
    serve.add_argument("agent_file", metavar="AGENT_FILE", help="agent file (e.g. presets/react.yaml)")
    serve.add_argument("--http", action="store_true", help="streamable HTTP at /mcp instead of stdio")
    serve.add_argument("--host", default="127.0.0.1", help="--http: address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8322, help="--http: port (default 8322)")
    serve.add_argument(
        "--token",
        default=None,
        help="--http: require `Authorization: Bearer TOKEN` (or JIANMU_SERVER_TOKEN); needed off loopback",
    )
    serve.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        type=_host_name,
        metavar="NAME[:PORT]",
        help="--http: also answer requests for this Host (repeatable; adds to server.allowed_hosts)",
    )
    serve.add_argument("--checkpoint", metavar="STORE", help="save every run in this " + STORE_HELP)
    serve.add_argument(
        "--question-timeout",
        type=_positive_seconds,
        default=300.0,
        metavar="SECONDS",
        help="how long the MCP client has to answer an approval or a question (then: denied)",
    )
    _agent_file_options(serve)
    mcp.set_defaults(handler="_mcp:mcp_command")


def _elicitations_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], parent: argparse.ArgumentParser
) -> None:
    """Register `elicitations list|respond`: the questions MCP servers ask a person, answered
    over a running `jianmu-like serve` (they live in its runs, not in a store)."""
    elicitations = commands.add_parser(
        "elicitations",
        parents=[parent],
        help="list or answer the questions MCP servers ask a person, on a running `jianmu-like serve`",
    )
    actions = elicitations.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", parents=[parent], help="open questions of every run (or one run)")
    listing.add_argument("run_id", metavar="RUN", nargs="?", help="only this run's questions")
    listing.add_argument("--json", action="store_true", help="one JSON object per open question")
    respond = actions.add_parser("respond", parents=[parent], help="answer one question")
    respond.add_argument("run_id", metavar="RUN", help="the run that asks (see `elicitations list`)")
    respond.add_argument("elicitation_id", metavar="ID", help="the question's id (see `elicitations list`)")
    respond.add_argument("answer", metavar="ACTION", choices=("accept", "decline", "cancel"))
    respond.add_argument(
        "--content",
        metavar="JSON",
        help="with accept: the values asked for (a JSON object, checked against the requested schema)",
    )
    for action in (listing, respond):
        action.add_argument(
            "--url", default="http://127.0.0.1:8321", help="the server (default http://127.0.0.1:8321)"
        )
        action.add_argument("--token", help="its bearer token (default: env JIANMU_SERVER_TOKEN)")
    elicitations.set_defaults(handler="_elicitations:elicitations_command")


def _interruptions_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], parent: argparse.ArgumentParser
) -> None:
    """Register `interruptions list|answer`: what a running `jianmu-like serve`'s runs wait for
    (approvals, client tool calls, questions), answered through its one answer route."""
    interruptions = commands.add_parser(
        "interruptions",
        parents=[parent],
        help="list or answer what the runs of a running `jianmu-like serve` wait for "
        "(approvals and questions)",
    )
    actions = interruptions.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", parents=[parent], help="what every run (or one run) waits for")
    listing.add_argument("run_id", metavar="RUN", nargs="?", help="only this run's")
    listing.add_argument("--json", action="store_true", help="one JSON object per interruption")
    answer = actions.add_parser("answer", parents=[parent], help="answer one, whatever its kind")
    answer.add_argument("interruption_id", metavar="ID", help="its id (see `interruptions list`)")
    answer.add_argument(
        "answer", metavar="ANSWER", choices=("approve", "deny", "accept", "decline", "cancel"),
        help="approve | deny (an approval), accept | decline | cancel (a question)",
    )  # fmt: skip
    answer.add_argument("--run", metavar="RUN", help="the run, when the id waits in several")
    answer.add_argument("--thread", metavar="THREAD", help="the conversation, when the id waits in several")
    answer.add_argument("--reason", default="", help="a denial's reason (the model reads it)")
    answer.add_argument("--args", dest="arguments", metavar="JSON", help="approve with corrected arguments")
    answer.add_argument("--content", metavar="JSON", help="with accept: the values asked for (a JSON object)")
    for action in (listing, answer):
        action.add_argument(
            "--url", default="http://127.0.0.1:8321", help="the server (default http://127.0.0.1:8321)"
        )
        action.add_argument("--token", help="its bearer token (default: env JIANMU_SERVER_TOKEN)")
    interruptions.set_defaults(handler="_interruptions:interruptions_command")


def _threads_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], parent: argparse.ArgumentParser
) -> None:
    """Register `threads list|show|history|recordings` (read only)."""
    threads = commands.add_parser(
        "threads",
        parents=[parent],
        help="list the conversations of a checkpoint store, show one, list its versions",
    )
    actions = threads.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, what, takes_thread in (
        ("list", "every thread with its newest version", False),
        ("show", "one thread's newest version and conversation", True),
        ("history", "one thread's versions, newest first (seq, parent, status, node...)", True),
        ("recordings", "one thread's runs kept as recordings, newest first; --run RUN writes one out", True),
    ):
        action = actions.add_parser(name, parents=[parent], help=what)
        action.add_argument("file", metavar="STORE", help=STORE_HELP)
        if takes_thread:
            action.add_argument("thread", metavar="THREAD", help="thread id (see `threads list`)")
        action.add_argument("--json", action="store_true", help="JSON (one object per line)")
        if name == "recordings":
            action.add_argument(
                "--run", metavar="RUN_ID", help="write this run's recording (JSON Lines) instead of listing"
            )
            action.add_argument(
                "-o", "--output", metavar="OUT", help="with --run: write it to OUT (default: standard output)"
            )
    threads.set_defaults(handler="_threads:threads_command", thread=None)


def _serve_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], parent: argparse.ArgumentParser
) -> None:
    """Register `serve`: the HTTP/SSE API (jianmu_like.server)."""
    serve = commands.add_parser(
        "serve", parents=[parent], help="serve an agent file over HTTP (runs, SSE events, approvals)"
    )
    serve.add_argument("agent_file", metavar="AGENT_FILE", help="agent file (e.g. presets/react.yaml)")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8321, help="port (default 8321)")
    serve.add_argument("--checkpoint", metavar="STORE", help="save every run in this " + STORE_HELP)
    serve.add_argument(
        "--token",
        help="bearer token required on /api/ routes (default: env JIANMU_SERVER_TOKEN); "
        "required to bind to a non-loopback address",
    )
    serve.add_argument("--max-ticks", type=int, default=100_000, metavar="N", help="stop a run after N ticks")
    serve.add_argument(
        "--recordings",
        metavar="DIR",
        help="a folder of recordings (*.jsonl) the web console opens: each is replayed (no model, "
        "no tool) and shown with the tree and its timeline, as a live run",
    )
    serve.add_argument(
        "--max-runs",
        type=_positive_or_off,
        default=1000,
        metavar="N",
        help="keep at most N finished runs in memory, the oldest evicted first (default 1000; 0: no limit)",
    )
    serve.add_argument(
        "--run-ttl",
        type=_seconds_or_off,
        default=3600.0,
        metavar="SECONDS",
        help="evict a finished run this long after it finished (default 3600; 0: never); "
        "running and suspended runs are never evicted",
    )
    serve.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        type=_host_name,
        metavar="NAME[:PORT]",
        help="also answer requests for this Host (repeatable; adds to server.allowed_hosts); any other "
        "than the bound address, localhost, 127.0.0.1 and [::1] on the port is refused (421)",
    )
    serve.add_argument(
        "--max-body-bytes",
        type=_positive,
        metavar="N",
        help="refuse request bodies over N bytes (413; default server.max_body_bytes, 1 MiB)",
    )
    _agent_file_options(serve)
    _otel_option(serve)
    serve.set_defaults(handler="_serve:serve_command")


QUEUE_HELP = (
    "the queue's name, for workers and submitters on hosts where the agent file's path differs "
    "(default: the file name plus a digest of its absolute path: two files never share a queue)"
)


def _durable_parsers(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], parent: argparse.ArgumentParser
) -> None:
    """Register `worker`, `submit`, `runs` and `recover`: durable runs on DBOS."""
    worker = commands.add_parser(
        "worker", parents=[parent], help="execute an agent file's queued durable runs (until SIGTERM)"
    )
    worker.add_argument("agent_file", metavar="AGENT_FILE", help="agent file (it names the queue)")
    worker.add_argument("--database", metavar="URL", required=True, help=DATABASE_HELP)
    worker.add_argument("--queue", metavar="NAME", help=QUEUE_HELP)
    worker.add_argument(
        "--executor-id",
        metavar="ID",
        help="this worker's DBOS executor id (default HOST-PID); a stable id lets a restarted "
        "worker recover its own runs",
    )
    worker.add_argument(
        "--concurrency", type=int, default=16, metavar="N", help="runs this worker executes at once (16)"
    )
    worker.add_argument(
        "--global-concurrency", type=int, metavar="N", help="runs of this queue at once across all workers"
    )
    _agent_file_options(worker)
    worker.set_defaults(handler="_durable:worker_command")

    submit = commands.add_parser("submit", parents=[parent], help="enqueue a durable run for the workers")
    submit.add_argument("agent_file", metavar="AGENT_FILE", help="agent file (it names the queue)")
    submit.add_argument("question", metavar="QUESTION")
    submit.add_argument("--database", metavar="URL", required=True, help=DATABASE_HELP)
    submit.add_argument("--queue", metavar="NAME", help=QUEUE_HELP)
    submit.add_argument("--wait", action="store_true", help="wait for the result and print the answer")
    submit.add_argument("--json", action="store_true", help="with --wait: the whole result as JSON")
    submit.add_argument("--run-id", metavar="ID", help="the run's id (idempotent: an existing run is reused)")
    submit.add_argument(
        "--thread",
        metavar="ID",
        help="continue this conversation (kept in the database; a new id starts one)",
    )
    submit.set_defaults(handler="_durable:submit_command")

    runs = commands.add_parser(
        "runs", parents=[parent], help="durable runs enqueued, running or waiting (JSON lines)"
    )
    runs.add_argument("agent_file", metavar="AGENT_FILE", nargs="?", help="only this agent's queue")
    runs.add_argument("--database", metavar="URL", required=True, help=DATABASE_HELP)
    runs.add_argument("--queue", metavar="NAME", help=QUEUE_HELP)
    runs.add_argument("--all", action="store_true", help="finished runs too")
    runs.set_defaults(handler="_durable:runs_command")

    recover = commands.add_parser(
        "recover", parents=[parent], help="put the durable runs of dead workers back on their queues"
    )
    recover.add_argument(
        "executor_ids", metavar="EXECUTOR_ID", nargs="+", help="ids of workers that are gone"
    )
    recover.add_argument("--database", metavar="URL", required=True, help=DATABASE_HELP)
    recover.set_defaults(handler="_durable:recover_command")


def parse_arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse `jianmu-like`'s arguments. `models` hands everything after it to the weights
    module's own parser, including a leading option (`models --help`), which argparse's
    REMAINDER leaves unmatched; any other command refuses what it does not know."""
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        if args.handler != "_main:models_command":
            parser.error(f"unrecognized arguments: {' '.join(unknown)}")
        args.rest = [*unknown, *args.rest]
    return args
