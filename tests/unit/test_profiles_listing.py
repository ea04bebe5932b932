"""`pgwx profiles` says which profiles are the user's and where each group lives."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer import cli

GOOD = """name = "t"
title = "mine"
workload = "table-kind"
[params]
rows = 1000
[[variants]]
name = "logged"
"""


def test_listing_groups_profiles_by_whose_they_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    work, config = tmp_path / "work", tmp_path / "config"
    work.mkdir()
    (config / "pgwx" / "profiles").mkdir(parents=True)
    monkeypatch.chdir(work)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    (work / "nightly.toml").write_text(GOOD)
    (config / "pgwx" / "profiles" / "etl.toml").write_text(GOOD)

    assert cli.main(["profiles"]) == 0
    out = capsys.readouterr().out
    headings = [line for line in out.splitlines() if line and not line.startswith(" ")]
    assert [h.split(" (")[0] for h in headings] == [
        "Yours, in the working directory",
        "Yours, in your config directory",
        "Shipped experiments",
        "Shipped examples of your own load",
    ]
    assert f"({work.resolve()})" in headings[0]
    assert f"({(config / 'pgwx' / 'profiles').resolve()})" in headings[1]
    body = out.split(headings[1])[0]
    assert "nightly" in body and "quick-demo" not in body
