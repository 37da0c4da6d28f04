"""The model layer: messages, requests, providers and the resilient `ModelClient`."""

from .client import ModelClient, ModelResilienceConfig
from .errors import ModelCallFailed, ModelError
from .messages import Message, Role, ToolCall, ai, human, system, tool_message
from .openai_provider import OpenAIProvider
from .provider import ChatProvider, DeltaCallback, is_retryable_status
from .streaming import StreamAccumulator
from .types import ModelEventCallback, ModelRequest, ModelResponse, Usage

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
