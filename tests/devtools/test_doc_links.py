"""The documentation's links hold: every relative link in README.md, CHANGELOG.md and
docs/*.md names a file that exists, and every `#anchor` names a heading of its target (as
GitHub makes heading anchors). External links are not checked. And the README stays a
front door: under 1,500 words."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
README_WORD_LIMIT = 1500

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+)(?:(?!\n[ \t]*\n).)+?\1", re.DOTALL)  # within one paragraph
LINK = re.compile(r"\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.MULTILINE)
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # http:, https:, mailto:, ...


def prose(text: str) -> str:
    """The text outside fenced code blocks and code spans, where links and headings live."""
    kept, fence = [], None
    for line in text.split("\n"):
        opening = FENCE.match(line)
        if fence is None and opening:
            fence = opening.group(1)[0] * len(opening.group(1))
            kept.append("")
        elif fence is not None:
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = None
            kept.append("")
        else:
            kept.append(line)
    return CODE_SPAN.sub("code", "\n".join(kept))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text lowercased, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    text = text.replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every anchor of a markdown page's headings; a repeated heading gets -1, -2, ..."""
    seen: dict[str, int] = {}
    found = set()
    lines = page.read_text(encoding="utf-8").split("\n")
    fence = None
    for line in lines:
        opening = FENCE.match(line)
        if fence is None and opening:
            fence = opening.group(1)[0]
            continue
        if fence is not None:
            if line.strip().startswith(fence * 3):
                fence = None
            continue
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(CODE_SPAN.sub(lambda span: span.group(0).strip("`").strip(), match.group(2)))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: Path) -> list[str]:
    text = prose(page.read_text(encoding="utf-8"))
    return LINK.findall(text) + REFERENCE.findall(text)


def shown(file: Path) -> str:
    return str(file.relative_to(ROOT)) if file.is_relative_to(ROOT) else str(file)


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in links(page):
        if not target or EXTERNAL.match(target):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no file {shown(file)}")
        elif anchor and (file.suffix != ".md" or anchor not in anchors(file)):
            broken.append(f"{target}: no heading #{anchor} in {shown(file)}")
    return broken


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    assert broken_links(page) == []


def test_readme_stays_short() -> None:
    words = len((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert words < README_WORD_LIMIT, f"README.md has {words} words; move detail into docs/"


def test_the_checker_sees_what_github_sees(tmp_path: Path) -> None:
    """Slugs as GitHub makes them, links in code ignored, broken files and anchors found."""
    assert slug("Vercel AI SDK `useChat`") == "vercel-ai-sdk-usechat"
    assert slug("The page's markdown: re-rendering (issue 18, 2026-12-01)") == "the-pages-markdown-re-rendering-issue-18-2026-12-01"
    assert slug("`POST /v1/chat/completions`: the request") == "post-v1chatcompletions-the-request"
    (tmp_path / "other.md").write_text("# Title\n\n## Part\n\n## Part\n\n```\n# not a heading\n```\n", encoding="utf-8")
    assert anchors(tmp_path / "other.md") == {"title", "part", "part-1"}
    page = tmp_path / "page.md"
    page.write_text(
        "[a](other.md#part-1) [b](other.md#gone) [c](missing.md) [d](https://example.invalid/x)\n"
        "`[e](in-a-span.md)` [f](#here)\n\n```\n[g](in-a-block.md)\n```\n\n## Here\n",
        encoding="utf-8",
    )
    found = [entry.split(":")[0] for entry in broken_links(page)]
    assert found == ["other.md#gone", "missing.md"]
