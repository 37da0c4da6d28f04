"""The README's links reach the docs: a landing page whose links lead nowhere is no landing page.

`mkdocs build --strict` (in .ci/run) checks the links between the pages under docs/; README.md is
outside the site, so its relative links — to a page, and to a heading of it — are checked here,
with the anchors Python-Markdown's table of contents gives the headings (what the site uses).
"""

from __future__ import annotations

import re
from pathlib import Path

from markdown.extensions.toc import slugify

ROOT = Path(__file__).resolve().parents[1]
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6} (.+)$", re.M)
_FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings (headings inside code blocks are not headings)."""
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    return {slugify(heading.strip(), "-") for heading in _HEADING.findall(text)}


def local_links(page: Path) -> list[str]:
    return [link for link in _LINK.findall(page.read_text(encoding="utf-8")) if "://" not in link]


def test_every_relative_link_of_the_readme_reaches_a_file_and_its_heading() -> None:
    readme = ROOT / "README.md"
    links = local_links(readme)
    assert any(link.startswith("docs/") for link in links), "the README links to no docs page"
    broken = []
    for link in links:
        path, _, anchor = link.partition("#")
        target = ROOT / path
        if not target.exists():
            broken.append(f"{link}: no such file")
        elif anchor and anchor not in anchors(target):
            broken.append(f"{link}: no heading with the anchor #{anchor}")
    assert not broken, broken


def test_anchors_are_those_of_the_site() -> None:
    page = ROOT / "docs" / "guides" / "react.md"
    assert "long-conversations-the-context-guard" in anchors(page)
    assert "tool_choice" in anchors(page)  # backticks go, underscores stay
