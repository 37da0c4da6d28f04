"""Every exception of jianmu_like, and the one base they share: `JianmuError`.

`except JianmuError` catches whatever the framework raises on purpose; each class also keeps the
builtin base its callers already catch (`ValueError` for bad input, `RuntimeError` for a state of
the world, `LookupError` for an unknown id...), so existing handlers keep working. The classes
are defined next to the code that raises them and re-exported here, lazily: importing this module
loads none of them (nor `dbos`, `starlette`, `mcp`...), and the kernel can import `JianmuError`
from the bottom layer.

The hierarchy (tests/test_errors.py checks this drawing against the classes):

    JianmuError
      AgentChangedError (RuntimeError)
      ApprovalError (LookupError)
        AlreadyDecided
        InvalidEdit (ValueError)
      CalculatorError (ValueError)
      CheckpointError (RuntimeError)
        DecisionConflictError
        ThreadConflictError
        ThreadSuspendedError
        UnknownThreadError
      ConversationError (RuntimeError)
      ExecutorInUseError (RuntimeError)
      GuardConfigError (ValueError)
      InputError (ValueError)
      InsecureBindError (ValueError)
      JSONTextError (ValueError)
      LocalModelUnavailable
      ModelError
        ModelCallFailed
      ModuleRefused (ValueError)
      NodeFailed
      OTelConfigError (ValueError)
      OTelUnavailable (RuntimeError)
      RefOutsideDocument (ValueError)
      ReplayDivergedError (RuntimeError)
      SourceError (ValueError)
        AgentFileError
        ConfigError
          MCPConfigError
      StateContractError (TypeError)
      StateError (KeyError)
      StructuredOutputError (ValueError)
      ToolError
        ElicitationError (ValueError)
          UnknownElicitation (LookupError)
        MCPServerError
          MCPConnectError
          MCPServerCrashedError
          MCPTimeoutError
          MCPToolError
        ToolArgumentsError
        ToolExitError
        ToolProviderError
        UnknownToolError
      TreeMismatchError (ValueError)
      UnknownAgentError (RuntimeError)
      UnknownEventType (KeyError)
      WaitTimeout (AssertionError)
      WeightsError
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .exports import lazy_exports


class JianmuError(Exception):
    """Base of every exception the framework defines."""


_EXPORTS = {
    ".agentfile.loader": ("AgentFileError",),
    ".agentfile.modules": ("ModuleRefused",),
    ".sources": ("SourceError",),
    ".bt.fault": ("NodeFailed",),
    ".bt.progress": ("TreeMismatchError",),
    ".checkpoint.contract": ("CheckpointError", "DecisionConflictError", "ThreadConflictError"),
    ".checkpoint.threads": ("UnknownThreadError",),
    ".config": ("ConfigError",),
    ".durable.fingerprint": ("AgentChangedError",),
    ".durable.liveness": ("ExecutorInUseError",),
    ".durable.steps": ("ReplayDivergedError",),
    ".durable.workflow": ("UnknownAgentError",),
    ".guard.approvals": ("AlreadyDecided", "ApprovalError", "InvalidEdit"),
    ".guard.enforcer": ("GuardConfigError",),
    ".review": ("ThreadSuspendedError",),
    ".models.errors": ("ModelCallFailed", "ModelError"),
    ".models.json_text": ("JSONTextError",),
    ".models.local_provider": ("LocalModelUnavailable",),
    ".schema_refs": ("RefOutsideDocument",),
    ".models.structured": ("StructuredOutputError",),
    ".models.weights": ("WeightsError",),
    ".server.security": ("InsecureBindError",),
    ".state.contract": ("StateContractError",),
    ".state.inputs": ("InputError",),
    ".state.manager": ("StateError",),
    ".telemetry.events": ("UnknownEventType",),
    ".telemetry.otel_setup": ("OTelConfigError", "OTelUnavailable"),
    ".template": ("ConversationError",),
    ".testing.waiting": ("WaitTimeout",),
    ".tools.builtin": ("CalculatorError",),
    ".tools.errors": (
        "ToolArgumentsError",
        "ToolError",
        "ToolExitError",
        "ToolProviderError",
        "UnknownToolError",
    ),
    ".tools.mcp.config": ("MCPConfigError",),
    ".tools.mcp.elicitation": ("ElicitationError", "UnknownElicitation"),
    ".tools.mcp.content": (
        "MCPConnectError",
        "MCPServerCrashedError",
        "MCPServerError",
        "MCPTimeoutError",
        "MCPToolError",
    ),
}
"""Where each public exception is defined. Left out on purpose: the control-flow signals that
never reach a caller (`cli.signals.Terminated`, `cli.common.CliError`, the server's HTTP
mapping: `BadRequest`, `NotFound`, `RunConflict`, `BodyTooLarge`; the test server's
`RequestRejected`; a local backend's
`GenerationStopped`); they derive from `JianmuError` all the same."""

_all, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = ["JianmuError", *_all]

if TYPE_CHECKING:  # the same names for type checkers; tests/test_public_api.py checks they match
    from .agentfile.loader import AgentFileError as AgentFileError
    from .agentfile.modules import ModuleRefused as ModuleRefused
    from .bt.fault import NodeFailed as NodeFailed
    from .bt.progress import TreeMismatchError as TreeMismatchError
    from .checkpoint.contract import CheckpointError as CheckpointError
    from .checkpoint.contract import DecisionConflictError as DecisionConflictError
    from .checkpoint.contract import ThreadConflictError as ThreadConflictError
    from .checkpoint.threads import UnknownThreadError as UnknownThreadError
    from .config import ConfigError as ConfigError
    from .durable.fingerprint import AgentChangedError as AgentChangedError
    from .durable.liveness import ExecutorInUseError as ExecutorInUseError
    from .durable.steps import ReplayDivergedError as ReplayDivergedError
    from .durable.workflow import UnknownAgentError as UnknownAgentError
    from .guard.approvals import AlreadyDecided as AlreadyDecided
    from .guard.approvals import ApprovalError as ApprovalError
    from .guard.approvals import InvalidEdit as InvalidEdit
    from .guard.enforcer import GuardConfigError as GuardConfigError
    from .models.errors import ModelCallFailed as ModelCallFailed
    from .models.errors import ModelError as ModelError
    from .models.json_text import JSONTextError as JSONTextError
    from .models.local_provider import LocalModelUnavailable as LocalModelUnavailable
    from .models.structured import StructuredOutputError as StructuredOutputError
    from .models.weights import WeightsError as WeightsError
    from .review import ThreadSuspendedError as ThreadSuspendedError
    from .schema_refs import RefOutsideDocument as RefOutsideDocument
    from .server.security import InsecureBindError as InsecureBindError
    from .sources import SourceError as SourceError
    from .state.contract import StateContractError as StateContractError
    from .state.inputs import InputError as InputError
    from .state.manager import StateError as StateError
    from .telemetry.events import UnknownEventType as UnknownEventType
    from .telemetry.otel_setup import OTelConfigError as OTelConfigError
    from .telemetry.otel_setup import OTelUnavailable as OTelUnavailable
    from .template import ConversationError as ConversationError
    from .testing.waiting import WaitTimeout as WaitTimeout
    from .tools.builtin import CalculatorError as CalculatorError
    from .tools.errors import ToolArgumentsError as ToolArgumentsError
    from .tools.errors import ToolError as ToolError
    from .tools.errors import ToolExitError as ToolExitError
    from .tools.errors import ToolProviderError as ToolProviderError
    from .tools.errors import UnknownToolError as UnknownToolError
    from .tools.mcp.config import MCPConfigError as MCPConfigError
    from .tools.mcp.content import MCPConnectError as MCPConnectError
    from .tools.mcp.content import MCPServerCrashedError as MCPServerCrashedError
    from .tools.mcp.content import MCPServerError as MCPServerError
    from .tools.mcp.content import MCPTimeoutError as MCPTimeoutError
    from .tools.mcp.content import MCPToolError as MCPToolError
    from .tools.mcp.elicitation import ElicitationError as ElicitationError
    from .tools.mcp.elicitation import UnknownElicitation as UnknownElicitation
