"""A run's --label / --ref and its machine, kept and shown: in `runs`, `history`, `compare`,
the JSON document, and the team store's views (the long view with the mechanism metrics)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from explorer import cli
from explorer.lab.store.backends import PG_SCHEMA
from explorer.lab.store.results import ResultStore
from explorer.server.connect import Target
from explorer.server.embedded import LocalServer
from tests.support.stored import fresh_database, store_url

SMALL = [
    "--scale",
    "0.002",
    "--warmup",
    "0",
    "--settle",
    "0",
    "--repeats",
    "2",
    "--allow-undecidable",
    "--allow-undecidable",
]


@pytest.fixture
def team_url(pg18_server: LocalServer) -> Iterator[str]:
    with fresh_database(pg18_server, "pgwx_labels") as database:
        yield store_url(pg18_server, database)


def test_label_ref_and_machine_reach_every_reader(
    pg18: Target,
    team_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("PGWX_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("PGWX_RESULTS", str(tmp_path / "unused.sqlite"))
    for var in cli.LIBPQ_ENV:
        monkeypatch.delenv(var, raising=False)
    assert pg18.bundled is not None
    data_dir = str(pg18.bundled.data_dir)
    code = cli.main(
        ["--results", team_url, "run", "quick-demo", "--data-dir", data_dir, *SMALL,
         "--variant", "logged", "--variant", "unlogged",
         "--label", "kernel 6.8 | new SSD", "--ref", "v1.2-3-gabc", "--format", "json"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code in (0, 4)
    doc = json.loads(out)
    assert (doc["label"], doc["ref"]) == ("kernel 6.8 | new SSD", "v1.2-3-gabc")
    env = doc["environment"]
    assert env["os"] and env["kernel"] and env["memory_bytes"] > 0
    # the bundled server runs here, as a superuser: its data directory's mount is known
    assert env["data_fs"] and env["data_device"] and env["data_mount"]
    run_id = doc["run"]

    assert cli.main(["--results", team_url, "runs"]) == 0
    listed = capsys.readouterr().out
    assert 'label "kernel 6.8 | new SSD"' in listed and 'ref "v1.2-3-gabc"' in listed
    assert cli.main(["--results", team_url, "history", "quick-demo", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert {(r["run_label"], r["ref"]) for r in rows} == {("kernel 6.8 | new SSD", "v1.2-3-gabc")}
    assert cli.main(["--results", team_url, "history", "quick-demo"]) == 0
    table = capsys.readouterr().out
    assert "kernel 6.8 \\| new SSD · v1.2-3-gabc" in table  # a | cannot break the table
    assert cli.main(["--results", team_url, "compare", run_id, run_id]) == 0
    # markdown: a | in the label is escaped, as every name from outside is
    assert 'label "kernel 6.8 \\| new SSD" · ref "v1.2-3-gabc"' in capsys.readouterr().out
    assert cli.main(["--results", team_url, "report", run_id]) == 0
    assert "Machine: " in capsys.readouterr().out

    store = ResultStore(team_url)
    try:
        series = store.sql.all(
            f"SELECT DISTINCT label, ref FROM {PG_SCHEMA}.verdict_series WHERE run_id = $1",
            (run_id,),
        )
        metrics = {
            r[0]
            for r in store.sql.all(
                f"SELECT DISTINCT metric FROM {PG_SCHEMA}.measurements WHERE run_id = $1 "
                "AND label = 'kernel 6.8 | new SSD' AND environment->>'kernel' IS NOT NULL",
                (run_id,),
            )
        }
    finally:
        store.close()
    assert series == [("kernel 6.8 | new SSD", "v1.2-3-gabc")]
    # the long view has the mechanism: FPI, WAL records, checkpoints, pg_stat_io by writer
    assert {"seconds", "wal_bytes", "wal_fpi", "wal_records", "checkpoints"} <= metrics
    assert {"writes_workload", "extends_workload", "fsyncs_checkpointer"} <= metrics
    # pg_stat_io evictions by writer, and on 18 the workload sessions' own WAL
    assert {"evictions_workload", "work_wal_bytes"} <= metrics


@pytest.mark.parametrize("bad", ["", "   ", "x" * 201])
def test_a_label_out_of_bounds_is_refused_in_one_sentence(
    bad: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PGWX_RESULTS", str(tmp_path / "r.sqlite"))
    assert cli.main(["run", "quick-demo", "--label", bad]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pgwx: --label takes 1 to 200 characters") and err.count("\n") == 1
