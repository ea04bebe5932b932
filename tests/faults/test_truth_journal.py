"""A damaged-but-parseable journal never stops `pgwx restore` for good (issue 20).

The journal is outside data: an entry whose earlier value the server rejects (an injection
attempt, a number) and entries naming settings pgwx never changes (work_mem,
shared_preload_libraries) are set aside — kept in the `.corrupt-<time>` file and named —
and the rest is put back; `pgwx restore` ends with one sentence and a meaningful status.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.faults import FaultServer, profile_toml
from tests.support.truth import last_line, leave_journal, pgwx, settled

INJECTION = "local'; SELECT pg_sleep(3); --"


def _kept(journal_path: Path) -> list[Path]:
    return sorted(journal_path.parent.glob(journal_path.name + ".corrupt-*"))


async def test_a_value_the_server_rejects_is_set_aside_and_the_rest_put_back(
    owned: FaultServer, tmp_path: Path
) -> None:
    before = await owned.state()
    journal = await leave_journal(
        owned,
        tmp_path,
        {
            "synchronous_commit": {"auto": INJECTION, "set": "off"},
            "track_io_timing": {"auto": None, "set": "on"},
        },
        {"synchronous_commit": "off", "track_io_timing": "on"},
    )
    data_dir = str(owned.server.data_dir)
    code, out, err = await pgwx(tmp_path, "restore", "--data-dir", data_dir, timeout=60)
    assert code == 0, (out, err)
    assert "internal error" not in err and "Traceback" not in err
    label = out.split(": ", 1)[0]
    assert last_line(out) == (
        f"{label}: server settings put back (track_io_timing); journal entries set aside: "
        "synchronous_commit (the server rejects its earlier value "
        f"{INJECTION!r}: back to the server default)"
    ), out
    assert await settled(owned, ["synchronous_commit", "track_io_timing"]) == {
        "synchronous_commit": "on",
        "track_io_timing": "off",
    }
    await owned.assert_as_before(before)
    assert not journal.path.exists()
    (kept,) = _kept(journal.path)
    assert json.loads(kept.read_text()) == {"synchronous_commit": {"auto": INJECTION, "set": "off"}}
    assert str(kept) in err
    # the value went to the server as data: nothing slept, nothing else ran
    assert "pg_sleep" not in (owned.server.data_dir / "postgresql.auto.conf").read_text()
    code, out, _ = await pgwx(tmp_path, "restore", "--data-dir", data_dir, timeout=60)
    assert code == 0 and "nothing to put back" in out


async def test_names_pgwx_never_manages_are_set_aside_never_applied(
    owned: FaultServer, tmp_path: Path
) -> None:
    text = json.dumps(
        {
            "work_mem": {"auto": None, "set": "64MB"},
            "shared_preload_libraries": {"auto": "pg_stat_statements"},
            "synchronous_commit": {"auto": None, "set": "off"},
        }
    )
    journal = await leave_journal(
        owned, tmp_path, text, {"work_mem": "64MB", "synchronous_commit": "off"}
    )
    data_dir = str(owned.server.data_dir)
    # a run refuses to start over it, in one sentence naming what is wrong
    (tmp_path / "plain.toml").write_text(profile_toml({"plain": ""}, gate=False, rows=10))
    code, _out, err = await pgwx(
        tmp_path, "run", str(tmp_path / "plain.toml"), "--data-dir", data_dir
    )
    assert code == 2, err
    (line,) = [x for x in err.splitlines() if x.startswith("pgwx:")]
    assert "work_mem" in line and "shared_preload_libraries" in line and "pgwx restore" in line

    code, out, err = await pgwx(tmp_path, "restore", "--data-dir", data_dir, timeout=60)
    assert code == 0, (out, err)
    label = out.split(": ", 1)[0]
    assert last_line(out) == (
        f"{label}: server settings put back (synchronous_commit); journal entries set aside: "
        "work_mem (a setting pgwx never changes: left as it is); shared_preload_libraries "
        "(a setting pgwx never changes: left as it is)"
    ), out
    # the user's own work_mem stays; what pgwx set goes; shared_preload_libraries untouched
    assert await settled(owned, ["synchronous_commit", "work_mem"]) == {
        "synchronous_commit": "on",
        "work_mem": str(64 * 1024),
    }
    auto = (owned.server.data_dir / "postgresql.auto.conf").read_text()
    assert "work_mem = '64MB'" in auto and "synchronous_commit" not in auto
    assert "shared_preload_libraries" not in auto
    (kept,) = _kept(journal.path)
    assert kept.read_text() == text and str(kept) in err
    assert not journal.path.exists()


async def test_an_entry_that_is_not_one_is_set_aside_and_fsync_goes_back(
    owned: FaultServer, tmp_path: Path
) -> None:
    before = await owned.state()
    text = '{"fsync": 5, "synchronous_commit": {"auto": null, "set": "off"}}'
    journal = await leave_journal(
        owned, tmp_path, text, {"fsync": "off", "synchronous_commit": "off"}
    )
    code, out, err = await pgwx(tmp_path, "restore", "--data-dir", str(owned.server.data_dir))
    assert code == 0, (out, err)
    label = out.split(": ", 1)[0]
    assert last_line(out) == (
        f"{label}: server settings put back (synchronous_commit, fsync); journal entries set "
        "aside: fsync (not a journal entry ('5'))"
    ), out
    await owned.assert_as_before(before)
    (kept,) = _kept(journal.path)
    assert kept.read_text() == text
