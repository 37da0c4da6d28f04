"""Configuration layering (defaults → file → environment) and its error messages."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from jianmu_like import ReActConfig
from jianmu_like._base.config import ConfigError, get_config, load_config


@pytest.fixture(autouse=True)
def fresh_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.chdir(tmp_path)  # no ./jianmu.yaml from the repository
    for name in ("JIANMU_CONFIG", "JIANMU__LLM__TEMPERATURE", "JIANMU__LIMITS__MAX_ITERATIONS"):
        monkeypatch.delenv(name, raising=False)
    get_config(reload=True)
    yield
    monkeypatch.undo()
    get_config(reload=True)


def test_defaults() -> None:
    config = load_config()
    assert config.limits.max_iterations == 10
    assert config.llm.temperature == 0.0 and config.llm.max_budget_tokens is None


def test_file_then_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "jianmu.yaml").write_text(
        "llm:\n  temperature: 0.7\n  max_tokens: 256\nlimits:\n  max_iterations: 6\n"
    )
    monkeypatch.setenv("JIANMU__LLM__TEMPERATURE", "0.2")
    config = load_config()
    assert config.llm.temperature == 0.2  # environment wins
    assert config.llm.max_tokens == 256 and config.limits.max_iterations == 6  # from the file


def test_react_config_defaults_follow_get_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JIANMU__LIMITS__MAX_ITERATIONS", "4")
    get_config(reload=True)
    assert ReActConfig().max_iterations == 4
    assert ReActConfig(max_iterations=9).max_iterations == 9


def test_explicit_path_via_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "custom.yaml"
    path.write_text("models:\n  default: my-model\n")
    monkeypatch.setenv("JIANMU_CONFIG", str(path))
    assert load_config().models.default == "my-model"
    monkeypatch.setenv("JIANMU_CONFIG", str(tmp_path / "missing.yaml"))
    with pytest.raises(ConfigError, match=r"missing\.yaml, which is not a file"):
        load_config()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("llm: [unclosed", r"jianmu\.yaml:\d+: malformed YAML"),
        (
            "llm:\n  temprature: 0.1\n",
            r"jianmu\.yaml:2: llm\.temprature: unknown key \(did you mean 'temperature'\?\)",
        ),
        ("llm:\n  temperature: hot\n", r"jianmu\.yaml:2: llm\.temperature: .*valid number.*\(got 'hot'\)"),
        ("limits:\n  max_iterations: 0\n", r"jianmu\.yaml:2: limits\.max_iterations: .*greater than 0"),
        ("- a\n- b\n", r"jianmu\.yaml:1: top level must be a mapping"),
        ("lims:\n  x: 1\n", r"jianmu\.yaml:1: lims: unknown key \(did you mean 'limits'\?\)"),
        (
            "limits:\n  max_rounds: 10\n",
            r"jianmu\.yaml:2: limits\.max_rounds: .*was removed .*limits\.max_iterations caps both",
        ),
    ],
)
def test_errors_name_file_and_key(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "jianmu.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=expected) as info:
        load_config()
    assert "jianmu.yaml" in str(info.value)


def test_all_problems_reported_at_once_with_lines(tmp_path: Path) -> None:
    (tmp_path / "jianmu.yaml").write_text("llm:\n  temperature: 9\n\nlimits:\n  max_iterations: -1\n")
    with pytest.raises(ConfigError) as info:
        load_config()
    assert info.value.problems == [
        "jianmu.yaml:2: llm.temperature: Input should be less than or equal to 2 (got 9)",
        "jianmu.yaml:5: limits.max_iterations: Input should be greater than 0 (got -1)",
    ]


def test_bad_environment_override_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JIANMU__LLM__TEMPERATURE", "warm")
    with pytest.raises(ConfigError, match=r"environment variable JIANMU__LLM__TEMPERATURE: llm\.temperature"):
        load_config()


def test_sources_of_every_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from jianmu_like._base.config import explain_config

    (tmp_path / "jianmu.yaml").write_text("llm:\n  max_tokens: 128\n")
    monkeypatch.setenv("JIANMU__LLM__TEMPERATURE", "0.3")
    config, sources = explain_config()
    assert config.llm.max_tokens == 128
    assert sources.values["llm.max_tokens"] == (128, "jianmu.yaml:2")
    assert sources.values["llm.temperature"] == (0.3, "env JIANMU__LLM__TEMPERATURE")
    assert sources.values["limits.max_iterations"] == (10, "default")


def test_reference_file_documents_every_key_with_its_default() -> None:
    from jianmu_like._base.config import JianmuConfig, _flatten
    from jianmu_like._base.sources import load_yaml

    reference = Path(__file__).resolve().parent.parent / "configs" / "jianmu.yaml"
    assert load_config(reference, env=False) == JianmuConfig()
    documented = load_yaml(reference).lines
    for key in _flatten(JianmuConfig().model_dump(by_alias=True)):
        assert tuple(key.split(".")) in documented, f"{key} is not documented in configs/jianmu.yaml"


@pytest.mark.parametrize(
    ("field", "section", "key", "value"),
    [
        ("answer_check", "answers:\n  check:\n", "min_chars", 25),
        ("tool_selection", "tools:\n  selection:\n", "threshold", 3),
        ("context", "context:\n", "reserve_tokens", 300),
    ],
)
def test_true_shorthands_keep_the_configured_values(
    tmp_path: Path, field: str, section: str, key: str, value: int
) -> None:
    """`answer_check: true` (like `context: true`) switches the configured section on; it does not
    reset the section's other values to the class defaults."""
    indent = "    " if section.count("\n") == 2 else "  "
    (tmp_path / "jianmu.yaml").write_text(f"{section}{indent}enabled: false\n{indent}{key}: {value}\n")
    get_config(reload=True)
    switched_on = getattr(ReActConfig(**{field: True}), field)
    assert switched_on.enabled is True and getattr(switched_on, key) == value
    assert getattr(ReActConfig(**{field: False}), field).enabled is False
    assert getattr(ReActConfig(), field).enabled is False  # the configured default stays off
