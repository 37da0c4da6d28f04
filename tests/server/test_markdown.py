"""The answer's markdown as HTML (server/_markdown.py): what markdown means is kept, everything a
hostile answer could smuggle in (raw HTML, scripts, event handlers, javascript:/data:/vbscript:
links in any spelling, images reaching other hosts) is not."""

from __future__ import annotations

import re

import pytest

from jianmu_like.server._markdown import MAX_RENDERED_CHARS, answer_html, render_markdown


def test_markdown_keeps_its_meaning() -> None:
    html = render_markdown("**110** and *x*, `code`, ~~gone~~\n\n- a\n- b\n\n| h |\n|---|\n| c |\n")
    for fragment in (
        "<strong>110</strong>",
        "<em>x</em>",
        "<code>code</code>",
        "<s>gone</s>",
        "<li>a</li>",
        "<td>c</td>",
    ):
        assert fragment in html, html
    link = render_markdown('[docs](https://example.org/a?b=1 "title")')
    assert (
        link
        == '<p><a href="https://example.org/a?b=1" title="title" rel="noopener noreferrer">docs</a></p>\n'
    )
    assert 'href="mailto:a@example.org"' in render_markdown("[mail](mailto:a@example.org)")


@pytest.mark.parametrize(
    "hostile",
    [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        '<a href="javascript:alert(1)">x</a>',
        "<iframe src=https://example.org></iframe>",
        "<svg onload=alert(1)>",
        "<style>body{display:none}</style>",
        "[x](javascript:alert(1))",
        "[x](JaVaScRiPt:alert(1))",
        "[x](java\tscript:alert(1))",
        "[x](&#106;avascript:alert(1))",
        "[x](vbscript:msgbox(1))",
        "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
        "<javascript:alert(1)>",
        "![x](https://attacker.example/pixel.png)",
        "![x](data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=)",
        '[x](https://example.org "a" onclick="alert(1)")',
        "<div onclick=alert(1)>x</div>",
    ],
)
def test_nothing_hostile_survives(hostile: str) -> None:
    html = render_markdown(hostile)
    tags = re.findall(r"<\s*([a-zA-Z0-9]+)", html)
    assert set(tags) <= {"p", "a", "em", "strong", "code"}, html
    assert not re.search(r"<[^>]*\son\w+\s*=", html), html  # no event handler attribute
    for href in re.findall(r'<a\s[^>]*href="([^"]*)"', html):  # in a tag, not in escaped text
        assert href.startswith(("https:", "http:", "mailto:")), html
    assert "<img" not in html and "<script" not in html and "<iframe" not in html


def test_a_huge_answer_renders() -> None:
    text = "**bold** " * 20_000 + "[" * 5_000 + "x" + "]" * 5_000
    html = render_markdown(text)
    assert html.count("<strong>") == 20_000


def test_an_answer_too_long_to_render_is_left_to_the_text() -> None:
    assert answer_html(None) is None
    assert answer_html("**x**") == "<p><strong>x</strong></p>\n"
    assert answer_html("x" * MAX_RENDERED_CHARS) is not None
    assert answer_html("x" * (MAX_RENDERED_CHARS + 1)) is None
