"""The fast paths are fenced: each can be switched to its plain fallback (`JIANMU_FAST_PATHS`),
the setting refuses names that are not fast paths, and an agent runs the same on the fallbacks.

`.ci/run` also runs a part of the suite with every fast path off; this file checks the switch
itself, in subprocesses (the setting is read once, at import).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from jianmu_like._base.speed import ITEMS, parse
from jianmu_like.testing import PATIENCE

PROBE = """
import asyncio, json
from jianmu_like import Agent, create_react_node, human
from jianmu_like.bt import _composites as composites, _eager as eager, _node as node
from jianmu_like.models import _construct as construct
from jianmu_like.testing import ScriptedOpenAIServer, call, reply
from jianmu_like.tools.builtin import calculator

async def main():
    with ScriptedOpenAIServer([call("calculator", expression="6*7"), reply("42")]) as srv:
        agent = Agent(create_react_node(model_client=srv.client(), tools=[calculator]))
        result = await agent.run({"messages": [human("6*7?")]})
    print(json.dumps({
        "answer": result.final_answer,
        "eager": eager.start_eager.__name__,
        "construct": construct.construct.__name__,
        "lean": sorted(f.__qualname__ for f in node.LEAN_TICKS),
    }))

asyncio.run(main())
"""


def _probe(setting: str) -> dict[str, object]:
    env = {**os.environ, "JIANMU_FAST_PATHS": setting}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=PATIENCE
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


def test_the_setting_names_fast_paths_or_is_refused() -> None:
    assert parse("all") == parse("") == frozenset(ITEMS)
    assert parse("none") == parse("0") == frozenset()
    assert parse(" eager , clone ") == {"eager", "clone"}
    with pytest.raises(ValueError, match=r"unknown fast path.*'egaer'.*the items are eager, inline"):
        parse("egaer,clone")


def test_an_agent_runs_the_same_on_the_fast_paths_and_on_their_fallbacks() -> None:
    fast = _probe("all")
    plain = _probe("none")
    assert fast["answer"] == plain["answer"] == "42"
    assert (fast["eager"], fast["construct"]) == ("_start_eager", "_construct")
    assert (plain["eager"], plain["construct"]) == ("_start_plain", "_construct_plain")
    assert "Node.tick" in fast["lean"] and "Sequence.tick" in fast["lean"]  # type: ignore[operator]
    assert "Node.tick" not in plain["lean"] and "Sequence.tick" not in plain["lean"]  # type: ignore[operator]


def test_a_misspelt_setting_stops_the_import_with_the_reason() -> None:
    env = {**os.environ, "JIANMU_FAST_PATHS": "eager,turbo"}
    done = subprocess.run(
        [sys.executable, "-c", "import jianmu_like.bt._eager"],
        env=env,
        capture_output=True,
        text=True,
        timeout=PATIENCE,
    )
    assert done.returncode != 0
    assert "JIANMU_FAST_PATHS: unknown fast path(s) 'turbo'" in done.stderr
