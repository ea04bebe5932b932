"""A name cannot forge a cell in any markdown table pgwx prints (issue 40).

A variant, a phase or a server label comes from a profile, a recording or a stored row. Named
``x | 0.50× [0.4–0.6] faster`` it would add a column holding a made-up verdict to a table, and
with a line break in it a whole made-up row. Every table — the report (`pgwx report`, `run`,
`replay`, the app's export), the servers' table, `pgwx compare`, `pgwx history` and `pgwx
selftest` — is read back here as a markdown renderer reads it (a `|` not escaped by `\\` ends a
cell): every row has the header's number of cells, no cell is the forged verdict, and each
hostile name is one cell, shown as itself.
"""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import pytest

from explorer import cli
from explorer.analysis import crossrun, history, markdown, report, selftest, servers
from explorer.analysis.calibration import synthetic_caps, synthetic_record, synthetic_trial
from explorer.lab.store.results import ResultStore
from explorer.models import Profile, RunRecord, ServerAxis, Variant
from explorer.text import printable

FORGED_CELL = "0.50× [0.4–0.6] faster"
FORGED = f"x | {FORGED_CELL}"
"""A name that, unescaped, adds a column whose cell reads as a verdict."""
BROKEN = f"y\n| {FORGED_CELL} |\x1b[2J"
"""A name that, unescaped, starts a row of its own (and carries a control sequence)."""
PHASE = "load | 9 | fake"
"""A phase name with pipes: the first column of the self-test's table."""


def shown(name: str) -> str:
    """How a name reads in a cell: control characters spelled out, on one line."""
    return " ".join(printable(name).splitlines())


def split_row(line: str) -> list[str]:
    """The cells of a markdown table row as a renderer sees them, unescaped."""
    cells, cell, escaped = [], "", False
    for ch in line:
        if escaped:
            cell += ch
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == "|":
            cells.append(cell.strip())
            cell = ""
        else:
            cell += ch
    cells.append(cell.strip())
    return cells[1:-1]


def tables(text: str) -> list[list[list[str]]]:
    """Every table in `text` (runs of lines starting with `|`), each as rows of cells."""
    found: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            current.append(split_row(line))
        elif current:
            found.append(current)
            current = []
    return found


def assert_no_forgery(text: str, *names: str) -> list[list[list[str]]]:
    """Every row has its header's cells, none is the forged verdict, each name is one cell."""
    found = tables(text)
    assert found, text
    cells = set()
    for table in found:
        # a line of its own starting with `|` (a name's line break) is no table: forged
        assert len(table) >= 2 and set(table[1]) == {"---"}, (table, text)
        header, _rule, *rows = table
        for row in rows:
            assert len(row) == len(header), (header, row)
            assert FORGED_CELL not in row, row
            cells.update(row)
    for name in names:
        assert shown(name) in cells, (name, text)
    return found


def test_a_cell_escapes_pipes_backslashes_line_breaks_and_controls() -> None:
    assert markdown.cell(FORGED) == "x \\| 0.50× [0.4–0.6] faster"
    assert markdown.cell("a\\|b") == "a\\\\\\|b"  # a backslash cannot unescape the pipe
    assert markdown.cell("a\nb\r\nc") == "a b c"
    assert markdown.cell("\x1b]0;t\x07|") == "\\\\x1b]0;t\\\\x07\\|"
    assert markdown.row([FORGED, 3, None]) == "| x \\| 0.50× [0.4–0.6] faster | 3 | None |"
    assert split_row(markdown.row([FORGED, BROKEN])) == [FORGED, shown(BROKEN)]


PROFILE = Profile(
    name="forge",
    title="forge",
    workload="synthetic",
    repeats=7,
    warmup=0,
    variants=[Variant(name="base"), Variant(name=FORGED), Variant(name=BROKEN)],
)


def run(
    n: int, slow: float, *, phase: str = "load", profile: Profile = PROFILE, rounds: int = 7
) -> RunRecord:
    """A finished run: the forged-name variant `slow` times the baseline, the other the same."""
    rng = random.Random(n)
    factors = {"base": 1.0, FORGED: slow, BROKEN: 1.0}
    trials = [
        synthetic_trial(v.name, r, {phase: factors.get(v.name, 1.0) * rng.uniform(0.99, 1.01)})
        for r in range(1, rounds + 1)
        for v in profile.variants
    ]
    record = synthetic_record(profile, trials)
    return record.model_copy(
        update={
            "id": f"2026112{n}-120000-aaaaa{n}",
            "status": "finished",
            "started_at": dt.datetime(2026, 11, 20 + n, 12, tzinfo=dt.UTC),
        }
    )


def test_the_report_table() -> None:
    text = report.to_markdown(run(1, 2.0, phase=PHASE))
    (table,) = assert_no_forgery(text, FORGED, BROKEN, PHASE)
    verdicts = {row[0]: row[6] for row in table[2:]}
    assert verdicts[shown(FORGED)].endswith("slower")
    # Too few trials: the names are listed under the table, and cannot start a row there.
    text = report.to_markdown(run(1, 2.0, rounds=3))
    assert_no_forgery(text, FORGED, BROKEN)
    assert "too few trials for any verdict for " in text


def test_the_servers_table() -> None:
    runs = []
    for position, label in enumerate((FORGED, BROKEN)):
        record = run(position + 1, 2.0 if position else 1.0)
        axis = ServerAxis(
            group=run(1, 1.0).id,
            label=label,
            position=position,
            runs=[run(1, 1.0).id, run(2, 1.0).id],
            labels=[FORGED, BROKEN],
        )
        caps = synthetic_caps((15 + 3 * position) * 10000 + 6)
        server = record.server.model_copy(update={"capabilities": caps})
        runs.append(record.model_copy(update={"axis": axis, "server": server}))
    text = servers.to_markdown(runs)
    assert_no_forgery(text, FORGED, BROKEN)


def test_the_compare_table() -> None:
    text = crossrun.to_markdown(crossrun.compare_runs(run(1, 1.0), run(2, 2.0)))
    (table,) = assert_no_forgery(text, FORGED, BROKEN)
    verdicts = {row[0]: row[6] for row in table[2:]}
    assert verdicts[shown(FORGED)].endswith("slower")
    # Names listed under the table (only in one run, undecided) cannot start a row either.
    fewer = PROFILE.model_copy(update={"variants": PROFILE.variants[:2]})
    text = crossrun.to_markdown(crossrun.compare_runs(run(1, 1.0), run(2, 1.02, profile=fewer)))
    assert_no_forgery(text, FORGED)
    assert "Only in A (not compared): " in text


def test_the_history_table() -> None:
    rows = history.history([run(1, 2.0), run(2, 2.0)])
    text = history.to_markdown("forge", rows)
    (table,) = assert_no_forgery(text, FORGED, BROKEN)
    assert len(table) == 2 + 4  # two runs × two variants


def test_the_selftest_table() -> None:
    twin = selftest.self_test_profile(PROFILE)
    rng = random.Random(7)
    trials = [
        synthetic_trial(v.name, r, {PHASE: rng.uniform(0.9, 1.1), FORGED: 1.0})
        for r in range(1, 6)
        for v in twin.variants
    ]
    found = selftest.self_test(synthetic_record(twin, trials), PROFILE, runs=2)
    assert_no_forgery(selftest.to_text(found, PROFILE), PHASE, FORGED)


@pytest.fixture
def stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[RunRecord]:
    """Two runs of the profile in the store the commands read."""
    monkeypatch.setenv("PGWX_RESULTS", str(tmp_path / "results.sqlite"))
    store = ResultStore()
    runs = [run(1, 2.0), run(2, 2.0)]
    for record in runs:
        store.import_run(record, [])
    store.close()
    return runs


@pytest.mark.parametrize("command", ["report", "compare", "history"])
def test_each_command_prints_its_table_escaped(
    stored: list[RunRecord], command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = {
        "report": ["report", stored[0].id],
        "compare": ["compare", stored[0].id, stored[1].id],
        "history": ["history", "forge"],
    }[command]
    assert cli.main(argv) == 0
    assert_no_forgery(capsys.readouterr().out, FORGED, BROKEN)
