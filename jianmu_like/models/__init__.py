"""The model layer: messages, requests, providers and the resilient `ModelClient`.

Every name loads on first access: importing the `openai` package (`OpenAIProvider`) costs about
a second, and only a client that talks to a real server needs it.
"""

from typing import TYPE_CHECKING

from ..exports import lazy_exports

if not TYPE_CHECKING:  # hidden from type checkers, so a misspelt name is an error there
    __all__, __getattr__, __dir__ = lazy_exports(__name__)

if TYPE_CHECKING:  # the public names, one source: jianmu_like.exports reads them at run time
    from ._client import ModelClient as ModelClient
    from ._client import ModelResilienceConfig as ModelResilienceConfig
    from ._errors import ModelCallFailed as ModelCallFailed
    from ._errors import ModelError as ModelError
    from ._messages import Message as Message
    from ._messages import Role as Role
    from ._messages import ToolCall as ToolCall
    from ._messages import ai as ai
    from ._messages import human as human
    from ._messages import system as system
    from ._messages import tool_message as tool_message
    from ._openai_provider import OpenAIProvider as OpenAIProvider
    from ._provider import ChatProvider as ChatProvider
    from ._provider import DeltaCallback as DeltaCallback
    from ._provider import ReasoningSink as ReasoningSink
    from ._provider import is_retryable_status as is_retryable_status
    from ._provider import reasoning_sink as reasoning_sink
    from ._streaming import StreamAccumulator as StreamAccumulator
    from ._structured import OutputSchema as OutputSchema
    from ._structured import StructuredOutputError as StructuredOutputError
    from ._structured import StructuredResult as StructuredResult
    from ._structured import structured_llm_call as structured_llm_call
    from ._tool_protocol import ProtocolAdapter as ProtocolAdapter
    from ._tool_protocol import ToolProtocol as ToolProtocol
    from ._types import ModelEvent as ModelEvent
    from ._types import ModelEventCallback as ModelEventCallback
    from ._types import ModelRequest as ModelRequest
    from ._types import ModelResponse as ModelResponse
    from ._types import Usage as Usage
