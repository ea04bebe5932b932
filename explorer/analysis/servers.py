"""One run on several servers (`pgwx run --pg 15 --pg 18`): the server version as an axis.

Each server's trials are stored as a run of their own, linked by `RunRecord.axis`; the trials
took turns across servers as variants take turns within one, so drift fell on every server
alike. Here every variant's phase on each server is judged against the same variant's phase on
the first server named (the reference): "unlogged insert on 18 vs 15: 0.93× [0.88–0.97]
faster". The statistics are every other verdict's: the Hodges–Lehmann ratio with its
interval (`explorer.analysis.verdict`), the server comparisons Holm-corrected together as one
table (`explorer.analysis.family`), judged at the planned looks of the profile's repeats with
α split over them (`explorer.analysis.judge.replay_looks`), the same four words.
"""

from __future__ import annotations

import csv
import io
import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from explorer.analysis import markdown, report
from explorer.analysis.judge import Judgement, judge, replay_looks, samples
from explorer.analysis.paired import cell_upto
from explorer.analysis.run_family import family_words, table_alpha, tables_for_servers
from explorer.analysis.verdict import CLOCK_FLOOR_SECONDS as CLOCK
from explorer.analysis.verdict import UNDECIDED, Verdict
from explorer.models import Profile, RunRecord
from explorer.text import printable

Cell = tuple[int, str, str]
"""(position of the server judged against the reference, variant, phase)."""


@dataclass
class ServerRow:
    """One variant's phase on one server, against the reference server's."""

    variant: str
    phase: str
    reference: str
    """The reference server's label ('15')."""
    server: str
    """This server's label ('18')."""
    ref_seconds: list[float]
    seconds: list[float]
    verdict: Verdict

    def sentence(self) -> str:
        """'unlogged insert on 18 vs 15: 0.93× [0.88–0.97] faster'."""
        return f"{self.variant} {self.phase} on {self.server} vs {self.reference}: " + (
            self.verdict.label()
        )


@dataclass
class ServerJudgement:
    """The verdicts of a multi-server run, server by server against the first."""

    runs: list[RunRecord]
    """The servers' runs, the reference first."""
    threshold: float
    rows: list[ServerRow] = field(default_factory=list)
    family_size: int = 0
    """Server comparisons corrected together (Holm)."""
    tables: int = 1
    """Tables of the run sharing its α: one per server and this one
    (`explorer.analysis.run_family`)."""
    looks: list[int] = field(default_factory=list)
    """Measured rounds at which they were judged."""
    planned: list[int] = field(default_factory=list)
    """The planned looks of this table (auto repeats: those that can decide something)."""
    only: list[str] = field(default_factory=list)
    """'lz4 insert (only on 15)': measured on the reference but not on another server, or
    the other way round: not compared."""
    within: list[Judgement] = field(default_factory=list)
    """Each server's run judged on its own (variants against its baseline), one per run in
    `runs`' order: judged once here, so the tables, the outcome and the card read these
    (empty when `judge_servers` was asked for the verdicts between the servers only)."""

    def within_of(self, run: RunRecord) -> Judgement | None:
        """The judgement of one of `runs` on its own (None when not judged here)."""
        for r, judged in zip(self.runs, self.within, strict=False):
            if r is run:
                return judged
        return None

    @property
    def undecided(self) -> list[ServerRow]:
        """Comparisons whose word is `undecided`."""
        return [r for r in self.rows if r.verdict.word == UNDECIDED]


def label(run: RunRecord) -> str:
    """How a server is named in the verdicts: its axis label, else its major version."""
    return run.axis.label if run.axis is not None else str(run.server.capabilities.major)


def labels(majors: Sequence[int]) -> list[str]:
    """Labels for servers of these major versions, in order: '15', '18'; '18', '18 #2' when
    two share a major."""
    out = []
    for i, major in enumerate(majors):
        same = majors[:i].count(major)
        out.append(f"{major}" if not same else f"{major} #{same + 1}")
    return out


def ordered(runs: Sequence[RunRecord]) -> list[RunRecord]:
    """The runs of one group, the reference first (by their axis position)."""
    return sorted(runs, key=lambda r: r.axis.position if r.axis is not None else 0)


def judge_servers(
    runs: Sequence[RunRecord],
    threshold: float | None = None,
    *,
    kept: Mapping[str, Judgement] | None = None,
    within: bool = True,
) -> ServerJudgement:
    """Every variant × phase the reference and another server both measured, judged; and
    each server's run on its own (`ServerJudgement.within`), once.

    Args:
        runs: The runs of one multi-server run (any order; the axis positions order them).
        threshold: Overrides the reference run's profile threshold (and each run's own).
        kept: Run id → the judgement its runner made as the run ended; reused for that
            run's own verdicts when judged at the threshold asked for (else judged again).
        within: Judge each run on its own too (False: only the verdicts between servers,
            as the runners ask after each round).
    """
    runs = ordered(runs)
    ref = runs[0]
    t = threshold if threshold is not None else ref.profile.threshold
    out = ServerJudgement(runs=list(runs), threshold=t)
    if within:
        out.within = [own_judgement(r, threshold, kept or {}) for r in runs]
    found = [samples(r.trials) for r in runs]
    names = [v.name for v in ref.profile.variants]
    cells: list[Cell] = []
    for pos in range(1, len(runs)):
        here = label(runs[pos])
        for name in names:
            for phase in found[0].phases:
                on_ref = (name, phase) in found[0].seconds
                on_other = (name, phase) in found[pos].seconds
                if on_ref and on_other:
                    cells.append((pos, name, phase))
                elif on_ref or on_other:
                    where = here if on_other else label(ref)
                    out.only.append(f"{name} {phase} (only on {where})")
    out.family_size = len(cells)
    done = max((r for s in found for rs in s.rounds.values() for r in rs), default=0)
    out.tables = tables_for_servers(len(runs))
    verdicts, out.planned, out.looks = replay_looks(
        cells,
        # Paired by server turn: the same variant's trials of the same round on each server.
        lambda c, point: cell_upto(
            (found[0].seconds[c[1:]], found[0].rounds[c[1:]]),
            (found[c[0]].seconds[c[1:]], found[c[0]].rounds[c[1:]]),
            point,
        ),
        ref.profile,
        done,
        t,
        {c: found[0].floors.get(c[2], found[c[0]].floors.get(c[2], CLOCK)) for c in cells},
        alpha=table_alpha(out.tables),
    )
    for pos, name, phase in cells:
        out.rows.append(
            ServerRow(
                name,
                phase,
                label(ref),
                label(runs[pos]),
                found[0].seconds[(name, phase)],
                found[pos].seconds[(name, phase)],
                verdicts[(pos, name, phase)],
            )
        )
    return out


def own_judgement(
    run: RunRecord, threshold: float | None, kept: Mapping[str, Judgement]
) -> Judgement:
    """One server's run judged on its own at `threshold` (None: its profile's): the
    judgement kept for it when that was made at the same threshold, else judged now."""
    had = kept.get(run.id)
    wanted = threshold if threshold is not None else run.profile.threshold
    if had is not None and had.threshold == wanted:
        return had
    return judge(run, threshold=threshold)


def open_at_look(runs: Sequence[RunRecord], measured: int) -> set[str] | None:
    """At a planned look of the servers' table, the variants with a comparison between
    servers still open (empty: all settled); None when `measured` rounds is not such a look.

    The runners of an auto run on several servers ask this after each round, and only a
    planned look's answer may end the rounds (so the α split over the looks holds).
    """
    judged = judge_servers(runs, within=False)
    if not judged.rows:
        return set()  # nothing measured on two servers (yet): nothing to wait for
    if measured not in judged.planned:
        return None
    return {r.variant for r in judged.undecided if not r.verdict.futile}


@dataclass
class RoundVote:
    """What one server's runner says after a round of an auto run on several servers."""

    more: bool
    """Its own round plan wants another round."""
    active: list[str]
    """The variants its plan would run next."""
    stopped_why: str | None
    """Why its plan ended the rounds early (max_repeats, the budget), if it did."""
    run: RunRecord
    """Its run with the trials so far."""
    clock: float
    """Seconds since its run began."""
    round_seconds: float
    """Its estimate of one round's seconds (0 before any trial)."""


def next_round(
    votes: Sequence[RoundVote],
    *,
    measured: int,
    profile: Profile,
    variants: list[str],
    between: set[str] | None,
) -> tuple[list[str] | None, set[str] | None]:
    """The servers' common decision after `measured` rounds: the variants of the next round
    (None: the rounds end) and what is open between the servers after this round.

    Every server runs the next round if any server's own plan wants it, or a comparison
    between servers is open (at the last planned look of that table; every variant before
    its first look), with the union of the variants wanted, the baseline always. The rounds
    end for all when any server's plan stopped early, at max_repeats, or when one more round
    would end after the budget. Every runner computes this from the same votes, so all agree.

    Args:
        votes: Every server's vote, in position order.
        measured: Measured rounds done (0 or less during the warm-ups).
        profile: The effective profile (max_repeats, budget, baseline).
        variants: The variants of the run, in profile order.
        between: What was open between the servers at the last look (None before one).
    """
    if any(v.stopped_why for v in votes):
        return None, between
    latest = max(v.clock for v in votes)
    per_round = max(v.round_seconds for v in votes)
    if measured >= profile.max_repeats or latest + per_round > profile.budget:
        return None, between
    if measured > 0:
        at_look = open_at_look([v.run for v in votes], measured)
        between = at_look if at_look is not None else between
    wanted = {name for v in votes if v.more for name in v.active}
    wanted |= set(variants) if between is None else between
    if not wanted:
        return None, between
    base = profile.baseline_name()
    return [n for n in variants if n in wanted or n == base], between


def outcome(judged: ServerJudgement) -> str:
    """How the whole multi-server run ended: the first server run that did not finish, else
    undecided when any verdict (within a server or between servers) is, else decided."""
    for run in judged.runs:
        if run.status != "finished":
            return run.status
    within = [
        report.outcome(r, judged.within_of(r) or judge(r, threshold=judged.threshold))
        for r in judged.runs
    ]
    if judged.undecided or "undecided" in within:
        return "undecided"
    return "decided"


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.3f}" if values else ""


def server_lines(judged: ServerJudgement) -> list[str]:
    """One line per server: its label, run, version and where its programs came from."""
    out = []
    for r in judged.runs:
        programs = r.environment.server_programs if r.environment is not None else None
        built = f" · `{programs.replace('`', chr(39))}`" if programs else ""
        out.append(
            f"- {report.md_cell(label(r))}: run {r.id} · {r.status} · PostgreSQL "
            f"{r.server.capabilities.version} · {report.md_cell(r.server.dsn_masked)}{built}"
        )
    return out


def legend(judged: ServerJudgement) -> str:
    """How to read the server verdicts (the words and statistics of every verdict)."""
    n = judged.family_size
    family = (
        f"Holm-corrected across the {n} server comparisons"
        if n > 1
        else "one comparison, no correction needed"
    )
    looks = judged.looks
    sequential = (
        f", judged at rounds {', '.join(str(x) for x in looks)} (α split over the planned looks)"
        if len(looks) > 1
        else ""
    )
    t = f"{judged.threshold * 100:g} %"
    return (
        "verdict: the Hodges–Lehmann ratio server / "
        f"{markdown.cell(label(judged.runs[0]))} [interval] of the "
        f"same variant and phase, {family}{sequential}: the words are controlled for the "
        "whole table (any false faster/slower at most 5 %), and each interval is drawn at the "
        f"level its comparison was tested at; faster or slower when the interval excludes 1 "
        f"and the ratio is beyond ±{t}; same within ±{t} when the whole interval lies inside "
        "it; undecided otherwise. The servers took turns trial by trial, so the machine's "
        "drift fell on each alike." + family_words(judged.tables)
    )


def servers_markdown(judged: ServerJudgement) -> str:
    """The servers section: who ran, each variant's phase on each server, the verdicts."""
    ref = label(judged.runs[0])
    lines = [
        f"## Each variant on each server, against {markdown.cell(ref)}",
        "",
        *server_lines(judged),
        "",
    ]
    rows: list[list[object]] = []
    shown: set[tuple[str, str]] = set()
    for row in judged.rows:
        key = (row.variant, row.phase)
        if key not in shown:
            shown.add(key)
            reference = [ref, len(row.ref_seconds), _median(row.ref_seconds), "reference"]
            rows.append([row.variant, row.phase, *reference])
        verdict = [len(row.seconds), _median(row.seconds), row.verdict.label()]
        rows.append([row.variant, row.phase, row.server, *verdict])
    if not judged.rows:
        rows.append(["—", "—", "—", 0, "", "nothing measured on two servers"])
    header = ["variant", "phase", "server", "n", "median s", f"verdict (against {ref})"]
    lines += markdown.table(header, rows)
    lines += ["", legend(judged), ""]
    if judged.undecided:
        lines.append(
            "Undecided (more rounds could settle the word): "
            + "; ".join(r.sentence() for r in judged.undecided)
            + "."
        )
    if judged.only:
        lines.append("Not on every server (not compared): " + ", ".join(judged.only) + ".")
    return "\n".join(lines) + "\n"


def to_markdown(
    runs: Sequence[RunRecord],
    threshold: float | None = None,
    *,
    judged: ServerJudgement | None = None,
) -> str:
    """Each server's own table (its environment naming its version), then the servers'
    (`judged`: the group's judgement when the caller has it, so nothing is judged again)."""
    judged = judged if judged is not None else judge_servers(runs, threshold)
    parts = []
    for r in judged.runs:
        table = report.to_markdown(r, threshold, judged=judged.within_of(r))
        parts.append(f"# On {markdown.cell(label(r))}\n\n" + table)
    parts.append(servers_markdown(judged))
    return printable("\n".join(parts))


def server_dicts(judged: ServerJudgement) -> dict[str, Any]:
    """The `servers` object of the JSON document (run-v1.schema.json)."""
    return {
        "reference": label(judged.runs[0]),
        "group": judged.runs[0].axis.group if judged.runs[0].axis else judged.runs[0].id,
        "runs": [
            {
                "label": label(r),
                "run": r.id,
                "status": r.status,
                "server_version": r.server.capabilities.version,
                "server": r.server.dsn_masked,
                "server_programs": (
                    r.environment.server_programs if r.environment is not None else None
                ),
                "rows": report.to_rows(
                    r, judged.threshold, unknown=None, judged=judged.within_of(r)
                ),
            }
            for r in judged.runs
        ],
        "comparisons": [
            {
                "variant": row.variant,
                "phase": row.phase,
                "server": row.server,
                "reference": row.reference,
                "reference_seconds": row.ref_seconds,
                "seconds": row.seconds,
                "sentence": row.sentence(),
                "verdict": {**row.verdict.model_dump(), "label": row.verdict.label()},
            }
            for row in judged.rows
        ],
        "not_compared": judged.only,
        "correction": {
            "method": "holm",
            "comparisons": judged.family_size,
            "looks": judged.looks,
            "alpha": 0.05,
        },
    }


def to_json(
    runs: Sequence[RunRecord],
    threshold: float | None = None,
    *,
    judged: ServerJudgement | None = None,
) -> str:
    """The reference server's run document, its outcome the whole run's, with `servers`."""
    judged = judged if judged is not None else judge_servers(runs, threshold)
    ref = judged.runs[0]
    doc = json.loads(report.to_json(ref, threshold, judged=judged.within_of(ref)))
    doc["outcome"] = outcome(judged)
    doc["servers"] = server_dicts(judged)
    return json.dumps(doc, indent=2, default=str) + "\n"


def to_csv(
    runs: Sequence[RunRecord],
    threshold: float | None = None,
    *,
    judged: ServerJudgement | None = None,
) -> str:
    """Each server's table rows with a `server` column first, then one row per server
    comparison (server '18 vs 15', its verdict's fields)."""
    judged = judged if judged is not None else judge_servers(runs, threshold)
    parts: list[str] = []
    for r in judged.runs:
        own = judged.within_of(r)
        table = report.to_csv(r, threshold, judged=own).splitlines(keepends=True)
        if not parts:
            parts.append("server," + table[0])
        parts += [_csv_prefix(label(r)) + line for line in table[1:]]
    buf = io.StringIO()
    writer = csv.writer(buf)
    for row in judged.rows:
        v = row.verdict
        writer.writerow(
            report.csv_cell(x)
            for x in [
                f"{row.server} vs {row.reference}",
                row.variant,
                row.phase,
                len(row.seconds),
                None,
                statistics.median(row.seconds),
                None,
                v.label(),
                v.word,
                v.ratio,
            ]
        )
    return "".join(parts) + buf.getvalue()


def _csv_prefix(value: str) -> str:
    buf = io.StringIO()
    csv.writer(buf).writerow([report.csv_cell(value)])
    return buf.getvalue().rstrip("\r\n") + ","


FORMATS = {"md": to_markdown, "csv": to_csv, "json": to_json}
"""--format value → renderer of a multi-server run."""


def render(
    runs: Sequence[RunRecord],
    fmt: str = "md",
    threshold: float | None = None,
    *,
    judged: ServerJudgement | None = None,
) -> str:
    """A multi-server run in one of FORMATS (`judged`: the group's judgement when the
    caller has it, judged once, not per format)."""
    return FORMATS[fmt](runs, threshold, judged=judged)
