"""Recordings opened in the console: a folder the server was pointed at (`jianmu-like serve
--recordings DIR`), and the runs of a thread kept in the checkpoint store (`keep_recordings`),
each opened by replaying it as a served run.

A recording keeps a run's events and its model and tool calls, not its node statuses. Rather
than guess the statuses from the events' node paths, the server replays the file
(`jianmu_like.replay`: no model server asked, no tool run) on the agent the recording names,
loaded afresh, as a run of its own: the tree ticks again, so the console gets the same `nodes`
stream (every node's status at every step, the state's changes) and the same model requests as
for a live run, from the same code (`RunRecord`). If the replay diverges (the agent changed since
the recording), the run ends with the divergence as its error, and the rest of the recording is
shown as its events say (`recorded_steps`): one step per recorded event of the diverged run (or
resume) and those after it, the emitting node and its ancestors running, each step naming the
event.

Who can open what: only a `.jsonl` file directly in the folder, by its name (no path, nothing a
link leads out of the folder to), or a thread's stored recording by its run id, that ended
(`StoredRecording.replayable`: not running, incomplete or truncated — a 409 saying which), of at
most `max_bytes`; the routes are `/api/` routes behind the server's token, Host and origin
checks. Both are one path from the bytes on (`start_replay`): the bytes read and checked once
are the bytes replayed (no second read a swapped file could change), parsed, their agent checked
and loaded, and the replay started. A file that is not a recording, or names an agent that
cannot be loaded, is a 422 saying why. The agent a recording names (its agent file, or a
`module:function` entry) is loaded as `jianmu-like replay` loads it, within the server's rules for
code: an agent file confined as the served one is (its tools from its own folder or allowed
modules), an entry only from a module allowed (`--allow-module`, `agents.allowed_modules`): a
recording is data, and may come from someone else. An agent that saves into a checkpoint store
is refused: the replay runs in the recorded thread's id, and would write into that thread.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict
from starlette.requests import Request

from .._base.config import get_config
from .._base.redact import redact
from .._run.result import AgentResult
from ..agentfile._modules import HOW_TO_ALLOW, ModulePolicy
from ..checkpoint._contract import Checkpointer
from ..checkpoint._recordings import StoredRecording, thread_recordings, unknown_recording
from ..errors import JianmuError
from ..replay import (
    Divergence,
    RecordingError,
    ReplayDivergence,
    areplay,
    entry_of,
    load_replay_agent,
    parse_recording,
)
from ._nodes import NodeChange, node_entries, tree_json
from ._routes import ApiRoute, BadRequest
from ._run_record import NotFound, RunConflict, RunRecord
from ._runs import RunRegistry

MAX_BYTES = 32 * 1024 * 1024
"""The largest recording the console opens (a recording is read whole, then replayed)."""
SUFFIX = ".jsonl"


class RecordingInfo(BaseModel):
    name: str
    """The file's name in the folder (what `POST /api/recordings/{name}/replay` takes)."""
    bytes: int
    modified: str
    """When the file was last written (ISO 8601, UTC)."""


class RecordingList(BaseModel):
    """`GET /api/recordings`: the recordings the server can open (none without `--recordings`)."""

    folder: bool
    """Whether the server was pointed at a folder of recordings."""
    recordings: list[RecordingInfo]
    max_bytes: int


class ReplayRequest(BaseModel):
    """`POST /api/recordings/{name}/replay` (or a thread's `.../recordings/{run_id}/replay`):
    nothing to choose yet (an empty object)."""

    model_config = ConfigDict(extra="forbid")


class ReplayStarted(BaseModel):
    """The served run replaying the recording: follow it as any run (`/api/runs/{run_id}/...`)."""

    run_id: str
    thread_id: str
    recording: str
    """What was opened: the folder's file name, or `run RUN_ID of THREAD_ID` for a thread's."""
    agent: str | None
    """What the recording names to replay on (an agent file or `module:function`)."""
    tree: dict[str, Any]
    """The replayed agent's tree, as `GET /api/agent` gives the served one's."""


class Recordings:
    """The folder of recordings a server opens (None: none); `allow_modules` (with the
    configuration's `agents.allowed_modules`) are the modules a recording's Python entry may
    name."""

    def __init__(
        self, folder: str | Path | None, max_bytes: int = MAX_BYTES, allow_modules: Sequence[str] = ()
    ) -> None:
        self.folder = Path(folder).resolve() if folder is not None else None
        self.max_bytes = max_bytes
        self.policy = ModulePolicy(names=(*get_config().agents.allowed_modules, *allow_modules))
        if self.folder is not None and not self.folder.is_dir():
            raise ValueError(f"recordings folder {str(folder)!r} is not a directory")

    def listing(self) -> RecordingList:
        found: list[RecordingInfo] = []
        if self.folder is not None:
            for path in sorted(self.folder.iterdir()):
                if path.suffix == SUFFIX and self._inside(path):
                    stat = path.stat()
                    when = datetime.datetime.fromtimestamp(stat.st_mtime, datetime.UTC)
                    found.append(RecordingInfo(name=path.name, bytes=stat.st_size, modified=when.isoformat()))
        return RecordingList(folder=self.folder is not None, recordings=found, max_bytes=self.max_bytes)

    def _inside(self, path: Path) -> bool:
        """A regular file whose real place is in the folder (a link out of it is not offered)."""
        return self._real(path) is not None

    def _real(self, path: Path) -> Path | None:
        """Where `path` really is, when that is a regular file of the folder (else None)."""
        try:
            real = path.resolve(strict=True)
        except OSError:
            return None
        return real if real.parent == self.folder and real.is_file() else None

    def read(self, name: str) -> bytes:
        """The content of the file `name` names: NotFound unless it is a recording of the folder,
        BadRequest when it is too big to open. Read once, at most one byte past the bound, from
        the file's real place opened without following a link (one swapped in since the check is
        refused): what is checked here is what is replayed."""
        if self.folder is None:
            raise NotFound("this server opens no recordings: serve with --recordings DIR")
        if "/" in name or "\\" in name or name in ("", ".", "..") or not name.endswith(SUFFIX):
            raise NotFound(f"no recording {name!r}: name a {SUFFIX} file of the recordings folder")
        missing = NotFound(f"no recording {name!r} in the recordings folder")
        real = self._real(self.folder / name)
        if real is None:
            raise missing
        try:
            fd = os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            raise missing from None
        with os.fdopen(fd, "rb") as file:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise missing
            data = file.read(self.max_bytes + 1)
            self.check_size(name, max(len(data), os.fstat(fd).st_size))
        return data

    def check_size(self, name: str, size: int) -> None:
        """Refuse a recording over `max_bytes` (it is read whole, then replayed)."""
        if size > self.max_bytes:
            raise BadRequest(
                f"recording {name!r} is {size} bytes, over the {self.max_bytes} bytes the console opens",
                [{"field": "name", "message": "too big"}],
            )

    def check_agent(self, name: str, header: dict[str, Any]) -> None:
        """Refuse a recording whose agent is a `module:function` entry of a module not allowed:
        importing it runs its code, and calling the function more (`os:abort` would end the
        server). An agent file is loaded confined, as the served one is (`agentfile._modules`)."""
        where = entry_of(header.get("agent"))
        if where is None:
            return
        module = where.partition(":")[0]
        if not self.policy.allows_name(module):
            problem = (
                f"it names the Python entry {where!r}, and the server imports a recording's module only "
                f"when allowed: {HOW_TO_ALLOW.format(name=module)}"
            )
            raise BadRequest(
                f"cannot open recording {name!r}: {problem}", [{"field": "name", "message": problem}]
            )


def recorded_steps(
    tree: Any, lines: list[dict[str, Any]], divergence: Divergence
) -> list[tuple[list[NodeChange], dict[str, Any]]]:
    """What the recording's events say of the diverged run (or resume) and those after it: per
    event with a node, the changes that show its node and ancestors running (the previous
    event's others back to not known, INVALID) and the event (type, node, the recording's tick,
    its data redacted). From the operation's start: a replay's ticks are not the recording's (it
    answers at once), so the place of the divergence among the recorded events is not known."""
    ids = {path: (node_id, node.name) for node_id, path, node in node_entries(tree)}
    names = dict(ids.values())
    steps: list[tuple[list[NodeChange], dict[str, Any]]] = []
    operation = -1
    shown: list[str] = []
    for line in lines:
        kind = line.get("kind")
        if kind == "run":
            operation += 1
            continue
        if kind != "event" or operation < divergence.operation:
            continue
        node = line.get("node")
        if not isinstance(node, str) or not node:
            continue
        parts = node.split("/")
        chain = [ids[p] for p in ("/".join(parts[: i + 1]) for i in range(len(parts))) if p in ids]
        now = [node_id for node_id, _ in chain]
        changes: list[NodeChange] = [
            {"id": node_id, "name": names[node_id], "status": "INVALID"}
            for node_id in shown
            if node_id not in now
        ]
        changes += [{"id": node_id, "name": name, "status": "RUNNING"} for node_id, name in chain]
        shown = now
        event = {
            "type": line.get("type"),
            "node": node,
            "tick": line.get("tick"),
            "data": redact(line.get("data")),
        }
        steps.append((changes, event))
    return steps


async def start_replay(
    registry: RunRegistry, recordings: Recordings, name: str, data: bytes
) -> ReplayStarted:
    """Replay the recording `data` (named `name` in messages) as a served run: the one path both
    routes take from the bytes on. The bytes are bounded, parsed, their agent allowed and loaded
    here, and these same bytes are what `areplay` plays (never read again)."""
    recordings.check_size(name, len(data))
    try:
        lines = parse_recording(data, name)
    except RecordingError as exc:
        raise BadRequest(
            f"cannot open recording {name!r}: {exc}", [{"field": "name", "message": str(exc)}]
        ) from None
    recordings.check_agent(name, lines[0])
    try:
        agent = load_replay_agent(None, lines[0], name)
    except Exception as exc:  # the agent it names does not load (a bad agent file, a factory that raises)
        why = str(exc) if isinstance(exc, JianmuError) else f"{type(exc).__name__}: {exc}"
        raise BadRequest(
            f"cannot open recording {name!r}: its agent does not load: {why}",
            [{"field": "name", "message": why}],
        ) from None
    refusal: JianmuError | None = None
    if agent.checkpointer is not None:  # the replay runs in the recorded thread's id: it would write there
        why = "its agent saves into a checkpoint store, and a replay must not write into the recorded thread"
        refusal = BadRequest(f"cannot open recording {name!r}: {why}", [{"field": "name", "message": why}])
    elif not any(line.get("kind") == "run" for line in lines):
        refusal = RunConflict(f"recording {name!r} holds no run to replay")
    if refusal is not None:
        await agent.aclose()
        raise refusal

    async def play(record: RunRecord) -> AgentResult:
        try:
            return await areplay(data, agent=agent)
        except ReplayDivergence as exc:  # the rest as the recorded events say
            for changes, event in recorded_steps(agent.tree, lines, exc.divergence):
                record.publish_recorded(changes, event)
            raise

    record = registry.replay(agent, name, play)
    header = lines[0].get("agent")
    return ReplayStarted(
        run_id=record.run_id,
        thread_id=record.thread_id,
        recording=name,
        agent=header if isinstance(header, str) else None,
        tree=tree_json(agent.tree),
    )


def not_replayable(thread_id: str, info: StoredRecording) -> RunConflict | None:
    """Why a thread's stored recording cannot be opened (None: it can, `info.replayable`), in
    words for the 409."""
    if info.replayable:
        return None
    what = f"the recording of run {info.run_id!r} of thread {thread_id!r}"
    if info.truncated:
        why = (
            "was truncated at its size limit: the rest of the run was not recorded, so it cannot be "
            "replayed (raise checkpoints.recordings.max_bytes for later runs)"
        )
    elif info.status == "running":
        why = "is still being written (its run goes on): open it when the run ends"
    else:
        why = (
            f"is {info.status}: its run stopped mid-way (it raised, was cancelled or its process was "
            "killed), so it cannot be replayed; GET it to read what it holds"
        )
    return RunConflict(f"{what} {why}")


def recording_routes(
    registry: RunRegistry, recordings: Recordings, thread_store: Callable[[], Checkpointer]
) -> list[ApiRoute]:
    """`GET /api/recordings`, `POST /api/recordings/{name}/replay` and a thread's
    `POST /api/threads/{thread_id}/recordings/{run_id}/replay` (`thread_store`: the server's
    checkpoint store, a RunConflict without one)."""

    async def list_recordings(_request: Request, _body: None) -> RecordingList:
        return recordings.listing()

    async def replay_recording(request: Request, _body: ReplayRequest) -> ReplayStarted:
        name = request.path_params["name"]
        data = await asyncio.to_thread(recordings.read, name)
        return await start_replay(registry, recordings, name, data)

    async def replay_thread_recording(request: Request, _body: ReplayRequest) -> ReplayStarted:
        tid, run_id = request.path_params["thread_id"], request.path_params["run_id"]
        store = thread_store()
        name = f"run {run_id} of {tid}"

        def read() -> bytes:
            infos = thread_recordings(store, tid)
            found = [info for info in infos if info.run_id == run_id]
            if not found:
                raise unknown_recording(tid, run_id, infos, "the checkpoint store")  # 404, naming those held
            refusal = not_replayable(tid, found[0])
            if refusal is not None:
                raise refusal
            recordings.check_size(name, found[0].size)  # before reading it whole
            return store.read_recording(tid, run_id)

        data = await asyncio.to_thread(read)
        return await start_replay(registry, recordings, name, data)

    return [
        ApiRoute(
            "GET",
            "/api/recordings",
            list_recordings,
            "the recordings the console can open (serve --recordings DIR)",
            RecordingList,
            tag="debug",
        ),
        ApiRoute(
            "POST",
            "/api/recordings/{name}/replay",
            replay_recording,
            "open a recording: replay it as a run (no model, no tool) to follow like a live one",
            ReplayStarted,
            ReplayRequest,
            status=201,
            errors=(404, 409, 422),
            tag="debug",
        ),
        ApiRoute(
            "POST",
            "/api/threads/{thread_id}/recordings/{run_id}/replay",
            replay_thread_recording,
            "open a thread's kept recording: replay it as a run (no model, no tool), followed as a live one",
            ReplayStarted,
            ReplayRequest,
            status=201,
            errors=(404, 409, 422),
            tag="threads",
        ),
    ]
