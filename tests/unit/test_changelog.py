"""CHANGELOG.md is Keep a Changelog cut into releases, and its newest release is the version
pyproject.toml gives (which `pgwx --version` prints, through importlib.metadata)."""

from __future__ import annotations

import re
import tomllib
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RELEASE = re.compile(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", re.M)


def releases(text: str) -> list[tuple[str, date]]:
    return [(v, date.fromisoformat(d)) for v, d in RELEASE.findall(text)]


def problems(changelog: str, version: str) -> list[str]:
    """What is wrong with the changelog's structure, for a package at `version`."""
    found = []
    sections = re.findall(r"^## (.+)$", changelog, re.M)
    if not sections or sections[0] != "[Unreleased]":
        found.append("the first section is not ## [Unreleased]")
    cut = releases(changelog)
    if len(cut) != len(sections) - 1:
        found.append("a section is neither [Unreleased] nor '## [x.y.z] - YYYY-MM-DD'")
    if not cut or cut[0][0] != version:
        found.append(f"the newest release is not {version}, the version in pyproject.toml")
    versions = [tuple(int(n) for n in v.split(".")) for v, _ in cut]
    if versions != sorted(versions, reverse=True) or len(set(versions)) != len(versions):
        found.append("releases are not newest first")
    days = [d for _, d in cut]
    if days != sorted(days, reverse=True):
        found.append("release dates are not newest first")
    first = RELEASE.search(changelog)
    released = changelog[first.start() :] if first else ""
    if re.search(r"\bissues? \d+|#\d+", released, re.I):
        found.append("an internal issue number in a release (they belong in commit messages)")
    return found


def version() -> str:
    found: str = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    return found


def test_the_changelog_is_cut_into_dated_releases_ending_at_this_version() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", version())
    assert problems((ROOT / "CHANGELOG.md").read_text(), version()) == []


def test_a_changelog_that_disagrees_is_caught() -> None:
    text = (ROOT / "CHANGELOG.md").read_text()
    assert problems(text, "9.9.9")  # the version moved on without a release section
    assert problems(text.replace("## [Unreleased]", "## Unreleased", 1), version())
    assert problems(text.replace("## [0.2.0] - 2026-11-24", "## [0.2.0] - 2027-01-01"), version())
    assert problems(text + "\n- Fixed a thing (issue 12).\n", version())
    assert not problems(text.replace("### Changed", "### Changed\n- A (issue 40).", 1), version())
