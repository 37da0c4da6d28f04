"""A recording as a `jianmu-like mock` replies file: yesterday's model answers, served again.

Each recorded model call becomes one reply, in the order the calls were made: its content, tool
calls (with their recorded ids, so the new run's messages match the recorded ones), reasoning,
finish reason and usage. A recorded retry becomes an HTTP 503 reply before the answer (the
client retries it as it did); a call that failed after every attempt becomes one HTTP 400 reply
per attempt, carrying the recorded error. The result loads with `RepliesFile.load` (checked
there, as any replies file).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from .._run.recording import RecordingError, parse_recording, read_recording
from ..telemetry import events as ev


def mock_replies(path: str | Path | bytes) -> dict[str, Any]:
    """The replies file (as data) of the recording at `path` (or of the recording's bytes)."""
    if isinstance(path, bytes):
        lines, path = parse_recording(path, "the recording"), "the recording"
    else:
        lines = read_recording(path)
    replies: list[dict[str, Any]] = []
    model: str | None = None
    for line in lines:
        if line["kind"] != "model":
            continue
        for event_type, data in line.get("events", ()):
            if event_type == ev.MODEL_CALL_RETRY:
                replies.append({"error_status": 503, "error_message": str(data.get("error", ""))})
        error = line.get("error")
        if error is not None:
            attempts = error.get("attempts") or [error.get("message", "")]
            replies.extend({"error_status": 400, "error_message": str(a)} for a in attempts)
            continue
        response = line["response"]
        model = model or response.get("model") or None
        message = response.get("message", {})
        reply: dict[str, Any] = {}
        if message.get("content") is not None:
            reply["content"] = message["content"]
        if message.get("reasoning_content"):
            reply["reasoning_content"] = message["reasoning_content"]
        calls = []
        for call in message.get("tool_calls") or ():
            arguments: Any = call.get("arguments", {})
            if call.get("arguments_error") and call.get("raw_arguments") is not None:
                arguments = call["raw_arguments"]  # sent verbatim, malformed as it was
            calls.append({"name": call["name"], "arguments": arguments, "id": call["id"]})
        if calls:
            reply["tool_calls"] = calls
        if response.get("finish_reason"):
            reply["finish_reason"] = response["finish_reason"]
        usage = response.get("usage")
        if usage:
            reply["usage"] = {
                k: usage[k] for k in ("prompt_tokens", "completion_tokens", "total_tokens") if k in usage
            }
        replies.append(reply)
    if not replies:
        raise RecordingError(f"{path}: the recording holds no model call: nothing to export")
    out: dict[str, Any] = {"replies": replies}
    if model:
        out = {"model": model, **out}
    return out


def export_mock(path: str | Path | bytes, out: str | Path) -> Path:
    """Write the recording at `path` as a replies file at `out` (`.json`: JSON, else YAML) for
    `jianmu-like mock` and `RepliesFile.load`; returns `out`."""
    data = mock_replies(path)
    target = Path(out)
    if target.suffix.lower() == ".json":
        text = json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    else:
        text = "# exported from a jianmu-like recording (jianmu-like replay --export-mock)\n"
        text += yaml.safe_dump(data, allow_unicode=True, sort_keys=False)
    try:
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise RecordingError(f"cannot write {str(target)!r}: {exc}") from exc
    return target
