"""`jianmu-like worker`, `submit`, `runs`, `recover` and `approvals ... --database`: durable runs
on DBOS (jianmu_like.durable; the `durable` extra), imported only when one of them runs."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from ..checkpoint._target import store_label
from ._approvals import edited_arguments
from ._common import EXIT_FAILED, EXIT_OK, EXIT_SUSPENDED, CliError

if TYPE_CHECKING:
    from ..durable import DurableClient


def _client(database: str) -> DurableClient:
    try:
        from ..durable import DurableClient
    except ImportError as exc:
        raise CliError(f"durable runs need DBOS: pip install 'jianmu_like[durable]' ({exc})") from None
    return DurableClient(database)


def worker_command(args: argparse.Namespace, console: Console, errors: Console) -> int:
    """`worker AGENT --database URL`: execute the agent's queued runs until SIGTERM/Ctrl-C."""
    try:
        from ..durable import DurableWorker
    except ImportError as exc:
        raise CliError(f"durable workers need DBOS: pip install 'jianmu_like[durable]' ({exc})") from None
    worker = DurableWorker(
        args.agent_file,
        args.database,
        executor_id=args.executor_id,
        worker_concurrency=args.concurrency,
        global_concurrency=args.global_concurrency,
        allow_modules=args.allow_module,
        queue=args.queue,
    )

    def ready() -> None:
        # One JSON line on stdout, flushed: scripts (and tests) learn the executor id and wait for it.
        print(json.dumps({"ready": True, **worker.describe()}), flush=True)

    from ..durable._liveness import ExecutorInUseError

    try:
        worker.serve(on_ready=ready)
    except ExecutorInUseError as exc:
        raise CliError(str(exc)) from None
    return EXIT_OK


def submit_command(args: argparse.Namespace, console: Console, errors: Console) -> int:
    """`submit AGENT QUESTION --database URL [--wait]`: enqueue a run; print its id (and result)."""
    with _client(args.database) as client:
        handle = client.submit(
            args.agent_file, args.question, run_id=args.run_id, queue=args.queue, thread_id=args.thread
        )
        if not args.wait:
            console.out(handle.run_id, highlight=False)
            return EXIT_OK
        errors.print(Text(f"run {handle.run_id} enqueued; waiting for a worker", style="dim"))
        result = handle.result()
    if args.json:
        console.out(result.model_dump_json(), highlight=False)
    elif result.status == "success":
        console.out(result.final_answer or "", highlight=False)
    else:
        errors.print(
            Text(f"run {result.run_id}: {result.status}: {result.error or result.termination}", style="red")
        )
    return {"success": EXIT_OK, "suspended": EXIT_SUSPENDED}.get(result.status, EXIT_FAILED)


def runs_command(args: argparse.Namespace, console: Console, errors: Console) -> int:
    """`runs --database URL [AGENT]`: the queue — runs enqueued, running or waiting (`--all`:
    finished ones too), one JSON object per line, oldest first."""
    from ..durable._client import ACTIVE, FINISHED

    statuses = [*ACTIVE, *FINISHED] if args.all else ACTIVE
    with _client(args.database) as client:
        for row in client.runs(args.agent_file, statuses=statuses, queue=args.queue):
            item = {
                "run_id": row.workflow_id,
                "status": row.status,
                "queue": row.queue_name,
                "executor_id": row.executor_id,
                "created_at": row.created_at,
            }
            console.out(json.dumps(item), highlight=False)
    return EXIT_OK


def recover_command(args: argparse.Namespace, console: Console, errors: Console) -> int:
    """`recover EXECUTOR_ID... --database URL`: hand a dead worker's runs to the live ones."""
    from ..durable._liveness import ExecutorInUseError

    with _client(args.database) as client:
        try:
            recovered = client.recover(args.executor_ids)
        except ExecutorInUseError as exc:
            raise CliError(str(exc)) from None
    for run_id in recovered:
        console.out(run_id, highlight=False)
    errors.print(Text(f"{len(recovered)} run(s) back on their queue", style="green"))
    return EXIT_OK


def approvals_command(args: argparse.Namespace, console: Console, errors: Console) -> int:
    """`approvals list|approve|deny --database URL`: decide approvals durable runs wait on."""
    with _client(args.database) as client:
        if args.action == "list":
            waiting = client.waiting()
            for run_id, approvals in waiting.items():
                for approval in approvals:
                    item = {"run_id": run_id, **approval.model_dump(mode="json")}
                    console.out(json.dumps(item, ensure_ascii=False), highlight=False)
            if not any(waiting.values()):  # said on stderr: stdout stays JSON lines for scripts
                errors.print(Text(f"no pending approvals in {store_label(args.database)}", style="dim"))
            return EXIT_OK
        run_id, approval_id = args.file, args.thread
        if args.approval_id is not None:
            raise CliError("with --database: approvals approve|deny RUN_ID APPROVAL_ID (no store argument)")
        client.decide(
            run_id, approval_id, args.action == "approve", args.reason, arguments=edited_arguments(args)
        )
    verdict = "approved" if args.action == "approve" else "denied"
    console.print(Text(f"{verdict} {approval_id} of run {run_id}", style="green"))
    return EXIT_OK
