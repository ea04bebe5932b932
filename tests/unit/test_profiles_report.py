"""Profile validation, report formats and the command line (against the bundled PG 18)."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer import cli
from explorer.lab.profiles.catalog import ProfileError, list_profiles, load_profile
from tests.support.cli import private_store

GOOD = """
title = "x"
workload = "table-kind"
params = { rows = 100 }
[[variants]]
name = "a"
"""


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("title = [", "not valid TOML"),
        (
            GOOD.replace('workload = "table-kind"', 'workload = "nope"'),
            "field workload: unknown kind",
        ),
        (GOOD.replace("rows = 100", "rows = -5"), "field params.rows:"),
        (GOOD.replace("rows = 100", "rowz = 5"), "field params.rowz:"),
        (
            GOOD + '\n[[variants]]\nname = "b"\nknobs = { table_kind = "sideways" }\n',
            "field variants[1].knobs.table_kind:",
        ),
        (GOOD + '\n[[variants]]\nname = "a"\n', "the name 'a' is used twice"),
        (GOOD.replace('title = "x"', ""), "field title: Field required"),
        ('baseline = "zzz"\n' + GOOD, "field baseline"),
    ],
)
def test_malformed_profile_gets_one_sentence(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ProfileError) as err:
        load_profile(path)
    message = str(err.value)
    assert str(path) in message and words in message, message
    assert "\n" not in message


def test_every_shipped_profile_loads() -> None:
    loaded = list_profiles()
    assert loaded, "no profiles shipped"
    broken = [(p.name, str(e)) for p, e in loaded if isinstance(e, ProfileError)]
    assert not broken
    names = {p.stem for p, _ in loaded}
    assert "quick-demo" in names


def test_unknown_profile_name_lists_the_known_ones() -> None:
    with pytest.raises(ProfileError, match="quick-demo"):
        load_profile("no-such-profile")


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["run", "nope"], "No profile 'nope'"),
        (["report", "does-not-exist"], "No run matches"),
        (
            ["run", "quick-demo", "--dsn", "postgresql://u:topsecret@/db?host=/nonexistent"],
            "Nothing is listening",
        ),
        (["run", "quick-demo", "--variant", "bogus"], "has no variant bogus"),
    ],
)
def test_cli_errors_are_one_sentence_without_secrets(
    argv: list[str],
    words: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    private_store(monkeypatch, tmp_path)
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert words in err, err
    assert "Traceback" not in err and "topsecret" not in err
    assert len(err.strip().splitlines()) == 1


def test_cli_profiles_lists_titles(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["profiles"]) == 0
    out = capsys.readouterr().out
    assert "quick-demo" in out and "variants" in out
