"""An answer's markdown as safe HTML, rendered on the server (the console inserts it as is).

A model's answer is untrusted text: it may quote a web page, a tool's output or a prompt
injection. It is parsed with markdown-it-py (CommonMark plus tables and strikethrough; raw HTML
in the text is *not* passed through, it is shown as text) and the result is sanitised with nh3
(an allow-list of tags and attributes; links only to http, https and mailto, opened with
`rel="noopener noreferrer"`; no images, whose remote addresses the console's CSP would refuse
anyway). Rendering here rather than in the page keeps the console free of third-party script and
of any CDN, and gives every client the same HTML; the page's CSP (no inline script, no inline
event handler) is a second wall behind the sanitiser, not the first.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from typing import Any

import nh3
from markdown_it import MarkdownIt

from .._base.redact import redact

ALLOWED_TAGS = frozenset(
    {
        "a", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr",
        "li", "ol", "p", "pre", "s", "strong", "table", "tbody", "td", "th", "thead", "tr", "ul",
    }
)  # fmt: skip
"""What markdown produces, less images and raw HTML."""
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "td": {"align"}, "th": {"align"}}
URL_SCHEMES = frozenset({"http", "https", "mailto"})
MAX_RENDERED_CHARS = 200_000
"""Longer answers are not rendered (`answer_html` is None: clients show the text). Rendering is
pure Python on the server's event loop, a few milliseconds for a usual answer; the bound keeps a
huge one from stalling every other run's stream."""


@cache
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False, "linkify": False}).enable(["table", "strikethrough"])


def render_markdown(text: str) -> str:
    """`text` (markdown) as sanitised HTML: only the tags above, only safe links."""
    html = _parser().render(text)
    return nh3.clean(
        html,
        tags=set(ALLOWED_TAGS),
        attributes={tag: set(names) for tag, names in ALLOWED_ATTRIBUTES.items()},
        url_schemes=set(URL_SCHEMES),
        link_rel="noopener noreferrer",
    )


def answer_html(answer: str | None) -> str | None:
    """The HTML a client shows for a run's final answer: None without an answer, or for one
    longer than `MAX_RENDERED_CHARS`."""
    if answer is None or len(answer) > MAX_RENDERED_CHARS:
        return None
    return render_markdown(answer)


def shown_messages(messages: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Saved messages as the server answers them (a thread, a saved version): redacted like every
    answer, and each assistant message with text gets `html`, its markdown as `answer_html`
    renders a run's final answer (None when too long), so a reopened conversation's answers look
    as they did when they streamed."""
    shown: list[dict[str, Any]] = []
    for message in messages:
        item = redact(message)
        content = item.get("content")
        if item.get("role") == "assistant" and isinstance(content, str) and content:
            item["html"] = answer_html(content)
        shown.append(item)
    return shown
