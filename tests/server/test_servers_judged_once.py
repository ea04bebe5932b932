"""`pgwx run` on two servers (PG 15 and the bundled 18, in this process): each server's run
is judged once, as it ends — the tables, the servers' table, the exit status and the gate
read that judgement and the group's (`explorer.analysis.servers.ServerJudgement`), judged once
too (issue 36: a run's verdicts are judged once at its end)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from explorer import cli
from explorer.analysis import servers
from explorer.analysis.gate import EXIT_REGRESSED
from explorer.cli import run as _cli_run  # noqa: F401  (imported, so its `judge` is counted)
from explorer.server.connect import Target
from explorer.server.embedded import PORT, SUPERUSER
from tests.support.cli import FINISHED, private_store
from tests.support.judging import count_judgements

pytestmark = pytest.mark.pg15


def dsn(target: Target) -> str:
    assert target.bundled is not None
    return f"host={target.bundled.socket_dir} port={PORT} user={SUPERUSER} dbname=postgres"


@pytest.mark.parametrize("gated", [False, True], ids=["plain", "fail-on"])
def test_each_server_run_is_judged_once_at_its_end(
    pg15: Target,
    pg18: Target,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    gated: bool,
) -> None:
    private_store(monkeypatch, tmp_path)
    group_judged: list[int] = []
    real_group = servers.judge_servers

    def counted_group(*args: object, **kwargs: object) -> servers.ServerJudgement:
        if kwargs.get("within", True):
            group_judged.append(1)
        return real_group(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(servers, "judge_servers", counted_group)
    argv = ["run", "quick-demo", "--dsn", dsn(pg15), "--dsn", dsn(pg18)]
    argv += ["--variant", "logged", "--variant", "unlogged"]
    argv += ["--scale", "0.005", "--repeats", "5", "--warmup", "0", "--settle", "0"]
    argv += ["--no-sample", "--allow-undecidable"]
    if gated:
        argv += ["--fail-on", "slower"]

    calls = count_judgements(monkeypatch)
    code = cli.main(argv)
    out, err = capsys.readouterr()
    assert code in (*FINISHED, EXIT_REGRESSED), err
    assert "## Each variant on each server, against 15" in out
    ended = Counter(c for c in calls if c != "look")
    assert len(ended) == 2, f"two servers' runs, judged: {calls}"
    assert set(ended.values()) == {1}, f"a run judged more than once at its end: {calls}"
    assert len(group_judged) == 1, "the servers' verdicts judged more than once"
