"""The public surface: everything in __all__ exists, and the documented entry points are there."""

from __future__ import annotations

import jianmu_like
import jianmu_like.testing


def test_all_names_resolve() -> None:
    for name in jianmu_like.__all__:
        assert hasattr(jianmu_like, name), name
    for name in jianmu_like.testing.__all__:
        assert hasattr(jianmu_like.testing, name), name


def test_documented_names_are_exported() -> None:
    documented = {
        "Agent", "AgentResult", "create_react_node", "ReActConfig", "ReActState", "StateKeys", "Ephemeral",
        "Message", "ToolCall", "human", "ai", "system", "ModelClient", "Tool", "tool", "ToolSet",
        "ToolProvider", "LoopUntilSuccess", "StateCondition", "AgentLLMNode", "ToolExecutor",
        "ReactiveRunner", "StateManager", "GuardEnforcer", "Decision", "get_config", "load_agent",
        "MCPToolProvider",
    }  # fmt: skip
    assert documented <= set(jianmu_like.__all__)


def test_all_is_sorted_and_unique() -> None:
    assert len(set(jianmu_like.__all__)) == len(jianmu_like.__all__)


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


def test_importing_the_package_loads_no_heavy_dependency() -> None:
    assert _modules_loaded_by("import jianmu_like") == []


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
    from jianmu_like.models.openai_provider import OpenAIProvider
    from jianmu_like.tools.mcp.provider import MCPToolProvider

    assert jianmu_like.OpenAIProvider is OpenAIProvider
    assert jianmu_like.MCPToolProvider is MCPToolProvider


def test_every_public_name_is_lazily_importable_and_listed() -> None:
    names = set(jianmu_like._LAZY)
    assert names == set(jianmu_like.__all__)
    assert jianmu_like.ModelResilienceConfig is jianmu_like.ResilienceConfig
    assert set(jianmu_like.__all__) <= set(dir(jianmu_like))


def test_cli_help_loads_no_heavy_dependency_and_no_framework_module() -> None:
    code = (
        "import contextlib, io\n"
        "from jianmu_like.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    main(['--help'])\n"
        "import sys\n"
        "assert 'jianmu_like.agent' not in sys.modules and 'pydantic' not in sys.modules\n"
    )
    assert _modules_loaded_by(code) == []
