"""A ReAct agent whose tools come from an MCP server.

    OPENAI_BASE_URL=http://127.0.0.1:8000/v1 JIANMU_MODEL=my-model \
        python demos/mcp_agent.py "How many miles is a marathon (42.195 km)?"
    python demos/mcp_agent.py --scripted            # canned model replies, real MCP server
    python demos/mcp_agent.py --server "python -m mcp_server_time" "What time is it in Tokyo?"
    python demos/mcp_agent.py --url http://127.0.0.1:8000/mcp "..."   # streamable HTTP

Without --server or --url the agent starts its own small MCP server over stdio: this very file,
run with --serve (a unit converter written with the MCP SDK's `MCPServer`). The server is
closed, and its process gone, when the agent is.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
from typing import Any

from jianmu_like import Agent, ConfigError, ModelClient, ReActConfig, create_react_node, human
from jianmu_like.telemetry.events import Event
from jianmu_like.testing import ScriptedOpenAIServer, call, reply
from jianmu_like.tools import MCPToolProvider

FACTORS = {"km": 1000.0, "mi": 1609.344, "m": 1.0, "ft": 0.3048, "kg": 1.0, "lb": 0.45359237}


def serve() -> None:
    """The demo's own MCP server, over stdio."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("units", log_level="WARNING")

    @server.tool()
    def convert(value: float, from_unit: str, to_unit: str) -> str:
        """Convert a length (km, mi, m, ft) or a mass (kg, lb) to another unit."""
        lengths, masses = {"km", "mi", "m", "ft"}, {"kg", "lb"}
        if not ({from_unit, to_unit} <= lengths or {from_unit, to_unit} <= masses):
            raise ValueError(f"cannot convert {from_unit} to {to_unit}; units: {', '.join(FACTORS)}")
        return f"{value * FACTORS[from_unit] / FACTORS[to_unit]:.4g} {to_unit}"

    server.run()


def show(event: Event) -> None:
    data = event.data
    if event.type == "tool.call.started":
        print(f"  -> {data['tool']}({data['arguments']})")
    elif event.type == "tool.call.completed":
        print(f"  <- {data['output']}")
    elif event.type == "tool.call.failed":
        print(f"  !! {data['error']}")


async def main(question: str, client: ModelClient, server: dict[str, Any]) -> int:
    provider = MCPToolProvider(server)
    config = ReActConfig(max_iterations=8)
    root = create_react_node("MCPAgent", model_client=client, tool_providers=[provider], config=config)
    result: dict[str, Any] | None = None
    async with Agent(root) as agent:  # closing the agent closes the MCP server
        async for event in agent.stream({"messages": [human(question)]}):
            show(event)
            if event.type == "run.completed":
                result = event.data
        print(
            f"[MCP server {provider.name!r}: {len(await provider.get_tools())} tool(s), pid {provider.pid}]"
        )
    if result is None or result["status"] != "success":
        termination = (result or {}).get("termination") or {}
        detail = termination.get("error") or (result or {}).get("error") or ""
        print(f"failed ({termination.get('reason', 'unknown')}): {detail}", file=sys.stderr)
        return 1
    print(f"answer: {result['final_answer']}")
    return 0


def run() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("question", nargs="?", default="How many miles is a marathon (42.195 km)?")
    parser.add_argument("--scripted", action="store_true", help="use canned model replies, not a model")
    parser.add_argument("--server", help="command line of a stdio MCP server to use instead of ours")
    parser.add_argument("--url", help="URL of a streamable HTTP MCP server to use instead of ours")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
        return 0
    if args.url:
        server: dict[str, Any] = {"name": "remote", "url": args.url}
    elif args.server:
        command, *rest = shlex.split(args.server)
        server = {"command": command, "args": rest}
    else:
        server = {
            "name": "units",
            "command": sys.executable,
            "args": [__file__, "--serve"],
            "prefix": "units_",
        }
    if args.scripted:
        if args.server or args.url:
            parser.error("--scripted plays canned replies for the built-in server only")
        script = [
            call("units_convert", value=42.195, from_unit="km", to_unit="mi"),
            reply("About 26.22 miles."),
        ]
        with ScriptedOpenAIServer(script) as model_server:
            return asyncio.run(main(args.question, model_server.client(), server))
    try:
        client = ModelClient.resolve()
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return asyncio.run(main(args.question, client, server))


if __name__ == "__main__":
    sys.exit(run())
