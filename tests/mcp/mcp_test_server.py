"""An MCP server for the tests, written with the SDK's `MCPServer`.

    python mcp_test_server.py            # stdio
    python mcp_test_server.py --http     # streamable HTTP on 127.0.0.1, free port; prints "PORT <n>"

Its tools cover what a client must handle: plain and structured results, images and embedded
resources, `isError`, slow calls (timeouts), a process that dies mid-call (restart / retry),
a tool list that changes, prompts that only some places can take (a conversation, an image),
and a server that quotes its secrets (`leak`, `--leak-stderr NAME`).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from pathlib import Path
from typing import Annotated
from urllib.parse import quote

from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.prompts.base import AssistantMessage, Message, UserMessage
from mcp.server.mcpserver.resolve import Elicit, Resolve, Sample
from mcp.server.mcpserver.resources import TextResource
from mcp.types import (
    CallToolResult,
    CreateMessageResult,
    EmbeddedResource,
    ModelHint,
    ModelPreferences,
    SamplingMessage,
    TextContent,
    TextResourceContents,
)
from pydantic import BaseModel

server = MCPServer("jianmu-test", instructions="Tools for jianmu_like's MCP tests.", log_level="WARNING")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


@server.tool(name="dotted.name")
def dotted_name() -> str:
    """A tool whose name is not a valid OpenAI function name."""
    return "dotted"


@server.tool()
def structured_only() -> CallToolResult:
    """Structured content and no text block."""
    return CallToolResult(content=[], structured_content={"city": "Paris", "population": 2100000})


class City(BaseModel):
    city: str
    population: int


@server.tool()
def loose_city() -> Annotated[CallToolResult, City]:
    """Declares an outputSchema (population: integer) and sends a string in its place: the
    server's lax check lets it through, a client's check against the schema does not."""
    loose = {"city": "Paris", "population": "2100000"}
    return CallToolResult(content=[TextContent(text="Paris")], structured_content=loose)


@server.tool()
def picture() -> CallToolResult:
    """A caption and a small PNG (32 bytes)."""
    image = Image(data=b"\x89PNG\r\n\x1a\n" + bytes(24), format="png").to_image_content()
    return CallToolResult(content=[TextContent(text="a red dot"), image])


@server.tool()
def document() -> CallToolResult:
    """An embedded text resource."""
    resource = TextResourceContents(uri="file:///notes.txt", mime_type="text/plain", text="the notes")
    return CallToolResult(content=[EmbeddedResource(resource=resource)])


@server.tool()
def fail(reason: str = "bad input") -> CallToolResult:
    """Report a tool error (isError) with the given reason."""
    return CallToolResult(content=[TextContent(text=f"cannot do that: {reason}")], is_error=True)


@server.tool()
async def sleep(seconds: float, started: str = "") -> str:
    """Wait, then answer. With `started` (a file path), the first call creates the file and
    waits an hour (a test kills the server once the file is there); a retry waits `seconds`."""
    if started and not Path(started).exists():
        Path(started).write_text(str(os.getpid()))
        seconds_now: float = 3600
    else:
        seconds_now = seconds
    await asyncio.sleep(seconds_now)
    return f"slept {seconds:g}"


@server.tool()
async def leak(variable: str, how: str, ctx: Context) -> CallToolResult:
    """Quote the value of the environment variable `variable` raw, URL-encoded and JSON-escaped:
    in a log notification, then in the result (`how`: "error" an isError result, else text)."""
    value = os.environ.get(variable, "(unset)")
    text = f"{variable}={value} url={quote(value, safe='')} json={json.dumps(value)}"
    await ctx.info(f"leaking {text}")
    return CallToolResult(content=[TextContent(text=f"cannot use {text}")], is_error=how == "error")


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def crash() -> str:
    """Kill the server process in the middle of the call."""
    os._exit(3)


@server.tool()
def crash_once(marker: str) -> str:
    """Kill the server the first time (creating `marker`), answer on later calls."""
    path = Path(marker)
    if not path.exists():
        path.write_text("crashed")
        os._exit(4)
    return f"recovered in {os.getpid()}"


@server.tool()
def header(name: str, ctx: Context) -> str:
    """The value of an HTTP request header (streamable HTTP only)."""
    return (ctx.headers or {}).get(name.lower(), "(absent)")


@server.tool()
async def add_note(title: str, text: str, ctx: Context) -> str:
    """Add a text resource `note://<title>` and tell the client the resource list changed (the
    server starts with none, so other tests see no `read_resource` tool)."""
    server.add_resource(TextResource(uri=f"note://{title}", name=title, text=text, mime_type="text/plain"))
    await ctx.session.send_resource_list_changed()  # a client of 2025-11-25 or before
    await ctx.notify_resources_changed()  # a 2026-07-28 client's subscriptions/listen stream
    return f"note://{title}"


@server.tool()
async def edit_note(title: str, text: str, ctx: Context) -> str:
    """Change the text of `note://<title>` and tell the clients subscribed to it."""
    uri = f"note://{title}"
    server._resource_manager._resources.pop(uri, None)  # the SDK keeps the first of a URI
    server.add_resource(TextResource(uri=uri, name=title, text=text, mime_type="text/plain"))
    await ctx.notify_resource_updated(uri)  # 2026-07-28: the subscriptions/listen streams naming it
    return uri


@server.tool()
async def grow(ctx: Context) -> str:
    """Add a tool named `grown` and tell the client the tool list changed."""
    if "grown" not in {t.name for t in await server.list_tools()}:
        server.add_tool(lambda: "I am new", name="grown", description="Added at run time.")
    await ctx.session.send_tool_list_changed()  # a client of 2025-11-25 or before
    await ctx.notify_tools_changed()  # a 2026-07-28 client's subscriptions/listen stream
    return "grown"


@server.tool()
async def hang(marker: str, started: str = "") -> str:
    """Wait for an hour without reporting progress; write "cancelled" to `marker` when the
    client cancels the call (`notifications/cancelled` interrupts this handler). With `started`,
    first write that file: the call is running (a cancel before it would find nothing to stop)."""
    if started:
        Path(started).write_text("started")
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        Path(marker).write_text("cancelled")
        raise
    return "woke up"


@server.tool()
async def steps(count: int, pause: float, ctx: Context) -> str:
    """Report progress `count` times, `pause` seconds apart, then answer."""
    for step in range(1, count + 1):
        await asyncio.sleep(pause)
        await ctx.report_progress(step, count, f"step {step}")
    return f"done after {count} steps"


@server.prompt()
def dialogue(topic: str) -> list[Message]:
    """A user's question about `topic` and an assistant's first answer (a conversation: fine as
    first messages, not as a system prompt)."""
    return [UserMessage(f"Tell me about {topic}."), AssistantMessage(f"{topic} is worth a look.")]


@server.prompt()
def with_image() -> list[Message]:
    """Text and a small PNG (text-only places must refuse it, not read a placeholder)."""
    return [
        UserMessage("Describe this picture:"),
        UserMessage(Image(data=b"\x89PNG\r\n\x1a\n" + bytes(24), format="png")),
    ]


@server.tool()
async def chatty(count: int, ctx: Context) -> str:
    """Log a line and report progress `count` times, then answer."""
    for step in range(1, count + 1):
        await ctx.info(f"working on step {step}")
        await ctx.report_progress(step, count, f"step {step}")
    return f"chatted {count} times"


class Pick(BaseModel):
    colour: str = "blue"


def _pick(question: str) -> Elicit[Pick]:
    return Elicit(question, Pick)


def _one_word(hint: str) -> Sample:
    preferences = ModelPreferences(hints=[ModelHint(name=hint)]) if hint else None
    message = SamplingMessage(role="user", content=TextContent(type="text", text="One word, please."))
    return Sample([message], max_tokens=10, model_preferences=preferences)


@server.tool()
async def ask_model(hint: str, answer: Annotated[CreateMessageResult, Resolve(_one_word)]) -> str:
    """Ask the client's model for a word (sampling), preferring a model named like `hint`. The
    SDK asks in the way of the revision spoken: a request of its own up to 2025-11-25, an
    `input_required` result at 2026-07-28."""
    text = answer.content.text if isinstance(answer.content, TextContent) else "?"
    return f"{answer.model} said {text}"


@server.tool()
async def ask_user(question: str, answer: Annotated[ElicitationResult[Pick], Resolve(_pick)]) -> str:
    """Ask the person a question (elicitation): a request of the server's own up to
    2025-11-25, an `input_required` result at 2026-07-28 (the SDK asks as the revision says)."""
    if isinstance(answer, AcceptedElicitation):
        return f"picked {answer.data.colour}"
    return answer.action


PERSONA = ["You answer in full sentences."]


@server.prompt()
def persona() -> str:
    """The current persona (`reword` changes it)."""
    return PERSONA[0]


@server.tool()
async def reword(text: str, ctx: Context) -> str:
    """Change the `persona` prompt and tell the client the prompts changed."""
    PERSONA[0] = text
    await ctx.session.send_prompt_list_changed()  # a client of 2025-11-25 or before
    await ctx.notify_prompts_changed()  # a 2026-07-28 client's subscriptions/listen stream
    return "reworded"


def serve_http() -> None:
    """Bind 127.0.0.1 only, on a port the OS picks, and say which (no race for a free port)."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # connections queue from now on, before uvicorn starts accepting
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning")
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


def record_pids() -> None:
    """With `MCP_TEST_PID_FILE` set, write this server's PID there (for tests that must find it
    from outside a CLI process); with `MCP_TEST_HELPER` also start a helper child that outlives
    stdin closing, as servers that drive a browser or a language server do, and add its PID."""
    target = os.environ.get("MCP_TEST_PID_FILE")
    if not target:
        return
    pids = [os.getpid()]
    if os.environ.get("MCP_TEST_HELPER"):
        import subprocess

        helper = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(3600)"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )
        pids.append(helper.pid)
    partial = Path(target + ".part")
    partial.write_text(" ".join(map(str, pids)))
    partial.replace(target)  # whole or absent: a reader never sees half a line


def leak_and_exit() -> None:
    """`--leak-stderr NAME`: print the environment variable NAME on stderr and exit 1 before any
    handshake, as a server that cannot start and dumps its configuration does; `--leak-stdout
    NAME`: print it on stdout (no JSON-RPC: the client logs what it could not parse), then serve."""
    if "--leak-stderr" in sys.argv:
        name = sys.argv[sys.argv.index("--leak-stderr") + 1]
        print(f"fatal: bad credentials {name}={os.environ.get(name)!r}", file=sys.stderr, flush=True)
        sys.exit(1)
    if "--leak-stdout" in sys.argv:  # a line that is no JSON-RPC, then a normal server
        name = sys.argv[sys.argv.index("--leak-stdout") + 1]
        print(f"using {name}={os.environ.get(name)}", flush=True)


if __name__ == "__main__":
    leak_and_exit()
    record_pids()
    if "--http" in sys.argv:
        serve_http()
    else:
        server.run()
