"""An agent's system prompt or first messages from an MCP server's prompt (`prompts/get`).

The servers start lazily, after the tree (and its clones) are built, so the prompt is read when
the servers are ready, before the first model call. Tested against
`@modelcontextprotocol/server-everything` over stdio (its `args-prompt`, `simple-prompt` and
`resource-prompt`) and the project's SDK test server over stdio and streamable HTTP (a
conversation and an image, which its place may refuse), in Python and from agent files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from pydantic import ValidationError

from jianmu_like import Agent, create_react_node, human
from jianmu_like.agentfile._loader import AgentFileError, load_agent, validate_agent_file
from jianmu_like.bt._clone import clone_tree
from jianmu_like.nodes._context import ContextBuilder
from jianmu_like.presets.react._config import ReActConfig
from jianmu_like.testing import PATIENCE, ScriptedOpenAIServer, call, reply
from jianmu_like.tools import MCPToolProvider
from jianmu_like.tools.mcp._prompts import MCPPrompt
from tests.mcp.everything import ENTRY, NODE, everything_command, needs_everything
from tests.mcp.mcp_helpers import HTTPServer, server_config

ANSWER = "It will be sunny in Paris tomorrow, about twenty degrees."
WEATHER = "What's weather in Paris, Texas?"
SIMPLE = "This is a simple prompt without arguments."

in_module_loop = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def everything() -> AsyncIterator[MCPToolProvider]:
    node, *args = everything_command("stdio")
    async with MCPToolProvider(name="everything", command=node, args=args) as provider:
        yield provider


def prompt(name: str, server: str = "everything", **arguments: str) -> MCPPrompt:
    return MCPPrompt(server=server, name=name, arguments=arguments)


def react(srv: ScriptedOpenAIServer, provider: MCPToolProvider, **config: Any) -> Any:
    return create_react_node(
        model_client=srv.client(),
        tool_providers=[provider],
        config=ReActConfig(tool_selection=False, **config),
    )


@needs_everything
@in_module_loop
async def test_the_system_prompt_and_first_messages_come_from_the_server(everything: MCPToolProvider) -> None:
    with ScriptedOpenAIServer([reply(ANSWER)]) as srv:
        root = react(
            srv,
            everything,
            system_prompt_from=prompt("args-prompt", city="Paris", state="Texas"),
            first_messages_from=prompt("simple-prompt"),
        )
        result = await Agent(root).run({"messages": [human("And tomorrow?")]})
        [request] = srv.requests
    assert result.status == "success" and result.final_answer == ANSWER
    sent = request["messages"]
    # The prompt is the persona; the protocol and the tool listing follow it as for a written one.
    assert sent[0]["role"] == "system" and sent[0]["content"].startswith(f"{WEATHER}\n\nWork step by step.")
    assert [(m["role"], m["content"]) for m in sent[1:]] == [("user", SIMPLE), ("user", "And tomorrow?")]
    # The opening messages are the prompt's, not the conversation's: the history holds the task only.
    assert [m.content for m in result.state.messages if m.role == "user"] == ["And tomorrow?"]


@needs_everything
@in_module_loop
async def test_an_mcp_system_prompt_keeps_the_output_schema_instruction(everything: MCPToolProvider) -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    with ScriptedOpenAIServer([reply('{"city": "Paris"}')]) as srv:
        config = ReActConfig(
            system_prompt_from=prompt("args-prompt", city="Paris", state="Texas"), tool_selection=False
        )
        root = create_react_node(
            model_client=srv.client(), tool_providers=[everything], config=config, output_type=schema
        )
        result = await Agent(root).run({"messages": [human("Which city?")]})
        system = srv.requests[0]["messages"][0]["content"]
    assert result.output == {"city": "Paris"}
    assert system.startswith(f"{WEATHER}\n\nFinal answer: ")


@needs_everything
@in_module_loop
async def test_clones_built_before_the_prompt_was_read_use_it(everything: MCPToolProvider) -> None:
    """A pooled tree's clones share the context builder: the one that starts the servers reads
    the prompt for all, and each sends it as the persona a json tool protocol writes around."""
    answer = json.dumps({"answer": ANSWER})
    with ScriptedOpenAIServer([answer, answer]) as srv:
        template = react(
            srv, everything, system_prompt_from=prompt("args-prompt", city="Paris"), tool_protocol="json"
        )
        first, second = clone_tree(template), clone_tree(template)
        for tree in (first, second):
            result = await Agent(tree).run({"messages": [human("Weather?")]})
            assert result.status == "success", result.termination
        systems = [request["messages"][0]["content"] for request in srv.requests]
    assert len(systems) == 2
    assert all(text.startswith("What's weather in Paris?") for text in systems), systems


@needs_everything
@in_module_loop
@pytest.mark.parametrize(
    ("bad", "words"),
    [
        (
            prompt("args-promt", city="Paris"),
            "server 'everything' has no prompt 'args-promt' (did you mean 'args-prompt'?); its prompts: "
            "simple-prompt, args-prompt, completable-prompt, resource-prompt",
        ),
        (
            prompt("args-prompt"),
            "missing required argument 'city' (the prompt's arguments: city (required), state)",
        ),
        (
            prompt("args-prompt", city="Paris", stat="Texas"),
            "unknown argument 'stat' (did you mean 'state'?)",
        ),
        (
            prompt("resource-prompt", resourceType="Blob", resourceId="1"),
            "message 2 holds an embedded binary resource (demo://resource/dynamic/blob/1",
        ),
        (
            prompt("resource-prompt", resourceType="Bob", resourceId="1"),
            "rejected prompt 'resource-prompt': Invalid resourceType: Bob",
        ),
    ],
    ids=["unknown-prompt", "missing-argument", "unknown-argument", "binary-content", "server-refuses"],
)
async def test_a_prompt_that_cannot_serve_stops_the_run_before_the_model(
    everything: MCPToolProvider, bad: MCPPrompt, words: str
) -> None:
    with ScriptedOpenAIServer([reply(ANSWER)]) as srv:
        agent = Agent(react(srv, everything, system_prompt_from=bad))
        for _ in range(2):  # a second run asks again and fails the same way: never the default persona
            result = await agent.run({"messages": [human("hi")]})
            assert result.status == "failure" and result.termination is not None
            assert result.termination["reason"] == "provider_error"
            error = result.termination["error"]
            assert f"reading the agent's system prompt from {bad.describe()}" in error and words in error
        assert srv.requests == []


@needs_everything
@in_module_loop
async def test_a_prompt_of_no_server_of_the_agent_is_refused_when_built(everything: MCPToolProvider) -> None:
    with ScriptedOpenAIServer([]) as srv, pytest.raises(ValueError) as caught:
        react(srv, everything, first_messages_from=prompt("simple-prompt", server="everythin"))
    assert "the agent has no MCP server 'everythin' (did you mean 'everything'?)" in str(caught.value)
    with pytest.raises(ValidationError, match="not both"):
        ReActConfig(system_prompt="Be brief.", system_prompt_from=prompt("simple-prompt"))

    class Own:
        def build(self, history: Any, tools: Any) -> list[Any]:
            return list(history)

    with ScriptedOpenAIServer([]) as srv, pytest.raises(ValueError, match="default ContextBuilder"):
        create_react_node(
            model_client=srv.client(),
            tool_providers=[everything],
            context_builder=Own(),
            config=ReActConfig(system_prompt_from=prompt("simple-prompt")),
        )
    assert isinstance(ContextBuilder(), ContextBuilder)


# -- the project's SDK server: a conversation and an image, over stdio and HTTP ----------------


@pytest.mark.parametrize("transport", ["stdio", "http"])
@in_module_loop
async def test_a_conversation_opens_the_agent_but_is_no_system_prompt(
    transport: str, http_server: HTTPServer
) -> None:
    entry = server_config() if transport == "stdio" else {"name": "test", "url": http_server.url}
    async with MCPToolProvider(entry) as provider:
        with ScriptedOpenAIServer([reply(ANSWER)]) as srv:
            opened = Agent(
                react(srv, provider, first_messages_from=prompt("dialogue", "test", topic="Paris"))
            )
            result = await opened.run({"messages": [human("Go on.")]})
            sent = [(m["role"], m["content"]) for m in srv.requests[0]["messages"][1:]]
        assert result.status == "success"
        assert sent == [
            ("user", "Tell me about Paris."),
            ("assistant", "Paris is worth a look."),
            ("user", "Go on."),
        ]
        with ScriptedOpenAIServer([]) as srv:
            cases = [
                (
                    "system_prompt_from",
                    prompt("dialogue", "test", topic="x"),
                    "message 2 is an assistant message",
                ),
                (
                    "system_prompt_from",
                    prompt("with_image", "test"),
                    "message 2 holds an image block (image/png)",
                ),
                (
                    "first_messages_from",
                    prompt("with_image", "test"),
                    "the agent's first messages can only be text",
                ),
            ]
            for key, bad, words in cases:
                result = await Agent(react(srv, provider, **{key: bad})).run({"messages": [human("hi")]})
                assert result.termination is not None and words in result.termination["error"], key
            assert srv.requests == []


@in_module_loop
async def test_a_prompt_the_server_changes_is_read_again_before_the_next_model_call() -> None:
    """`prompts/list_changed` mid-run: the next model call has the new system prompt."""

    def model(request: dict[str, Any]) -> Any:
        if not any(m["role"] == "tool" for m in request["messages"]):
            return call("reword", text="You answer in one word.")
        return reply("Reworded, as asked.")

    async with MCPToolProvider(server_config()) as provider:
        with ScriptedOpenAIServer(model) as srv:
            root = react(srv, provider, system_prompt_from=prompt("persona", "test"))
            result = await Agent(root).run({"messages": [human("Reword yourself.")]})
            systems = [request["messages"][0]["content"] for request in srv.requests]
    assert result.status == "success", result.termination
    assert systems[0].startswith("You answer in full sentences.\n\n")
    assert systems[1].startswith("You answer in one word.\n\n")


# -- agent files ------------------------------------------------------------------------------


def agent_file(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "agent.yaml"
    # Written, not started: validating a file needs no server (the tests that run it are marked).
    servers = f"mcp_servers:\n  - {{name: everything, command: {NODE or 'node'}, args: [{ENTRY}, stdio]}}\n"
    path.write_text(body + servers)
    return path


@needs_everything
@in_module_loop
async def test_an_agent_file_reads_its_system_prompt_from_a_server(
    everything: MCPToolProvider, tmp_path: Path
) -> None:
    file = agent_file(
        tmp_path,
        "kind: react\nname: weather\ntool_selection: false\n"
        "system_prompt:\n  mcp_prompt: {server: everything, name: args-prompt, arguments: {city: Paris}}\n"
        "first_messages: {mcp_prompt: {server: everything, name: simple-prompt}}\n",
    )
    with ScriptedOpenAIServer([reply(ANSWER)]) as srv:
        agent = load_agent(file, model_client=srv.client())
        try:
            result = await agent.run({"messages": [human("Tomorrow?")]})
        finally:
            await agent.aclose()
        sent = srv.requests[0]["messages"]
    assert result.status == "success"
    assert sent[0]["content"].startswith("What's weather in Paris?\n\n")
    assert [m["content"] for m in sent[1:]] == [SIMPLE, "Tomorrow?"]


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (
            "kind: react\nsystem_prompt:\n  mcp_prompt: {sever: everything, name: x}\n",
            "agent.yaml:3: system_prompt.mcp_prompt.sever: unknown key (did you mean 'server'?)",
        ),
        (
            "kind: react\nsystem_prompt:\n  mcp_promt: {server: everything, name: x}\n",
            "agent.yaml:3: system_prompt.mcp_promt: unknown key (did you mean 'mcp_prompt'?)",
        ),
        (
            "kind: react\nfirst_messages:\n  mcp_prompt: {server: everythin, name: x}\n",
            "agent.yaml:3: first_messages.mcp_prompt.server: the agent has no MCP server 'everythin' "
            "(did you mean 'everything'?) (its MCP servers: everything)",
        ),
        (
            "kind: research\nsystem_prompt: {mcp_prompt: {server: everything, name: x}}\n",
            "agent.yaml:2: system_prompt: an MCP prompt is only for react agents, not research",
        ),
        (
            "kind: tree\nsystem_prompt: {mcp_prompt: {server: everything, name: x}}\n"
            "tree:\n  react: {name: bare}\n",
            "agent.yaml:2: system_prompt.mcp_prompt.server: the agent has no MCP server 'everything' "
            "(inherited by the react node 'bare') (its MCP servers: none)",
        ),
    ],
    ids=["misspelt-key", "misspelt-form", "unknown-server", "not-react", "inherited"],
)
def test_an_agent_file_names_what_is_wrong_with_its_mcp_prompt(
    tmp_path: Path, body: str, problem: str
) -> None:
    with pytest.raises(AgentFileError) as caught:
        validate_agent_file(agent_file(tmp_path, body))
    assert any(line.endswith(problem) for line in caught.value.problems), caught.value.problems


def test_validate_and_show_say_the_prompt_comes_from_the_server(tmp_path: Path) -> None:
    file = agent_file(
        tmp_path,
        "kind: react\nname: weather\n"
        "system_prompt: {mcp_prompt: {server: everything, name: args-prompt, arguments: {city: Paris}}}\n",
    )
    for command in ("validate", "show"):
        done = subprocess.run(
            [sys.executable, "-m", "jianmu_like", command, str(file)],
            capture_output=True,
            text=True,
            timeout=PATIENCE,
            env={
                **{
                    k: v
                    for k, v in os.environ.items()
                    if not k.startswith(("JIANMU", "OPENAI_", "FORCE_COLOR"))
                },
                "NO_COLOR": "1",
                "PYTHONIOENCODING": "utf-8",
            },
        )
        assert done.returncode == 0, done.stderr
        assert (
            "weather system_prompt: from prompt 'args-prompt' of MCP server 'everything' (city='Paris')"
            in (done.stdout)
        )
