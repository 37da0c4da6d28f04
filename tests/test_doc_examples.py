"""Every Python example of the documentation runs as written, and prints what it says it prints.

The documentation is README.md and every page under docs/. A block that is a whole program runs
in a fresh interpreter, from an empty folder holding a copy of `presets/`, with no model settings
in the environment: `ModelClient.resolve()` then picks the embedded local model (those blocks are
skipped, saying why, where it is not installed), and the scripted ones start their own server.

What a block promises to print is written in its comments: `# prints: TEXT` after a statement is
one line of output, and a comment line `#> TEXT` (alone on its line) is one more line, for output
of several lines or too long to sit beside its statement. A block with such comments must print
exactly those lines, in that order, and nothing else; a block without them is only run.

A block that continues the example before it (top-level `await`, names defined above) cannot run
alone: it says so to the reader on its first line, a comment `# continues ...` (and "it awaits"
when it does), and is listed in FRAGMENTS by the start of its first line of code, so a new
fragment is a decision, not an accident; one taken out of the docs must leave the list. A block
with top-level `await` or `async for` that is not so marked fails: pasted as written, it would
not run. A fragment runs after a prelude
that defines the names it takes from the text (on a scripted model), inside an async function when
it awaits; the few that cannot run here (a database and a worker, a remote MCP server) name the
test that runs the same code, and promise no output: nothing could check it.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from jianmu_like.models import weights
from jianmu_like.models.local_backends import DEFAULT_BACKEND, backend_problem

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
"""The documentation: the landing page and the site's pages."""

_QUICK_START = """
import asyncio
from jianmu_like import Agent, create_react_node, human, tool
from jianmu_like.testing import ScriptedOpenAIServer
from jianmu_like.tools.builtin import calculator

@tool
async def lookup(city: str) -> str:
    \"\"\"Population of a city.

    Args:
        city: The city's English name.
    \"\"\"
    return {"Paris": "2.1 million"}.get(city, "unknown")

server = ScriptedOpenAIServer(lambda body: "Done.").start()
client = server.client()
agent = Agent(create_react_node(model_client=client, tools=[calculator, lookup]))
"""
"""The names of the quick start, on a scripted model that answers every request with "Done."."""


class Continues(NamedTuple):
    """How a fragment runs: after `prelude` (the names it takes from the text around it), inside
    an async function when it uses top-level `await`."""

    prelude: str
    awaits: bool = True


FRAGMENTS: dict[str, Continues | str] = {
    'async for event in agent.stream({"messages": [human("What is 2**10?")]}):': Continues(_QUICK_START),
    "from jianmu_like import AgentTemplate": Continues(_QUICK_START),
    "import py_trees": Continues(_QUICK_START),
    'both = py_trees.composites.Parallel("Both",': Continues(_QUICK_START + "import py_trees\n"),
    "from jianmu_like.nodes import LLMCallNode, ToolNode": Continues(_QUICK_START + "import py_trees\n"),
    "from jianmu_like import load_agent": Continues(
        _QUICK_START + "import os\nos.environ['OPENAI_BASE_URL'] = server.base_url\n"
    ),
    "from jianmu_like.telemetry.otel_setup import enable_otel": Continues(_QUICK_START, awaits=False),
    "from jianmu_like.durable import DurableClient, DurableWorker": "needs PostgreSQL and a worker process:"
    " tests/durable/test_durable_runs.py runs the same calls",
    "from jianmu_like.tools import MCPToolProvider": "needs a streamable-HTTP MCP server with a token:"
    " tests/mcp runs both transports",
    # Pages merged from other lanes whose fragments have no prelude yet (not run: a gap, not a
    # decision; the behaviour they show is tested in the test named).
    'result = await agent.run({"messages": [human("delete the draft")]}, thread_id="t1")': "no prelude yet:"
    " tests/guard (review with edits)",
    'result = await agent.run({"messages": [human("my open orders?")]}, deps=Deps(db, "u-42"))': "no prelude"
    " yet: tests/integration (run dependencies)",
    'provider = MCPToolProvider(name="forms", command="my-mcp-server", elicitation="ask")': "needs an MCP"
    " server that asks: tests/mcp (elicitation)",
    "agent = Agent(create_react_node(model_client=client, tools=[calculator]))": "no prelude"
    " yet: tests/checkpoint/test_threads.py",
    'for info in agent.history("chat"):': "no prelude yet: tests/checkpoint/test_threads.py",
}
"""The blocks that continue an example, by the start of their first line: how each runs, or why it
cannot run here and which test runs the same code."""


_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
_PRINTS = re.compile(r"#\s*prints:[ ]?(.*)$")
_MORE = re.compile(r"^\s*#>[ ]?(.*)$")


class Block(NamedTuple):
    """One ```python block of a page: where it starts and its code."""

    where: str
    code: str


def blocks(path: Path) -> list[Block]:
    """The page's Python blocks, each named `page:line` (the line of its first line of code)."""
    text = path.read_text(encoding="utf-8")
    name = path.relative_to(ROOT).as_posix()
    return [
        Block(f"{name}:{text.count(chr(10), 0, match.start()) + 2}", match.group(1))
        for match in _BLOCK.finditer(text)
    ]


def promised_output(code: str) -> list[str]:
    """The lines the block says it prints (`# prints:` and `#>` comments), in order."""
    promised: list[str] = []
    for line in code.splitlines():
        if (more := _MORE.match(line)) is not None:
            promised.append(more.group(1).rstrip())
        elif (prints := _PRINTS.search(line)) is not None:
            promised.append(prints.group(1).rstrip())
    return promised


_MARK = re.compile(r"^# continues\b")
"""The first line of a block that cannot run alone, for the reader: `# continues the quick start
(its `agent`); it awaits: run it inside an async function`."""


def marked(code: str) -> bool:
    """Whether the block says, on its first line, that it continues another example."""
    return _MARK.match(code.strip()) is not None


def awaits_at_top_level(code: str) -> bool:
    """Whether the block uses `await`, `async for` or `async with` outside a function: Python
    compiles it only with top-level await allowed (as a notebook or `python -m asyncio` does)."""
    try:
        compile(code, "<doc>", "exec")
    except SyntaxError:
        try:
            compile(code, "<doc>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        except SyntaxError:
            return False
        return True
    return False


def fragment(code: str) -> str | None:
    """The FRAGMENTS entry the block's first line of code (after its mark) starts with, if any."""
    lines = [line for line in code.strip().splitlines() if not _MARK.match(line)]
    first = lines[0] if lines else ""
    return next((start for start in FRAGMENTS if first.startswith(start)), None)


def program(code: str) -> str | None:
    """The block as a program to run: itself, or a fragment after its prelude (inside an async
    function when it awaits); None for a fragment that cannot run here."""
    start = fragment(code)
    if start is None:
        return code
    how = FRAGMENTS[start]
    if isinstance(how, str):
        return None
    body = textwrap.indent(code, "    ")
    run = f"async def fragment():\n{body}\n\nasyncio.run(fragment())\n" if how.awaits else code
    return f"{how.prelude}\ntry:\n{textwrap.indent(run, '    ')}\nfinally:\n    server.stop()\n"


def _local_model_problem() -> str | None:
    problem = backend_problem(DEFAULT_BACKEND, import_it=False)
    if problem is None and weights.local_model_path() is None:
        problem = f"the {weights.DEFAULT} weights are not pulled (jianmu-like models pull)"
    return problem


BLOCKS = [block for path in DOCS for block in blocks(path)]
PROGRAMS = [block for block in BLOCKS if program(block.code) is not None]


def test_the_docs_have_examples_and_every_listed_fragment_is_in_them() -> None:
    assert len(BLOCKS) >= 20
    assert any(block.where.startswith("docs/") for block in BLOCKS), "no examples found under docs/"
    listed = {fragment(block.code) for block in BLOCKS}
    assert listed >= FRAGMENTS.keys(), f"listed fragments no longer in the docs: {FRAGMENTS.keys() - listed}"


def test_an_example_that_cannot_run_alone_says_so_on_its_first_line() -> None:
    unmarked = [
        b.where
        for b in BLOCKS
        if (fragment(b.code) is not None or awaits_at_top_level(b.code)) and not marked(b.code)
    ]
    assert not unmarked, f"mark these as fragments (`# continues ...` first) or make them run: {unmarked}"
    unlisted = [b.where for b in BLOCKS if marked(b.code) and fragment(b.code) is None]
    assert not unlisted, f"these are marked as fragments but FRAGMENTS says not how they run: {unlisted}"
    awaiting = [b.where for b in BLOCKS if awaits_at_top_level(b.code) and "it awaits" not in b.code]
    assert not awaiting, f"these await at the top level without saying so in their mark: {awaiting}"


def test_top_level_await_is_told_apart_from_a_program() -> None:
    assert awaits_at_top_level("async for e in agent.stream({}):\n    print(e)\n")
    assert awaits_at_top_level("result = await agent.run({})\n")
    assert not awaits_at_top_level("import asyncio\nasync def main():\n    await x()\nasyncio.run(main())\n")
    assert not awaits_at_top_level("def broken(:\n")
    assert not marked("async for e in s:\n    pass\n") and marked("# continues above\nx = 1\n")


def test_a_block_that_cannot_run_promises_no_output() -> None:
    promising = [b.where for b in BLOCKS if program(b.code) is None and promised_output(b.code)]
    assert not promising, f"these blocks do not run, so their output cannot be checked: {promising}"


def test_promised_output_is_read_from_both_comment_forms() -> None:
    code = 'print(1)  # prints: 1\nprint("a\\nb")  # prints: a\n#> b\n    #>\nx = 2  # not output\n'
    assert promised_output(code) == ["1", "a", "b", ""]


def _param(block: Block) -> Any:
    """An example on the embedded model (no server configured) is marked `local`, like every test
    of it (`pytest -m local`: .ci/run's second pass, once the `local` extra is installed)."""
    local = "ModelClient.resolve()" in block.code
    return pytest.param(block, id=block.where, marks=[pytest.mark.local] if local else [])


@pytest.mark.parametrize("block", [_param(block) for block in PROGRAMS])
def test_doc_example_runs_and_prints_what_it_says(tmp_path: Path, block: Block) -> None:
    if "ModelClient.resolve()" in block.code and (problem := _local_model_problem()) is not None:
        pytest.skip(f"needs the embedded local model: {problem}")
    shutil.copytree(ROOT / "presets", tmp_path / "presets")
    script = tmp_path / "example.py"
    script.write_text(program(block.code) or "", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "JIANMU"))}
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"{block.where} failed:\n{done.stderr[-3000:]}"
    if promised := promised_output(block.code):
        printed = [line.rstrip() for line in done.stdout.splitlines()]
        assert printed == promised, f"{block.where} printed something else than its comments say"
