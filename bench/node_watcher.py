"""The server's node watcher: what one look costs on the ReAct tree, now and at a git revision.

    python bench/node_watcher.py [--before REV] [--looks N]

The watcher looks at a served run's tree after every tick and at every telemetry event
(`server._nodes`). This times `look()` (a tick's) and `look(active=...)` followed by `look()`
(an event's, then the tick's) on the ReAct tree of `create_react_node`, for the watcher of this
checkout and the one of `--before` (default: the commit before the flattened watcher, 0466fc9),
loaded from `git show`. Microseconds per look, best of 5 repeats. Run by hand only.
"""

from __future__ import annotations

import argparse
import subprocess
import timeit
import types
from pathlib import Path

from jianmu_like import ReActConfig, ReActState, create_react_node, tool
from jianmu_like.bt._runner import ReactiveRunner
from jianmu_like.server import _nodes
from jianmu_like.state._manager import StateManager
from jianmu_like.testing import reply, scripted_client

ACTIVE = "ReActAgent/ReActAgent.Loop/ReActAgent.LLM"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def at_revision(rev: str) -> types.ModuleType:
    root = Path(__file__).resolve().parents[1]
    source = subprocess.run(
        ["git", "show", f"{rev}:jianmu_like/server/_nodes.py"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    module = types.ModuleType("jianmu_like.server._nodes_before")
    module.__package__ = "jianmu_like.server"
    exec(compile(source, f"{rev}:_nodes.py", "exec"), module.__dict__)  # our own file, at a revision
    return module


def per_look(module: types.ModuleType, runner: ReactiveRunner, looks: int) -> tuple[float, float]:
    watcher = module.NodeWatcher(lambda changes: None)
    watcher.attach(runner)
    try:
        tick = min(timeit.repeat(watcher.look, number=looks, repeat=5)) / looks
        pair = min(timeit.repeat(lambda: (watcher.look(ACTIVE), watcher.look()), number=looks, repeat=5))
        return tick * 1e6, pair / looks / 2 * 1e6
    finally:
        watcher.detach()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--before", default="0466fc9")
    parser.add_argument("--looks", type=int, default=20_000)
    args = parser.parse_args()
    root = create_react_node(
        model_client=scripted_client(lambda _body: reply("x")), tools=[add], config=ReActConfig()
    )
    runner = ReactiveRunner(root, StateManager(ReActState))
    print("| watcher | a tick's look (us) | an event's and a tick's, per look (us) |")
    print("|---|---|---|")
    for name, module in ((f"before ({args.before})", at_revision(args.before)), ("now", _nodes)):
        tick, pair = per_look(module, runner, args.looks)
        print(f"| {name} | {tick:.2f} | {pair:.2f} |")


if __name__ == "__main__":
    main()
