"""The console's files and the `node` stream over real HTTP (the browser test drives the page)."""

from __future__ import annotations

import json
import tomllib
from fnmatch import fnmatch
from pathlib import Path

import httpx

from jianmu_like.server._console import CONTENT_SECURITY_POLICY
from jianmu_like.testing import PATIENCE
from tests.server.console_agent import console_app
from tests.server.sse_live import live_server, read_events, sse_events


def test_the_console_is_served_with_a_strict_policy_and_no_secret() -> None:
    with live_server(console_app(token="s3cret-token")) as url, httpx.Client(base_url=url) as http:
        page = http.get("/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert (
            "script-src 'self'" in CONTENT_SECURITY_POLICY and "connect-src 'self'" in CONTENT_SECURITY_POLICY
        )
        assert page.headers["x-content-type-options"] == "nosniff"
        assert '<script src="/console.js"' in page.text and "http" not in page.text.replace("http-equiv", "")
        for path, kind in [("/console.js", "text/javascript"), ("/console.css", "text/css")]:
            asset = http.get(path)
            assert asset.status_code == 200 and asset.headers["content-type"].startswith(kind)
            assert "s3cret-token" not in asset.text and "//cdn" not in asset.text
        assert "s3cret-token" not in page.text
        assert http.get("/api/agent").status_code == 401  # the page is open, the API is not


def test_node_statuses_stream_with_the_ids_of_the_agent_tree() -> None:
    with live_server(console_app()) as url, httpx.Client(base_url=url, timeout=PATIENCE) as http:
        tree = http.get("/api/agent").json()["tree"]
        ids: dict[str, str] = {}

        def collect(node: dict[str, object]) -> None:
            ids[str(node["id"])] = str(node["name"])
            for child in node["children"]:  # type: ignore[attr-defined]
                collect(child)

        collect(tree)
        assert tree["id"] == "0" and [c["id"] for c in tree["children"]] == ["0.0"]
        run_id = http.post("/api/runs", json={"input": "add 41"}).json()["run_id"]
        read_events(http, run_id)  # the run is done
        with http.stream("GET", f"/api/runs/{run_id}/nodes") as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            messages = list(sse_events(response.iter_lines()))
        assert [m[0] for m in messages] == list(range(1, len(messages) + 1))
        assert {m[1] for m in messages} == {"node"}
        changes = [change for _, _, data in messages for change in data["changes"]]
        assert {c["id"] for c in changes} <= set(ids)
        assert all(ids[c["id"]] == c["name"] for c in changes)
        statuses: dict[str, list[str]] = {}
        for change in changes:
            statuses.setdefault(ids[change["id"]], []).append(change["status"])
        # Every node went from INVALID through RUNNING (while it worked) to SUCCESS: the model
        # node twice (a tool call, then the answer), the tool node once.
        assert statuses["ReActAgent"][0] == "INVALID" and statuses["ReActAgent"][-1] == "SUCCESS"
        for name in ("ReActAgent.LLM", "ReActAgent.Tools"):
            assert "RUNNING" in statuses[name] and statuses[name][-1] == "SUCCESS", (name, statuses)
        assert statuses["ReActAgent.LLM"].count("RUNNING") == 2
        assert "FAILURE" in statuses["ReActAgent.Done"]  # not done after the tool call: iterate
        # A late reader after the first message gets only what followed (Last-Event-ID).
        with http.stream("GET", f"/api/runs/{run_id}/nodes", headers={"Last-Event-ID": "1"}) as response:
            later = list(sse_events(response.iter_lines()))
        assert [m[0] for m in later] == [m[0] for m in messages[1:]]


def test_node_messages_carry_the_states_changes_redacted() -> None:
    """The timeline's state diff: the first node message holds the state the run began from,
    each later one the keys that changed (RFC 6902); applied in order they give the run's final
    state (as `GET /api/runs/{id}/state` has it, less the messages), and a secret never leaves."""
    secret = "sk-proj-abcdefghijklmnopqrstuvwx1234"
    with live_server(console_app()) as url, httpx.Client(base_url=url, timeout=PATIENCE) as http:
        run_id = http.post("/api/runs", json={"input": f"boom {secret}"}).json()["run_id"]
        read_events(http, run_id)  # the run is done
        with http.stream("GET", f"/api/runs/{run_id}/nodes") as response:
            messages = list(sse_events(response.iter_lines()))
        final = http.get(f"/api/runs/{run_id}/state").json()["state"]
        sent = http.get(f"/api/runs/{run_id}/requests").json()
    assert secret not in json.dumps([data for _, _, data in messages])
    # What each model call sent (the timeline's request of a model step), redacted too.
    assert secret not in json.dumps(sent) and [r["n"] for r in sent["requests"]] == [1, 2]
    first, second = (r["request"]["messages"] for r in sent["requests"])
    assert first[-1] == {"role": "user", "content": "boom ***"} and second[: len(first)] == first
    assert second[-1]["role"] == "tool" and "explode" in second[-1]["content"]
    patches = [data["state"] for _, _, data in messages if "state" in data]
    assert {op["op"] for op in patches[0]} == {"add"} and len(patches) >= 3
    rebuilt: dict[str, object] = {}
    for patch in patches:
        for op in patch:
            key = op["path"][1:]
            if op["op"] == "remove":
                del rebuilt[key]
            else:
                assert op["op"] == "add" or rebuilt[key] != op["value"]  # only what changed
                rebuilt[key] = op["value"]
    assert {key: rebuilt[key] for key in final if key != "messages"} == {
        key: value for key, value in final.items() if key != "messages"
    }
    assert "messages" not in rebuilt and rebuilt["call_counts"] == {"explode:{'label': '***'}": 1}


def test_every_console_file_is_package_data() -> None:
    """A wheel (`pip install .`) ships the console: pyproject's package-data covers its files."""
    root = Path(__file__).resolve().parents[2]
    patterns = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    static = root / "jianmu_like" / "server" / "static"
    files = sorted(p.relative_to(root / "jianmu_like").as_posix() for p in static.rglob("*") if p.is_file())
    assert files == [
        "server/static/console.css",
        "server/static/console.js",
        "server/static/docs.html",
        "server/static/docs.js",
        "server/static/elicitation.js",
        "server/static/index.html",
        "server/static/treeview.js",
        "server/static/vendor/dagre.LICENSE.txt",
        "server/static/vendor/dagre.min.js",
    ]
    for name in files:
        assert any(fnmatch(name, pattern) for pattern in patterns["jianmu_like"]), name
