"""Any setting as a variant knob, without a server: refused names, values, the journal.

A profile is data: a setting naming a program, a library, a file or a connection is refused
as the profile loads; a journal entry for such a name is never applied, even when it claims a
context (issue 37, point 1).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.lab.profiles.catalog import ProfileError, load_profile
from explorer.lab.safety.journal import entry_problem
from explorer.models import GucInfo, Knobs, Variant
from explorer.server.gucs import canonical, check_value, same_setting

REFUSED = [
    "archive_command",
    "restore_command",
    "shared_preload_libraries",
    "session_preload_libraries",
    "ssl",
    "ssl_cert_file",
    "hba_file",
    "data_directory",
    "log_directory",
    "dynamic_library_path",
    "primary_conninfo",
    "archive_mode",
    "application_name",
    "statement_timeout",
]


@pytest.mark.parametrize("name", REFUSED)
def test_settings_naming_programs_libraries_or_files_are_refused(name: str, tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text(
        'title = "t"\nworkload = "bulk-write"\n[[variants]]\nname = "a"\n'
        f'settings = {{ {name} = "x" }}\n'
    )
    with pytest.raises(ProfileError) as caught:
        load_profile(path)
    text = str(caught.value)
    assert f"pgwx never sets {name} from a profile" in text and "\n" not in text


def test_a_knob_of_its_own_is_pointed_at() -> None:
    with pytest.raises(ValueError, match="wal_level is a knob of its own"):
        Knobs(settings={"wal_level": "minimal"})


def test_settings_sit_beside_knobs_and_read_as_postgresql_spells_them() -> None:
    v = Variant.model_validate(
        {"name": "a", "knobs": {"fk": "deferred"}, "settings": {"max_wal_size": 4096, "x": True}}
    )
    assert v.knobs.settings == {"max_wal_size": "4096", "x": "on"}
    assert v.knobs.describe() == "fk=deferred, max_wal_size=4096, x=on"
    # a variant without settings stores as before (no empty table in old runs' JSON)
    assert "settings" not in Variant(name="b").model_dump(mode="json")["knobs"]


def test_journal_takes_an_other_setting_only_with_its_context_and_a_safe_name() -> None:
    assert entry_problem("max_wal_size", {"auto": None, "set": "4GB", "context": "sighup"}) is None
    assert entry_problem("wal_buffers", {"auto": "1MB", "context": "postmaster"}) is None
    # without a context pgwx never wrote it; a refused name is refused whatever it claims
    assert entry_problem("max_wal_size", {"auto": None}) is not None
    assert entry_problem("archive_command", {"auto": None, "context": "sighup"}) is not None
    assert entry_problem("work_mem", {"auto": None, "context": "user"}) is not None


MAX_WAL = GucInfo(
    name="max_wal_size",
    setting="1024",
    unit="MB",
    context="sighup",
    vartype="integer",
    min_val="2",
    max_val="2147483647",
)
WAL_BUFFERS = GucInfo(
    name="wal_buffers",
    setting="512",
    unit="8kB",
    context="postmaster",
    vartype="integer",
    min_val="-1",
    max_val="262143",
)


@pytest.mark.parametrize(
    ("guc", "value", "problem"),
    [
        (MAX_WAL, "4GB", None),
        (MAX_WAL, "1MB", "max_wal_size = 1MB is out of range: PostgreSQL 18 takes 2MB to "),
        (MAX_WAL, "3 furlongs", "'furlongs' is not a unit of max_wal_size"),
        (MAX_WAL, "lots", "is not a number"),
        (WAL_BUFFERS, "-1", None),
        (WAL_BUFFERS, "4GB", "takes -1 × 8kB to 262143 × 8kB"),
    ],
)
def test_values_are_checked_against_the_settings_row(
    guc: GucInfo, value: str, problem: str | None
) -> None:
    _spelled, why = check_value(guc, value, "18")
    if problem is None:
        assert why is None
    else:
        assert why is not None and problem in why


def test_a_compression_the_build_lacks_is_not_a_typo() -> None:
    guc = GucInfo(
        name="wal_compression",
        setting="off",
        context="superuser",
        vartype="enum",
        enumvals=["pglz", "on", "off"],
    )
    assert check_value(guc, "LZ4", "18")[1] == (
        "not built: wal_compression = LZ4 is not built into this server (PostgreSQL 18 offers "
        "pglz, on, off)"
    )
    assert "is not one of pglz, on, off" in (check_value(guc, "gzip", "18")[1] or "")
    assert check_value(guc, "PGLZ", "18") == ("pglz", None)


def test_read_backs_compare_in_units() -> None:
    assert canonical(WAL_BUFFERS, "64") == "512kB" and canonical(MAX_WAL, "4096") == "4096MB"
    assert same_setting("4GB", "4096MB") and same_setting("5min", "300s")
    assert same_setting("on", "true") and not same_setting("lz4", "pglz")
    assert not same_setting("4GB", "4096kB")
