"""`GET /api/runs/{run_id}/artifacts/{n}`: the n-th artifact a run's tools made (from 0, in the
order of its `artifact` events), as a document of its own MIME type.

A tool's document is untrusted: it was written by a tool, perhaps from what a model or a web page
said. So it is never served as a page of the console's origin: every answer carries a CSP
`sandbox` (an opaque origin, no script, no form, no plugin, even when opened directly) and
`nosniff`; `?download=1` makes it an attachment. The console shows HTML in a sandboxed iframe
(`sandbox` without `allow-same-origin`), images as images, anything else as a download.
"""

from __future__ import annotations

import base64
import binascii
from pathlib import Path
from typing import Any
from urllib.parse import quote

from starlette.responses import Response

from ._channels import ARTIFACT_CHANNEL
from ._run_record import NotFound, RunRecord

ARTIFACT_POLICY = (
    "sandbox; default-src 'none'; img-src data:; style-src 'unsafe-inline'; frame-ancestors 'self'"
)
"""An artifact opened on its own is an inert document of an opaque origin."""


def artifacts(record: RunRecord) -> list[dict[str, Any]]:
    """The run's artifacts in order: each event's `artifact` with the tool and call that made it."""
    return [
        {
            **dict(message.data.get("artifact") or {}),
            "tool": message.data.get("tool"),
            "call_id": message.data.get("call_id"),
        }
        for message in record.log
        if message.event == ARTIFACT_CHANNEL
    ]


def _body(artifact: dict[str, Any], where: str) -> bytes:
    content = artifact.get("content")
    if content is not None:
        if artifact.get("encoding") == "base64":
            try:
                return base64.b64decode(str(content), validate=True)
            except (binascii.Error, ValueError) as exc:
                raise NotFound(f"{where} is not valid base64 ({exc})") from None
        return str(content).encode("utf-8")
    path = artifact.get("path")
    if path is None:
        raise NotFound(f"{where} has neither content nor a file")
    try:
        return Path(str(path)).read_bytes()
    except OSError as exc:
        raise NotFound(f"{where} was a file at {path} that cannot be read now ({exc.strerror})") from None


def artifact_response(record: RunRecord, index: str, *, download: bool) -> Response:
    """The artifact numbered `index` of `record`, or NotFound naming what the run has."""
    made = artifacts(record)
    try:
        n = int(index)
    except ValueError:
        n = -1
    if not 0 <= n < len(made):
        names = ", ".join(f"{i}: {a.get('name')}" for i, a in enumerate(made)) or "none"
        raise NotFound(f"run {record.run_id!r} has no artifact {index!r} (artifacts: {names})")
    artifact = made[n]
    name = str(artifact.get("name") or f"artifact-{n}")
    body = _body(artifact, f"artifact {n} ({name}) of run {record.run_id!r}")
    media = str(artifact.get("mime_type") or "application/octet-stream")
    if media.startswith("text/") and "charset" not in media and artifact.get("encoding") != "base64":
        media += "; charset=utf-8"
    disposition = "attachment" if download else "inline"
    headers = {
        "Content-Disposition": f"{disposition}; filename*=UTF-8''{quote(name)}",
        "Content-Security-Policy": ARTIFACT_POLICY,
        "X-Content-Type-Options": "nosniff",
        "Cache-Control": "no-store",
    }
    return Response(body, media_type=media, headers=headers)
