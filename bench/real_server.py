"""The calculator agent on llama.cpp's real HTTP server vs the embedded model, same weights.

    python bench/real_server.py [--protocols native json text auto embedded] [--verbose]
                                [--markdown]

Ten arithmetic questions of the main job's kind (`What is 25 * 4 + 10?`) go through the
calculator agent (`presets/react.yaml`, loaded with `load_agent`) at temperature 0: once per
tool protocol over HTTP, against xllamacpp's `Server` serving the pulled SmolLM2-135M weights on
127.0.0.1 with the GGUF's Jinja chat template (`jianmu_like.testing._llama_server`), and once on
the embedded path (the same weights in-process, `LlamaCppProvider`). A question counts as
correct when the final answer contains the value as a whole number ("72.75" is not 72); the
calculator column counts questions where the calculator was called. `--markdown` prints the
table of bench/RESULTS.md. Needs `pip install -e '.[local]'` and pulled weights. Run by hand
(never collected by pytest); about a minute per protocol on one core.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

QUESTIONS: tuple[tuple[str, str], ...] = (
    ("What is 25 * 4 + 10?", "110"),
    ("What is 17 * 23?", "391"),
    ("What is 1234 + 5678?", "6912"),
    ("What is (15 + 27) * 3?", "126"),
    ("What is 144 / 12 + 7?", "19"),
    ("What is 99 * 99?", "9801"),
    ("What is 500 - 123 * 2?", "254"),
    ("What is 2 ** 10?", "1024"),
    ("What is 36 * 12 - 100?", "332"),
    ("What is 7 * 8 * 9?", "504"),
)
PROTOCOLS = ("native", "json", "text", "auto", "embedded")
PRESET = Path(__file__).resolve().parents[1] / "presets" / "react.yaml"


def _isolate() -> None:
    """Built-in defaults only (no project or user configuration file), patient calls."""
    empty = Path(tempfile.mkdtemp(prefix="jianmu-bench-")) / "jianmu.yaml"
    empty.write_text("{}\n", encoding="utf-8")
    os.environ["JIANMU_CONFIG"] = str(empty)
    os.environ.setdefault("JIANMU__LLM__TIMEOUT", "300")
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "JIANMU_MODEL"):
        os.environ.pop(name, None)


def answer_has(answer: str, expected: str) -> bool:
    """The value as a whole number: "110" and "110.0" count, "72.75" does not count for 72."""
    flat = answer.replace(",", "")
    return any(float(n) == float(expected) for n in re.findall(r"\d+(?:\.\d+)?", flat))


@dataclass
class Row:
    protocol: str
    correct: int = 0
    called: int = 0
    seconds: float = 0.0


async def run_protocol(protocol: str, base_url: str | None, verbose: bool) -> Row:
    from jianmu_like import ModelClient, human, load_agent
    from jianmu_like.models import weights
    from jianmu_like.models._local_provider import LlamaCppProvider

    if protocol == "embedded":
        spec = weights.spec_of(None)
        path = weights.local_model_path()
        assert path is not None
        client = ModelClient(
            LlamaCppProvider(path, chat_format=spec.chat_format, system_role=spec.system_role),
            model=f"local/{spec.name}",
        )
    else:
        assert base_url is not None
        client = ModelClient.resolve(base_url=base_url, api_key="none", tool_protocol=protocol)  # type: ignore[arg-type]
    row = Row(protocol)
    async with client:
        for question, expected in QUESTIONS:
            agent = load_agent(PRESET, model_client=client)
            start = time.perf_counter()
            result = await agent.run(input_data={"task": question, "messages": [human(question)]})
            row.seconds += time.perf_counter() - start
            calls = [c.name for m in result.state.messages for c in (m.tool_calls or ())]
            answer = result.final_answer or ""
            ok = result.status == "success" and answer_has(answer, expected)
            row.correct += ok
            row.called += "calculator" in calls
            if verbose:
                mark = "ok " if ok else "BAD"
                print(f"  {protocol:8} {mark} {question!r} calls={calls} -> {answer[:80]!r}", flush=True)
    return row


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--protocols", nargs="+", default=list(PROTOCOLS), choices=PROTOCOLS)
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    _isolate()
    from jianmu_like.testing._llama_server import LlamaHTTPServer, unavailable

    problem = unavailable()
    if problem is not None:
        print(f"cannot run: {problem}", file=sys.stderr)
        return 2
    rows: list[Row] = []
    with LlamaHTTPServer() as server:
        for protocol in args.protocols:
            url = None if protocol == "embedded" else server.base_url
            rows.append(await run_protocol(protocol, url, args.verbose))
            row = rows[-1]
            print(
                f"{row.protocol:8} correct {row.correct}/10, calculator called {row.called}/10, "
                f"{row.seconds / len(QUESTIONS):.1f} s/question",
                flush=True,
            )
    if args.markdown:
        print("\n| SmolLM2-135M, calculator agent | correct | calculator called | s/question |")
        print("|---|---|---|---|")
        for row in rows:
            where = "embedded (in-process)" if row.protocol == "embedded" else f"`{row.protocol}` over HTTP"
            print(f"| {where} | {row.correct}/10 | {row.called}/10 | {row.seconds / len(QUESTIONS):.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
