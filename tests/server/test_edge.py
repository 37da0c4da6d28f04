"""What reaches the server's routes, over raw sockets against a real uvicorn on 127.0.0.1: forged
`Host` headers (DNS rebinding), foreign origins and bodies no JSON client sends (what a web page
can send without a preflight), bodies over the limit (refused before they are read), JSON nested
200,000 deep and invalid UTF-8; every refusal in the API's JSON error shape."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from jianmu_like._base.config import DEFAULT_MAX_BODY_BYTES, ServerConfig
from jianmu_like.server import create_app
from tests.server.edge_agent import Recording, edge_app, exchange, ran, request
from tests.server.sse_live import live_server

RUN = json.dumps({"input": "note this"}).encode()
JSON = {"Content-Type": "application/json"}


class Served:
    def __init__(self, app: Any, url: str) -> None:
        self.app = app
        self.recording: Recording | None = None
        self.port = int(url.rsplit(":", 1)[1])

    @property
    def runs(self) -> dict[str, Any]:
        return dict(self.app.state.registry.runs)


@pytest.fixture
def served(request: pytest.FixtureRequest) -> Iterator[Served]:
    options = getattr(request, "param", {})
    ran.clear()
    app = edge_app(**options)
    with live_server(app) as url:
        yield Served(app, url)


def refused(reply: Any, status: int, *words: str) -> None:
    assert reply.status == status, (reply.status, reply.body)
    assert reply.headers["content-type"] == "application/json", reply.headers
    message = reply.json()["error"]
    for word in words:
        assert word in message, message


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:{port}", "127.0.0.2:{port}"])
def test_a_foreign_host_is_refused_before_any_route(served: Served, host: str) -> None:
    host = host.format(port=served.port)
    for method, path in [
        ("GET", "/"),
        ("GET", "/console.js"),
        ("GET", "/api/approvals"),
        ("GET", "/api/runs/x/events"),
        ("GET", "/healthz"),
        ("GET", "/no/such/path"),
    ]:
        refused(
            request(served.port, method, path, host=host),
            421,
            "does not answer to the host",
            "--allowed-host",
        )
    created = request(served.port, "POST", "/api/runs", RUN, host=host, headers=JSON)
    refused(created, 421)
    assert served.runs == {} and ran == []


def test_a_request_without_host_is_refused(served: Served) -> None:
    refused(request(served.port, "GET", "/api/approvals", host=None, version="HTTP/1.0"), 421, "Host header")
    # HTTP/1.1 demands a Host: uvicorn's parser refuses it before the app (400), or the app does.
    assert request(served.port, "GET", "/api/approvals", host=None).status in (400, 421)
    two = f"127.0.0.1:{served.port}\r\nHost: attacker.example"
    assert request(served.port, "GET", "/api/approvals", host=two, version="HTTP/1.0").status in (400, 421)


def test_the_server_answers_to_its_own_names(served: Served) -> None:
    for host in ["127.0.0.1:{}", "localhost:{}", "LOCALHOST.:{}", "[::1]:{}"]:
        reply = request(served.port, "GET", "/healthz", host=host.format(served.port))
        assert reply.status == 200, (host, reply.body)
    assert request(served.port, "GET", "/healthz", host="localhost:1").status == 421  # another port


@pytest.mark.parametrize(
    "served", [{"allowed_hosts": ["agents.example", "pinned.example:8443"]}], indirect=True
)
def test_allowed_hosts_add_names(served: Served) -> None:
    assert request(served.port, "GET", "/healthz", host="agents.example").status == 200
    assert request(served.port, "GET", "/healthz", host="Agents.Example:9999").status == 200
    assert request(served.port, "GET", "/healthz", host="pinned.example:8443").status == 200
    assert request(served.port, "GET", "/healthz", host="pinned.example:80").status == 421
    assert request(served.port, "GET", "/healthz", host=f"localhost:{served.port}").status == 200


def test_a_bad_allowed_host_is_an_error_naming_it() -> None:
    with pytest.raises(ValueError, match=r"http://agents\.example"):
        create_app(lambda: None, allowed_hosts=["http://agents.example"])  # type: ignore[arg-type, return-value]
    with pytest.raises(ValueError, match="IPv6 address goes in brackets"):
        ServerConfig(allowed_hosts=["::1:8321"])
    with pytest.raises(ValueError, match="port"):
        ServerConfig(allowed_hosts=["agents.example:99999"])
    assert ServerConfig().max_body_bytes == DEFAULT_MAX_BODY_BYTES == 1 << 20


def test_a_body_a_page_can_send_without_preflight_is_refused(served: Served) -> None:
    """text/plain, a form, multipart: what a page of any origin can POST without asking."""
    forms = [
        ("text/plain", RUN),
        ("text/plain;charset=UTF-8", RUN),
        ("application/x-www-form-urlencoded", b'{"input":"note this","x":"=1"}'),
        (
            "multipart/form-data; boundary=b",
            b'--b\r\nContent-Disposition: form-data; name="input"\r\n\r\nx\r\n--b--',
        ),
    ]
    for content_type, body in forms:
        reply = request(served.port, "POST", "/api/runs", body, headers={"Content-Type": content_type})
        refused(reply, 415, "application/json", content_type)
    refused(request(served.port, "POST", "/api/runs", RUN), 415, "no Content-Type")
    refused(
        request(served.port, "POST", "/api/approvals/x", b"{}", headers={"Content-Type": "text/plain"}), 415
    )
    assert served.runs == {} and ran == []


def test_a_state_change_from_a_foreign_page_is_refused(served: Served) -> None:
    foreign = [
        {"Origin": "http://attacker.example"},
        {"Origin": "http://127.0.0.1:1"},  # another port is another origin
        {"Origin": "https://127.0.0.1"},  # port 443 is not ours
        {"Origin": "null"},  # a sandboxed frame, a file, a redirect
        {"Origin": "not an origin"},
        {"Sec-Fetch-Site": "cross-site"},  # no Origin, but a browser says the page is foreign
        {"Sec-Fetch-Site": "same-site"},
    ]
    for headers in foreign:
        reply = request(served.port, "POST", "/api/runs", RUN, headers={**JSON, **headers})
        refused(reply, 403, "refused")
    assert served.runs == {} and ran == []


def test_json_from_the_servers_own_page_or_a_client_that_is_no_browser_is_accepted(served: Served) -> None:
    port = served.port
    for headers in [
        {},  # curl, the openai SDK: no Origin
        {"Origin": f"http://127.0.0.1:{port}", "Sec-Fetch-Site": "same-origin"},
        {"Origin": f"http://localhost:{port}"},
        {"Content-Type": "Application/JSON; charset=utf-8"},
    ]:
        reply = request(port, "POST", "/api/runs", RUN, headers={**JSON, **headers})
        assert reply.status == 201, reply.body
    assert len(served.runs) == 4


@pytest.mark.parametrize("served", [{"cors_origins": ["http://app.example:3000"]}], indirect=True)
def test_a_configured_cors_origin_may_change_state(served: Served) -> None:
    origin = {"Origin": "http://app.example:3000"}
    reply = request(served.port, "POST", "/api/runs", RUN, headers={**JSON, **origin})
    assert reply.status == 201 and reply.headers["access-control-allow-origin"] == "http://app.example:3000"
    preflight = {
        **origin,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type",
    }
    assert request(served.port, "OPTIONS", "/api/runs", headers=preflight).status == 200
    bad = {"Origin": "http://other.example", "Access-Control-Request-Method": "POST"}
    refused(request(served.port, "OPTIONS", "/api/runs", headers=bad), 400, "Disallowed CORS origin")
    refused(
        request(served.port, "POST", "/api/runs", RUN, headers={**JSON, "Origin": "http://other.example"}),
        403,
    )


def test_a_declared_oversize_body_is_refused_unread(served: Served) -> None:
    """Only the headers of a 150 MB POST are sent: the 413 comes back without the body."""
    head = (
        f"POST /api/runs HTTP/1.1\r\nHost: 127.0.0.1:{served.port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {150 * 1024 * 1024}\r\n\r\n"
    ).encode()
    reply = exchange(served.port, head)
    refused(reply, 413, "157286400 bytes", "1048576")
    assert reply.headers["connection"] == "close"
    assert served.runs == {}


@pytest.mark.parametrize("served", [{"max_body_bytes": 16 * 1024}], indirect=True)
def test_a_chunked_body_is_cut_off_at_the_limit(served: Served) -> None:
    """A chunked body states no length: it is refused once its bytes pass the limit; the body is
    never finished (no last chunk is sent), so the server cannot have waited for all of it."""
    head = (
        f"POST /api/runs HTTP/1.1\r\nHost: 127.0.0.1:{served.port}\r\nContent-Type: application/json\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"
    ).encode()
    piece = b"x" * 4096
    chunk = b"%x\r\n" % len(piece) + piece + b"\r\n"
    reply = exchange(served.port, head, *[chunk] * 6)  # 24 KiB, over the 16 KiB limit, never ended
    refused(reply, 413, "more than 16384 bytes")
    body = json.dumps({"input": "small and chunked"}).encode()
    small = exchange(served.port, head, b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n")
    assert small.status == 201, small.body


def test_json_nested_200000_deep_is_422_not_500(served: Served) -> None:
    for deep in [b"[" * 200_000 + b"]" * 200_000, b'{"input": ' + b"[" * 200_000, b'{"a":' * 100_000]:
        reply = request(served.port, "POST", "/api/runs", deep, headers=JSON)
        refused(reply, 422, "nested deeper than 64 levels")
    brackets_in_strings = json.dumps({"input": "[" * 10_000 + '\\"{' * 1000}).encode()
    assert request(served.port, "POST", "/api/runs", brackets_in_strings, headers=JSON).status == 201


def test_invalid_utf8_is_422_naming_it(served: Served) -> None:
    for body in [b'{"input": "caf\xe9"}', b"\xff\xfe{\x00}\x00", b'{"input": "\xed\xa0\x80"}']:
        refused(request(served.port, "POST", "/api/runs", body, headers=JSON), 422, "not valid UTF-8")
    assert served.runs == {} and ran == []


def test_every_error_is_json(served: Served) -> None:
    wrong_method = request(served.port, "PUT", "/api/runs", b"{}", headers=JSON)
    refused(wrong_method, 405, "method not allowed: PUT /api/runs", "GET", "POST")
    assert set(wrong_method.headers["allow"].split(", ")) == {"GET", "HEAD", "POST"}
    refused(request(served.port, "GET", "/no/such/path"), 404, "not found: GET /no/such/path")
    refused(request(served.port, "DELETE", "/api/runs", b"{}", headers=JSON), 405)
    refused(request(served.port, "GET", "/api/runs/nope"), 404, "nope")


def test_an_unexpected_error_is_a_json_500() -> None:
    def broken() -> Any:
        raise RuntimeError("the factory broke")

    with live_server(create_app(broken)) as url:
        reply = request(int(url.rsplit(":", 1)[1]), "GET", "/api/agent")
    refused(reply, 500, "internal server error")
    assert b"factory broke" not in reply.body
