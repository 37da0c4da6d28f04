"""Settings declared once: the model settings' bounds are one model's (`_base.config.ModelSettings`)
for Python, the configuration file and agent files, and every agent-file field is a
`ReActConfig` setting of the same name or one the loader builds the agent from."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from jianmu_like import ReActConfig
from jianmu_like._base.config import LLMConfig, ModelSettings
from jianmu_like.agentfile._builder import SAME_NAMED
from jianmu_like.agentfile._spec import BUILT_FROM, LimitsSpec, LLMSpec, ReActSpec
from jianmu_like.nodes._settings import ModelCallConfig

READ_WITH_MORE = {"model", "system_prompt", "tool_protocol", "context"}
SECTIONS = {"llm": LLMSpec, "limits": LimitsSpec}


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("temperature", 5, "less than or equal to 2"),
        ("temperature", -0.1, "greater than or equal to 0"),
        ("top_p", 0, "greater than 0"),
        ("top_p", 1.5, "less than or equal to 1"),
        ("top_k", 0, "greater than or equal to 1"),
        ("max_tokens", 0, "greater than or equal to 1"),
        ("timeout", 0, "greater than 0"),
    ],
)
@pytest.mark.parametrize("model", [ModelCallConfig, ReActConfig, LLMConfig, LLMSpec])
def test_a_model_setting_out_of_bounds_is_refused_wherever_it_is_written(
    model: type[BaseModel], field: str, value: float, message: str
) -> None:
    with pytest.raises(ValidationError, match=rf"{field}\n  Input should be {message}"):
        model(**{field: value})


def test_python_gets_the_bounds() -> None:
    with pytest.raises(ValidationError, match="temperature"):
        ModelCallConfig(temperature=5)
    assert ModelCallConfig(temperature=2, top_p=1).temperature == 2
    for model in (ModelCallConfig, LLMConfig, LLMSpec):
        assert issubclass(model, ModelSettings)


def _bounds(model: type[BaseModel], name: str) -> list[dict[str, Any]]:
    """The numeric bounds of a field as its JSON schema says them (what else it allows aside)."""
    schema = model.model_json_schema()["properties"][name]
    keys = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
    found = [{k: v for k, v in option.items() if k in keys} for option in schema.get("anyOf", [schema])]
    return [bounds for bounds in found if bounds]


def test_every_agent_file_field_is_a_setting_or_what_the_agent_is_built_from() -> None:
    fields = set(ReActSpec.model_fields)
    settings = set(SAME_NAMED) | set(SECTIONS) | READ_WITH_MORE
    assert fields - settings - BUILT_FROM == set(), "accepted and ignored"
    assert not (settings & BUILT_FROM)
    for name in SAME_NAMED:
        assert _bounds(ReActSpec, name) == _bounds(ReActConfig, name), name


@pytest.mark.parametrize("section", sorted(SECTIONS))
def test_the_sections_are_settings_by_name_with_the_same_bounds(section: str) -> None:
    spec = SECTIONS[section]
    for name in spec.model_fields:
        assert name in ReActConfig.model_fields, f"{section}.{name} is no ReActConfig setting"
        assert _bounds(spec, name) == _bounds(ReActConfig, name), f"{section}.{name}"
