"""The README stays a front door: short, with every page of docs/ one link away, and no
relative link in the README, docs/ or benchmarks/ that leads nowhere (file or heading)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MAX_README_LINES = 300
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)


def pages() -> list[Path]:
    """The markdown files whose links are checked."""
    return [README, *sorted((ROOT / "docs").rglob("*.md")), *sorted(ROOT.glob("benchmarks/*.md"))]


def links(text: str) -> list[str]:
    """Link targets outside fenced code blocks."""
    return LINK.findall(FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*_]|<[^>]+>", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text())
    return {slug(h) for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}


def broken(page: Path, text: str) -> list[str]:
    """The relative links of `text` (read as `page`) that reach no file or no heading."""
    found = []
    for target in links(text):
        if re.match(r"[a-z]+:", target):  # https:, mailto: — not ours to check here
            continue
        file, _, anchor = target.partition("#")
        where = (page.parent / file).resolve() if file else page
        if not where.exists():
            found.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
        elif anchor and where.suffix == ".md" and anchor not in anchors(where):
            found.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    return found


def test_the_readme_stays_short() -> None:
    lines = README.read_text().count("\n")
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines; move the rest to docs/"


def test_every_docs_page_is_one_link_from_the_readme() -> None:
    linked = {
        (ROOT / target.partition("#")[0]).resolve()
        for target in links(README.read_text())
        if not re.match(r"[a-z]+:", target)
    }
    missing = [
        str(page.relative_to(ROOT))
        for page in sorted((ROOT / "docs").rglob("*.md"))
        if page.resolve() not in linked
    ]
    assert missing == [], f"add these to the README's Documentation table: {missing}"


def test_every_relative_link_resolves() -> None:
    assert [problem for page in pages() for problem in broken(page, page.read_text())] == []


def test_a_broken_link_or_heading_is_caught() -> None:
    page = ROOT / "docs" / "using.md"
    assert broken(page, "[x](nowhere.md)")
    assert broken(page, "[x](verdicts.md#no-such-heading)")
    assert broken(page, "![x](../screenshots/none.svg)")
    assert not broken(page, "[x](verdicts.md#the-four-words) [y](#commands)")
    assert not broken(page, "```\n[x](nowhere.md)\n```\n")


def test_slugs_follow_githubs_rules() -> None:
    assert slug("What your SQL may do: the fence") == "what-your-sql-may-do-the-fence"
    assert slug("2026-11-26 12:13 — verdict calibration (current)") == (
        "2026-11-26-1213--verdict-calibration-current"
    )
    assert slug("Run `pgwx selftest` once on a new machine") == (
        "run-pgwx-selftest-once-on-a-new-machine"
    )


def commands() -> list[str]:
    """Every subcommand `pgwx` has, from its own parser."""
    import argparse

    from explorer.cli.parser import build_parser

    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return sorted(sub.choices)


def test_the_readme_names_every_command() -> None:
    table = README.read_text().split("## Commands", 1)[1].split("\n## ", 1)[0]
    assert len(commands()) > 10
    assert [c for c in commands() if f"`pgwx {c}" not in table] == []
