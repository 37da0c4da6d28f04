"""The plain-install checks of `.ci/plain_install.sh`, run by the python of a fresh venv that has
`pip install .` and nothing else (no extra, no dev package): what a new user gets.

It uses only what that venv has (the standard library and the package's own dependencies, the
`openai` client among them), and only the commands a user types: `jianmu-like mock` (the
project's scripted OpenAI-compatible server) as the model, `jianmu-like run` with each tool
protocol, `jianmu-like serve` answering `/v1/chat/completions`. Every wait is bounded. Each check
prints one line; the first failure stops it with exit status 1 and says what went wrong.

Why: CI's own venv has every extra and the dev tools, so a base module importing a package only
`dev` brings (httpx, issue 32) passed CI and broke every plain install at its first JSON-protocol
call. deptry (in .ci/run) checks the declarations; this runs the code.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import pkgutil
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRESET = str(ROOT / "presets" / "react.yaml")
QUESTION = "What is 25 * 4 + 10?"
BIN = Path(sys.executable).parent
JIANMU = str(BIN / "jianmu-like")
TIMEOUT = 120.0
"""Seconds for any one command (a run against the mock takes about one)."""

# Packages that only an extra or `dev` brings: none may be importable in a plain install, or this
# venv would not show what a user's does.
NOT_PLAIN = ("httpx", "pytest", "psycopg", "dbos", "xllamacpp", "llama_cpp", "playwright", "tiktoken")
NOT_PLAIN += ("pydantic_evals", "a2a", "ag_ui")
NOT_PLAIN_SDK = "opentelemetry.sdk"
EXTRA_PACKAGES = {"psycopg", "psycopg_pool", "dbos", "opentelemetry", "xllamacpp", "llama_cpp", "tiktoken"}
EXTRA_PACKAGES |= {"pydantic_evals", "a2a", "ag_ui"}

CALL = {"name": "calculator", "arguments": {"expression": "25 * 4 + 10"}}
JSON_CALL = json.dumps({"tool": CALL["name"], "arguments": CALL["arguments"]})
REPLIES = {
    # The model's side of one run per protocol: a calculator call, then the answer.
    "native": [{"tool_calls": [CALL]}, "The result is 110."],
    "auto": [{"tool_calls": [CALL]}, "The result is 110."],
    "json": [JSON_CALL, json.dumps({"answer": "The result is 110."})],
    "text": [
        "Thought: I use the calculator.\nAction: calculator\nAction Input: " + json.dumps(CALL["arguments"]),
        "Thought: I have it.\nFinal Answer: The result is 110.",
    ],
}


class CheckFailed(Exception):
    pass


def ok(what: str) -> None:
    print(f"plain install: ok: {what}", flush=True)


def user_env(**extra: str) -> dict[str, str]:
    """The environment of a user with no configuration: no OPENAI_*/JIANMU_* from CI."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "JIANMU"))}
    env["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="plain-xdg-")  # no user configuration file
    env.update(extra)
    return env


def check_no_extra_installed() -> None:
    present = [name for name in NOT_PLAIN if importlib.util.find_spec(name) is not None]
    try:
        if importlib.util.find_spec(NOT_PLAIN_SDK) is not None:
            present.append(NOT_PLAIN_SDK)
    except ModuleNotFoundError:
        pass
    if present:
        raise CheckFailed(f"not a plain install: {', '.join(present)} importable")
    ok("no extra and no dev package installed")


def check_every_module_imports() -> None:
    """Each module imports, or fails naming the extra it needs (never a bare missing package)."""
    import jianmu_like

    names, named = 0, []
    for info in pkgutil.walk_packages(jianmu_like.__path__, "jianmu_like."):
        if info.name.rsplit(".", 1)[-1] == "__main__":
            continue  # runs the command line
        names += 1
        try:
            importlib.import_module(info.name)
        except Exception as exc:  # an ImportError, or a feature's own refusal naming its extra
            root = (getattr(exc, "name", None) or "").split(".")[0]
            if isinstance(exc, ImportError) and root not in EXTRA_PACKAGES:
                why = f"{info.name} needs {exc.name!r}, which no dependency declares: {exc}"
                raise CheckFailed(why) from exc
            if "jianmu_like[" not in str(exc):
                raise CheckFailed(f"{info.name}: a missing extra that is not named: {exc!r}") from exc
            named.append(info.name)
    ok(f"{names} modules import (without their extra, {', '.join(named)} name it)")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def first_line(process: subprocess.Popen[str], timeout: float) -> str:
    """The first line `process` prints, waited for at most `timeout` seconds."""
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            raise CheckFailed(f"{process.args!r} printed nothing in {timeout:.0f} s")
    return process.stdout.readline().strip()


def stop(process: subprocess.Popen[str]) -> str:
    """Stop `process` as Ctrl-C would (bounded, then killed); its standard error."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
    return process.stderr.read() if process.stderr is not None else ""


@contextmanager
def mock(replies: list[object], folder: Path, *, repeat: bool = False) -> Iterator[str]:
    """`jianmu-like mock` serving `replies`; its base URL."""
    path = folder / "replies.json"
    path.write_text(json.dumps({"repeat": repeat, "replies": replies}), encoding="utf-8")
    process = subprocess.Popen(
        [JIANMU, "mock", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=user_env()
    )
    try:
        url = first_line(process, TIMEOUT)
        if not url.startswith("http://127.0.0.1:"):
            raise CheckFailed(f"jianmu-like mock printed {url!r}, not its URL: {stop(process)}")
        yield url
    finally:
        stop(process)


def jianmu(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            [JIANMU, *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        raise CheckFailed(f"jianmu-like {' '.join(args)} did not end in {TIMEOUT:.0f} s") from exc


def check_protocol(protocol: str, folder: Path) -> None:
    """A ReAct run against the mock with `protocol`: one calculator call (110), the answer, each
    model call made with that protocol (`auto` resolves to native: the mock has function calling)."""
    with mock(REPLIES[protocol], folder) as url:
        env = user_env(OPENAI_BASE_URL=url, OPENAI_API_KEY="none", JIANMU__MODELS__TOOL_PROTOCOL=protocol)
        done = jianmu("run", PRESET, QUESTION, "--json", env=env)
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    outputs = [e["data"].get("output") for e in events if e["type"] == "tool.call.completed"]
    # `reply.completed` names a prompted protocol (json, text); native calls name none.
    protocols = {e["data"].get("tool_protocol") or "native" for e in events if e["type"] == "reply.completed"}
    final = next((e["data"] for e in events if e["type"] == "run.completed"), {})
    expected = "native" if protocol == "auto" else protocol
    answered = final.get("status") == "success" and "110" in str(final.get("final_answer"))
    if done.returncode != 0 or not answered:
        ended = final or "no run.completed"
        raise CheckFailed(f"tool_protocol={protocol}: exit {done.returncode}, {ended}\n{done.stderr[-2000:]}")
    if outputs != ["110"] or protocols != {expected}:
        raise CheckFailed(f"tool_protocol={protocol}: tool outputs {outputs}, protocols {protocols}")
    ok(f"tool_protocol={protocol}: calculator -> 110, answer {final['final_answer']!r}")


def check_serve(folder: Path) -> None:
    """`jianmu-like serve` (its model the mock, through the JSON protocol and so the server probe)
    answers a chat completion from the official openai client."""
    from openai import OpenAI

    port = free_port()
    with mock(REPLIES["json"], folder, repeat=True) as url:
        env = user_env(OPENAI_BASE_URL=url, OPENAI_API_KEY="none", JIANMU__MODELS__TOOL_PROTOCOL="json")
        process = subprocess.Popen(
            [JIANMU, "serve", PRESET, "--port", str(port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            stdin=subprocess.DEVNULL,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + TIMEOUT
            while True:
                if process.poll() is not None:
                    raise CheckFailed(f"serve exited with {process.returncode}: {stop(process)[-2000:]}")
                try:
                    with urllib.request.urlopen(f"{base}/v1/models", timeout=5) as response:
                        if response.status == 200:
                            break
                except OSError:
                    pass
                if time.monotonic() > deadline:
                    raise CheckFailed(f"serve did not answer /v1/models in {TIMEOUT:.0f} s")
                time.sleep(0.2)  # polling a server that is starting: bounded by the deadline
            client = OpenAI(base_url=f"{base}/v1", api_key="none", timeout=TIMEOUT, max_retries=0)
            reply = client.chat.completions.create(
                model="react", messages=[{"role": "user", "content": QUESTION}]
            )
        finally:
            errors = stop(process)
    content = reply.choices[0].message.content or ""
    if "110" not in content:
        raise CheckFailed(f"serve answered {content!r}\n{errors[-2000:]}")
    ok(f"serve: /v1/chat/completions answered {content!r}")


def expect_refusal(what: str, extra: str, args: list[str], env: dict[str, str]) -> None:
    done = jianmu(*args, env=env)
    said = done.stdout + done.stderr
    if done.returncode == 0 or f"[{extra}]" not in said:
        raise CheckFailed(f"{what}: exit {done.returncode}, the `{extra}` extra not named:\n{said[-2000:]}")
    ok(f"{what} names the `{extra}` extra")


def check_extras_are_named(folder: Path) -> None:
    """Each optional feature, asked for in a plain install, names the extra to install."""
    from jianmu_like.checkpoint import open_checkpointer

    try:
        open_checkpointer("postgresql://nobody@127.0.0.1:1/none")
    except Exception as exc:  # the error is the point: which one, and what it says
        if "jianmu_like[postgres]" not in str(exc):
            raise CheckFailed(f"a PostgreSQL store: {type(exc).__name__}: {exc}") from exc
        ok("a PostgreSQL store names the `postgres` extra")
    else:
        raise CheckFailed("a PostgreSQL store opened without psycopg")
    try:
        importlib.import_module("jianmu_like.durable")
    except ImportError as exc:
        if "jianmu_like[durable]" not in str(exc):
            raise CheckFailed(f"jianmu_like.durable: {exc}") from exc
        ok("jianmu_like.durable names the `durable` extra")
    else:
        raise CheckFailed("jianmu_like.durable imported without dbos")
    with mock(REPLIES["native"], folder) as url:
        env = user_env(OPENAI_BASE_URL=url, OPENAI_API_KEY="none")
        expect_refusal("run --otel", "otel", ["run", PRESET, QUESTION, "--otel"], env)
        database = ["--database", "postgresql://nobody@127.0.0.1:1/none"]
        expect_refusal("worker", "durable", ["worker", PRESET, *database], env)
    # No server configured: the embedded model, whose backend is an extra.
    expect_refusal("the embedded model", "local", ["run", PRESET, QUESTION], user_env())
    env = user_env(JIANMU__MODELS__LOCAL_BACKEND="llama_cpp_python")
    expect_refusal("the llama_cpp_python backend", "llama-cpp", ["run", PRESET, QUESTION], env)


def main() -> int:
    os.chdir(tempfile.mkdtemp(prefix="plain-cwd-"))  # the installed package, never the checkout's
    started = time.monotonic()
    try:
        check_no_extra_installed()
        check_every_module_imports()
        with tempfile.TemporaryDirectory() as folder:
            for protocol in ("native", "json", "text", "auto"):
                check_protocol(protocol, Path(folder))
            check_serve(Path(folder))
            check_extras_are_named(Path(folder))
    except CheckFailed as exc:
        print(f"plain install: FAILED: {exc}", file=sys.stderr, flush=True)
        return 1
    print(f"plain install: all checks passed in {time.monotonic() - started:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
