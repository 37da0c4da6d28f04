"""The model layer: messages, requests, providers and the resilient `ModelClient`.

Every name loads on first access: importing the `openai` package (`OpenAIProvider`) costs about
a second, and only a client that talks to a real server needs it.
"""

from typing import TYPE_CHECKING

from ..exports import lazy_exports

_EXPORTS = {
    ".client": (
        "ModelClient",
        "ModelResilienceConfig",
    ),
    ".errors": (
        "ModelCallFailed",
        "ModelError",
    ),
    ".messages": (
        "Message",
        "Role",
        "ToolCall",
        "ai",
        "human",
        "system",
        "tool_message",
    ),
    ".openai_provider": ("OpenAIProvider",),
    ".provider": (
        "ChatProvider",
        "DeltaCallback",
        "ReasoningSink",
        "is_retryable_status",
        "reasoning_sink",
    ),
    ".streaming": ("StreamAccumulator",),
    ".structured": (
        "OutputSchema",
        "StructuredOutputError",
        "StructuredResult",
        "structured_llm_call",
    ),
    ".tool_protocol": (
        "ProtocolAdapter",
        "ToolProtocol",
    ),
    ".types": (
        "ModelEventCallback",
        "ModelRequest",
        "ModelResponse",
        "Usage",
    ),
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names for type checkers; tests/test_public_api.py checks they match
    from .client import ModelClient as ModelClient
    from .client import ModelResilienceConfig as ModelResilienceConfig
    from .errors import ModelCallFailed as ModelCallFailed
    from .errors import ModelError as ModelError
    from .messages import Message as Message
    from .messages import Role as Role
    from .messages import ToolCall as ToolCall
    from .messages import ai as ai
    from .messages import human as human
    from .messages import system as system
    from .messages import tool_message as tool_message
    from .openai_provider import OpenAIProvider as OpenAIProvider
    from .provider import ChatProvider as ChatProvider
    from .provider import DeltaCallback as DeltaCallback
    from .provider import ReasoningSink as ReasoningSink
    from .provider import is_retryable_status as is_retryable_status
    from .provider import reasoning_sink as reasoning_sink
    from .streaming import StreamAccumulator as StreamAccumulator
    from .structured import OutputSchema as OutputSchema
    from .structured import StructuredOutputError as StructuredOutputError
    from .structured import StructuredResult as StructuredResult
    from .structured import structured_llm_call as structured_llm_call
    from .tool_protocol import ProtocolAdapter as ProtocolAdapter
    from .tool_protocol import ToolProtocol as ToolProtocol
    from .types import ModelEventCallback as ModelEventCallback
    from .types import ModelRequest as ModelRequest
    from .types import ModelResponse as ModelResponse
    from .types import Usage as Usage
