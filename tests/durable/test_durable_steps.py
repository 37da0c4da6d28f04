"""Units of the DBOS integration that need no database: what steps record must survive pickling,
and installing the tool steps reaches every tool-call runner of a tree, once."""

from __future__ import annotations

import pickle

from jianmu_like import ReActConfig, create_react_node, tool
from jianmu_like.durable.steps import DurableToolRunner, install_tool_steps
from jianmu_like.models.errors import ModelCallFailed, ModelError
from jianmu_like.testing import scripted_client


def test_a_failed_model_call_survives_the_step_record() -> None:
    failed = ModelCallFailed("gave up", attempts=[ModelError("busy", status_code=503, retryable=True)])
    again = pickle.loads(pickle.dumps(failed))
    assert type(again) is ModelCallFailed
    assert str(again) == str(failed)
    assert [(a.message, a.status_code, a.retryable) for a in again.attempts] == [("busy", 503, True)]


def test_tool_steps_wrap_each_runner_once_keeping_its_own() -> None:
    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    async def sandbox(t: object, arguments: dict[str, object]) -> str:
        return "sandboxed"

    root = create_react_node(
        "A", model_client=scripted_client(["hi"]), tools=[ping], tool_runner=sandbox, config=ReActConfig()
    )
    assert install_tool_steps(root) == 1
    assert install_tool_steps(root) == 0
    runners = [n.calls.tool_runner for n in root.iterate() if hasattr(n, "calls")]
    assert len(runners) == 1 and isinstance(runners[0], DurableToolRunner)
    assert runners[0].inner is sandbox
