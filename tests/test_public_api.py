"""The public surface, in tiers: the top level holds what an agent's author writes every day,
curated subpackages hold the extension points; each tier's `__all__` comes from its one list of
names, the `if TYPE_CHECKING:` imports (`jianmu_like.exports`), its names all import, and importing
it stays cheap."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path
from types import ModuleType

import pytest

import jianmu_like
from jianmu_like.exports import declared_exports, export_origins

TOP_LEVEL = {
    # the agent, its results and conversations
    "Agent", "AgentResult", "AgentOutcome", "AgentTemplate", "Conversation", "Usage",
    # agent files and configuration
    "load_agent", "validate_agent_file", "JianmuConfig", "load_config", "get_config",
    # preset factories and their configs
    "create_react_node", "ReActConfig", "ReActState", "ContextConfig", "ToolSelectionConfig",
    "create_plan_execute_node", "Plan", "PlanStep", "create_research_node", "ResearchSummary",
    "create_supervisor_node", "SupervisorConfig",
    # the model client and messages
    "ModelClient", "ResilienceConfig", "Message", "ToolCall", "ai", "human", "system", "tool_message",
    # tools
    "Tool", "tool", "ToolSet", "calculator", "think", "finish", "current_tool_call", "add_artifact",
    "Artifact", "MCPServerConfig", "MCPToolProvider", "RunContext", "current_run",
    # errors
    "JianmuError", "AgentFileError", "ConfigError", "ConversationError", "InputError", "ModelError",
    "ModelCallFailed", "StructuredOutputError", "ToolError", "ToolArgumentsError", "UnknownToolError",
    "ToolProviderError", "CheckpointError", "ThreadConflictError", "ThreadSuspendedError",
    "ApprovalError", "AlreadyDecided",
}  # fmt: skip
"""The top level, exactly: a name added or removed there is a decision about the API."""

TIERS = (
    "jianmu_like",
    "jianmu_like.bt",
    "jianmu_like.state",
    "jianmu_like.nodes",
    "jianmu_like.checkpoint",
    "jianmu_like.guard",
    "jianmu_like.telemetry",
    "jianmu_like.models",
    "jianmu_like.tools",
    "jianmu_like.errors",
    "jianmu_like.evals",
)
"""Lazy surfaces whose names are their `if TYPE_CHECKING:` imports (`jianmu_like.exports`)."""

CURATED = (*TIERS, "jianmu_like.testing", "jianmu_like.durable", "jianmu_like.replay")

MOVED = {
    "jianmu_like.bt": ("AsyncBehaviour", "StateCondition", "DynamicParallel", "LoopUntilSuccess", "Node",
                       "ReactiveRunner", "RunOutcome"),
    "jianmu_like.state": ("StateContract", "declare", "StateError", "StateManager", "Ephemeral"),
    "jianmu_like.nodes": ("A2AAgentNode", "ContextBuilder", "ContextBuilderProtocol", "ContextGuard",
                          "CriticNode", "InterruptGate", "AgentLLMNode", "LLMCallNode", "ToolExecutor",
                          "ToolNode", "ToolSelectionNode", "StateKeys"),
    "jianmu_like.checkpoint": ("Checkpoint", "Checkpointer", "MemoryCheckpointer", "SQLiteCheckpointer",
                               "open_checkpointer"),
    "jianmu_like.guard": ("AllowList", "Approval", "ApprovalDecision", "ArgumentRule", "Decision", "DenyList",
                          "GuardConfig", "GuardContext", "GuardDecision", "GuardEnforcer", "GuardPolicy",
                          "MaxToolCalls", "PendingApproval", "RateLimit", "RequireApproval", "list_pending",
                          "policies_from_config", "policy", "record_decision"),
    "jianmu_like.durable": ("DurableClient", "DurableRunResult", "DurableWorker"),
    "jianmu_like.models": ("ChatProvider", "ModelRequest", "ModelResponse", "OpenAIProvider",
                           "ModelResilienceConfig"),
    "jianmu_like.models._structured": ("OutputSchema", "StructuredResult", "structured_llm_call"),
    "jianmu_like.models._tool_protocol": ("ProtocolAdapter", "ToolProtocol"),
    "jianmu_like.telemetry": ("Event", "TelemetryHub"),
    "jianmu_like.tools": ("StaticToolProvider", "ToolProvider", "mcp_servers_from_config"),
}  # fmt: skip
"""Names the top level exported before it was tiered, and where each lives now."""


def test_the_top_level_is_exactly_the_everyday_table() -> None:
    assert set(jianmu_like.__all__) == TOP_LEVEL
    assert len(jianmu_like.__all__) == len(TOP_LEVEL)


@pytest.mark.parametrize("package", CURATED)
def test_every_name_of_a_tier_imports(package: str) -> None:
    module = importlib.import_module(package)
    assert len(set(module.__all__)) == len(module.__all__)
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{package}.{name}"
    assert set(module.__all__) <= set(dir(module))


@pytest.mark.parametrize(("package", "names"), MOVED.items())
def test_names_moved_off_the_top_level_import_from_their_subpackage(
    package: str, names: tuple[str, ...]
) -> None:
    module = importlib.import_module(package)
    for name in names:
        assert name not in TOP_LEVEL
        assert getattr(module, name) is not None, f"{package}.{name}"
        assert name in getattr(module, "__all__", [name]), f"{name} missing from {package}.__all__"


def _type_checking_imports(module: ModuleType) -> dict[str, str]:
    """Name → module of the `if TYPE_CHECKING:` imports of a module's source, as `ast` reads them."""
    tree = ast.parse(Path(inspect.getfile(module)).read_text())
    (block,) = (
        node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    )
    anchor = module.__package__ or module.__name__
    found: dict[str, str] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom), ast.unparse(node)
        for alias in node.names:
            assert alias.asname == alias.name, f"write `{alias.name} as {alias.name}` (explicit re-export)"
            assert alias.name not in found, f"{alias.name} imported twice"
            found[alias.name] = importlib.util.resolve_name("." * node.level + (node.module or ""), anchor)
    return found


@pytest.mark.parametrize("package", TIERS)
def test_the_runtime_surface_is_the_type_checking_imports(package: str) -> None:
    """The block mypy reads is the one list: the runtime reads the same names from the same
    modules (checked against `ast`, which the runtime skips for speed), and `__all__` is exactly
    them, sorted, each resolving to the object its module defines."""
    module = importlib.import_module(package)
    declared = _type_checking_imports(module)
    assert export_origins(package) == declared
    local = ["JianmuError"] if package == "jianmu_like.errors" else []  # defined there, not imported
    assert module.__all__ == [*local, *sorted(declared)]
    for name, origin in declared.items():
        assert getattr(module, name) is getattr(importlib.import_module(origin), name)


def test_the_reader_takes_what_ruff_format_writes() -> None:
    source = (
        '"""Doc."""\n\nif TYPE_CHECKING:  # the public names\n'
        "    from ._a import A as A\n"
        "\n    # a comment\n"
        "    from ..b._c import (\n        a_very_long_name as a_very_long_name,\n    )\n"
        "    from . import sub as sub  # trailing comment\n"
        "x = 1\n"
    )
    assert declared_exports(source) == {"A": "._a", "a_very_long_name": "..b._c", "sub": "."}


@pytest.mark.parametrize(
    ("block", "refusal"),
    [
        ("    from ._a import A as B\n", "write `A as A`"),
        ("    from ._a import A\n", "only `from .module import Name as Name` lines"),
        ("    from ._a import A as A, B as B\n", "only `from .module import Name as Name` lines"),
        ("    from jianmu_like._a import A as A\n", "only `from .module import Name as Name` lines"),
        ("    from ._a import A as A\n    from ._b import A as A\n", "'A' is exported twice"),
        ("    import os\n", "only `from .module import Name as Name` lines"),
    ],
)
def test_the_reader_refuses_a_line_it_would_otherwise_skip(block: str, refusal: str) -> None:
    with pytest.raises(ImportError, match=re.escape(refusal)) as caught:
        declared_exports("if TYPE_CHECKING:\n" + block, "pkg/__init__.py")
    assert "pkg/__init__.py:" in str(caught.value)


def test_a_package_without_one_type_checking_block_is_refused() -> None:
    with pytest.raises(ImportError, match="found 0"):
        declared_exports("x = 1\n", "pkg/__init__.py")
    with pytest.raises(ImportError, match="found 2"):
        declared_exports("if TYPE_CHECKING:\n    pass\nif TYPE_CHECKING:\n    pass\n", "pkg/__init__.py")


def test_an_unknown_name_is_an_attribute_error_naming_it() -> None:
    with pytest.raises(AttributeError, match="'StateKeyz'"):
        _ = jianmu_like.StateKeyz  # type: ignore[attr-defined]


HEAVY = (
    "openai", "mcp", "rich", "structlog", "llama_cpp", "xllamacpp", "httpx",
    "starlette", "uvicorn", "sse_starlette", "opentelemetry", "dbos", "sqlalchemy",
)  # fmt: skip


def _modules_loaded_by(code: str) -> list[str]:
    """Heavy top-level packages present in sys.modules after `code` runs in a fresh interpreter."""
    import json
    import subprocess
    import sys

    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return list(json.loads(out.stdout.strip().splitlines()[-1]))


def test_importing_the_package_and_its_tiers_loads_no_heavy_dependency() -> None:
    assert _modules_loaded_by("import jianmu_like") == []
    assert _modules_loaded_by("import " + ", ".join(TIERS)) == []


def test_building_an_agent_loads_no_heavy_dependency() -> None:
    code = (
        "from jianmu_like import Agent, ReActState, create_react_node, human\n"
        "from jianmu_like.testing import scripted_client\n"
        "from jianmu_like.tools.builtin import calculator\n"
        "root = create_react_node(model_client=scripted_client(['hi']), tools=[calculator])\n"
        "Agent(root, state_schema=ReActState)\n"
    )
    assert _modules_loaded_by(code) == []


def test_lazy_exports_resolve_to_the_real_classes() -> None:
    from jianmu_like.models._openai_provider import OpenAIProvider
    from jianmu_like.tools.mcp._provider import MCPToolProvider

    assert jianmu_like.models.OpenAIProvider is OpenAIProvider
    assert jianmu_like.MCPToolProvider is MCPToolProvider


def test_cli_help_loads_no_heavy_dependency_and_no_framework_module() -> None:
    code = (
        "import contextlib, io\n"
        "from jianmu_like.cli._main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    main(['--help'])\n"
        "import sys\n"
        "assert 'jianmu_like._run.agent' not in sys.modules and 'pydantic' not in sys.modules\n"
    )
    assert _modules_loaded_by(code) == []


PUBLIC_MODULES = {
    "jianmu_like.errors": "the catalogue of every exception (JianmuError and its hierarchy)",
    "jianmu_like.exports": "how each package's table of names works (docs: the public API)",
    "jianmu_like.models.weights": "`python -m jianmu_like.models.weights pull` (docs, bench)",
    "jianmu_like.tools.builtin": "`from jianmu_like.tools.builtin import calculator` (README, docs)",
    "jianmu_like.telemetry.events": "the event catalogue users read (docs/guides/telemetry.md)",
    "jianmu_like.telemetry.logging": "`configure_logging` (docs/guides/telemetry.md)",
    "jianmu_like.telemetry.otel_setup": "`from jianmu_like.telemetry.otel_setup import enable_otel` (docs)",
}
"""The modules, besides packages and `__main__`, whose path users write (issue 19: everything else
is an implementation module, named `_name.py`; dev/apply_renames.py moved the old ones)."""


def test_implementation_modules_are_private() -> None:
    root = Path(jianmu_like.__file__).parent
    public = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[-1] in ("__init__", "__main__") or any(p.startswith("_") for p in parts[1:]):
            continue
        if ".".join(parts) not in PUBLIC_MODULES:
            public.append(".".join(parts))
    assert public == [], "name them _module.py, or add them to PUBLIC_MODULES saying who writes the path"
