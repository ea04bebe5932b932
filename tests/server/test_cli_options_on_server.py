"""`pgwx` options before or after the subcommand, against the bundled PG 18 (the serverless
half is tests/unit/test_cli_options.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer import cli
from explorer.models import Profile, Variant
from explorer.server.connect import Target
from tests.support.cli import FINISHED, private_store


def test_data_dir_before_run_is_the_cluster_used(
    pg18: Target,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    private_store(monkeypatch, tmp_path)
    assert pg18.bundled is not None
    data_dir = str(pg18.bundled.data_dir)
    argv = ["--data-dir", data_dir, "--keep-server", "run", "quick-demo"]
    argv += [
        "--scale",
        "0.005",
        "--repeats",
        "1",
        "--allow-undecidable",
        "--allow-undecidable",
        "--settle",
        "0",
        "--no-sample",
    ]
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code in FINISHED, err
    assert cli.main(["runs"]) == 0
    assert str(pg18.bundled.socket_dir) in capsys.readouterr().out
    assert pg18.bundled.is_running()


async def test_the_app_refuses_an_absurd_size_in_one_sentence(pg18: Target, tmp_path: Path) -> None:
    from explorer.lab.store.results import ResultStore
    from explorer.tui.app import PgwxApp
    from explorer.tui.controller import RunController
    from tests.support.app import connected, log_text, wait_for

    store = ResultStore(tmp_path / "r.sqlite")
    profile = Profile(
        name="huge",
        title="t",
        workload="bulk-write",
        params={"rows": 10**12},
        variants=[Variant(name="a")],
    )
    try:
        async with PgwxApp(target=pg18, store=store).run_test(size=(120, 36)) as pilot:
            lab = await connected(pilot)
            lab.query_one(RunController).run_profile(profile, 1.0, lab.caps, single=False)
            await wait_for(pilot, lambda: "--allow-large" in log_text(lab))
            assert "Therunfailed" in log_text(lab)
        assert store.list_runs() == []
    finally:
        store.close()
