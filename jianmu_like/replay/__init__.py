"""Record a run, replay it: the same tree, the same events, no model and no tool side effects.

```python
from jianmu_like.replay import replay

agent.run_sync({"task": "..."}, record="run.jsonl")   # or Agent(..., record="run.jsonl")
result = replay("run.jsonl")                           # an AgentResult, rebuilt offline
```

`replay` re-runs the tree of the agent the recording names (its agent file or `module:function`
entry, loaded afresh; or the agent you give) with every model call and tool call answered from
the recording, and checks each published event against the recorded one. A difference (the
agent changed) is a `ReplayDivergence` naming the tick, the node, and the recorded and new
request or event. `until=N, live=True` replays N model calls and goes on against the real model
and tools. `export_mock` turns a recording into a `jianmu-like mock` replies file. The format
and every rule: docs/guides/replay.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._run.recording import (
    FORMAT,
    TIMING_FIELDS,
    VERSION,
    RecordingError,
    RunRecording,
    parse_recording,
    read_recording,
)
from .._run.result import AgentResult
from ..telemetry.events import AnyEvent
from ._mock import export_mock, mock_replies
from ._player import AgentSource, Divergence, Player, ReplayDivergence, entry_of, load_replay_agent

__all__ = [
    "FORMAT",
    "TIMING_FIELDS",
    "VERSION",
    "AgentSource",
    "Divergence",
    "RecordingError",
    "ReplayDivergence",
    "RunRecording",
    "areplay",
    "entry_of",
    "export_mock",
    "load_replay_agent",
    "mock_replies",
    "parse_recording",
    "read_recording",
    "replay",
]


async def areplay(
    path: str | Path | bytes,
    *,
    agent: AgentSource | None = None,
    until: int | None = None,
    live: bool = False,
    on_event: Callable[[AnyEvent], None] | None = None,
    record: str | Path | None = None,
    until_tick: int | None = None,
) -> AgentResult:
    """Replay the recording at `path` (or the recording itself, as bytes: a thread's recording
    read from its store, `Checkpointer.read_recording`); the result of its last
    `run()`/`resume()`.

    `agent`: an `Agent`, a function building a fresh one, an agent file or a `module:function`
    entry (default: what the recording names). Zero model calls and zero tool calls happen
    unless `live`: then the first `until` model calls (default: all recorded) are answered from
    the recording in recorded order, and the run goes on against the agent's real model and
    tools, publishing a `replay.forked` event at the fork; `record` writes the whole replayed
    run to a new recording whose header names the fork (`forked_from`). `on_event` receives
    every event the replay publishes. Raises `ReplayDivergence` at the first difference (never
    after going live) and `RecordingError` for a file that cannot be replayed. `until_tick=T`
    (with `live`) goes live at the first model or tool call made at tick T or later instead
    (ticks counted from the replay's start).
    """
    source = "the recording" if isinstance(path, bytes) else str(path)
    lines = parse_recording(path, source) if isinstance(path, bytes) else read_recording(path)
    player = Player(lines, until=until, until_tick=until_tick, live=live, on_event=on_event, source=source)
    built = load_replay_agent(agent, lines[0], source)
    return await player.play(built, record=record)


def replay(
    path: str | Path | bytes,
    *,
    agent: AgentSource | None = None,
    until: int | None = None,
    live: bool = False,
    on_event: Callable[[AnyEvent], None] | None = None,
    record: str | Path | None = None,
    until_tick: int | None = None,
) -> AgentResult:
    """`areplay` for scripts and tests: runs it to its end (inside a running event loop,
    `await areplay(...)` instead: this raises RuntimeError there)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError("replay() cannot run inside a running event loop: use `await areplay(...)`")
    coroutine: Any = areplay(
        path, agent=agent, until=until, live=live, on_event=on_event, record=record, until_tick=until_tick
    )
    result: AgentResult = asyncio.run(coroutine)
    return result
