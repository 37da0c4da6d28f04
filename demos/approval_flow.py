"""A tool call that needs a human: the run suspends, is saved to SQLite, and resumes after approval.

    python demos/approval_flow.py            # scripted model; approves the deletion
    python demos/approval_flow.py --deny     # ... or denies it

Shows the whole cycle in two separate Agent objects sharing one SQLite checkpoint file, as two
processes would: the first run stops at `delete_file` (RequireApproval on the "destructive"
effect); an operator lists the pending approval from the file and decides; a fresh agent resumes
the thread. Against a real server, set OPENAI_BASE_URL and pass --real.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

from jianmu_like import Agent, ModelClient, create_react_node, human, tool
from jianmu_like.checkpoint import SQLiteCheckpointer
from jianmu_like.guard import GuardEnforcer, RequireApproval, list_pending, record_decision
from jianmu_like.testing import ScriptedOpenAIServer, call, reply

WORKDIR = Path(tempfile.mkdtemp(prefix="jianmu-approval-"))


@tool(effect_tags={"destructive"})
def delete_file(name: str) -> str:
    """Delete a file from the work folder.

    Args:
        name: File name inside the work folder.
    """
    target = WORKDIR / Path(name).name
    if not target.exists():
        return f"{name} does not exist"
    target.unlink()
    return f"deleted {name}"


@tool
def list_files() -> list[str]:
    """List the files of the work folder."""
    return sorted(p.name for p in WORKDIR.iterdir())


def build(client: ModelClient, db: Path) -> Agent:
    root = create_react_node(
        "Janitor",
        model_client=client,
        tools=[delete_file, list_files],
        constraints=GuardEnforcer([RequireApproval(effect_tags={"destructive"})]),
    )
    return Agent(root, checkpointer=SQLiteCheckpointer(db))


async def main(client: ModelClient, deny: bool) -> int:
    (WORKDIR / "old.log").write_text("stale")
    db = WORKDIR / "runs.db"

    first = build(client, db)
    result = await first.run({"messages": [human("Delete old.log, please.")]}, thread_id="cleanup-1")
    print(f"run 1: {result.status}")
    if result.status != "suspended":
        print(f"expected a suspension, got {result.status}: {result.final_answer}", file=sys.stderr)
        return 1

    store = SQLiteCheckpointer(db)
    for item in list_pending(store):
        approval = item.approval
        print(f"pending in {item.thread_id}: {approval.tool}({approval.arguments}) — {approval.reason}")
        decision = ("deny", "keep the logs for now") if deny else "approve"
        record_decision(store, item.thread_id, approval.id, decision)
        print(f"operator: {'denied' if deny else 'approved'} {approval.id}")

    second = build(client, db)
    done = await second.resume(thread_id="cleanup-1")
    print(f"run 2: {done.status}: {done.final_answer}")
    print(f"files left: {sorted(p.name for p in WORKDIR.iterdir() if p.suffix == '.log')}")
    return 0 if done.status == "success" else 1


def run() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--deny", action="store_true", help="deny the deletion instead of approving it")
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--real", action="store_true", help="use OPENAI_BASE_URL instead of the scripted model"
    )
    source.add_argument(
        "--scripted", action="store_true", help="use the canned test server, not a model (the default)"
    )
    args = parser.parse_args()
    if args.real:
        return asyncio.run(main(ModelClient.resolve(), args.deny))
    final = "I could not delete old.log: the request was denied." if args.deny else "old.log is deleted."
    with ScriptedOpenAIServer([call("delete_file", name="old.log"), reply(final)]) as server:
        return asyncio.run(main(server.client(), args.deny))


if __name__ == "__main__":
    sys.exit(run())
