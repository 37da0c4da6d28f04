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
        InterruptionError
        InvalidEdit (ValueError)
      CalculatorError (ValueError)
      CaseRunFailed (RuntimeError)
      CheckpointError (RuntimeError)
        DecisionConflictError
        ThreadConflictError
        ThreadSuspendedError
        UnknownRecordingError (LookupError)
        UnknownThreadError
      ConversationError (RuntimeError)
      EvalError (ValueError)
      EvalsUnavailable (RuntimeError)
      ExecutorInUseError (RuntimeError)
      GuardConfigError (ValueError)
      InputError (ValueError)
      InsecureBindError (ValueError)
      JSONTextError (ValueError)
      LocalModelUnavailable
      MissingExtraError (ModuleNotFoundError)
      ModelError
        ModelCallFailed
      ModuleRefused (ValueError)
      NodeFailed
      OTelConfigError (ValueError)
      OTelUnavailable (RuntimeError)
      RecordingError (ValueError)
      RefOutsideDocument (ValueError)
      ReplayDivergedError (RuntimeError)
      ReplayDivergence (RuntimeError)
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
            MCPAuthError
            MCPLoginRequiredError
          MCPServerCrashedError
          MCPTimeoutError
          MCPToolError
        ToolArgumentsError
        ToolExitError
        ToolProviderError
          MCPPromptError
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


if not TYPE_CHECKING:  # hidden from type checkers, so a misspelt name is an error there
    _all, __getattr__, __dir__ = lazy_exports(__name__)
    __all__ = ["JianmuError", *_all]

# Where each public exception is defined. Left out on purpose: the control-flow signals that
# never reach a caller (`cli._signals.Terminated`, `cli._common.CliError`, the server's HTTP
# mapping: `BadRequest`, `NotFound`, `RunConflict`, `BodyTooLarge`; the test server's
# `RequestRejected`; a replay's internal `_Stop`; a local backend's `GenerationStopped`); they
# derive from `JianmuError` all the same.
if TYPE_CHECKING:  # the public names, one source: jianmu_like.exports reads them at run time
    from ._base.config import ConfigError as ConfigError
    from ._base.extras import MissingExtraError as MissingExtraError
    from ._base.schema_refs import RefOutsideDocument as RefOutsideDocument
    from ._base.sources import SourceError as SourceError
    from ._run.recording import RecordingError as RecordingError
    from ._run.review import ThreadSuspendedError as ThreadSuspendedError
    from ._run.template import ConversationError as ConversationError
    from .agentfile._loader import AgentFileError as AgentFileError
    from .agentfile._modules import ModuleRefused as ModuleRefused
    from .bt._fault import NodeFailed as NodeFailed
    from .bt._progress import TreeMismatchError as TreeMismatchError
    from .checkpoint._contract import CheckpointError as CheckpointError
    from .checkpoint._contract import DecisionConflictError as DecisionConflictError
    from .checkpoint._contract import ThreadConflictError as ThreadConflictError
    from .checkpoint._recordings import UnknownRecordingError as UnknownRecordingError
    from .checkpoint._threads import UnknownThreadError as UnknownThreadError
    from .durable._fingerprint import AgentChangedError as AgentChangedError
    from .durable._liveness import ExecutorInUseError as ExecutorInUseError
    from .durable._steps import ReplayDivergedError as ReplayDivergedError
    from .durable._workflow import UnknownAgentError as UnknownAgentError
    from .evals._errors import CaseRunFailed as CaseRunFailed
    from .evals._errors import EvalError as EvalError
    from .evals._errors import EvalsUnavailable as EvalsUnavailable
    from .guard._approvals import AlreadyDecided as AlreadyDecided
    from .guard._approvals import ApprovalError as ApprovalError
    from .guard._approvals import InvalidEdit as InvalidEdit
    from .guard._enforcer import GuardConfigError as GuardConfigError
    from .guard._interruptions import InterruptionError as InterruptionError
    from .models._errors import ModelCallFailed as ModelCallFailed
    from .models._errors import ModelError as ModelError
    from .models._json_text import JSONTextError as JSONTextError
    from .models._local_provider import LocalModelUnavailable as LocalModelUnavailable
    from .models._structured import StructuredOutputError as StructuredOutputError
    from .models.weights import WeightsError as WeightsError
    from .replay._player import ReplayDivergence as ReplayDivergence
    from .server._security import InsecureBindError as InsecureBindError
    from .state._contract import StateContractError as StateContractError
    from .state._inputs import InputError as InputError
    from .state._manager import StateError as StateError
    from .telemetry.events import UnknownEventType as UnknownEventType
    from .telemetry.otel_setup import OTelConfigError as OTelConfigError
    from .telemetry.otel_setup import OTelUnavailable as OTelUnavailable
    from .testing._waiting import WaitTimeout as WaitTimeout
    from .tools._errors import ToolArgumentsError as ToolArgumentsError
    from .tools._errors import ToolError as ToolError
    from .tools._errors import ToolExitError as ToolExitError
    from .tools._errors import ToolProviderError as ToolProviderError
    from .tools._errors import UnknownToolError as UnknownToolError
    from .tools._questions import ElicitationError as ElicitationError
    from .tools._questions import UnknownElicitation as UnknownElicitation
    from .tools.builtin import CalculatorError as CalculatorError
    from .tools.mcp._auth import MCPAuthError as MCPAuthError
    from .tools.mcp._auth import MCPLoginRequiredError as MCPLoginRequiredError
    from .tools.mcp._config import MCPConfigError as MCPConfigError
    from .tools.mcp._content import MCPConnectError as MCPConnectError
    from .tools.mcp._content import MCPServerCrashedError as MCPServerCrashedError
    from .tools.mcp._content import MCPServerError as MCPServerError
    from .tools.mcp._content import MCPTimeoutError as MCPTimeoutError
    from .tools.mcp._content import MCPToolError as MCPToolError
    from .tools.mcp._prompts import MCPPromptError as MCPPromptError
