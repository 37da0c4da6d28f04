"""`GET /api/runs/{id}/artifacts/{n}` over real HTTP: each artifact with its own type, inline or
as a download, and never as an active page of the server's origin."""

from __future__ import annotations

import httpx

from jianmu_like.testing import PATIENCE
from tests.server.artifact_agent import CSV, HTML, PNG, artifact_app
from tests.server.sse_live import live_server, read_events


def test_a_runs_artifacts_are_served_with_their_type_inert_and_downloadable() -> None:
    with live_server(artifact_app()) as url, httpx.Client(base_url=url, timeout=PATIENCE) as http:
        run_id = http.post("/api/runs", json={"input": "make them"}).json()["run_id"]
        events = read_events(http, run_id)
        names = [d["artifact"]["name"] for _, c, d in events if c == "artifact"]
        assert names == ["chart.html", "dot.png", "cities.csv"]
        base = f"/api/runs/{run_id}/artifacts"

        page = http.get(f"{base}/0")
        assert page.status_code == 200 and page.text == HTML
        assert page.headers["content-type"] == "text/html; charset=utf-8"
        assert page.headers["content-disposition"] == "inline; filename*=UTF-8''chart.html"
        policy = page.headers["content-security-policy"]
        assert policy.startswith("sandbox;") and "script-src" not in policy  # no script runs
        assert page.headers["x-content-type-options"] == "nosniff"

        image = http.get(f"{base}/1")
        assert image.content == PNG and image.headers["content-type"] == "image/png"

        table = http.get(f"{base}/2", params={"download": "1"})
        assert table.text == CSV and table.headers["content-type"] == "text/csv; charset=utf-8"
        assert table.headers["content-disposition"] == "attachment; filename*=UTF-8''cities.csv"

        missing = http.get(f"{base}/3")
        assert missing.status_code == 404
        assert missing.json()["error"] == (
            f"run {run_id!r} has no artifact '3' (artifacts: 0: chart.html, 1: dot.png, 2: cities.csv)"
        )
        assert http.get("/api/runs/nope/artifacts/0").status_code == 404
