"""The server's own API: runs, their event streams, follow-ups, approvals, threads, the tree.

Each endpoint is a module-level function of the request and its validated body; what endpoints
share (the registry, the sample agent) is the app's `ServerContext` (`context(request)`).
`ROUTES` is their table: a new route is one entry there (`server._routes` turns the table into
Starlette routes and, with `server._openapi`, into the OpenAPI document). Routes only translate
between HTTP and the `RunRegistry`; they use the Agent's public API and its telemetry (mapped by
`server._channels`), never node internals.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from importlib.metadata import PackageNotFoundError, version
from typing import Any, get_args
from urllib.parse import quote

from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.requests import Request
from starlette.responses import Response

from .._base.redact import redact
from ..checkpoint._recordings import thread_recordings, unknown_recording
from ..checkpoint._threads import (
    ThreadView,
    VersionView,
    thread_history,
    thread_view,
    unknown_thread,
    version_view,
)
from ..guard._approvals import ApprovalDecision, InvalidEdit
from ..models._describe import clients_in, describe_all
from ._artifacts import artifact_response
from ._context import context
from ._markdown import shown_messages
from ._nodes import node_entries, tree_json
from ._openapi import openapi_document
from ._routes import ApiRoute, BadRequest, Param
from ._run_record import RunRecord, run_messages
from ._schemas import (
    MAX_SEQ,
    AgentTree,
    ApprovalList,
    CancelAccepted,
    CheckpointState,
    DecisionRequest,
    DecisionResult,
    Health,
    InjectQueued,
    InjectRequest,
    NodeState,
    OpenAPIDocument,
    RunCreated,
    RunList,
    RunMessages,
    RunRequest,
    RunRequests,
    RunSummary,
    ServedRunStatus,
    ThreadHistory,
    ThreadList,
    ThreadRecordings,
)

STATUSES: tuple[str, ...] = get_args(ServedRunStatus)
STREAM_VALUES = {"true": True, "1": True, "false": False, "0": False}
LAST_EVENT_ID = (
    Param("Last-Event-ID", "header", "resume after this event id (the SSE `id:`)"),
    Param("last_event_id", "query", "the same, for clients that cannot send headers"),
)


def server_version() -> str:
    """The installed package's version (the OpenAPI document's and the A2A card's)."""
    try:
        return version("jianmu_like")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0"


# ---------------------------------------------------------------------- runs
async def create_run(request: Request, body: RunRequest) -> RunCreated | Response:
    """Start a run; `?stream=true` or `Accept: text/event-stream` answers with its events at
    once (one request instead of two): `run.created` (id 0, the run's ids), then the events of
    `GET /api/runs/{run_id}/events`, whose `Last-Event-ID` a client that lost the stream resumes
    with. The run belongs to the server, not to the request: closing the stream does not stop it."""
    streaming = wants_stream(request)  # before the run starts: a bad `stream` starts nothing
    record = context(request).registry.start(body.input, body.thread_id, from_checkpoint=body.from_checkpoint)
    created = RunCreated(run_id=record.run_id, thread_id=record.thread_id)
    if not streaming:
        return created
    first = ServerSentEvent(data=created.model_dump_json(), event="run.created", id="0")
    return sse_response(record.follow(0), first)


def wants_stream(request: Request) -> bool:
    """`?stream=true|1` (false|0: no), else an `Accept` that names `text/event-stream` and not
    `application/json` (a client that takes both gets JSON, the answer it always had)."""
    raw = request.query_params.get("stream")
    if raw is not None:
        if raw.lower() not in STREAM_VALUES:
            raise BadRequest(
                f"stream must be true or false (or 1, 0), got {raw[:40]!r}",
                [{"field": "stream", "message": "not a boolean"}],
            )
        return STREAM_VALUES[raw.lower()]
    accept = {part.split(";")[0].strip().lower() for part in request.headers.get("accept", "").split(",")}
    return "text/event-stream" in accept and "application/json" not in accept


async def list_runs(request: Request, _body: None) -> RunList:
    status = request.query_params.get("status") or None
    if status is not None and status not in STATUSES:
        raise BadRequest(
            f"status must be one of {', '.join(STATUSES)}, got {status!r}",
            [{"field": "status", "message": "unknown status"}],
        )
    listed = context(request).registry.listing(status, request.query_params.get("thread_id") or None)
    return RunList.model_validate({"runs": listed})


def _record(request: Request) -> RunRecord:
    return context(request).registry.get(request.path_params["run_id"])


async def get_run(request: Request, _body: None) -> RunSummary:
    return RunSummary.model_validate(_record(request).summary())


async def get_messages(request: Request, _body: None) -> RunMessages:
    record = _record(request)
    return RunMessages(run_id=record.run_id, thread_id=record.thread_id, messages=run_messages(record))


async def get_requests(request: Request, _body: None) -> RunRequests:
    record = _record(request)
    return RunRequests.model_validate({"run_id": record.run_id, "requests": record.sent_requests()})


async def run_events(request: Request, _body: None) -> Response:
    return _stream(request, nodes=False)


async def run_nodes(request: Request, _body: None) -> Response:
    return _stream(request, nodes=True)


def _stream(request: Request, *, nodes: bool) -> Response:
    record = _record(request)
    last = request.headers.get("last-event-id") or request.query_params.get("last_event_id") or "0"
    try:
        after = int(last)
    except ValueError:
        raise BadRequest(
            f"Last-Event-ID must be an event id (an integer), got {last!r}",
            [{"field": "Last-Event-ID", "message": "not an integer"}],
        ) from None
    return sse_response(record.follow(after, nodes=nodes))


def sse_response(messages: AsyncIterator[Any], *first: ServerSentEvent) -> Response:
    """The SSE response of a run's log messages (`first`: events sent before them)."""

    async def stream() -> AsyncIterator[ServerSentEvent]:
        for event in first:
            yield event
        async for message in messages:
            yield ServerSentEvent(
                data=json.dumps(message.data, ensure_ascii=False, default=str),
                event=message.event,
                id=str(message.id),
            )

    return EventSourceResponse(stream(), ping=15, headers={"Cache-Control": "no-store"})


async def inject(request: Request, body: InjectRequest) -> InjectQueued:
    record = context(request).registry.inject(request.path_params["run_id"], body.content)
    return InjectQueued(run_id=record.run_id, queued=len(record.injects))


async def get_artifact(request: Request, _body: None) -> Response:
    record = _record(request)
    download = request.query_params.get("download") not in (None, "", "0", "false")
    return artifact_response(record, request.path_params["n"], download=download)


async def cancel_run(request: Request, _body: None) -> CancelAccepted:
    record = context(request).registry.cancel(request.path_params["run_id"])
    return CancelAccepted(run_id=record.run_id, status="cancelling")


# ---------------------------------------------------------------------- approvals
async def list_approvals(request: Request, _body: None) -> ApprovalList:
    return ApprovalList.model_validate({"approvals": context(request).registry.approvals()})


async def decide(request: Request, body: DecisionRequest) -> DecisionResult:
    approval_id = request.path_params["approval_id"]
    approved = body.decision == "approve"
    decision = ApprovalDecision(approved=approved, reason=body.reason, arguments=body.arguments)
    try:
        record = context(request).registry.decide_anywhere(approval_id, decision, body.thread_id)
    except InvalidEdit as exc:
        raise BadRequest(str(exc), [{"field": "arguments", "message": str(exc)}]) from None
    if record is None:
        return DecisionResult(run_id=None, status="suspended")
    return DecisionResult(run_id=record.run_id, status=record.status)


# ---------------------------------------------------------------------- the agent, threads
async def agent_tree(request: Request, _body: None) -> AgentTree:
    agent = context(request).sample()
    tree = tree_json(agent.tree)
    models = describe_all(clients_in(agent.tree))
    checkpoints = agent.checkpointer is not None
    return AgentTree.model_validate({"tree": tree, "checkpoints": checkpoints, "models": models})


async def list_threads(request: Request, _body: None) -> ThreadList:
    store = context(request).thread_store()
    heads = await asyncio.to_thread(store.heads)
    return ThreadList(threads=heads)


async def get_thread(request: Request, _body: None) -> ThreadView:
    server = context(request)
    store, tid, keys = server.thread_store(), request.path_params["thread_id"], server.sample().keys

    def read() -> ThreadView:
        view = thread_view(store, tid, label="the checkpoint store", keys=keys)
        return view.model_copy(update={"messages": shown_messages(view.messages)})

    return await asyncio.to_thread(read)


async def get_thread_history(request: Request, _body: None) -> ThreadHistory:
    store, tid = context(request).thread_store(), request.path_params["thread_id"]
    versions = await asyncio.to_thread(thread_history, store, tid, label="the checkpoint store")
    return ThreadHistory(thread_id=tid, versions=versions)


async def get_checkpoint(request: Request, _body: None) -> CheckpointState:
    server = context(request)
    store, tid, raw = server.thread_store(), request.path_params["thread_id"], request.path_params["seq"]
    if not (raw.isascii() and raw.isdigit()) or int(raw) > MAX_SEQ:
        raise BadRequest(
            f"a version is a number (a `seq` of GET /api/threads/{tid}/history), got {raw[:40]!r}",
            [{"field": "seq", "message": "not a version number"}],
        )
    agent = server.sample()

    def read() -> tuple[VersionView, list[dict[str, Any]]]:
        view = version_view(store, tid, int(raw), label="the checkpoint store", keys=agent.keys)
        return view, shown_messages(view.messages)

    view, messages = await asyncio.to_thread(read)
    ids = {path: node_id for node_id, path, _node in node_entries(agent.tree)}
    return CheckpointState(
        version=view.version,
        messages=messages,
        nodes=[NodeState(id=ids.get(path), path=path, status=status) for path, status in view.tree.items()],
        pending_approvals=redact(view.pending_approvals),
    )


STORE = "the checkpoint store"


async def list_recordings(request: Request, _body: None) -> ThreadRecordings:
    store, tid = context(request).thread_store(), request.path_params["thread_id"]

    def read() -> ThreadRecordings:
        infos = thread_recordings(store, tid)
        if not infos and store.load(tid) is None:
            raise unknown_thread(store, tid, STORE)
        return ThreadRecordings(thread_id=tid, recordings=infos)

    return await asyncio.to_thread(read)


async def get_recording(request: Request, _body: None) -> Response:
    """The recording's JSON Lines as stored: redacted when it was written (the recorder redacts
    every line), so nothing here can serve a secret the run saw. A recording that is not
    replayable (still running, incomplete, truncated) is served too, its status in a header."""
    store = context(request).thread_store()
    tid, run_id = request.path_params["thread_id"], request.path_params["run_id"]

    def read() -> tuple[bytes, str]:
        infos = thread_recordings(store, tid)
        found = [i for i in infos if i.run_id == run_id]
        if not found:
            raise unknown_recording(tid, run_id, infos, STORE)  # 404, naming those held
        return store.read_recording(tid, run_id), found[0].status + (
            ", truncated" if found[0].truncated else ""
        )

    data, status = await asyncio.to_thread(read)
    name = quote(f"recording-{run_id}.jsonl")
    return Response(
        data,
        media_type="application/x-ndjson",
        headers={
            "Content-Disposition": f"attachment; filename*=UTF-8''{name}",
            "X-Recording-Status": status,
            "X-Content-Type-Options": "nosniff",
        },
    )


# ---------------------------------------------------------------------- meta
async def healthz(request: Request, _body: None) -> Health:
    runs = context(request).registry.runs
    active = sum(1 for r in runs.values() if not r.finished)
    return Health(status="ok", runs=len(runs), active=active)


async def openapi(request: Request, _body: None) -> OpenAPIDocument:
    server = context(request)
    if server.openapi is None:
        server.openapi = openapi_document(server.table, title="jianmu-like", version=server_version())
    return OpenAPIDocument.model_validate(server.openapi)


ROUTES: list[ApiRoute] = [
    ApiRoute("GET", "/openapi.json", openapi, "this API as OpenAPI 3.1", OpenAPIDocument, tag="meta"),
    ApiRoute("GET", "/healthz", healthz, "liveness: the runs kept and active", Health, tag="meta"),
    ApiRoute(
        "GET", "/api/runs", list_runs, "the runs kept, oldest first", RunList, errors=(422,),
        params=(
            Param("status", "query", "only runs of this status", (("enum", list(STATUSES)),)),
            Param("thread_id", "query", "only runs of this conversation"),
        ),
    ),
    ApiRoute(
        "POST", "/api/runs", create_run, "start a run (continue a thread, or fork one of its versions)",
        RunCreated, RunRequest, status=201, errors=(404, 409, 422),
        params=(Param("stream", "query", "true: answer with the run's events (as Accept: text/event-stream)",
                      (("type", "string"), ("enum", list(STREAM_VALUES)))),),
        stream="with ?stream=true or Accept: text/event-stream: the run's events at once (Server-Sent "
        "Events: `run.created` {run_id, thread_id} with id 0, then those of GET /api/runs/{run_id}/events)",
    ),
    ApiRoute("GET", "/api/runs/{run_id}", get_run, "a run's status, answer", RunSummary, errors=(404,)),
    ApiRoute(
        "GET", "/api/runs/{run_id}/events", run_events, "the run's events (Server-Sent Events: "
        "step, answer, compact, phase, inject, approval, artifact, done)", None,
        media_type="text/event-stream", params=LAST_EVENT_ID, errors=(404, 422),
    ),
    ApiRoute(
        "GET", "/api/runs/{run_id}/nodes", run_nodes, "the tree's node statuses as they change "
        "(Server-Sent Events `node`)", None, media_type="text/event-stream", params=LAST_EVENT_ID,
        errors=(404, 422),
    ),
    ApiRoute(
        "POST", "/api/runs/{run_id}/inject", inject, "a follow-up for the run's next iteration",
        InjectQueued, InjectRequest, status=202, errors=(404, 409, 422),
    ),
    ApiRoute(
        "POST", "/api/runs/{run_id}/cancel", cancel_run, "cancel a running run (any JSON body, e.g. {})",
        CancelAccepted, status=202, errors=(404, 409),
    ),
    ApiRoute(
        "GET", "/api/runs/{run_id}/messages", get_messages, "the conversation at the run's end",
        RunMessages, errors=(404, 409),
    ),
    ApiRoute(
        "GET", "/api/runs/{run_id}/requests", get_requests, "what each model call of the run sent "
        "(redacted)", RunRequests, errors=(404,),
    ),
    ApiRoute(
        "GET", "/api/runs/{run_id}/artifacts/{n}", get_artifact, "a document a tool made "
        "(its own Content-Type, sandboxed)", None, media_type="application/octet-stream",
        params=(Param("download", "query", "1: as an attachment"),), errors=(404,),
    ),
    ApiRoute("GET", "/api/approvals", list_approvals, "pending approvals", ApprovalList, tag="approvals"),
    ApiRoute(
        "POST", "/api/approvals/{approval_id}", decide, "approve (optionally with corrected "
        "arguments) or deny (with a reason) a pending tool call", DecisionResult, DecisionRequest,
        errors=(404, 409, 422), tag="approvals",
    ),
    ApiRoute("GET", "/api/agent", agent_tree, "the served agent's tree", AgentTree, tag="meta"),
    ApiRoute(
        "GET", "/api/threads", list_threads, "the conversations of the checkpoint store",
        ThreadList, errors=(409,), tag="threads",
    ),
    ApiRoute(
        "GET", "/api/threads/{thread_id}", get_thread, "a conversation: its newest version and messages",
        ThreadView, errors=(404, 409), tag="threads",
    ),
    ApiRoute(
        "GET", "/api/threads/{thread_id}/history", get_thread_history, "a conversation's versions, "
        "newest first", ThreadHistory, errors=(404, 409), tag="threads",
    ),
    ApiRoute(
        "GET", "/api/threads/{thread_id}/checkpoints/{seq}", get_checkpoint, "one version: its "
        "messages, the tree's statuses and pending approvals", CheckpointState, errors=(404, 409, 422),
        tag="threads",
    ),
    ApiRoute(
        "GET", "/api/threads/{thread_id}/recordings", list_recordings, "the thread's runs kept as "
        "recordings (keep_recordings), newest first", ThreadRecordings, errors=(404, 409), tag="threads",
    ),
    ApiRoute(
        "GET", "/api/threads/{thread_id}/recordings/{run_id}", get_recording, "one kept recording: its "
        "JSON Lines (redacted), for `jianmu-like replay FILE`", None, media_type="application/x-ndjson",
        errors=(404, 409), tag="threads",
    ),
]  # fmt: skip
"""The server's own routes, in the order of the OpenAPI document (after the console's)."""
