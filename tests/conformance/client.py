"""The project's MCP client as the official conformance suite drives one.

`conformance client --command "python tests/conformance/client.py"` starts a server per scenario
and runs this with its URL as the last argument, the scenario in `MCP_CONFORMANCE_SCENARIO` and
the scenario's credentials (if any) in `MCP_CONFORMANCE_CONTEXT`. Everything goes through the
real code paths: an agent file with one `mcp_servers:` entry (credentials in environment
variables it names, as a user's would be), loaded by `load_agent` as `jianmu-like run` loads it;
the agent's own `MCPToolProvider` lists and calls the tools.

What stands in for a person: the browser of the authorization-code flow (fetch the authorization
URL, return where it redirects — the suite's authorization server approves at once) and the
person answering an elicitation (accepts the form unchanged, so the schema's defaults apply).
Exit 0 when the scenario's calls succeed; the suite judges what it saw on the wire.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx2
import yaml

from jianmu_like.agentfile._loader import load_agent
from jianmu_like.cli._inspect import offline_client
from jianmu_like.tools.mcp._elicitation import ElicitationAnswer, ElicitationRequest
from jianmu_like.tools.mcp._provider import MCPToolProvider

CIMD_URL = "https://conformance-test.local/client-metadata.json"
"""The client ID metadata document URL the suite's authorization servers expect."""

TOOL_CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "tools_call": ("add_numbers", {"a": 5, "b": 3}),
    "sse-retry": ("test_reconnection", {}),
    "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", {}),
}


async def browser(url: str) -> str:
    """Open the authorization URL; the suite's server answers with the redirect at once."""
    async with httpx2.AsyncClient(timeout=10) as client:
        response = await client.get(url, follow_redirects=False)
    location = response.headers.get("location")
    if response.status_code not in (301, 302, 303, 307, 308) or not location:
        raise RuntimeError(f"the authorization endpoint answered {response.status_code} without a redirect")
    return str(location)


async def accept_unchanged(request: ElicitationRequest) -> ElicitationAnswer:
    return ElicitationAnswer(action="accept", content={})


def server_entry(scenario: str, url: str, context: dict[str, Any]) -> dict[str, Any]:
    """The `mcp_servers:` entry a user would write for this scenario's server."""
    entry: dict[str, Any] = {"url": url, "connect_timeout": 20, "call_timeout": 20}
    if scenario.startswith("elicitation"):
        entry["elicitation"] = "ask"
    if not scenario.startswith("auth/"):
        return entry
    auth: dict[str, Any] = {"store": "memory"}
    if context.get("client_secret"):
        os.environ["CONFORMANCE_CLIENT_SECRET"] = context["client_secret"]
        auth["client_secret_env"] = "CONFORMANCE_CLIENT_SECRET"
    if context.get("private_key_pem"):
        os.environ["CONFORMANCE_PRIVATE_KEY"] = context["private_key_pem"]
        auth["private_key_env"] = "CONFORMANCE_PRIVATE_KEY"
        auth["signing_algorithm"] = context.get("signing_algorithm", "ES256")
    if context.get("client_id"):
        auth["client_id"] = context["client_id"]
    if scenario.startswith("auth/client-credentials"):
        auth["grant"] = "client_credentials"
    elif scenario.startswith("auth/cross-app-access"):
        os.environ["CONFORMANCE_ID_TOKEN"] = context["idp_id_token"]
        auth.update(
            grant="identity_assertion",
            issuer=context["auth_issuer"],
            id_token_env="CONFORMANCE_ID_TOKEN",
            idp_token_endpoint=context["idp_token_endpoint"],
            idp_client_id=context["idp_client_id"],
        )
    else:
        auth["client_metadata_url"] = CIMD_URL
    entry["auth"] = auth
    return entry


async def authorization_server(url: str) -> str:
    """What an administrator looks up once for cross-app access: the issuer of the MCP server's
    authorization server (its protected-resource metadata names it)."""
    origin = "/".join(url.split("/")[:3])
    path = url.split("/", 3)[3] if url.count("/") >= 3 else ""
    async with httpx2.AsyncClient(timeout=10) as client:
        response = await client.get(f"{origin}/.well-known/oauth-protected-resource/{path}".rstrip("/"))
        response.raise_for_status()
        return str(response.json()["authorization_servers"][0])


async def run(scenario: str, url: str, context: dict[str, Any]) -> None:
    if scenario.startswith("auth/cross-app-access"):
        context = {**context, "auth_issuer": await authorization_server(url)}
    with tempfile.TemporaryDirectory() as folder:
        agent_file = Path(folder) / "agent.yaml"
        agent = {"name": "conformance", "mcp_servers": {"conformance": server_entry(scenario, url, context)}}
        agent_file.write_text(yaml.safe_dump(agent), encoding="utf-8")
        loaded = load_agent(agent_file, model_client=offline_client())
    [provider] = [p for ts in loaded.toolsets() for p in ts.providers if isinstance(p, MCPToolProvider)]
    provider.authorize = browser
    provider.elicitations.handler = accept_unchanged
    try:
        tools = {tool.name: tool for tool in await provider.get_tools()}
        name, arguments = TOOL_CALLS.get(
            scenario, ("test-tool", {}) if scenario.startswith("auth/") else ("", {})
        )
        if name and name in tools:
            result = await provider.call(name, arguments)
            print(f"{name}: {str(result)[:200]}")
        elif name:
            raise RuntimeError(f"the server offers no tool {name!r} (tools: {sorted(tools)})")
    finally:
        await provider.close()


def main() -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    asyncio.run(run(scenario, sys.argv[-1], context))
    return 0


if __name__ == "__main__":
    sys.exit(main())
