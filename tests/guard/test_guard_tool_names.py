"""The guard fails closed: a rule that names a tool the agent does not have is an error, with a
did-you-mean, never a rule that silently never applies (a typo in `require_approval` would let
every e-mail go out unapproved). Python guards fail when attached to the agent, agent files at
`validate` with the line, and rules for MCP tools when the servers list them, before any model
request."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from jianmu_like import Agent, human
from jianmu_like.agentfile._loader import AgentFileError, load_agent, validate_agent_file
from jianmu_like.guard._enforcer import GuardConfigError, GuardEnforcer
from jianmu_like.guard._policies import AllowList, ArgumentRule, DenyList, RateLimit, RequireApproval
from jianmu_like.presets._plan_execute import create_plan_execute_node
from jianmu_like.presets._supervisor import create_supervisor_node
from jianmu_like.presets.react import ReActConfig, create_react_node
from jianmu_like.testing import ScriptedOpenAIServer, call, reply
from jianmu_like.tools import MCPToolProvider, calculator
from jianmu_like.tools._toolset import ToolSet

MCP_SERVER = Path(__file__).resolve().parents[1] / "mcp" / "mcp_test_server.py"
CLI = [sys.executable, "-m", "jianmu_like"]

SENT: list[str] = []


def send_email(to: str, body: str) -> str:
    """Send an e-mail."""
    SENT.append(to)
    return f"sent to {to}"


def mcp_provider() -> MCPToolProvider:
    return MCPToolProvider({"name": "test", "command": sys.executable, "args": [str(MCP_SERVER)]})


# ---------------------------------------------------------------------------- Python
@pytest.mark.parametrize(
    ("policy", "label"),
    [
        (RequireApproval(tools=["send_mail"]), "require_approval"),
        (DenyList(["send_mail"]), "deny_list"),
        (AllowList(["calculator", "send_mail"]), "allow_list"),
        (ArgumentRule("send_mail", "to", pattern=r".*@example\.com"), "argument_rule(send_mail.to)"),
        (RateLimit("send_mail", 1, 60), "rate_limit(send_mail: 1/60s)"),
    ],
    ids=lambda value: type(value).__name__ if not isinstance(value, str) else "",
)
def test_every_policy_that_names_a_missing_tool_fails_when_attached(policy: Any, label: str) -> None:
    with ScriptedOpenAIServer([]) as srv, pytest.raises(GuardConfigError) as info:
        create_react_node(
            model_client=srv.client(), tools=[calculator, send_email], constraints=GuardEnforcer([policy])
        )
    assert info.value.problems == [
        f"{label}: unknown tool 'send_mail' (did you mean 'send_email'?) "
        "(the agent's tools: calculator, send_email)"
    ]


def test_a_glob_must_match_some_tool_and_correct_rules_pass() -> None:
    with ScriptedOpenAIServer([]) as srv:
        client = srv.client()
        with pytest.raises(
            GuardConfigError, match=r"the pattern 'mail_\*' matches none of the agent's tools"
        ):
            create_react_node(
                model_client=client, tools=[send_email], constraints=GuardEnforcer([DenyList(["mail_*"])])
            )
        rules = GuardEnforcer([DenyList(["send_*"]), RequireApproval(tools=["send_email"], effect_tags="x")])
        create_react_node(model_client=client, tools=[send_email], constraints=rules)


async def test_the_typo_cannot_send_the_email_and_the_right_name_waits_for_approval() -> None:
    SENT.clear()
    script = [call("send_email", to="boss@example.com", body="hi"), reply("sent")]
    with ScriptedOpenAIServer(script) as srv:
        with pytest.raises(GuardConfigError, match="did you mean 'send_email'"):
            create_react_node(
                model_client=srv.client(),
                tools=[send_email],
                constraints=GuardEnforcer([RequireApproval(tools=["send_mail"])]),
            )
        root = create_react_node(
            model_client=srv.client(),
            tools=[send_email],
            constraints=GuardEnforcer([RequireApproval(tools=["send_email"])]),
        )
        result = await Agent(root).run({"messages": [human("mail the boss")]})
    assert result.status == "suspended" and [a.tool for a in result.pending_approvals] == ["send_email"]
    assert SENT == []


def test_presets_check_every_tool_at_build_and_steps_may_use_fewer() -> None:
    """Plan steps and supervisor workers are built at run time with the agent's tools (steps
    with some of them): the guard is checked against all of them when the preset is built."""
    with ScriptedOpenAIServer([]) as srv:
        client = srv.client()
        for build in (create_plan_execute_node, create_supervisor_node):
            with pytest.raises(GuardConfigError, match="unknown tool 'send_mail'"):
                build(
                    model_client=client,
                    tools=[calculator, send_email],
                    constraints=GuardEnforcer([RequireApproval(tools=["send_mail"])]),
                )
        shared = GuardEnforcer([RequireApproval(tools=["send_email"])])
        create_plan_execute_node(model_client=client, tools=[calculator, send_email], constraints=shared)
        shared.attach(ToolSet([calculator]))  # a step that uses only the calculator
        # An enforcer shared by agents with different tools is told the others' tools.
        lone = GuardEnforcer([RequireApproval(tools=["send_email"])], tools=["send_email"])
        create_react_node(model_client=client, tools=[calculator], constraints=lone)


async def test_rules_for_mcp_tools_are_checked_when_the_server_lists_them_before_any_model_call() -> None:
    with ScriptedOpenAIServer([reply("never asked")]) as srv:
        root = create_react_node(
            model_client=srv.client(),
            tool_providers=[mcp_provider()],
            constraints=GuardEnforcer([RequireApproval(tools=["ecko"])]),
            config=ReActConfig(max_iterations=2),
        )
        async with Agent(root) as agent:
            result = await agent.run({"messages": [human("echo hi")]})
            again = await agent.run({"messages": [human("echo hi")]})
        requests = srv.requests
    assert requests == []
    for outcome in (result, again):
        assert outcome.status == "failure"
        assert outcome.fault is not None and outcome.fault.kind == "guard_error"
        assert "require_approval: unknown tool 'ecko' (did you mean 'echo'?)" in (outcome.error or "")
    # The right name: the model is asked, and the call waits for a human.
    with ScriptedOpenAIServer([call("echo", text="hi"), reply("done")]) as srv:
        root = create_react_node(
            model_client=srv.client(),
            tool_providers=[mcp_provider()],
            constraints=GuardEnforcer([RequireApproval(tools=["echo"])]),
            config=ReActConfig.model_validate({"tool_selection": {"enabled": False}}),
        )
        async with Agent(root) as agent:
            result = await agent.run({"messages": [human("echo hi")]})
    assert result.status == "suspended" and [a.tool for a in result.pending_approvals] == ["echo"]


# ---------------------------------------------------------------------------- agent files
def agent_folder(tmp_path: Path, module: str) -> Path:
    """A folder with a module `module` that has a `send_email` tool (one name per test: a
    module is imported once per process)."""
    folder = tmp_path / "agents"
    folder.mkdir()
    (folder / f"{module}.py").write_text(
        "def send_email(to: str, body: str) -> str:\n    '''Send an e-mail.'''\n    return 'sent'\n"
    )
    return folder


def test_a_guard_typo_in_an_agent_file_is_reported_with_its_line(tmp_path: Path) -> None:
    folder = agent_folder(tmp_path, "mail_tools_g1")
    path = folder / "mailer.yaml"
    path.write_text(
        "kind: react\n"
        "tools: [calculator, 'mail_tools_g1:send_email']\n"
        "guard:\n"
        "  deny: [calculater]\n"
        "  require_approval:\n"
        "    tools: [send_mail]\n"
        "  arguments:\n"
        "    - {tool: send_email, argument: to, pattern: '.*@example[.]com'}\n"
        "  rate_limits:\n"
        "    - {tool: 'mail_*', calls: 1, per_seconds: 60}\n"
    )
    with pytest.raises(AgentFileError) as info:
        validate_agent_file(path)
    tools = "(the agent's tools: calculator, send_email)"
    assert info.value.problems == [
        f"{path}:4: guard.deny[0]: unknown tool 'calculater' (did you mean 'calculator'?) {tools}",
        f"{path}:6: guard.require_approval.tools[0]: unknown tool 'send_mail' (did you mean 'send_email'?) "
        + tools,
        f"{path}:10: guard.rate_limits[0].tool: the pattern 'mail_*' matches none of the agent's tools "
        + tools,
    ]
    proc = subprocess.run(
        [*CLI, "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert f"{path}:6: guard.require_approval.tools[0]: unknown tool 'send_mail'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_tree_level_guard_covers_the_tools_of_every_node_that_inherits_it(tmp_path: Path) -> None:
    folder = agent_folder(tmp_path, "mail_tools_g2")
    path = folder / "tree.yaml"
    text = (
        "kind: tree\n"
        "output: writer\n"
        "guard:\n"
        "  require_approval: {tools: [send_email]}\n"
        "tree:\n"
        "  sequence:\n"
        "    children:\n"
        "      - react: {name: Calc, namespace: calc, tools: [calculator]}\n"
        "      - react: {name: Writer, namespace: writer, tools: ['mail_tools_g2:send_email']}\n"
        "      - react: {name: Own, namespace: own, tools: [calculator], guard: {deny: [send_email]}}\n"
    )
    path.write_text(text)
    with pytest.raises(AgentFileError) as info:
        validate_agent_file(path)
    assert info.value.problems == [
        f"{path}:10: guard.deny[0]: unknown tool 'send_email' (the agent's tools: calculator)"
    ]
    path.write_text(text.replace(", guard: {deny: [send_email]}", ""))
    assert validate_agent_file(path).kind == "tree"
    with ScriptedOpenAIServer([]) as srv:
        load_agent(path, model_client=srv.client())  # the Calc node is built with the shared guard
    path.write_text(text.replace("tools: [send_email]", "tools: [send_mail]"))
    with pytest.raises(AgentFileError) as info:
        validate_agent_file(path)
    assert info.value.problems[0].startswith(
        f"{path}:4: guard.require_approval.tools[0]: unknown tool 'send_mail' (did you mean 'send_email'?)"
    )


def test_an_agent_file_with_mcp_tools_fails_before_the_first_model_request(tmp_path: Path) -> None:
    path = tmp_path / "mcp.yaml"
    server = {"command": sys.executable, "args": [str(MCP_SERVER)]}
    path.write_text(
        yaml.safe_dump(
            {
                "kind": "react",
                "tools": ["calculator"],
                "mcp_servers": {"test": server},
                "guard": {"require_approval": {"tools": ["ecko"]}},
            }
        )
    )
    validate_agent_file(path)  # the server's tools are not known before it runs
    with ScriptedOpenAIServer([reply("never asked")]) as srv:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("JIANMU", "OPENAI_"))}
        env.update(OPENAI_BASE_URL=srv.base_url, OPENAI_API_KEY="x", NO_COLOR="1")
        proc = subprocess.run(
            [*CLI, "run", str(path), "echo hi"],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            cwd=tmp_path,
            check=False,
        )
        requests = srv.requests
    assert requests == []
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "error: the guard names tools the agent does not have" in proc.stderr
    assert "unknown tool 'ecko' (did you mean 'echo'?)" in proc.stderr
