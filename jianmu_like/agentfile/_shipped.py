"""The agent files shipped in the package (`jianmu_like/presets/*.yaml`), found by name.

They are package data, so `jianmu-like run react "..."` works from any folder and from an
installed wheel, not only from a checkout (whose `presets/*.yaml` link to them). A path that
exists always wins over a shipped name: a file of one's own is never shadowed.
"""

from __future__ import annotations

from pathlib import Path

from .._base.names import did_you_mean
from .._base.sources import SourceError

SHIPPED_DIR = Path(__file__).resolve().parent.parent / "presets"
"""Where the shipped agent files lie (package data, see pyproject.toml)."""


class NoSuchAgentFile(SourceError):
    """An agent-file argument that is neither a file nor a shipped preset's name."""


def shipped_presets() -> dict[str, Path]:
    """The shipped agent files by name (`react`, `supervisor`, ...)."""
    return {path.stem: path for path in sorted(SHIPPED_DIR.glob("*.yaml"))}


def agent_file_path(reference: str | Path) -> Path:
    """The agent file `reference` names: an existing path as given; else a shipped preset by
    name (`react` or `react.yaml`). Raises NoSuchAgentFile naming the shipped presets (with a
    did-you-mean) when it is neither."""
    path = Path(reference)
    if path.exists():
        return path
    shipped = shipped_presets()
    name = path.name.removesuffix(".yaml").removesuffix(".yml")
    if path.parent == Path(".") and name in shipped:
        return shipped[name]
    raise NoSuchAgentFile(
        [f"{reference}: no such file{did_you_mean(name, shipped)} (shipped presets: {', '.join(shipped)})"]
    )
