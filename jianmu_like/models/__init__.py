"""The model layer: messages, requests, providers and the resilient `ModelClient`.

`OpenAIProvider` is loaded on first access: importing the `openai` package costs about a second,
and only a client that talks to a real server needs it.
"""

from typing import TYPE_CHECKING, Any

from .client import ModelClient, ModelResilienceConfig
from .errors import ModelCallFailed, ModelError
from .messages import Message, Role, ToolCall, ai, human, system, tool_message
from .provider import ChatProvider, DeltaCallback, is_retryable_status
from .streaming import StreamAccumulator
from .types import ModelEventCallback, ModelRequest, ModelResponse, Usage

if TYPE_CHECKING:
    from .openai_provider import OpenAIProvider


def __getattr__(name: str) -> Any:
    if name == "OpenAIProvider":
        from .openai_provider import OpenAIProvider

        return OpenAIProvider
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ChatProvider",
    "DeltaCallback",
    "Message",
    "ModelCallFailed",
    "ModelClient",
    "ModelError",
    "ModelEventCallback",
    "ModelRequest",
    "ModelResilienceConfig",
    "ModelResponse",
    "OpenAIProvider",
    "Role",
    "StreamAccumulator",
    "ToolCall",
    "Usage",
    "ai",
    "human",
    "is_retryable_status",
    "system",
    "tool_message",
]
