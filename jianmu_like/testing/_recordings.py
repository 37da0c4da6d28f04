"""Recordings as tests: check an agent against yesterday's conversations, without a model.

```python
import pytest
from jianmu_like.testing import recordings, replay_recording

@pytest.mark.parametrize("recording", recordings("tests/recordings"), ids=str)
def test_the_agent_still_answers_as_recorded(recording):
    replay_recording(recording, agent=build_agent)   # AssertionError at the first difference
```

Each recording is replayed (`jianmu_like.replay`: no model call, no tool side effect); a
difference fails the test with the replay's report (the tick, the node, the recorded and the new
request or event). The replay engine sits above this package (it runs agents), so it is imported
when a helper is called, never when `jianmu_like.testing` is.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._run.result import AgentResult


def recordings(folder: str | Path, pattern: str = "*.jsonl") -> list[Path]:
    """The recordings in `folder` (sorted), for `pytest.mark.parametrize`; an error when there
    are none (a suite that silently checks nothing is no check)."""
    found = sorted(Path(folder).glob(pattern))
    if not found:
        raise FileNotFoundError(f"no recordings matching {pattern!r} in {str(folder)!r}")
    return found


async def areplay_recording(recording: str | Path, *, agent: Any = None) -> AgentResult:
    """Replay `recording` on `agent` (an Agent, a function building one, an agent file, a
    `module:function` entry; default: the one it names); its result, or an AssertionError
    carrying the divergence (`.divergence`) at the first difference."""
    from ..replay import ReplayDivergence, areplay

    try:
        return await areplay(recording, agent=agent)
    except ReplayDivergence as exc:
        error = AssertionError(f"{recording}: {exc}")
        error.divergence = exc.divergence  # type: ignore[attr-defined]
        raise error from None


def replay_recording(recording: str | Path, *, agent: Any = None) -> AgentResult:
    """`areplay_recording` for synchronous tests."""
    import asyncio

    result: AgentResult = asyncio.run(areplay_recording(recording, agent=agent))
    return result
