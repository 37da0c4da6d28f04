"""`jianmu-like show | validate | config`: look at agent files and settings without running anything.

`show` builds the tree with an offline model client (a scripted provider with no replies), so no
model server is contacted.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .._base.config import explain_config
from .._base.redact import redact, redact_text
from ..agentfile._loader import AgentFileError, load_agent, validate_agent_file
from ..agentfile._shipped import NoSuchAgentFile, agent_file_path
from ..agentfile._spec import MCPPromptSpec
from ..models._client import ModelClient
from ..testing._scripted import ScriptedProvider
from ..tools.mcp._config import MCPServerConfig, parse_mcp_servers
from ..tools.mcp._prompts import MCPPrompt
from ._common import EXIT_OK, EXIT_USAGE, print_problems
from ._render import dot_text, tree_view


def offline_client() -> ModelClient:
    """A model client that never leaves the process (and has nothing to say)."""
    return ModelClient(ScriptedProvider([]), model="offline")


def show_command(args: argparse.Namespace, console: Console, errors: Console) -> int:
    """Print the agent's behaviour tree (a rich tree, or Graphviz dot with `--dot`)."""
    spec = validate_agent_file(args.preset, allow_modules=args.allow_module)
    agent = load_agent(args.preset, model_client=offline_client(), allow_modules=args.allow_module)
    if args.dot:
        console.out(dot_text(agent.root, spec.name), highlight=False, end="")
        return EXIT_OK
    title = Text(f"{spec.name}", style="bold")
    title.append(f"  ({spec.kind})", style="dim")
    if spec.description:
        title.append(f"  {spec.description}", style="italic")
    console.print(title)
    print_mcp_targets(console, spec)
    console.print(tree_view(agent.root))
    return EXIT_OK


def validate_command(args: argparse.Namespace, console: Console, errors: Console) -> int:
    """Check every file; all problems of every file are printed (exit 2 if any). A valid file's
    MCP servers are listed with the command each will start or the URL each will reach, since
    running the file starts those commands."""
    failed = False
    for path in args.presets:
        try:
            spec = validate_agent_file(agent_file_path(path), allow_modules=args.allow_module)
        except (AgentFileError, NoSuchAgentFile) as exc:
            failed = True
            print_problems(errors, exc.problems, title=f"{path}: {len(exc.problems)} problem(s)")
            continue
        console.print(Text(f"{path}: ok", style="green"))
        print_mcp_targets(console, spec)
    return EXIT_USAGE if failed else EXIT_OK


def _models_in(spec: BaseModel) -> Iterator[BaseModel]:
    """`spec` and every model inside it (its agents, tree nodes and sections), in file order."""
    pending: list[Any] = [spec]
    while pending:
        value = pending.pop(0)
        if isinstance(value, BaseModel):
            yield value
            pending.extend(getattr(value, name) for name in type(value).model_fields)
        elif isinstance(value, list | tuple):
            pending.extend(value)
        elif isinstance(value, dict):
            pending.extend(value.values())


def mcp_targets(spec: BaseModel) -> list[MCPServerConfig]:
    """Every MCP server an agent file declares, its sub-agents' included (in file order)."""
    found: list[MCPServerConfig] = []
    for model in _models_in(spec):
        servers = getattr(model, "mcp_servers", None)
        if servers:
            found.extend(parse_mcp_servers(servers))
    return found


def mcp_prompt_uses(spec: BaseModel) -> list[tuple[str, str, MCPPrompt]]:
    """(agent name, `system_prompt` | `first_messages`, prompt) for each MCP prompt a file's
    agents read, in file order (a tree node inheriting the file's is the file's own line)."""
    found: list[tuple[str, str, MCPPrompt]] = []
    for model in _models_in(spec):
        for key in ("system_prompt", "first_messages"):
            used = getattr(model, key, None)
            if isinstance(used, MCPPromptSpec):
                found.append((str(getattr(model, "name", "?")), key, used.mcp_prompt))
    return found


def _oauth_state(server: MCPServerConfig) -> str:
    """Whether a run can reach an OAuth server as it stands: logged in, or what to run first."""
    from ..tools.mcp._token_store import FileTokenStore

    auth = server.auth
    assert auth is not None
    if not auth.needs_person:
        return f"OAuth {auth.grant}"
    if auth.store == "memory":
        return "OAuth: logs in at each run; nobody can in `jianmu-like run`"
    if FileTokenStore(server.url or "").logged_in():
        return "OAuth: logged in"
    return f"OAuth: not logged in; run `jianmu-like mcp login AGENT_FILE {server.name}`"


def print_mcp_targets(console: Console, spec: BaseModel) -> None:
    """`  mcp server NAME: starts CMD ARGS` / `reaches URL` for each declared server (secrets
    masked), then `  AGENT system_prompt: from prompt 'P' of MCP server 'S'` for each MCP prompt
    an agent reads (when the server runs, so a file that is `ok` may still name a wrong prompt)."""
    for server in mcp_targets(spec):
        verb = "starts" if server.transport == "stdio" else "reaches"
        line = Text(f"  mcp server {server.name}: {verb} ", style="dim")
        line.append(server.describe(), style="bold")
        if server.auth is not None:
            line.append(f" ({_oauth_state(server)})", style="dim")
        if server.protocol != "auto":  # the default needs no word: the newest the server offers
            line.append(f" (protocol {server.protocol})", style="dim")
        console.print(line, highlight=False)
    for agent, key, prompt in mcp_prompt_uses(spec):
        line = Text(f"  {agent} {key}: from ", style="dim")
        line.append(redact_text(prompt.describe()), style="bold")
        console.print(line, highlight=False)


def _shown(key: str, value: Any) -> Any:
    """The value as displayed: secrets masked."""
    if value is None:
        return None
    return redact({key: value})[key]


def config_command(args: argparse.Namespace, console: Console, errors: Console) -> int:
    """The effective configuration and where each value comes from."""
    _config, sources = explain_config()
    values = {key: (_shown(key, value), source) for key, (value, source) in sorted(sources.values.items())}
    if args.json:
        payload: dict[str, Any] = {
            "file": sources.file,
            "values": {key: {"value": value, "source": source} for key, (value, source) in values.items()},
        }
        console.out(json.dumps(payload, indent=2, ensure_ascii=False, default=str), highlight=False)
        return EXIT_OK
    table = Table(title=f"configuration (file: {sources.file or 'none'})", title_justify="left")
    table.add_column("key", no_wrap=True, style="bold")
    table.add_column("value")
    table.add_column("source", no_wrap=True)
    for key, (value, source) in values.items():
        shown = json.dumps(value, ensure_ascii=False, default=str)
        table.add_row(key, shown, Text(source, style="dim" if source == "default" else "cyan"))
    console.print(table)
    overrides = [name for name in _CLIENT_ENV if os.environ.get(name)]
    for name in overrides:
        value = _shown("api_key" if name == "OPENAI_API_KEY" else name, os.environ[name])
        console.print(Text(f"{name}={value}: {_CLIENT_ENV[name]}", style="cyan"))
    return EXIT_OK


_CLIENT_ENV = {
    "OPENAI_BASE_URL": "overrides provider.base_url",
    "OPENAI_API_KEY": "overrides provider.api_key",
    "JIANMU_MODEL": "overrides models.default",
}
