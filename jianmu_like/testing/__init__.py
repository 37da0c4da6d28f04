"""Test doubles for agents: scripted models in-process (`scripted_client`) or over real HTTP
(`ScriptedOpenAIServer`), both driven by the same `Script` of replies; recordings replayed as
tests (`replay_recording`)."""

from ._recordings import areplay_recording, recordings, replay_recording
from ._replies_file import RepliesFile
from ._script import (
    DEFAULT_USAGE,
    Responder,
    Script,
    ScriptedReply,
    ScriptedToolCall,
    ScriptItem,
    ScriptSource,
    call,
    calls,
    error_reply,
    fault_reply,
    reply,
)
from ._scripted import ScriptedProvider, fast_resilience, scripted_client
from ._server import ScriptedOpenAIServer
from ._waiting import PATIENCE, WaitTimeout, await_within, exited, wait_until, wait_until_async

__all__ = [
    "DEFAULT_USAGE",
    "PATIENCE",
    "RepliesFile",
    "Responder",
    "Script",
    "ScriptItem",
    "ScriptSource",
    "ScriptedOpenAIServer",
    "ScriptedProvider",
    "ScriptedReply",
    "ScriptedToolCall",
    "WaitTimeout",
    "areplay_recording",
    "await_within",
    "call",
    "calls",
    "error_reply",
    "exited",
    "fast_resilience",
    "fault_reply",
    "recordings",
    "replay_recording",
    "reply",
    "scripted_client",
    "wait_until",
    "wait_until_async",
]
