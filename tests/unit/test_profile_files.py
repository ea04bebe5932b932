"""Which profile file is used, said out loud when a local file shadows a shipped one."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer import cli
from explorer.lab.profiles.catalog import load_profile, profiles_dir

LOCAL = 'title = "my local copy"\nworkload = "toast"\n[[variants]]\nname = "a"\n'


def test_a_local_file_named_like_a_shipped_profile_is_announced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "quick-demo").write_text(LOCAL)
    said: list[str] = []
    profile = load_profile("quick-demo", said.append)
    assert profile.title == "my local copy"
    assert len(said) == 1
    assert str(tmp_path / "quick-demo") in said[0] and "shipped profile quick-demo" in said[0]


def test_no_announcement_without_a_shadow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    said: list[str] = []
    assert load_profile("quick-demo", said.append).name == "quick-demo"
    assert load_profile(profiles_dir() / "quick-demo.toml", said.append).name == "quick-demo"
    assert said == []


def test_the_cli_says_which_file_it_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "quick-demo").write_text(LOCAL)
    # --scale 0 stops the run right after the profile is read.
    assert cli.main(["run", "quick-demo", "--scale", "0"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert "using the file" in err[0] and "--scale" in err[1]
