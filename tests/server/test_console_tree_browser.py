"""The console's drawing of the tree in headless Chromium: a graph laid out by the vendored dagre
(no CDN), a shape per kind of node, statuses coloured live, the latest tick's path in bold,
subtrees folded and unfolded, and a 200-node tree drawn without one node over another.

Screenshots go to the test's temporary folder, and to `docs/images/console/` when
`JIANMU_DOC_SHOTS=1` (how the docs' pictures are refreshed).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import httpx
import py_trees
import pytest

from jianmu_like import Agent, ReActState
from jianmu_like.bt import LoopUntilSuccess, Sequence, StateCondition
from jianmu_like.server import create_app
from tests.server.browser_page import ask, expect
from tests.server.console_agent import console_app
from tests.server.sse_live import live_server

DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images" / "console"


def shot(page: Any, tmp_path: Path, name: str) -> None:
    """A screenshot of the page, kept for the docs when JIANMU_DOC_SHOTS=1."""
    target = tmp_path / name
    page.screenshot(path=str(target), full_page=True)
    if os.environ.get("JIANMU_DOC_SHOTS") == "1":
        DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(target, DOCS_IMAGES / name)


def fill_of(page: Any, node_id: str) -> str:
    shape = page.locator(f'#tree .node[data-id="{node_id}"] .shape')
    return str(shape.evaluate("s => getComputedStyle(s).fill"))


def test_the_tree_drawn_with_shapes_live_colours_the_tick_path_and_folds(page: Any, tmp_path: Path) -> None:
    with live_server(console_app()) as url:
        # The layout library is served from the package, not from a CDN, with its licence.
        assert httpx.get(url + "/vendor/dagre.min.js").text.startswith('"use strict";var dagre=')
        assert "Permission is hereby granted" in httpx.get(url + "/vendor/dagre.LICENSE.txt").text
        page.goto(url + "/")
        tree = page.locator("#tree svg.tree-drawing")
        expect(tree).to_be_visible()
        # A shape per kind: the loop is a decorator (hexagon), its body a sequence (→), the
        # model and tool nodes actions (boxes), the done check a condition (ellipse).
        expect(page.locator('#tree .node[data-id="0"]')).to_have_attribute("data-kind", "decorator")
        expect(page.locator('#tree .node[data-id="0"] polygon.shape')).to_have_count(1)
        expect(page.locator('#tree .node[data-id="0.0"] .glyph')).to_have_text("→")
        expect(page.locator('#tree .node[data-id="0.0.0"] rect.shape')).to_have_count(1)
        expect(page.locator('#tree .node[data-id="0.0.2"] ellipse.shape')).to_have_count(1)
        expect(page.locator('#tree .node[data-id="0.0.1"] .name')).to_have_text("ReActAgent.Tools")
        # Top-down: every child is drawn below its parent.
        top = {
            node_id: page.locator(f'#tree .node[data-id="{node_id}"]').bounding_box()["y"]
            for node_id in ("0", "0.0", "0.0.1")
        }
        assert top["0"] < top["0.0"] < top["0.0.1"], top
        # Children left to right in their order (what a sequence means), the root in view.
        left = [page.locator(f'#tree .node[data-id="0.0.{i}"]').bounding_box()["x"] for i in range(4)]
        assert left == sorted(left), left
        expect(page.locator('#tree .node[data-id="0"]')).to_be_in_viewport()
        grey = fill_of(page, "0.0.1")

        # A run waiting for approval: the tool node runs, coloured, on the drawn path.
        ask(page, "delete notes.txt")
        expect(page.locator("#run-status")).to_have_attribute("data-status", "suspended")
        tool = page.locator('#tree .node[data-id="0.0.1"]')
        expect(tool).to_have_attribute("data-status", "RUNNING")
        expect(tool).to_have_attribute("data-path", "")
        expect(page.locator('#tree .edge.on-path[data-to="0.0.1"]')).to_have_count(1)
        expect(page.locator('#tree .edge.on-path[data-to="0.0"]')).to_have_count(1)
        expect(page.locator('#tree .edge.on-path[data-to="0.0.3"]')).to_have_count(0)
        running = fill_of(page, "0.0.1")
        assert running != grey
        shot(page, tmp_path, "tree-running.png")

        # Folding the loop's body hides its children and shows that one of them runs.
        body = page.locator('#tree .node[data-id="0.0"]')
        children = page.locator('#tree .node[data-id^="0.0."]')
        shown = children.count()
        assert shown >= 4
        body.locator(".toggle").click()
        expect(children).to_have_count(0)
        expect(body.locator(".toggle text")).to_have_text(f"+{shown}")
        expect(body).to_have_attribute("data-inner", "RUNNING")
        body.locator(".toggle").click()
        expect(children).to_have_count(shown)
        expect(page.locator('#tree .node[data-id="0.0.1"]')).to_have_attribute("data-status", "RUNNING")

        # Approving: the run ends, every node of its path green, the path that of the last tick.
        page.locator("#approvals .approval button.approve").click()
        expect(page.locator("#run-status")).to_have_attribute("data-status", "success")
        expect(page.locator('#tree .node[data-id="0"]')).to_have_attribute("data-status", "SUCCESS")
        assert fill_of(page, "0") not in (grey, running)
        expect(page.locator('#tree .node[data-status="RUNNING"]')).to_have_count(0)
        shot(page, tmp_path, "tree-success.png")


def big_tree(count: int) -> py_trees.behaviour.Behaviour:
    """A tree of exactly `count` nodes: a loop over a sequence of branches of leaves."""
    branches: list[py_trees.behaviour.Behaviour] = []
    made = 2  # the loop and its sequence
    index = 0
    while made < count:
        leaves: list[py_trees.behaviour.Behaviour] = []
        made += 1
        while made < count and len(leaves) < 11:
            name = f"Step{index}.{len(leaves)}"
            if len(leaves) % 4 == 3:
                leaves.append(StateCondition(f"Check{index}.{len(leaves)}", lambda state: True))
            else:
                leaves.append(py_trees.behaviours.Success(name))
            made += 1
        kind = py_trees.composites.Selector if index % 2 else Sequence
        branches.append(kind(f"Branch{index}", memory=True, children=leaves))
        index += 1
    return LoopUntilSuccess("Big", Sequence("Body", memory=True, children=branches), max_iterations=3)


@pytest.fixture
def big_app() -> Any:
    return create_app(lambda: Agent(big_tree(200), ReActState, log_events=False))


def test_a_200_node_tree_is_readable(page: Any, big_app: Any, tmp_path: Path) -> None:
    with live_server(big_app) as url:
        page.goto(url + "/")
        nodes = page.locator("#tree .node")
        # Opened as an overview: the deepest subtrees folded, each saying what it hides.
        expect(page.locator('#tree .node[data-id="0.0.0"]')).to_have_attribute("data-folded", "true")
        assert 2 < nodes.count() <= 60
        hidden = page.evaluate(
            """() => [...document.querySelectorAll('#tree .node[data-folded=true] .toggle text')]
                 .reduce((sum, t) => sum + parseInt(t.textContent.slice(1)), 0)"""
        )
        assert nodes.count() + hidden == 200
        shot(page, tmp_path, "tree-200-folded.png")
        # Unfolded: 200 nodes, none over another, names at a readable size at the drawing's scale.
        page.locator('#tree .tree-tools button[data-action="unfold"]').click()
        expect(nodes).to_have_count(200)
        boxes = page.evaluate(
            """() => [...document.querySelectorAll('#tree .node .shape')].map(s => {
                 const r = s.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; })"""
        )
        boxes.sort()
        for i, a in enumerate(boxes):
            for b in boxes[i + 1 :]:
                if b[0] >= a[2]:
                    break  # sorted by left edge: nothing further can overlap `a`
                assert b[1] >= a[3] or a[1] >= b[3], f"nodes overlap: {a} {b}"
        name = page.locator('#tree .node[data-id="0"] .name')
        size = name.evaluate("t => parseFloat(getComputedStyle(t).fontSize)")
        assert size >= 12
        drawing = page.locator("#tree svg.tree-drawing")
        width = page.locator("#tree .tree-canvas").evaluate("c => c.clientWidth")
        assert drawing.evaluate("s => s.getBoundingClientRect().width") > width  # scrolls, not shrunk
        # Fit shrinks the whole tree into the panel; a branch folds back by its toggle.
        page.locator('#tree .tree-tools button[data-action="fit"]').click()
        assert drawing.evaluate("s => s.getBoundingClientRect().width") <= width
        page.locator('#tree .tree-tools button[data-action="actual"]').click()
        page.locator('#tree .node[data-id="0.0.1"] .toggle').click()
        expect(page.locator('#tree .node[data-id="0.0.1"]')).to_have_attribute("data-folded", "true")
        expect(page.locator('#tree .node[data-id^="0.0.1."]')).to_have_count(0)

        page.locator('#tree .tree-tools button[data-action="widen"]').click()
        page.locator('#tree .tree-tools button[data-action="fit"]').click()
        expect(page.locator("body.wide-tree")).to_have_count(1)


@pytest.mark.console_errors("status of 422")
def test_breakpoints_in_the_console_pause_edit_step_and_continue(page: Any, tmp_path: Path) -> None:
    with live_server(console_app()) as url:
        page.goto(url + "/")
        tools = page.locator('#tree .node[data-id="0.0.1"]')
        tools.locator(".shape").click()  # a click on a node sets a breakpoint there
        expect(tools).to_have_attribute("data-breakpoint", "")
        expect(page.locator('#breakpoint-list li[data-node="0.0.1"]')).to_contain_text("ReActAgent.Tools")
        page.fill("#break-tool", "explode")  # and a tool's name, one before its calls
        page.click("#break-tool-form button")
        expect(page.locator('#breakpoint-list li[data-tool="explode"]')).to_have_count(1)
        listed = httpx.get(url + "/api/breakpoints").json()["breakpoints"]
        assert listed == [{"node": "0.0.1"}, {"tool": "explode"}]
        page.locator('#breakpoint-list li[data-tool="explode"] button').click()
        expect(page.locator('#breakpoint-list li[data-tool="explode"]')).to_have_count(0)

        run = ask(page, "add 41")
        pause = page.locator("#approvals .approval.breakpoint")
        expect(pause.locator(".paused-at")).to_contain_text("Paused before ReActAgent.Tools (0.0.1")
        expect(tools).to_have_attribute("data-paused", "")
        expect(page.locator("#run-status")).to_have_attribute("data-status", "suspended")
        expect(page.locator("#run-status")).to_have_text("paused at a breakpoint")
        pause.locator("summary").click()
        expect(pause.locator("pre.state")).to_contain_text('"a": 41')
        expect(run.locator('.tool-card[data-tool="add"]')).to_have_count(0)  # the tool waits
        shot(page, tmp_path, "breakpoint-paused.png")

        # A change the state schema refuses: an error, and the pause still waits.
        pause.locator("textarea.state-edit").fill('{"rounds": "many"}')
        pause.locator("button.step").click()
        expect(page.locator("#error")).to_contain_text("rounds")
        expect(pause).to_be_visible()

        # Edit the call, step: the tool runs with it and the run pauses at the next node.
        call = httpx.get(url + "/api/runs").json()["runs"][-1]
        state = httpx.get(f"{url}/api/runs/{call['run_id']}/state").json()["state"]
        action = {**state["actions"][0], "arguments": {"a": 99, "b": 1}}
        page.locator('#breakpoint-list li[data-node="0.0.1"] button').click()  # no more pauses there
        expect(tools).not_to_have_attribute("data-breakpoint", "")
        pause.locator("textarea.state-edit").fill(json.dumps({"actions": [action]}))
        pause.locator("button.step").click()
        expect(run.locator('.tool-card[data-tool="add"] .observation')).to_have_text("100")
        expect(pause.locator(".paused-at")).to_contain_text("Paused before ReActAgent.Done (0.0.2")
        expect(page.locator('#tree .node[data-id="0.0.2"]')).to_have_attribute("data-paused", "")
        pause.locator("button.continue").click()
        expect(run.locator(".answer")).to_have_text("result 100")
        expect(page.locator("#run-status")).to_have_attribute("data-status", "success")
        expect(page.locator("#tree .node[data-paused]")).to_have_count(0)


def test_the_timeline_scrubs_a_runs_steps(page: Any, tmp_path: Path) -> None:
    with live_server(console_app()) as url:
        page.goto(url + "/")
        expect(page.locator("#timeline")).to_be_hidden()
        run = ask(page, "add 41")
        expect(run.locator(".answer")).to_have_text("result 42")
        expect(page.locator("#run-status")).to_have_attribute("data-status", "success")
        expect(page.locator("#timeline-label")).to_contain_text("live")
        steps = int(page.locator("#timeline-range").get_attribute("max") or 0) + 1
        assert steps >= 3

        # The first step: the tree before it finished anything.
        page.locator("#timeline-range").fill("0")
        expect(page.locator("#timeline-label")).to_have_text(f"step 1 of {steps}")
        expect(page.locator('#tree .node[data-status="SUCCESS"]')).to_have_count(0)

        # Stepping on reaches the step where the tool node works, with the call it made.
        tool_step = None
        for index in range(steps):
            page.locator("#timeline-range").fill(str(index))
            if page.locator('#tree .node[data-id="0.0.1"]').get_attribute("data-status") == "RUNNING":
                tool_step = index
                break
        assert tool_step is not None
        detail = page.locator("#timeline-detail")
        expect(detail.locator('li.change[data-id="0.0.1"]')).to_have_attribute("data-status", "RUNNING")
        page.locator("#timeline-next").click()
        expect(page.locator("#timeline-label")).to_have_text(f"step {tool_step + 2} of {steps}")
        calls = [page.locator("#timeline-range").fill(str(i)) or detail.inner_text() for i in range(steps)]
        assert 'iteration 1: tool add called with {"a":41,"b":1}' in calls[tool_step], calls
        assert "iteration 1: tool add → 42" in calls[tool_step], calls
        assert "iteration 1: model replied" in calls[tool_step], calls
        assert "tool add" not in calls[-1]  # the last step: the second iteration, an answer

        # Each step shows the state's changes as a diff: what a key was, what it became.
        diffs = []
        for index in range(steps):
            page.locator("#timeline-range").fill(str(index))
            expect(page.locator("#timeline-label")).to_have_text(f"step {index + 1} of {steps}")
            diffs.append(
                {
                    item.get_attribute("data-key"): item.inner_text()
                    for item in detail.locator("li.state-change").all()
                }
            )
        planned = [i for i, diff in enumerate(diffs) if '"a":41' in diff.get("actions", "")]
        assert planned and planned[0] <= tool_step, diffs  # the model's reply planned the call
        answered = [i for i, diff in enumerate(diffs) if '"result 42"' in diff.get("final_answer", "")]
        assert answered and answered[0] > tool_step, diffs
        answer = detail.locator('li.state-change[data-key="final_answer"]')
        page.locator("#timeline-range").fill(str(answered[0]))
        expect(answer.locator("del")).to_have_text("null")
        expect(answer.locator("ins")).to_have_text('"result 42"')
        assert "messages" not in {key for diff in diffs for key in diff}  # the calls show them

        # A model step's request, read when opened: what the second call was sent holds the
        # tool's result, and the tools the model was offered.
        page.locator("#timeline-range").fill(str(answered[0]))
        request = detail.locator("li.request details")
        expect(request.locator("summary")).to_have_text("iteration 2: the model's request")
        request.locator("summary").click()
        body = request.locator("pre.request-body")
        expect(body).to_contain_text('"role": "tool"')
        expect(body).to_contain_text('"content": "42"')
        expect(body).to_contain_text('"name": "add"')
        page.locator("#timeline-range").fill(str(tool_step))
        request.locator("summary").click()
        expect(body).to_contain_text('"content": "add 41"')
        expect(body).not_to_contain_text('"role": "tool"')
        shot(page, tmp_path, "timeline.png")

        # Live again: the run's last statuses.
        page.locator("#timeline-live").click()
        expect(page.locator("#timeline-label")).to_contain_text("live")
        expect(page.locator('#tree .node[data-id="0"]')).to_have_attribute("data-status", "SUCCESS")
