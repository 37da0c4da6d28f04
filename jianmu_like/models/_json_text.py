"""Reading JSON a model wrote: linear in the text, bounded in what it builds.

A model's reply is untrusted input: a server (or a prompt injection steering the model) can send
16 KB of `{`, objects nested 100,000 deep, a 5,000-digit integer or megabytes of one string. Every
place that reads JSON out of model text goes through this module, so the rules hold everywhere:

- `json_objects(text)` finds the objects embedded in prose (fences, text around them, Python
  quoting) with ONE left-to-right scan that tracks strings and brace depth, and decodes only the
  balanced spans it found — a bounded number of them, within a bounded amount of work — instead of
  rescanning from every `{` (which made 16 KB of `{` take 25 s).
- `loads_arguments(text)` decodes a tool call's argument text, and `value_problem` checks a decoded
  value, against the same limits: nesting depth, integer size, total size. A value over a limit is
  an error the model reads ("nested deeper than 64 levels"), never a `RecursionError` or the
  `ValueError` of Python's int-str conversion limit escaping into the run.
"""

from __future__ import annotations

import ast
import json
import math
import re
from array import array
from collections.abc import Iterator
from itertools import accumulate
from typing import Any

from ..errors import JianmuError

MAX_DEPTH = 64
"""Deepest nesting of objects and arrays accepted in tool arguments (as for agent files): far more
than any tool needs, and shallow enough for every recursive consumer (repr, pydantic, jsonschema,
json.dumps in events and checkpoints) to stay far from Python's recursion limit."""
MAX_INT_DIGITS = 4300
"""Longest integer accepted, in decimal digits: Python's default int-str conversion limit, beyond
which the value could not even be written back into an event or a checkpoint."""
MAX_ARGUMENTS_CHARS = 1_000_000
"""Longest tool-argument text (or total of an arguments object's strings): well beyond any model's
output per reply, so only a hostile server reaches it."""
KEPT_INVALID_CHARS = 10_000
"""How much of unreadable argument text is kept in the history (and sent back to the model)."""
MAX_CANDIDATES = 256
"""Balanced spans `json_objects` tries to decode per text: a reply holds a handful of objects."""
_WORK_FACTOR = 4
"""A safety bound on the characters `json_objects` hands to decoders, as a multiple of the text's
length (the spans it tries never overlap, so they add up to the text's length at most)."""
_WRAPPING = 2
"""Levels a tool-protocol reply wraps around a call's arguments (`{"tool_call": {"arguments":`)."""

_MAX_INT_BITS = math.ceil(MAX_INT_DIGITS * math.log2(10))
_TRYABLE = MAX_DEPTH + _WRAPPING
_TOO_DEEP = _TRYABLE + 1
# Possessive quantifiers (`*+`, `++`: Python 3.11) everywhere: a pattern that fails never
# backtracks into what it matched, so each of these is linear however the text is built.
_DOUBLE = r'"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+'
_SINGLE = r"'[^'\\\n]*+(?:\\.[^'\\\n]*+)*+"
_STRINGS = {'"': re.compile(_DOUBLE + '("?)'), "'": re.compile(_SINGLE + "('?)")}
"""A string from its opening quote; group 1 is the closing quote (empty: cut by a newline or the end)."""
_LEAF = re.compile(rf"""\{{(?:[^{{}}"']++|{_DOUBLE}"|{_SINGLE}')*+\}}""")
"""An object holding no other object: one regex step however many strings it has."""
_PLAIN = r""""[^"\\\n{}]*+(?:\\[^\n{}][^"\\\n{}]*+)*+"|'[^'\\\n{}]*+(?:\\[^\n{}][^'\\\n{}]*+)*+'"""
"""A string without braces: inside an opening run it cannot change which `{` opens an object."""
_PROSE_QUOTE = r"""(?<=[^{\[,:(\s])["']"""
"""A quote right after a word ("it's", 'say "hi"'): never a string's start, so not a step."""
_TOKEN = re.compile(
    rf"""(?P<leaves>(?:{_LEAF.pattern}[^{{}}"']*+)++)|(?P<opens>\{{(?:[^{{}}"']++|\{{++|{_PLAIN}|{_PROSE_QUOTE})*+)|\}}++"""
    rf"""|(?P<string>(?:(?<=[{{\[,:(])|(?<=[{{\[,:(]\s))(?:{_DOUBLE}"?|{_SINGLE}'?))|(?<![^{{\[,:(\s])["']"""
)
"""What the scan steps over at once: a run of sibling objects holding no other object; a run of
openings (`{`, text and strings without braces: `{"a": 1, "b": [{"c": {`), whose every `{` opens
an object; a run of `}`; a string right after `{ [ , : (` (at most one space between: the usual
case, settled by the pattern alone); any other quote that may start a string (settled by
`_opens_string`)."""
_SPAN, _LEAVES, _TOO_DEEP_SPAN = 0, 1, 2
"""What a recorded span is (its two low bits): one object, a run of flat objects, or an object
nested too deep to decode, which only hides the spans inside it."""
_ONE_MORE = (1).__add__
"""From the gap between two braces of an opening run to the step between their positions."""
_VALUE_STARTS = frozenset("{[,:(")
_SPACE = frozenset(" \t\r\n")
_JSON_WORDS = re.compile(r"\b(true|false|null)\b")
_PYTHON_WORDS = {"true": "True", "false": "False", "null": "None"}


class JSONTextError(ValueError, JianmuError):
    """Argument text that cannot be used; the message says why, for the model to read."""


def _bounded_int(digits: str) -> int:
    """`parse_int` for `json.loads`: the limit checked first, with a message for the model."""
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise JSONTextError(f"a number has more than {MAX_INT_DIGITS} digits")
    return int(digits)


_DECODER = json.JSONDecoder(parse_int=_bounded_int)
"""Built once, as `json.loads` keeps its default decoder (`json.loads(..., parse_int=...)` builds
a decoder and its scanner on every call: every tool call's arguments pass here)."""


def value_problem(value: Any, *, max_depth: int = MAX_DEPTH, max_chars: int | None = None) -> str | None:
    """What makes `value` unusable as decoded JSON (None: nothing): nesting deeper than
    `max_depth`, an integer over `MAX_INT_DIGITS`, strings longer than `max_chars` in all, a key
    that is not a string or a value of a non-JSON type (sets, tuples, bytes from Python literals).
    Iterative, so any depth is safe to check."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    chars = 0
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > max_depth:
                return f"nested deeper than {max_depth} levels"
            if isinstance(item, dict):
                for key, sub in item.items():
                    if not isinstance(key, str):
                        return "an object key is not a string"
                    chars += len(key)
                    stack.append((sub, depth + 1))
            else:
                stack.extend((sub, depth + 1) for sub in item)
        elif isinstance(item, str):
            chars += len(item)
        elif isinstance(item, int) and not isinstance(item, bool):
            if item.bit_length() > _MAX_INT_BITS:
                return f"a number has more than {MAX_INT_DIGITS} digits"
        elif item is not None and not isinstance(item, bool | float):
            return f"{type(item).__name__} is not a JSON value"
        if max_chars is not None and chars > max_chars:
            return f"too long (more than {max_chars:,} characters)"
    return None


def loads_bounded(text: str, subject: str) -> Any:
    """The JSON value of `text` within the limits (`MAX_DEPTH`, `MAX_INT_DIGITS`); otherwise a
    `JSONTextError` whose message starts with `subject` ("arguments are", "request body is"):
    tool arguments from a model and the server's request bodies are read by this one rule."""
    try:
        value = _DECODER.decode(text)
    except JSONTextError as exc:
        raise JSONTextError(f"{subject} not usable: {exc}") from None
    except json.JSONDecodeError as exc:
        raise JSONTextError(f"{subject} not valid JSON ({exc.msg} at position {exc.pos})") from None
    except RecursionError:
        raise JSONTextError(f"{subject} not usable: nested deeper than {MAX_DEPTH} levels") from None
    # Decoded JSON has string keys, JSON types and bounded integers already: only its depth is
    # left to check, and text with fewer brackets than the limit cannot nest past it (the usual
    # tool call: no walk over the value on every call).
    if text.count("{") + text.count("[") > MAX_DEPTH:
        problem = value_problem(value)
        if problem is not None:
            raise JSONTextError(f"{subject} not usable: {problem}")
    return value


def loads_arguments(text: str) -> Any:
    """The JSON value of a tool call's argument text; `JSONTextError` when it is not valid JSON
    or exceeds a limit (`MAX_ARGUMENTS_CHARS`, `MAX_DEPTH`, `MAX_INT_DIGITS`)."""
    if len(text) > MAX_ARGUMENTS_CHARS:
        raise JSONTextError(
            f"arguments are not usable: too long ({len(text):,} characters, at most {MAX_ARGUMENTS_CHARS:,})"
        )
    return loads_bounded(text, "arguments are")


def kept_arguments(text: str) -> str:
    """Unreadable argument text as kept in the history: cut to `KEPT_INVALID_CHARS`."""
    if len(text) <= KEPT_INVALID_CHARS:
        return text
    return text[:KEPT_INVALID_CHARS] + f"…[cut: {len(text):,} characters in all]"


# ---------------------------------------------------------------------- objects in prose
def _opens_string(text: str, at: int) -> bool:
    """Whether the quote at `at` starts a string: in JSON and Python literals a string only
    follows `{ [ , :` (or `(`), while quotes in prose ("it's", 'say "hi"') follow words."""
    i = at - 1
    while i >= 0 and text[i] in _SPACE:  # each quote walks back over its own run of spaces only
        i -= 1
    return i >= 0 and text[i] in _VALUE_STARTS


class _Scan:
    """One left-to-right pass over a text, finding balanced `{...}` spans and decoding them.

    Open braces are kept as machine integers (`array`); a run of `{` or `}`, a whole string, a
    run of openings and a run of objects holding no other object (`_TOKEN`) are one regex step
    each, so a million `{` cost a few C-level calls, not a million Python steps. A span is
    recorded only when it closes no deeper than the decoders may go; a closing run past that
    depth is popped in bulk (and recorded as one span too deep to try). The spans of an
    outermost object are tried as soon as it closes, outermost first; spans inside a `{` never
    closed wait for the end.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.width = len(text) + 1  # a span is stored as start * width + end
        self.tries = 0
        self.budget = _WORK_FACTOR * len(text) + 4096
        self.done = False

    def objects(self) -> Iterator[dict[str, Any]]:
        text = self.text
        pos, stop = text.find("{"), text.rfind("}") + 1
        if pos < 0 or stop <= pos:
            return  # no brace that could close
        starts = array("q")  # positions of the open braces, innermost last
        heights = array("b")  # how deep each open brace's contents nest so far (capped)
        spans = array("q")  # closed spans shallow enough to decode, not yet tried
        search, width = _TOKEN.search, self.width
        while not self.done:
            match = search(text, pos, stop)
            if match is None:
                break
            i, pos = match.span()
            ch = text[i]
            kind = match.lastgroup
            if kind == "string":  # closed, or cut by a newline (a JSON string cannot hold one)
                if not starts:
                    pos = i + 1  # outside every object a quote is prose
                elif pos >= stop:  # never closed: no brace open now can close
                    pos = self._restart(starts, heights, i)
            elif kind == "leaves":
                spans.append(((i * width + pos) << 2) | _LEAVES)
                if not starts:
                    yield from self._try(spans)
                elif heights[-1] < 2:
                    heights[-1] = 2
            elif kind == "opens":
                count = text.count("{", i, pos)
                if count == pos - i:  # only braces
                    starts.extend(range(i, pos))
                else:  # the position of each `{`, summed up in C
                    steps = map(_ONE_MORE, map(len, text[i:pos].split("{")[1:-1]))
                    starts.extend(accumulate(steps, initial=i))
                heights.frombytes(bytes((1,)) * count)
            elif ch == "}":
                for end in range(i + 1, pos + 1):  # innermost first
                    if not starts:
                        break
                    height = heights.pop()
                    start = starts.pop()
                    if height > _TRYABLE:  # so is every span this run still closes: pop them at once
                        extra = min(pos - end, len(starts))
                        if extra:
                            start = starts[-extra]
                            del starts[-extra:]
                            del heights[-extra:]
                        spans.append(((start * width + end + extra) << 2) | _TOO_DEEP_SPAN)
                        if heights:
                            heights[-1] = _TOO_DEEP
                    else:
                        spans.append(((start * width + end) << 2) | _SPAN)
                        if heights and heights[-1] <= height:
                            heights[-1] = height + 1
                    if not starts:  # an outermost span closed: try what it holds now
                        yield from self._try(spans)
                    if height > _TRYABLE:
                        break
            elif starts and _opens_string(text, i):
                string = _STRINGS[ch].match(text, i, stop)
                assert string is not None  # every pattern matches its opening quote
                pos = string.end()
                if not string.group(1) and pos >= stop:  # never closed: no brace open now can close
                    pos = self._restart(starts, heights, i)
                # else closed, or cut by a newline (a JSON string cannot hold one): go on after it
        yield from self._try(spans)

    @staticmethod
    def _restart(starts: array[int], heights: array[int], quote: int) -> int:
        """Where to go on after a string that never closes, opened at `quote`: the braces open
        now can never close, and, as when every `{` was read on its own, the text after the
        quote is read afresh (a `{"answer": "` cut off does not hide an object after it). At
        most two strings per text can run to its end (one per kind of quote), so this rereads
        the text at most twice."""
        del starts[:]
        del heights[:]
        return quote + 1

    def _try(self, spans: array[int]) -> Iterator[dict[str, Any]]:
        """Decode `spans` outermost first. A span tried (decoded or not) or too deep to try
        covers the spans inside it: they are parts of it, not objects of their own."""
        text, width = self.text, self.width
        resume = 0
        for code in sorted(spans):
            kind = code & 3
            start, end = divmod(code >> 2, width)
            if start < resume or self.done:
                continue
            resume = end
            if kind == _TOO_DEEP_SPAN:
                continue
            leaves = _LEAF.finditer(text, start, end) if kind == _LEAVES else ((start, end),)
            for leaf in leaves:
                first, last = leaf if isinstance(leaf, tuple) else leaf.span()
                if self.tries >= MAX_CANDIDATES or last - first > self.budget:
                    self.done = True
                    break
                self.tries += 1
                self.budget -= last - first
                value = _decode(text[first:last])
                if value is not None:
                    yield value
        del spans[:]


def _relaxed(snippet: str) -> Any:
    """Python-literal decoding for single-quoted objects (`true`/`false`/`null` mapped)."""
    try:
        return ast.literal_eval(_JSON_WORDS.sub(lambda m: _PYTHON_WORDS[m.group(1)], snippet))
    except Exception:  # SyntaxError, ValueError, TypeError (unhashable keys), RecursionError...
        return None


def _decode(snippet: str) -> dict[str, Any] | None:
    try:
        value = _DECODER.decode(snippet)
    except JSONTextError:
        return None  # over a limit: no other reading would be within it
    except (ValueError, RecursionError):
        value = _relaxed(snippet)
    if not isinstance(value, dict) or value_problem(value, max_depth=MAX_DEPTH + _WRAPPING) is not None:
        return None
    return value


_FENCE = re.compile(r"```[a-zA-Z]*\n?|```")


def unfenced(text: str) -> str:
    """`text` without Markdown code fences (models wrap JSON in ```json ... ```): the one rule
    for every reader of model text (structured output, the JSON and text tool protocols)."""
    return _FENCE.sub("", text)


def json_objects(text: str) -> Iterator[dict[str, Any]]:
    """Each top-level JSON (or Python-literal) object found in `text`, in order.

    A balanced `{...}` that does not decode, or nests deeper than the limits, is skipped whole
    (as before this reader was made linear); a `{` that never closes is skipped alone, so what
    follows it still counts (16,000 `{` before a call do not hide it). Linear time (`_Scan`):
    the spans tried never overlap, and at most `MAX_CANDIDATES` of them are tried.
    """
    return _Scan(text).objects()
