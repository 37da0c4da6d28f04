"""`Artifact`: a document a tool made for the user (a page, a report, a file), not for the model.

A tool that writes a 50 KB HTML report should not put 50 KB into the conversation: the model
cannot use it, and it is paid for on every later call. A tool returns an `Artifact` (or a list
of them) instead, or attaches one with `add_artifact()` (tools._call_context) while it runs and
returns text as usual: the model reads a short placeholder (`[Artifact generated: name] ...`
with its type, size and a summary or a preview), while the artifact itself travels with the
call's outcome into the state (the run-scoped `artifacts` key), the `artifact` telemetry event
and `AgentResult.artifacts`.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, model_validator

PREVIEW_CHARS = 200
"""Characters of content shown to the model when the artifact has no summary."""

_TAG = re.compile(r"<(script|style)\b.*?</\1\s*>|<[^>]+>", re.IGNORECASE | re.DOTALL)


class Artifact(BaseModel):
    """A named document with a MIME type: inline `content` (text) or a `path` (any file)."""

    name: str
    mime_type: str = "text/plain"
    content: str | None = None
    """The document itself (HTML, markdown, CSV, ...)."""
    path: str | None = None
    """Where a file artifact was written (binary files, or anything too large to hold)."""
    summary: str | None = None
    """What the model is told about it (instead of a preview of the content)."""
    encoding: Literal["text", "base64"] = "text"
    """"base64": `content` holds binary data (an image, audio, a PDF from an MCP server) in
    base64, so the artifact stays whole in JSON (events, checkpoints, the HTTP API)."""

    @model_validator(mode="after")
    def _content_or_path(self) -> Artifact:
        if (self.content is None) == (self.path is None):
            raise ValueError(f"artifact {self.name!r} needs exactly one of content or path")
        return self

    def placeholder(self, preview_chars: int = PREVIEW_CHARS) -> str:
        """The short text the model reads in place of the artifact."""
        if self.content is not None and self.encoding == "base64":
            where = f"{self.mime_type}, {base64_size(self.content)} bytes"
        elif self.content is not None:
            where = f"{self.mime_type}, {len(self.content)} characters"
        else:
            where = f"{self.mime_type}, file {self.path}"
        text = f"[Artifact generated: {self.name}] ({where}; shown to the user, not to you)"
        if self.summary:
            return f"{text}\nSummary: {self.summary}"
        preview = self._preview(preview_chars)
        return f"{text}\nPreview: {preview}" if preview else text

    def _preview(self, limit: int) -> str:
        if not self.content or limit <= 0 or self.encoding != "text":
            return ""
        text = self.content[: limit * 20]  # enough raw text for the preview, whatever its markup
        if "html" in self.mime_type or "xml" in self.mime_type:
            text = _TAG.sub(" ", text)
        text = " ".join(text.split())
        return text if len(text) <= limit else text[:limit] + "…"


def base64_size(data: str) -> int:
    """Bytes a base64 string decodes to, without decoding it."""
    data = data.strip()
    if not data:
        return 0
    return len(data) * 3 // 4 - data[-2:].count("=")
