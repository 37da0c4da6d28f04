"""Agent: run a behaviour tree to an answer, with a result object and a live event stream.

`Agent` is a facade: it owns its tree (`_run.trees.OwnedTree`) and forwards every operation to
its run core (`_run.core.RunCore`), the one implementation it shares with `Conversation`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import py_trees
from pydantic import BaseModel

from .._base.config import RecordingRetention
from ..bt._runner import ReactiveRunner
from ..checkpoint._contract import Durability
from ..checkpoint._store import Checkpointer
from ..models._keys import StateKeys
from ..telemetry._hub import TelemetryHub
from .core import RunCore, default_namespace, logs_events, make_hub, read_tree
from .facade import RunFacade
from .recording import RunRecording
from .result import AgentResult as AgentResult  # public here (the export tables say so)
from .thread_recordings import check_retention
from .trees import OwnedTree


class Agent(RunFacade):
    """Owns a tree, its StateManager, runner and telemetry hub.

    A thread is a conversation: successive `run()` calls on one `thread_id` continue it
    (persistent state such as `messages` is kept, run-scoped Ephemeral fields are reset), and a
    new thread id starts from the initial state. With a checkpointer the thread lives in the
    store (every save a version: `history`, `state_at`, `run(..., from_checkpoint=seq)`);
    without one the agent keeps one state per thread id in memory. `thread_id=None` is the
    agent's default thread. `namespace` selects where the input is written
    and the result's keys are read (defaults to the root's namespace, so a namespaced ReAct root
    just works); `output_namespace` reads the result elsewhere (e.g. a pipeline's last agent).

    Input for another namespace is addressed as `"<namespace>.<key>"` (`{"a.messages": [...]}`).
    Input that no node of the tree reads (per the nodes' `StateContract.reads`) is an
    `InputError` before anything runs; `inputs` names plain keys to accept anyway.
    """

    def __init__(
        self,
        root: py_trees.behaviour.Behaviour,
        state_schema: type[BaseModel] | None = None,
        *,
        initial_state: BaseModel | Mapping[str, Any] | None = None,
        keys: StateKeys | None = None,
        namespace: str | None = None,
        output_namespace: str | None = None,
        telemetry: TelemetryHub | None = None,
        log_events: bool | None = None,
        checkpointer: Checkpointer | str | Path | None = None,
        inputs: Iterable[str] = (),
        source: str | None = None,
        durability: Durability | None = None,
        record: str | Path | RunRecording | None = None,
        keep_recordings: RecordingRetention | bool | None = None,
    ) -> None:
        """`checkpointer` is a store, or where one lives (a SQLite path or a `postgresql://`
        URL: opened here, closed by `aclose()`); `durability` says when its checkpoints are
        written (default: the configuration's `checkpoints.durability`; `run()` can override
        it). `source` names the agent file the tree was built from (`load_agent` sets it);
        checkpoints record it. `state_schema` and `keys` default to what the preset that built
        the tree says (`results.ResultReader`: a `create_react_node` root runs on `ReActState`
        with its config's keys); a tree no preset built needs `state_schema`.

        `record` writes every run and resume of this agent to one recording (a path, or a
        `RunRecording` naming the agent file or `module:function` entry replay rebuilds it
        from): see `jianmu_like.replay`. `keep_recordings` keeps each run of a thread as such a
        recording in the checkpoint store instead (`RecordingRetention`: how many per thread,
        how large; True: the defaults; default: the configuration's `checkpoints.recordings`,
        off unless set): `checkpointer.recordings(thread_id)` lists them (docs/guides/replay.md)."""
        retention = check_retention(keep_recordings)  # without a store, a run() is refused
        read = read_tree(root, state_schema, keys)  # a given schema completed from the preset's
        self.root = root
        self._tree = OwnedTree(root)
        self._core = RunCore(
            self._tree,
            read.state_schema,
            read.keys,
            telemetry=make_hub(telemetry, logs_events(log_events)),
            initial_state=initial_state,
            namespace=default_namespace(root, namespace),
            output_namespace=output_namespace,
            inputs=inputs,
            source=source,
            durability=durability,
        )
        self._core.keep_recordings = retention
        if checkpointer is not None:
            self._core.open_store(checkpointer)
        if record is not None:
            self._core.recording = (
                record if isinstance(record, RunRecording) else RunRecording(record, agent=source)
            )

    @property
    def runner(self) -> ReactiveRunner:
        """The runner that ticks the tree (its `on_tick` hook saves checkpoints)."""
        return self._tree.runner

    @property
    def source(self) -> str | None:
        """The agent file the tree was built from (`load_agent` sets it); checkpoints record it."""
        return self._core.source
