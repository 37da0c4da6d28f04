"""Configuration layering (defaults → file → environment) and its error messages."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from jianmu_like import ReActConfig
from jianmu_like.config import ConfigError, get_config, load_config


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
    assert config.limits.max_iterations == 10 and config.limits.max_rounds == 10
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
        ("llm: [unclosed", "malformed YAML"),
        ("llm:\n  temprature: 0.1\n", r"llm\.temprature: Extra inputs are not permitted"),
        ("llm:\n  temperature: hot\n", r"llm\.temperature"),
        ("limits:\n  max_iterations: 0\n", r"limits\.max_iterations"),
        ("- a\n- b\n", "top level must be a mapping"),
    ],
)
def test_errors_name_file_and_key(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "jianmu.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=expected) as info:
        load_config()
    assert "jianmu.yaml" in str(info.value)
