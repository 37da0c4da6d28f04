"""Hostile replies: how long reading one takes, for every reader of model text.

    python bench/json_scan.py [--sizes 16384,262144,1048576] [--repeat 3] [--inputs 'all {,blank']

Each adversarial reply (all `{`, `{"a":` repeated, unterminated strings, mixes, deep nesting,
blank lines for the text protocol's line-anchored patterns) goes through each reader a run can
meet: `json_objects` (the shared scanner), the json and text protocol readers, the answer check,
`OutputSchema.parse_text` (the structured text level) and `ToolCall.from_raw` (native tool-call
arguments). The table prints the worst of `--repeat` runs, in milliseconds, and the peak memory
any reader allocated (tracemalloc, in a separate pass). Before issue 18 a reply of 12,000 `{` took 16-19 s in
the answer check alone, and the time grew with the square of the length.

Run by hand only (never collected by pytest). `PYTHONPATH=<other checkout>` times another version.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from collections.abc import Callable

from jianmu_like._base.config import AnswerCheckConfig

try:
    from jianmu_like.models._json_text import json_objects
except ImportError:  # a checkout from before issue 18, for comparison
    from jianmu_like.models._text_protocol import json_objects  # type: ignore[attr-defined,no-redef]
from jianmu_like.models._messages import Message, ToolCall
from jianmu_like.models._react_text import read_react_reply
from jianmu_like.models._structured import OutputSchema
from jianmu_like.models._text_protocol import read_reply
from jianmu_like.nodes._answer_check import AnswerCheck


def _fill(unit: str, size: int, head: str = "", tail: str = "") -> str:
    return head + unit * max(1, (size - len(head) - len(tail)) // len(unit)) + tail


INPUTS: dict[str, Callable[[int], str]] = {
    "all {": lambda n: "{" * n,
    '{"a": repeated': lambda n: _fill('{"a":', n),
    "unterminated string": lambda n: _fill("x", n, head='{"answer": "'),
    '{" repeated': lambda n: _fill('{"', n),
    "{' repeated": lambda n: _fill("{'", n),
    '{"a": [ repeated': lambda n: _fill('{"a": [', n),
    "{} in an open {": lambda n: _fill("{}", n, head="{"),
    "deep balanced, broken at the end": lambda n: _fill('{"a":', n // 2) + "1 x" + "}" * (n // 10),
    "nested 60, failing late": lambda n: _fill('{"a":' * 60 + "1" + "}" * 60 + "x}", n, head="{"),
    "{ then a call": lambda n: _fill("{", n, tail='{"tool": "search", "arguments": {"q": "x"}}'),
    "blank lines": lambda n: "\n" * n,
    "Action: and spaces": lambda n: _fill(" ", n, head="Action: a", tail="b"),
    "deep arguments": lambda n: "[" * (n // 2) + "]" * (n // 2),
    "long integer": lambda n: '{"x": ' + "9" * (n - 7) + "}",
    "{x repeated, then }": lambda n: _fill("{x", n, head="{a '", tail="}"),
    "quote-dense: {a'{b\"": lambda n: _fill("{a'{b\"", n, tail="}"),
    "quote-dense: { '{'": lambda n: _fill("{ '{'", n, tail="}"),
}


def _ids() -> str:
    return "call_bench"


def _readers() -> dict[str, Callable[[str], object]]:
    check = AnswerCheck("check", AnswerCheckConfig(), tool_names=lambda: ["search"])
    schema = OutputSchema({"type": "object"})
    history = [Message(role="user", content="question")]

    def structured(text: str) -> object:
        try:
            return schema.parse_text(text)
        except ValueError as exc:
            return exc

    return {
        "json_objects": lambda text: list(json_objects(text)),
        "json protocol": lambda text: read_reply(text, _ids),
        "text protocol": lambda text: read_react_reply(text, _ids),
        "answer check": lambda text: check.problem(text, [*history, Message(role="assistant", content=text)]),
        "structured text": structured,
        "native arguments": lambda text: ToolCall.from_raw("call_1", "search", text),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="16384,262144,1048576", help="reply sizes in characters")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--inputs", default="", help="only inputs whose name contains one of these (comma-separated)"
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    readers = _readers()
    heading = f"slowest reader and peak allocation at {sizes[-1] // 1024} KB"
    print(f"| input | {' | '.join(f'{s // 1024} KB' for s in sizes)} | {heading} |")
    print(f"|---|{'---|' * len(sizes)}---|")
    wanted = [w for w in args.inputs.split(",") if w]
    for name, make in INPUTS.items():
        if wanted and not any(w in name for w in wanted):
            continue
        cells: list[str] = []
        slowest = ""
        for size in sizes:
            text = make(size)
            worst, which, peak = 0.0, "", 0
            for reader_name, read in readers.items():
                for _ in range(args.repeat):
                    started = time.perf_counter()
                    read(text)
                    elapsed = time.perf_counter() - started
                    if elapsed > worst:
                        worst, which = elapsed, reader_name
                tracemalloc.start()  # a separate pass: tracing slows the reader down
                read(text)
                peak = max(peak, tracemalloc.get_traced_memory()[1])
                tracemalloc.stop()
            cells.append(f"{worst * 1000:.1f} ms")
            slowest = f"{which}; peak memory {peak / 2**20:.1f} MiB"
        print(f"| {name} | {' | '.join(cells)} | {slowest} |", flush=True)


if __name__ == "__main__":
    main()
