"""Work where it was done (issue 33, point 4) and one figure everywhere (point 3) on an own-SQL
profile with `commit_apart`, on a real server with the sampler on.

The backend publishes its pg_stat_io and FPI counts only when its transaction ends, so the
INSERT's relation extensions landed on the COMMIT's row (`insert ext pages 0`,
`insert-commit 0.003 s … ext pages 3,067`) with nothing saying whose work it was.
"""

from __future__ import annotations

from pathlib import Path

from explorer.analysis.card import card_lines
from explorer.analysis.judge import TOTAL
from explorer.analysis.mechanism import fields, io_cell
from explorer.analysis.report import summarize
from explorer.analysis.units import human_bytes
from explorer.lab.profiles.catalog import load_profile
from explorer.server.connect import Target
from tests.support.runs import RunProfile

PROFILE = """title = "commit apart"
workload = "sql"
repeats = 2
settle_seconds = 0
[params]
sizes = { rows = 60000 }
[[params.tables]]
name = "t"
columns = "a int, b text"
[[params.phases]]
name = "insert"
sql = "INSERT INTO {t} SELECT i, repeat('x', 40) FROM generate_series(1, {rows}) i"
commit_apart = true
[[params.phases]]
name = "count"
sql = "SELECT count(*) FROM {t}"
[[variants]]
name = "a"
[[variants]]
name = "b"
"""


async def test_the_statements_work_is_on_its_row_and_the_commit_says_where(
    pg18: Target, run_profile: RunProfile, tmp_path: Path
) -> None:
    (tmp_path / "mine.toml").write_text(PROFILE)
    record, _ = await run_profile(pg18, load_profile(tmp_path / "mine.toml"), sampler=True)
    assert record.status == "finished", record.reason
    rows = {(r.variant, r.phase): r for r in summarize(record)}
    insert, commit = rows[("a", "insert")], rows[("a", "insert-commit")]
    assert insert.mechanism is not None and commit.mechanism is not None
    work = fields(insert.mechanism)
    # 60,000 rows of ~70 bytes extend the table by hundreds of pages: on the INSERT's row.
    assert work["extended_workload"] and work["extended_workload"] > 100, work
    assert commit.mechanism.late_in == "insert"
    assert "work in insert" in io_cell(commit.mechanism, "extended")
    # The card's figures are the table's total row (WAL; a counter only when decided).
    total = {r.variant: r for r in summarize(record) if r.phase == TOTAL}
    for line in card_lines(record):
        wal = fields(total[line.variant].mechanism)["wal_bytes"]
        if line.baseline:
            assert line.mechanism == f"WAL {human_bytes(wal)}"
        elif line.mechanism.startswith("WAL"):
            assert line.mechanism.endswith(f"→ {human_bytes(wal)}")
