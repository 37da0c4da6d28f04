"""MCP server configuration: transports, tool filters and tags, the `mcp_servers:` builder and
its errors, and secrets kept out of reprs and messages. No server is started here."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from jianmu_like._base.config import ConfigError
from jianmu_like.tools import (
    MCPConfigError,
    MCPServerConfig,
    MCPToolProvider,
    mcp_servers_from_config,
    mcp_tool_name,
    parse_mcp_servers,
)

SECRET = "sk-live-0123456789abcdef"


def test_transport_is_inferred_and_names_default() -> None:
    stdio = MCPServerConfig(command="/usr/bin/uvx", args=["mcp-server-time"])
    assert (stdio.transport, stdio.name) == ("stdio", "uvx")
    http = MCPServerConfig(url="https://user:pw@mcp.example.com:8443/mcp")
    assert (http.transport, http.name) == ("http", "mcp.example.com:8443")
    assert http.describe() == "https://mcp.example.com:8443/mcp"  # credentials dropped
    assert (stdio.connect_timeout, stdio.call_timeout) == (30.0, 60.0)
    assert stdio.parallel_safe and not stdio.is_idempotent("anything")


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({}, "give `command`"),
        ({"command": "x", "url": "http://h/mcp"}, "not both"),
        ({"transport": "http", "command": "x"}, "needs `url`"),
        ({"url": "ftp://h/mcp"}, "http:// or https://"),
        ({"url": "http://h/mcp", "args": ["-v"]}, "only apply to transport 'stdio'"),
        ({"command": "x", "headers": {"a": "b"}}, "only apply to transport 'http'"),
        ({"command": "x", "prefix": "bad prefix"}, "letters, digits"),
        ({"command": "x", "connect_timeout": 0}, "greater than 0"),
        ({"command": "x", "hedaers": {}}, "Extra inputs"),
    ],
)
def test_invalid_entries_are_refused(fields: dict[str, object], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem.replace("(", r"\(")):
        MCPServerConfig.model_validate(fields)


def test_allow_deny_effect_tags_and_idempotent_globs() -> None:
    config = MCPServerConfig(
        command="x",
        allow=["get_*", "list_*", "delete_*"],
        deny=["*_secret"],
        effect_tags={
            "get_*": ["read"],
            "list_*": "read",
            "delete_*": ["write", "destructive"],
            "default": ["network"],
        },
        idempotent=["get_*", "list_*"],
    )
    assert [t for t in ["get_a", "list_b", "delete_c", "put_d", "get_secret"] if config.exposes(t)] == [
        "get_a",
        "list_b",
        "delete_c",
    ]
    assert config.effect_tags_for("get_a") == {"read"}
    assert config.effect_tags_for("delete_c") == {"write", "destructive"}
    assert config.effect_tags_for("other") == {"network"}  # `default`: only when no glob matched
    assert config.is_idempotent("list_b") and not config.is_idempotent("delete_c")
    everything = MCPServerConfig(command="x", effect_tags=["network"], idempotent=True)
    assert everything.effect_tags_for("whatever") == {"network"} and everything.is_idempotent("x")


def test_tool_names_are_made_safe_for_openai() -> None:
    assert mcp_tool_name("gh_", "create_issue") == "gh_create_issue"
    assert mcp_tool_name("", "files/read.text") == "files_read_text"
    assert len(mcp_tool_name("p_", "x" * 100)) == 64


def test_secrets_stay_out_of_reprs_and_errors() -> None:
    config = MCPServerConfig(
        name="gh",
        url="https://mcp.example.com/mcp",
        headers={"Authorization": f"Bearer {SECRET}", "X-Team": "core"},
    )
    stdio = MCPServerConfig(command="srv", args=["--key", SECRET], env={"GITHUB_TOKEN": SECRET})
    for text in (repr(config), str(config), repr(stdio), repr(MCPToolProvider(config)), stdio.describe()):
        assert SECRET not in text
    assert "Authorization" in repr(config)  # the keys are shown, the values are not
    with pytest.raises(ValidationError) as caught:
        MCPServerConfig(url="https://h/mcp", headers={"Authorization": f"Bearer {SECRET}"}, bogus=SECRET)
    assert SECRET not in str(caught.value)
    with pytest.raises(MCPConfigError) as caught_cfg:
        parse_mcp_servers([{"name": "gh", "url": "https://h/mcp", "hedaers": {"Authorization": SECRET}}])
    assert SECRET not in str(caught_cfg.value)


def test_builder_accepts_a_list_or_a_mapping() -> None:
    from_list = mcp_servers_from_config(
        [
            {"name": "time", "command": "python", "args": ["-m", "mcp_server_time"]},
            {"url": "http://127.0.0.1:1/mcp"},
        ]
    )
    assert [p.name for p in from_list] == ["time", "127.0.0.1:1"]
    assert all(isinstance(p, MCPToolProvider) for p in from_list)
    entry = {"command": "python", "prefix": "time_", "call_timeout": 90}
    from_mapping = mcp_servers_from_config({"time": entry})
    assert from_mapping[0].name == "time" and from_mapping[0].config.call_timeout == 90
    assert mcp_servers_from_config(None) == []


def test_builder_reports_every_problem_with_the_entry_and_key() -> None:
    with pytest.raises(MCPConfigError) as caught:
        parse_mcp_servers(
            {
                "a": {"command": "x", "hedaers": {}},
                "b": {"url": "http://h/mcp", "call_timeout": -1},
                "c": "not a mapping",
                "d": {"name": "other", "command": "x"},
            }
        )
    problems = caught.value.problems
    assert "server a: hedaers: unknown key (did you mean 'headers'?)" in problems
    assert any(p.startswith("server b: call_timeout:") and "greater than 0" in p for p in problems)
    assert "server c: must be a mapping, got str" in problems
    assert "server other: name: differs from its key 'd'" in problems
    assert isinstance(caught.value, ConfigError) and isinstance(caught.value, ValueError)
    with pytest.raises(MCPConfigError, match="used by two servers"):
        parse_mcp_servers([{"command": "x"}, {"command": "x"}])
    with pytest.raises(MCPConfigError, match="must be a list or a mapping"):
        parse_mcp_servers("x")


def test_environment_references_in_env_and_headers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JIANMU_TEST_TOKEN", SECRET)
    monkeypatch.delenv("JIANMU_TEST_MISSING", raising=False)
    (config,) = parse_mcp_servers(
        [{"name": "gh", "url": "https://h/mcp", "headers": {"Authorization": "Bearer ${JIANMU_TEST_TOKEN}"}}]
    )
    assert config.headers["Authorization"] == f"Bearer {SECRET}"
    with pytest.raises(MCPConfigError, match="JIANMU_TEST_MISSING is not set"):
        parse_mcp_servers([{"command": "x", "env": {"TOKEN": "${JIANMU_TEST_MISSING}"}}])


def test_a_yaml_mcp_servers_section(tmp_path: Path) -> None:
    text = """
mcp_servers:
  - name: time
    command: python
    args: ["-m", "mcp_server_time", "--local-timezone", "UTC"]
    env: {PORT: 8080}
    prefix: time_
    allow: ["get_*"]
    effect_tags: {"*": [read]}
    idempotent: true
    connect_timeout: 20
"""
    (config,) = parse_mcp_servers(yaml.safe_load(text)["mcp_servers"])
    assert config.env == {"PORT": "8080"}  # YAML's int becomes the text a subprocess needs
    assert config.exposes("get_current_time") and not config.exposes("convert_time")
    assert config.effect_tags_for("get_current_time") == {"read"}
    assert config.connect_timeout == 20
