"""`$ref`s in the JSON schemas an agent file supplies (`output_schema:`, guard `arguments[].schema`)
resolve inside the document only: a remote or `file://` reference is refused when the file is
loaded, no server is contacted, no file is read, and nothing of it appears in any error."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from jianmu_like.agentfile._loader import AgentFileError, load_agent, validate_agent_file
from jianmu_like.guard._value_schema import ValueSchema
from jianmu_like.models._structured import OutputSchema
from jianmu_like.presets.react import create_react_node
from jianmu_like.testing import ScriptedOpenAIServer

SECRET = "TOP-SECRET-7f3a"


class _Recorder(http.server.BaseHTTPRequestHandler):
    requests: list[str]

    def do_GET(self) -> None:
        self.requests.append(self.path)
        body = json.dumps({"type": "object", "description": SECRET}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/schema+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def schema_server() -> Iterator[tuple[str, list[str]]]:
    """A real HTTP server that serves a schema to whoever asks, and records every request."""
    requests: list[str] = []
    handler = type("Handler", (_Recorder,), {"requests": requests})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", requests
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=30)


@pytest.fixture
def secret_file(tmp_path: Path) -> Path:
    """A schema file outside the agent file's folder, with content that must never be shown."""
    path = tmp_path / "outside" / "secret.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"type": "object", "description": SECRET, "required": [SECRET]}))
    return path


def refs(base: str, secret_file: Path) -> list[str]:
    return [
        f"{base}/schema.json",
        secret_file.as_uri(),
        "../outside/secret.json",  # relative to the (unnamed) document: still a retrieval
    ]


def agent_file(folder: Path, ref: str) -> Path:
    path = folder / "agent" / "agent.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "kind: react\n"
        "tools: [calculator]\n"
        "output_schema:\n"
        "  type: object\n"
        "  properties:\n"
        f"    report: {{$ref: '{ref}'}}\n"
    )
    return path


def test_output_schema_refs_outside_the_document_are_refused_at_validate(
    tmp_path: Path, schema_server: tuple[str, list[str]], secret_file: Path
) -> None:
    base, requests = schema_server
    for ref in refs(base, secret_file):
        path = agent_file(tmp_path, ref)
        with pytest.raises(AgentFileError) as info:
            validate_agent_file(path)
        assert info.value.problems == [
            f"{path}:3: output_schema: schema.properties.report: $ref {ref!r} is outside the document: "
            "only local refs like '#/$defs/X' are allowed"
        ]
        with pytest.raises(AgentFileError) as loaded:
            load_agent(path)
        assert SECRET not in str(info.value) + str(loaded.value)
    assert requests == []


def test_a_base_uri_set_by_id_does_not_open_a_way_out(
    tmp_path: Path, schema_server: tuple[str, list[str]]
) -> None:
    """`$id` makes relative refs resolve against a server; they are still not retrieved."""
    base, requests = schema_server
    path = tmp_path / "agent.yaml"
    path.write_text(
        "kind: react\noutput_schema:\n"
        f"  $id: '{base}/root/'\n"
        "  type: object\n"
        "  properties:\n"
        "    a: {$ref: 'other.json'}\n"
        "    b: {$ref: '#/$defs/B'}\n"
        "  $defs:\n"
        "    B: {type: string}\n"
    )
    with pytest.raises(AgentFileError) as info:
        validate_agent_file(path)
    [problem] = info.value.problems
    assert "schema.properties.a: $ref 'other.json' is outside the document" in problem
    assert requests == []
    # A local reference under the same $id is fine.
    path.write_text(path.read_text().replace("$ref: 'other.json'", "$ref: '#/$defs/B'"))
    assert validate_agent_file(path).output_schema is not None
    assert requests == []


def test_guard_argument_schemas_resolve_locally_only(
    tmp_path: Path, schema_server: tuple[str, list[str]], secret_file: Path
) -> None:
    base, requests = schema_server
    for ref in refs(base, secret_file):
        path = tmp_path / "guarded.yaml"
        path.write_text(
            "kind: react\ntools: [calculator]\nguard:\n  arguments:\n"
            f"    - tool: calculator\n      argument: expression\n      schema: {{$ref: '{ref}'}}\n"
        )
        with pytest.raises(AgentFileError) as info:
            validate_agent_file(path)
        [problem] = info.value.problems
        assert (
            problem.startswith(f"{path}:7: guard.arguments[0].schema: ")
            and "is outside the document" in problem
        )
        assert SECRET not in problem
        with pytest.raises(ValueError, match="is outside the document"):
            ValueSchema({"properties": {"x": {"$ref": ref}}})
    assert requests == []


def test_python_output_types_are_checked_when_the_agent_is_built(
    schema_server: tuple[str, list[str]], secret_file: Path
) -> None:
    base, requests = schema_server
    with ScriptedOpenAIServer([]) as srv:
        for ref in refs(base, secret_file):
            schema = {"type": "object", "properties": {"a": {"$ref": ref}}}
            with pytest.raises(ValueError, match="is outside the document") as info:
                create_react_node(model_client=srv.client(), output_type=schema)
            assert SECRET not in str(info.value)
    assert requests == []
    # Local references still validate (and nothing is retrieved for them).
    local = OutputSchema(
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"type": "integer"}}}
    )
    assert local.validate({"a": 1}) == {"a": 1}
    with pytest.raises(ValueError, match="a: must be of type integer"):
        local.validate({"a": "x"})
