"""AgentLLMNode and ToolExecutor on their own, with the in-process scripted model."""

from __future__ import annotations

import ast
import asyncio
import gc
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import py_trees
import pytest
from py_trees.common import Status

import jianmu_like.bt
import jianmu_like.nodes
from jianmu_like import (
    Agent,
    AgentTemplate,
    ReActConfig,
    ReActState,
    ToolCall,
    ToolSet,
    create_react_node,
    human,
    tool,
)
from jianmu_like._base.config import ResilienceConfig
from jianmu_like._base.speed import fast
from jianmu_like.bt import ReactiveRunner
from jianmu_like.guard import Decision, GuardDecision, GuardEnforcer
from jianmu_like.nodes import AgentLLMNode, ToolExecutor
from jianmu_like.state import StateManager
from jianmu_like.testing import await_within, call, error_reply, reply, scripted_client
from jianmu_like.testing import calls as calls_
from jianmu_like.tools import Tool
from jianmu_like.tools.builtin import calculator


async def tick_until_done(node: py_trees.behaviour.Behaviour, sm: StateManager) -> Status:
    outcome = await ReactiveRunner(node, sm).run()
    return Status.SUCCESS if outcome.status == "success" else Status.FAILURE


async def test_llm_node_writes_the_react_contract_for_tool_calls() -> None:
    client = scripted_client([call("calculator", expression="1+2")])
    node = AgentLLMNode("llm", client, ToolSet([calculator]))
    sm = StateManager(ReActState, {"messages": [human("1+2?")]})
    assert await tick_until_done(node, sm) == Status.SUCCESS
    state: Any = sm.state
    assert state.done is False and state.final_answer is None
    assert [a.name for a in state.actions] == ["calculator"]
    assert state.actions[0].arguments == {"expression": "1+2"}
    assert state.rounds == 1 and state.usage.total_tokens == 15
    assert state.messages[-1].role == "assistant" and state.messages[-1].tool_calls == state.actions


async def test_llm_node_final_answer_and_prompt() -> None:
    client = scripted_client([reply("Paris.")])
    node = AgentLLMNode(
        "llm", client, ToolSet([calculator]), config=ReActConfig(system_prompt="You are a geographer.")
    )
    sm = StateManager(ReActState, {"messages": [human("Capital of France?")]})
    await tick_until_done(node, sm)
    state: Any = sm.state
    assert state.done is True and state.final_answer == "Paris." and state.actions == []
    request = client.provider.requests[0]  # type: ignore[attr-defined]
    system_text = request.messages[0].content
    assert request.messages[0].role == "system"
    assert system_text.startswith("You are a geographer.") and "calculator" in system_text
    assert request.tools[0]["function"]["name"] == "calculator"


async def test_llm_node_model_error_is_recorded_failure() -> None:
    client = scripted_client([error_reply(401, "bad key")])
    node = AgentLLMNode("llm", client, ToolSet([calculator]))
    sm = StateManager(ReActState, {"messages": [human("hi")]})
    assert await tick_until_done(node, sm) == Status.FAILURE
    error = sm.get("error")
    assert "model call failed" in error and "401" in error and "bad key" in error
    assert sm.get("rounds") == 0 and len(sm.get("messages")) == 1  # nothing half-written


async def test_react_config_resilience_overrides_the_clients_policy() -> None:
    client = scripted_client(
        [error_reply(503), error_reply(503), reply("third time lucky")],
        resilience=ResilienceConfig(max_retries=0),
    )
    root = create_react_node(
        model_client=client, config=ReActConfig(resilience=ResilienceConfig(max_retries=2, backoff_initial=0))
    )
    result = await Agent(root).run({"messages": [human("hi")]})
    assert result.status == "success" and result.final_answer == "third time lucky"
    assert client.resilience.max_retries == 0  # the shared client itself is unchanged


def executor_with(tools: list[Any], **kwargs: Any) -> ToolExecutor:
    return ToolExecutor("tools", ToolSet(tools), **kwargs)


async def test_executor_without_actions_succeeds_synchronously() -> None:
    node = executor_with([calculator])
    sm = StateManager(ReActState)
    outcome = await ReactiveRunner(node, sm).run()
    assert outcome.status == "success" and outcome.ticks == 1
    assert sm.wakeup.in_flight == 0


async def test_executor_effects_and_order() -> None:
    @tool(effect_tags={"write"})
    async def save(text: str) -> str:
        """Save text."""
        return "saved"

    @tool(effect_tags={"read", "network"})
    async def fetch(url: str) -> str:
        """Fetch a URL."""
        await asyncio.sleep(0.01)
        return f"<{url}>"

    sm = StateManager(ReActState)
    actions = [
        ToolCall(id="1", name="fetch", arguments={"url": "u"}),
        ToolCall(id="2", name="save", arguments={"text": "t"}),
    ]
    sm.update({"actions": actions})
    assert await tick_until_done(executor_with([save, fetch]), sm) == Status.SUCCESS
    msgs = sm.get("messages")
    assert [(m.tool_call_id, m.name, m.content) for m in msgs] == [
        ("1", "fetch", "<u>"),
        ("2", "save", "saved"),
    ]
    assert sm.get("tool_effects") == ["network", "read", "write"]


async def test_auto_mode_is_serial_when_a_tool_is_not_parallel_safe() -> None:
    running = 0
    peak = 0

    @tool(parallel_safe=False)
    async def exclusive(n: int) -> int:
        """Must not overlap."""
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01)
        running -= 1
        return n

    sm = StateManager(ReActState)
    sm.update({"actions": [ToolCall(id=str(i), name="exclusive", arguments={"n": i}) for i in range(3)]})
    await tick_until_done(executor_with([exclusive]), sm)
    assert peak == 1
    assert [m.content for m in sm.get("messages")] == ["0", "1", "2"]


async def test_guard_deny_becomes_observation_and_tool_does_not_run() -> None:
    ran: list[str] = []

    @tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return "deleted"

    def no_deletes(call: ToolCall, _tool: Any, _ctx: Any) -> GuardDecision | None:
        if call.name.startswith("delete"):
            return GuardDecision.deny("deleting files is not allowed")
        return None

    sm = StateManager(ReActState)
    sm.update({"actions": [ToolCall(id="1", name="delete_file", arguments={"path": "/etc/passwd"})]})
    await tick_until_done(executor_with([delete_file], constraints=GuardEnforcer([no_deletes])), sm)
    assert ran == []
    assert sm.get("messages")[0].content == "Error: denied by policy: deleting files is not allowed"
    assert sm.get("tool_effects") == []


def test_guard_combination_first_deny_wins_then_pending() -> None:
    call_ = ToolCall(id="1", name="x")
    allow = GuardEnforcer([lambda c, t, x: None, lambda c, t, x: True])
    assert allow.check(call_, None, None).decision is Decision.ALLOW  # type: ignore[arg-type]
    mixed = GuardEnforcer(
        [
            lambda c, t, x: GuardDecision.pending("ask"),
            lambda c, t, x: False,
            lambda c, t, x: GuardDecision.deny("second deny"),
        ]
    )
    verdict = mixed.check(call_, None, None)  # type: ignore[arg-type]
    assert verdict.decision is Decision.DENY and "refused by policy" in verdict.reason
    pending = GuardEnforcer([lambda c, t, x: None, lambda c, t, x: Decision.PENDING])
    assert pending.check(call_, None, None).decision is Decision.PENDING  # type: ignore[arg-type]


async def test_tool_runner_override() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    async def sandbox(t: Any, arguments: dict[str, Any]) -> str:
        seen.append((t.name, arguments))
        return "ran in sandbox"

    sm = StateManager(ReActState)
    sm.update({"actions": [ToolCall(id="1", name="calculator", arguments={"expression": "2"})]})
    await tick_until_done(executor_with([calculator], tool_runner=sandbox), sm)
    assert seen == [("calculator", {"expression": "2"})]
    assert sm.get("messages")[0].content == "ran in sandbox"


async def test_halting_the_executor_cancels_running_tools() -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    @tool
    async def forever() -> str:
        """Never returns."""
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    @tool
    async def quick() -> str:
        """Returns at once."""
        return "quick result"

    sm = StateManager(ReActState)
    sm.update({"actions": [ToolCall(id="1", name="quick"), ToolCall(id="2", name="forever")]})
    node = executor_with([forever, quick], execution_mode="serial")
    runner = ReactiveRunner(node, sm)
    run = asyncio.create_task(runner.run())
    await await_within(started.wait(), "the second tool to start")
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    await await_within(cancelled.wait(), "the running tool to be cancelled")
    # Every call is still answered, so the history stays valid for the next model request.
    msgs = sm.get("messages")
    assert [(m.tool_call_id, m.content) for m in msgs] == [
        ("1", "quick result"),
        ("2", "Error: interrupted: the run was stopped before this call finished"),
    ]


async def test_fresh_run_resets_rounds_so_tool_choice_is_sent_again() -> None:
    client = scripted_client(
        [call("calculator", expression="1"), reply("1"), call("calculator", expression="2"), reply("2")]
    )
    root = create_react_node(
        model_client=client, tools=[calculator], config=ReActConfig(tool_choice="required")
    )
    agent = Agent(root)
    await agent.run({"messages": [human("one")]})
    await agent.run({"messages": [human("two")]})
    choices = [r.tool_choice for r in client.provider.requests]  # type: ignore[attr-defined]
    assert choices == ["required", None, "required", None]


async def test_policies_in_an_agent_approval_by_effect_and_rate_limit() -> None:
    from jianmu_like.guard import RateLimit, RequireApproval, policies_from_config

    ran: list[str] = []

    @tool(effect_tags={"destructive"})
    def wipe(target: str) -> str:
        """Wipe a target."""
        ran.append(f"wipe {target}")
        return "wiped"

    @tool
    def search(q: str) -> str:
        """Search."""
        ran.append(f"search {q}")
        return f"results for {q}"

    limit = RateLimit("search", calls=1, per_seconds=3600)
    guard = GuardEnforcer([RequireApproval(effect_tags={"destructive"}), limit])
    script = [
        calls_(call("wipe", target="db"), call("search", q="a")),
        call("search", q="b"),
        reply("done"),
    ]
    agent = Agent(
        create_react_node(model_client=scripted_client(script), tools=[wipe, search], constraints=guard)
    )
    first = await agent.run({"messages": [human("go")]})
    assert first.status == "suspended" and [a.tool for a in first.pending_approvals] == ["wipe"]
    assert first.pending_approvals[0].reason == "tool 'wipe' has effect 'destructive'"
    assert ran == ["search a"]
    done = await agent.resume({first.pending_approvals[0].id: "approve"})
    assert done.status == "success"
    assert ran == ["search a", "wipe db"]  # the approved call ran once; the search not again
    last_obs = [m.content for m in done.state.messages if m.role == "tool"][-1]
    assert last_obs.startswith("Error: denied by policy: rate limit: at most 1 call(s) of 'search'")
    # The same rules from configuration data (what a YAML `guard:` section holds).
    built = policies_from_config({"require_approval": {"effect_tags": ["destructive"]}, "max_tool_calls": 3})
    assert [type(p).__name__ for p in built] == ["MaxToolCalls", "RequireApproval"]


def test_a_repeated_call_is_recognised_whatever_the_key_order() -> None:
    from jianmu_like.nodes._tool_executor import call_signature

    first = call_signature(ToolCall(id="1", name="f", arguments={"b": 1, "a": [2]}))
    again = call_signature(ToolCall(id="2", name="f", arguments={"a": [2], "b": 1}))
    other = call_signature(ToolCall(id="3", name="f", arguments={"a": [3], "b": 1}))
    assert first == again and first != other


INLINE_ATTRIBUTES = 30
"""CPython 3.11 keeps an instance's attributes inline (a read is a fixed offset) only while its
class has fewer than this many; from this many on every instance holds a real dict and each read
of an attribute is a dict lookup. The ReAct loop's nodes read theirs on every iteration."""


async def test_the_react_loops_nodes_keep_their_attributes_inline() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    client = scripted_client([call("add", a=1, b=2), reply("3")])
    root = create_react_node(model_client=client, tools=[add], config=ReActConfig(max_tool_failures=2))
    result = await Agent(root, log_events=False).run({"messages": [human("1+2?")]})
    assert result.final_answer == "3"
    counts = {type(node).__name__: len(vars(node)) for node in root.iterate()}
    hot = {name: counts[name] for name in ("AgentLLMNode", "ToolExecutor", "InterruptGate", "OutputNode")}
    assert all(count < INLINE_ATTRIBUTES for count in hot.values()), hot


def attributes_inline(obj: object, marker: object) -> bool:
    """Whether `obj`'s attributes are still CPython's inline values (`marker`: one of them).

    Reading an instance's `__dict__` (`vars(obj)`, `obj.__dict__.get(...)`) turns its inline
    values into a real dict for good: every later `self.x` is then a dict lookup. The garbage
    collector's view tells them apart without reading `__dict__`: an instance with inline
    values refers to its attribute values directly, one with a dict refers to the dict."""
    return any(referent is marker for referent in gc.get_referents(obj))


ROOT = Path(__file__).parents[2]


def test_runs_keep_the_trees_attributes_inline() -> None:
    # A run that read a node's __dict__ (the breakpoints' unwatch, the root's caches) cost ~8 %
    # more instructions per iteration, every node read through a dict from then on; a template's
    # clones (written through the new node's __dict__, reset reading it) put every conversation's
    # nodes there. Checked in a fresh interpreter: CPython 3.11 lets a class's instances take new
    # attribute names inline only while few instances exist (the room shrinks with each one
    # made), so in a process where other tests built hundreds of nodes it would depend on them.
    code = (
        "import asyncio, json; from tests.nodes.test_react_nodes import inline_checks as c; "
        "print(json.dumps(asyncio.run(c())))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).parents[2],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    assert found == {"agent": [], "seen": True, "pooled": [] if fast("clone") else None}


async def inline_checks() -> dict[str, Any]:
    """The nodes left off inline values by an agent's runs (`agent`), whether the check sees a
    `vars()` (`seen`), and those of a template's clones after runs (`pooled`; None on the plain
    clone, `copy.copy`, which writes the copy's `__dict__`)."""
    client = scripted_client([call("add", a=1, b=2), reply("3"), call("add", a=2, b=2), reply("4")])
    root = create_react_node(model_client=client, tools=[add_tool()])
    agent = Agent(root, log_events=False)
    for question, answer in (("1+2?", "3"), ("2+2?", "4")):  # the second run finds the first's caches
        result = await agent.run({"messages": [human(question)]})
        assert result.final_answer == answer
    found: dict[str, Any] = {"agent": off_inline([root])}
    vars(root)
    found["seen"] = not attributes_inline(root, root.name)
    if not fast("clone"):
        return {**found, "pooled": None}
    script = [call("add", a=1, b=2), reply("3")] * 3
    prototype = create_react_node(model_client=scripted_client(script), tools=[add_tool()])
    template = AgentTemplate.from_prototype(prototype, log_events=False)
    for grow in (0, 3, 3):  # the prototype runs first, then the pool grows by clones
        template.reserve(grow)
        result = await template.conversation().run({"messages": [human("1+2?")]})
        assert result.final_answer == "3"
    trees = [template.borrow() for _ in range(3)]
    assert len({id(tree) for tree in trees}) == 3 and prototype in trees
    # The prototype is the clones' source: its own __dict__ was read.
    found["pooled"] = off_inline([tree for tree in trees if tree is not prototype])
    return found


def off_inline(trees: list[py_trees.behaviour.Behaviour]) -> list[str]:
    return [
        type(node).__name__
        for tree in trees
        for node in tree.iterate()
        if not attributes_inline(node, node.name)
    ]


REACT_LOOP_NODES = ("_llm", "_tool_executor", "_interrupts")
TICK_PATH_MODULES = (
    *sorted(Path(jianmu_like.bt.__file__).parent.glob("*.py")),
    *(
        Path(jianmu_like.nodes.__file__).parent / f"{name}.py"
        for name in ("_llm", "_tool_executor", "_interrupts")
    ),
)


def test_the_tick_path_reads_no_status_through_its_enum() -> None:
    # On CPython 3.11 `Status.RUNNING` is never specialised (the enum's metaclass defines
    # `__getattr__`): read on every tick it cost ~10 % of an iteration. The tick path reads
    # bt._node's module globals (RUNNING, SUCCESS, FAILURE, INVALID) instead.
    found = []
    for path in TICK_PATH_MODULES:
        tree = ast.parse(path.read_text())
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for statement in function.body:
                for node in ast.walk(statement):
                    if (
                        isinstance(node, ast.Attribute)
                        and isinstance(node.value, ast.Name)
                        and node.value.id == "Status"
                        and node.attr.isupper()
                    ):
                        found.append(f"{path.name}:{node.lineno} Status.{node.attr}")
    assert found == []


def add_tool() -> Tool:
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    return add
