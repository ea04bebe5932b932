"""The last sentence of a run is made from what the undo did (issue 20), never a fixed one."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.lab.safety.undo import Undo, restore_command
from explorer.server.connect import Target
from explorer.server.embedded import LocalServer

AUTO = "/srv/pg/postgresql.auto.conf"


@pytest.mark.parametrize(
    ("undo", "said"),
    [
        (Undo(), "no server settings were left changed"),
        (Undo(put_back=["fsync", "wal_level"]), "server settings put back (fsync, wal_level)"),
        (
            Undo(
                put_back=["fsync"],
                left={"wal_level": {"auto": None, "set": "minimal"}, "max_wal_senders": {}},
                where=AUTO,
                why="the server did not restart",
            ),
            "server settings NOT all put back (the server did not restart): "
            f"wal_level='minimal', max_wal_senders still set in {AUTO}; run `CMD` to put "
            "them back",
        ),
        (
            Undo(put_back=["fsync"], set_aside={"work_mem": "a setting pgwx never changes"}),
            "server settings put back (fsync); journal entries set aside: work_mem (a setting "
            "pgwx never changes)",
        ),
        (
            Undo(unknown="the journal is damaged"),
            "server settings may still be changed (the journal is damaged); run `CMD`",
        ),
    ],
)
def test_the_sentence_says_what_happened(undo: Undo, said: str) -> None:
    assert undo.sentence("CMD") == said
    assert undo.complete is (not undo.left and undo.unknown is None)


def test_the_restore_command_reaches_the_same_server_without_a_password(
    tmp_path: Path,
) -> None:
    secret = Target(dsn="postgresql://me:s3cret@db.example/app")
    assert restore_command(secret) == (
        "pgwx restore --dsn postgresql://me@db.example/app (with the same password)"
    )
    assert (
        restore_command(Target(dsn="host=db dbname=app"))
        == "pgwx restore --dsn 'host=db dbname=app'"
    )
    own = LocalServer(tmp_path / "my pg")
    assert restore_command(Target(bundled=own)) == f"pgwx restore --data-dir '{tmp_path}/my pg'"
    assert restore_command(Target(bundled=LocalServer())) == "pgwx restore"


def test_the_restore_command_of_another_installation_names_its_programs(tmp_path: Path) -> None:
    from tests.support.server import PG15_BIN

    if not (PG15_BIN / "postgres").exists():
        pytest.skip("Debian's postgresql-15 is not installed")
    own = LocalServer(tmp_path / "pg15", bindir=PG15_BIN)
    assert restore_command(Target(bundled=own)) == (
        f"pgwx restore --pg-bin {own.bindir} --data-dir {tmp_path}/pg15"
    )
