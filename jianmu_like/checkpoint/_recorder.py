"""RunRecorder: saves an agent's state and tree progress under a thread id, and loads them back.

The Agent owns one; it saves after every tick that changed the state (the runner's `on_tick`
hook) and at the end of every run, and restores a thread before a resume. Every save is a new
version of the thread whose `parent_seq` is the version the run continues: the previous save, or
for a run's first save the version its state was loaded from (an older one forks the thread). A
run or resume first *claims* the thread (a conditional save carrying this process's owner
token), every later save is conditional on the seq this recorder last saved, and the end of the
run releases the claim: so two processes never drive one thread, and a save never overwrites
what another process wrote. The recorder also puts the thread's tool journal on the state
manager (`state_manager.journal`), so the ToolExecutor records every call's outcome the moment
it is known.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import py_trees
from py_trees.common import Status
from pydantic import BaseModel

from ..bt._progress import TreeMismatchError, capture_progress, restore_progress, tree_fingerprint
from ..models._keys import StateKeys
from ..state._journal import JournalEntry, finish_entry
from ..state._manager import StateError, StateManager
from ._contract import AsyncCheckpointer, Commit, Durability, FollowUp
from ._history import summarize
from ._owner import new_owner
from ._store import Checkpoint, Checkpointer, CheckpointError, CheckpointStatus, schema_fingerprint
from ._turns import Turns

_DEFERRED_TICKS = 2
"""How many ticks a due save may wait for the run's next write: the tick that starts a model
call and the one that reads its reply and starts the batch (whose write takes the save along)."""


class RecorderJournal:
    """The ToolJournal of whatever thread the recorder currently records (inactive without one)."""

    def __init__(self, recorder: RunRecorder) -> None:
        self.recorder = recorder

    @property
    def thread_id(self) -> str | None:
        return self.recorder.thread_id

    def entries(self) -> Mapping[str, JournalEntry]:
        return self.recorder.journal_entries()

    def started(self, calls: Sequence[tuple[str, str, str]], *, serial: bool) -> Coroutine[Any, Any, None]:
        return self.recorder.start_batch(calls, serial=serial)

    def finished(self, key: str, outcome: dict[str, Any]) -> Coroutine[Any, Any, None]:
        return self.recorder.finish_call(key, outcome)


class RunRecorder:
    """Checkpoints one (tree, state manager) pair into a Checkpointer."""

    def __init__(
        self,
        root: py_trees.behaviour.Behaviour,
        state_manager: StateManager,
        checkpointer: Checkpointer,
        *,
        source: str | None = None,
        keys: StateKeys | None = None,
    ) -> None:
        self.root = root
        self.keys = keys or StateKeys()
        """Where the history summary of each version reads messages, rounds and approvals."""
        self.source = source
        """The agent file of the tree, recorded in every checkpoint (kept from the loaded one when
        this agent does not know it)."""
        self.state_manager = state_manager
        self.checkpointer = checkpointer
        self._async = checkpointer if isinstance(checkpointer, AsyncCheckpointer) else None
        """The store, when it has async forms of a run's calls (PostgreSQL): the run awaits those
        (looked up once: a runtime protocol check costs tens of microseconds)."""
        self.thread_id: str | None = None
        self._seq = 0
        """The newest version of the thread this recorder loaded or saved (a save expects it)."""
        self._parent: int | None = None
        """The version the state descends from (the next save's `parent_seq`)."""
        self._saved_version = -1
        self._schema_name = f"{state_manager.schema.__module__}.{state_manager.schema.__qualname__}"
        self._schema_fp = schema_fingerprint(state_manager.schema)
        self._tree_fp = tree_fingerprint(root)
        self.owner: str | None = None
        """This process's claim on the thread while a run or resume drives it."""
        self._entries: dict[str, JournalEntry] | None = None
        """The thread's journal as this run knows it (None: not read yet): read once, then kept
        up to date by this run's own writes (nobody else writes while it owns the thread)."""
        self._open: set[str] = set()
        """Keys of the current batch's calls that have no outcome yet."""
        self._outcomes: list[JournalEntry] = []
        """A batch's last outcome, written with the checkpoint saved after its tick."""
        self._pending = 0
        """Ticks a due save has waited for the next write of the run (0: none is due)."""
        self._last_tick: dict[str, Any] | None = None
        """What the last of those ticks would save (`_capture`): built into a checkpoint only if
        the run ends before its next write, which otherwise saves the state as it is then."""
        self.durability: Durability = "sync"
        """When saves are written: "sync" (before the run goes on), "async" (in the background,
        in order; the next write waits for them), "exit" (at the end or suspension only)."""
        self._saver: ThreadPoolExecutor | None = None
        """The thread a synchronous store's background saves ("async") run in."""
        self._turns = Turns()
        """The run's writes land in the order it made them (see checkpoint._turns)."""
        self._saving: set[asyncio.Task[None]] = set()
        self._failed: CheckpointError | None = None
        self._cancelled = False
        """`_failed` because a save was cancelled (Ctrl-C, a task cancelled mid-write)."""
        """Why a write of this run failed: the run's later writes raise it (nothing after a
        lost write may be written as if it had landed)."""
        self._read_outcomes = False
        """An outcome was written since the last save ("async": the next save goes at once)."""
        self.followups: Callable[[], list[FollowUp]] = list
        """The follow-ups waiting to be let in, saved with every checkpoint (the run core's box)."""
        self.questions: Callable[[], list[dict[str, Any]]] = list
        """The questions the run's tools hold open (as JSON), saved with every checkpoint."""
        state_manager.journal = RecorderJournal(self)

    @property
    def seq(self) -> int:
        """The newest version of the current thread this recorder loaded or saved (0: none)."""
        return self._seq

    async def start(
        self,
        thread_id: str,
        *,
        refuse: Callable[[Checkpoint | None], None] | None = None,
        parent: int | None = None,
    ) -> None:
        """Record into `thread_id` from now on (a fresh run): claim it, drop its old journal.
        The run's state descends from version `parent` (None: the thread's newest).

        `refuse(previous)` may raise to keep the thread as it is (a thread suspended waiting for
        approvals); the claim is conditional on the very checkpoint it looked at."""
        previous = await self.newest(thread_id)
        if refuse is not None:
            refuse(previous)
        self.thread_id = thread_id
        self._seq = previous.seq if previous is not None else 0
        self._parent = parent if parent is not None else (previous.seq if previous is not None else None)
        self._reset()
        await self.claim(forget=True)
        self._entries = {}
        self._saved_version = -1  # the first tick's progress is always saved

    async def newest(self, thread_id: str) -> Checkpoint | None:
        """The thread's newest version (awaited on an async store)."""
        if self._async is not None:
            return await self._async.aload(thread_id)
        return self.checkpointer.load(thread_id)

    async def claim(self, *, forget: bool = False) -> None:
        """Take the thread for this process; ThreadConflictError if another live process runs
        it or saved it since this recorder last loaded or saved it. `forget`: drop the thread's
        old journal and decisions in the same transaction (a fresh run)."""
        self.owner = new_owner().encode()
        kept = self._seq, self._parent, self._saved_version
        try:
            await self._write(self._checkpoint("running"), forget=forget)
        except BaseException:
            self.owner = None
            self._seq, self._parent, self._saved_version = kept
            raise

    async def release(self) -> None:
        """Give the thread up (any exit of a run); a no-op when the last save already did. An
        outcome still waiting for its save is written first."""
        try:
            await self.drain()
            if self.thread_id is not None and (self._outcomes or self._pending):
                # The progress of the last tick, not the tree as it is now: a run cancelled while
                # its model call was in flight has halted its nodes since, and a resume continues
                # at the node that was running.
                tick = self._last_tick if self._pending else None
                await self._write(self._build(tick) if tick is not None else None)
        except CheckpointError:
            if not self._cancelled:  # a run cancelled mid-save ends as cancelled, not with this
                raise
        finally:
            await self._unclaim()

    async def _unclaim(self) -> None:
        """Clear this process's claim (only its own: another owner is left as it is)."""
        if self.owner is not None and self.thread_id is not None:
            owner, self.owner = self.owner, None
            if self._async is not None:
                await self._async.arelease(self.thread_id, owner)
            else:
                self.checkpointer.release(self.thread_id, owner)

    def on_tick(self) -> Coroutine[Any, Any, None] | None:
        """Save if the state changed since the last save: at once when a batch's last outcome
        waits for it; otherwise the save waits for the run's next write (the batch a model's
        reply starts takes it along, with the state as it is then), for two ticks at most.
        Returns the write for the runner to await (None: nothing to write now)."""
        if self.state_manager.version == self._saved_version or self.thread_id is None:
            return None
        if self.durability == "exit" and self._saved_version != -1:
            return None  # "exit" saves the run's first tick only (joined as below): it can be resumed
        self._pending += 1
        if self.durability == "async" and self._read_outcomes:
            self._save_later()
        elif self._outcomes or self._pending > _DEFERRED_TICKS:
            return self._write(self._checkpoint("running"))
        else:  # what a run that ends before its next write (Ctrl-C, a crash) leaves to resume
            self._last_tick = self._capture("running")
        return None

    async def save(self, status: CheckpointStatus) -> None:
        """Save now (conditionally on the seq last seen), with whatever waits for a save; any
        status but "running" releases the claim."""
        if self.thread_id is not None:
            await self._write(self._checkpoint(status))

    async def save_questions(self) -> None:
        """A question opened or was answered while a tool call waits: save a version now (the
        state as it is, with the open questions), so another process sees what the run waits on."""
        if self.thread_id is not None and self.owner is not None:
            await self._write(self._checkpoint("running"))

    def save_idle(self, status: CheckpointStatus) -> None:
        """Save now, synchronously, while no run drives the thread (a suspended run's follow-ups,
        sent from outside the run's loop): no write of the run is in flight, so this goes
        straight to the store's own transaction, conditional on the seq last seen like every
        save."""
        if self.thread_id is None:
            return
        if self._failed is not None:
            raise self._failed
        checkpoint, version = self._checkpoint(status), self.state_manager.version
        self.checkpointer.commit(dataclasses.replace(self._work(checkpoint), finished=tuple(self._outcomes)))
        self._outcomes = []
        self._saved(checkpoint, version)

    # ------------------------------------------------------------------ journal
    async def stored_journal(self, thread_id: str) -> Mapping[str, JournalEntry]:
        """The journal `thread_id` holds in the store now (awaited on an async store), before a
        fresh run's claim drops it: the outcomes of the calls its last run left open."""
        if self._async is not None:
            return await self._async.ajournal(thread_id)
        return self.checkpointer.journal(thread_id)

    def journal_entries(self) -> Mapping[str, JournalEntry]:
        """The thread's journal (read from the store once per run, then from memory; a resume
        on an async store reads it as it loads)."""
        if self.thread_id is None:
            return {}
        if self._entries is None:
            self._entries = dict(self.checkpointer.journal(self.thread_id))
        return self._entries

    async def start_batch(self, calls: Sequence[tuple[str, str, str]], *, serial: bool) -> None:
        """Record a batch's calls as started, in one transaction with a save waiting for it (a
        serial batch chains each call to the one before: see `never_began`)."""
        if self.thread_id is None or not calls:
            return
        now = time.time()
        entries = [
            JournalEntry(
                key=key,
                tool_call_id=call_id,
                tool=tool,
                status="started",
                started_at=now,
                after=calls[i - 1][0] if serial and i else None,
            )
            for i, (key, call_id, tool) in enumerate(calls)
        ]
        await self._write(None, started=entries)
        known = self.journal_entries()
        assert isinstance(known, dict)
        known.update((entry.key, entry) for entry in entries)
        self._open = {entry.key for entry in entries}

    async def finish_call(self, key: str, outcome: dict[str, Any]) -> None:
        """Record a call's outcome: durable before this returns, except the last of the open
        batch, which waits for the save after this tick (`on_tick`; no await comes between).
        Outcomes that finish while another write is in flight are written together, in the one
        commit that follows it (a group commit: see `_flush`); when the whole batch finishes
        within one pass of the loop, all its outcomes go with that save (two commits per
        iteration whatever the batch size)."""
        if self.thread_id is None:
            return
        known = self.journal_entries()
        entry = known.get(key)
        done = finish_entry(entry, outcome) if entry is not None else None
        if done is None:
            return
        assert isinstance(known, dict)
        known[key] = done
        last = key in self._open and len(self._open) == 1 and self.durability == "sync"
        self._open.discard(key)
        self._outcomes.append(done)
        if not last:  # "async", "exit": no save follows at once to take it along
            self._read_outcomes = True
            if self.durability == "sync":
                await asyncio.sleep(0)  # one pass of the loop: the batch's other calls may finish
                if not self._open:  # the batch is done: the save right after this tick takes them all
                    return
            await self._flush()

    def _reset(self) -> None:
        self._entries, self._open, self._outcomes, self._pending = None, set(), [], 0
        self._last_tick = None
        self._read_outcomes, self._failed, self._cancelled = False, None, False
        self._turns, self._saving = Turns(), set()

    def _write(
        self,
        checkpoint: Checkpoint | None,
        *,
        started: Sequence[JournalEntry] = (),
        forget: bool = False,
    ) -> Coroutine[Any, Any, None]:
        """One transaction: `checkpoint` (or the save waiting for a write), the started calls
        and the outcomes waiting for a save. Its place in the run's order of writes is taken
        now; the returned coroutine waits for the writes before it, then applies it."""
        assert self.thread_id is not None
        version = self.state_manager.version
        if checkpoint is None and self._pending:
            checkpoint = self._checkpoint("running")
        work = self._work(checkpoint, started=started, forget=forget)
        self._saved(checkpoint, version)
        return self._in_turn(self._turns.take(), work)

    def _save_later(self) -> None:
        """ "async": the save goes in the background, in its place among the run's writes (the
        run's next write waits for it, and raises what it raised)."""
        checkpoint, version = self._checkpoint("running"), self.state_manager.version
        work = self._work(checkpoint)
        self._saved(checkpoint, version)
        task = asyncio.ensure_future(self._in_turn(self._turns.take(), work, background=True))
        self._saving.add(task)
        task.add_done_callback(self._saving.discard)
        self._read_outcomes = False

    async def _flush(self) -> None:
        """Make the outcomes recorded so far durable: the first caller whose turn comes writes
        every outcome waiting by then (one commit for all that finished while the write before
        was in flight); the others find theirs written and return."""
        await self._in_turn(self._turns.take(), None)

    async def drain(self) -> None:
        """Wait for every write taken so far (a background save's error raises here)."""
        await self._in_turn(self._turns.take(), None, flush=False)

    async def _in_turn(
        self, ticket: int, work: Commit | None, *, background: bool = False, flush: bool = True
    ) -> None:
        """Wait for the writes before `ticket`, then apply `work` with every outcome waiting
        now (`work` None: only those, if any and `flush`), then let the next write go."""
        try:
            await self._turns.wait(ticket)
        except asyncio.CancelledError:
            if work is not None and work.checkpoint is not None:
                self._fail(None, "a save was cancelled before it was written")
            raise
        try:
            if self._failed is not None:
                raise self._failed
            if work is None and flush and self._outcomes:
                work = Commit(self.thread_id or "", finished=tuple(self._outcomes))
                self._outcomes = []
            elif work is not None and self._outcomes:
                work = dataclasses.replace(work, finished=(*work.finished, *self._outcomes))
                self._outcomes = []
            if work is not None and (
                work.checkpoint is not None or work.started or work.forget or work.finished
            ):
                await self._apply(work, background)
        except BaseException as exc:
            if work is not None and (work.checkpoint is not None or work.forget):
                self._fail(exc, "a save failed")  # the versions after it would rest on a guess
            elif work is not None:  # its outcomes go again with the next write (an idempotent UPDATE)
                self._outcomes[:0] = work.finished
            if not background:
                raise
        finally:
            self._turns.done()

    def _fail(self, exc: BaseException | None, what: str) -> None:
        if self._failed is None:
            self._cancelled = exc is None or isinstance(exc, asyncio.CancelledError)
            detail = f"{what} ({exc})" if exc is not None and str(exc) else what
            failed = (
                exc
                if isinstance(exc, CheckpointError)
                else CheckpointError(
                    f"thread {self.thread_id!r}: {detail}; the run's later writes are refused"
                )
            )
            self._failed = failed

    async def _apply(self, work: Commit, background: bool) -> None:
        store = self.checkpointer
        if self._async is not None:
            await self._async.acommit(work)
        elif background:  # a synchronous store's background save: in the recorder's thread
            if self._saver is None:
                self._saver = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jianmu-save")
            await asyncio.get_running_loop().run_in_executor(self._saver, store.commit, work)
        else:
            store.commit(work)

    def _work(
        self, checkpoint: Checkpoint | None, *, started: Sequence[JournalEntry] = (), forget: bool = False
    ) -> Commit:
        assert self.thread_id is not None
        work = Commit(
            self.thread_id,
            forget=forget,
            checkpoint=checkpoint,
            expected_seq=self._seq if checkpoint is not None else None,
            holder=self.owner,
            started=started,
            owner=self.owner,
        )
        self._pending = 0  # the outcomes waiting go along when its turn comes (`_in_turn`)
        return work

    def _saved(self, checkpoint: Checkpoint | None, version: int) -> None:
        if checkpoint is not None:
            self._seq = checkpoint.seq
            self._parent = self._seq
            self._saved_version = version
            if checkpoint.owner is None:
                self.owner = None

    def _checkpoint(self, status: CheckpointStatus) -> Checkpoint:
        """The state and tree progress now, as the next version of the thread."""
        return self._build(self._capture(status))

    def _capture(self, status: CheckpointStatus) -> dict[str, Any]:
        """The fields of the next version of the thread as they are now: the state and tree
        progress copied, so later ticks change nothing in them. A tick whose save waits for the
        run's next write keeps only this (that write saves the state as it is then: most such
        captures are never written), and `_build` makes it a checkpoint when it is."""
        assert self.thread_id is not None
        return {
            "thread_id": self.thread_id,
            "seq": self._seq + 1,
            "parent_seq": self._parent,
            "status": status,
            "owner": self.owner if status == "running" else None,
            "state": self.state_manager.snapshot(),
            "tree": capture_progress(self.root),
            "followups": self.followups(),
            "questions": self.questions(),
        }

    def _build(self, fields: dict[str, Any]) -> Checkpoint:
        """The checkpoint of captured fields (its summary is what a history listing shows)."""
        return Checkpoint(
            **fields,
            schema_name=self._schema_name,
            schema_fingerprint=self._schema_fp,
            tree_fingerprint=self._tree_fp,
            summary=summarize(fields["state"], fields["tree"], self.keys),
            source=self.source,
        )

    async def load(self, thread_id: str) -> Checkpoint:
        """Restore `thread_id` into the state manager and the (halted) tree.

        Everything is checked before anything changes: an unknown thread, another schema, another
        tree or a state that does not validate raise CheckpointError and leave the agent as it was.
        Loading does not claim the thread: `claim()` does.
        """
        checkpoint = await self.newest(thread_id)
        if checkpoint is None:
            known = ", ".join(self.checkpointer.threads()) or "none"
            raise CheckpointError(f"no checkpoint for thread {thread_id!r} (threads: {known})")
        if checkpoint.tree_fingerprint != self._tree_fp:
            raise CheckpointError(
                f"checkpoint of thread {thread_id!r} was written by a different tree "
                "(node names or structure changed); build the same tree to resume it"
            )
        sm = self.state_manager
        state = self.state_of(checkpoint)
        entries: dict[str, JournalEntry] | None = None
        if self._async is not None:  # the journal now, while awaiting is free (a tool call reads it)
            entries = await self._async.ajournal(thread_id)
        if self.root.status == Status.RUNNING:
            self.root.stop(Status.INVALID)
        for node in self.root.iterate():
            node.status = Status.INVALID
        sm.state = state
        sm.version += 1
        try:
            restore_progress(self.root, checkpoint.tree)
        except TreeMismatchError as exc:
            raise CheckpointError(f"checkpoint of thread {thread_id!r}: {exc}") from exc
        self.thread_id = thread_id
        self._reset()
        self._entries = entries
        self._seq = self._parent = checkpoint.seq
        self._saved_version = sm.version
        self.source = self.source or checkpoint.source
        return checkpoint

    def fetch(self, thread_id: str, seq: int | None = None) -> Checkpoint | None:
        """Version `seq` of the thread (None: its newest); see `fetch_version`."""
        return fetch_version(self.checkpointer, thread_id, seq)

    def state_of(self, checkpoint: Checkpoint) -> BaseModel:
        """The checkpoint's state as this agent's state model (CheckpointError when it was
        written with another state schema, or does not validate)."""
        tid = checkpoint.thread_id
        if checkpoint.schema_fingerprint != self._schema_fp:
            raise CheckpointError(
                f"checkpoint of thread {tid!r} was written with state schema {checkpoint.schema_name} "
                f"({checkpoint.schema_fingerprint}); this agent uses {self._schema_name} ({self._schema_fp})"
            )
        try:
            return self.state_manager.validate_snapshot(checkpoint.state)
        except StateError as exc:
            raise CheckpointError(f"checkpoint of thread {tid!r}: {exc}") from exc


def fetch_version(store: Checkpointer, thread_id: str, seq: int | None = None) -> Checkpoint | None:
    """Version `seq` of the thread (None: its newest); None for an unknown thread, and a
    CheckpointError naming the kept versions for a version the thread does not have."""
    checkpoint = store.load(thread_id, seq)
    if checkpoint is None and seq is not None:
        kept = [info.seq for info in store.history(thread_id)]
        if not kept:
            known = ", ".join(store.threads()) or "none"
            raise CheckpointError(f"no checkpoint for thread {thread_id!r} (threads: {known})")
        listed = ", ".join(str(n) for n in sorted(kept))
        raise CheckpointError(f"thread {thread_id!r} has no version {seq} (kept versions: {listed})")
    return checkpoint
