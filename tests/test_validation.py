"""One wording for validation errors (`jianmu_like._base.validation`) wherever pydantic rejects input:
the configuration and agent files, guard sections, MCP server entries, tool arguments and
structured answers (read by the model). Each used to have its own formatter and its own words."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, SecretStr, ValidationError

from jianmu_like._base.validation import describe_validation, key_path
from jianmu_like.agentfile._loader import AgentFileError, validate_agent_file
from jianmu_like.guard._config import policies_from_config
from jianmu_like.models._structured import OutputSchema
from jianmu_like.tools._base import Tool
from jianmu_like.tools._errors import ToolArgumentsError
from jianmu_like.tools.mcp._config import MCPConfigError, parse_mcp_servers


class Inner(BaseModel):
    model_config = ConfigDict(extra="forbid")
    limit: int
    api_key: SecretStr | None = None


class Outer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    items: list[Inner]


def problems(model: type[BaseModel], data: object) -> list[str]:
    with pytest.raises(ValidationError) as info:
        model.model_validate(data)
    return describe_validation(info.value, model=model)


def test_key_level_lines() -> None:
    assert key_path(("tree", "children", 0, "react")) == "tree.children[0].react"
    assert problems(Outer, {"items": [{"limt": 1}, {"limit": "x"}]}) == [
        "items[0].limit: required key is missing",
        "items[0].limt: unknown key (did you mean 'limit'?)",
        "items[1].limit: Input should be a valid integer, unable to parse string as an integer (got 'x')",
    ]
    assert problems(Outer, {"items": [], "zzz": 1}) == ["zzz: unknown key (expected one of: items)"]


def test_secrets_are_never_quoted() -> None:
    [line] = problems(Outer, {"items": [{"limit": 1, "api_key": 12345}]})
    assert line.startswith("items[0].api_key: ") and "12345" not in line


async def test_every_place_words_a_misspelt_key_alike(tmp_path: Path) -> None:
    with pytest.raises(ValueError) as guard:
        policies_from_config({"alow": ["x"]})
    assert "alow: unknown key (did you mean 'allow'?)" in str(guard.value)

    with pytest.raises(MCPConfigError) as mcp:
        parse_mcp_servers([{"name": "a", "comand": "x"}])
    assert "server a: comand: unknown key (did you mean 'command'?)" in mcp.value.problems

    def search(query: str, limit: int = 5) -> str:
        """Search."""
        return query

    with pytest.raises(ToolArgumentsError) as tool:
        await Tool.from_function(search).invoke({"qeury": "x"})
    assert tool.value.problems == [
        "query: required argument is missing",
        "qeury: unknown argument (did you mean 'query'?)",
    ]

    class Answer(BaseModel):
        model_config = ConfigDict(extra="forbid")
        city: str

    with pytest.raises(ValueError) as answer:
        OutputSchema(Answer).validate({"citty": "Rome"})
    assert "city: required key is missing; citty: unknown key (did you mean 'city'?)" in str(answer.value)

    path = tmp_path / "agent.yaml"
    path.write_text("kind: react\nlimits:\n  max_iteration: 3\n")
    with pytest.raises(AgentFileError) as agent:
        validate_agent_file(path)
    assert agent.value.problems == [
        f"{path}:3: limits.max_iteration: unknown key (did you mean 'max_iterations'?)"
    ]
