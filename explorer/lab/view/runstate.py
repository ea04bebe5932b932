"""What a front end knows about the run on show: plain state, fed one engine event at a time.

Live runs and replays both call `RunView.apply` with the runner's events, in order. Nothing
here draws; the widgets read this state when they redraw. Series are bounded (`SERIES_LEN`
samples), so a run of any length costs the same memory. Statistics come from
`explorer.analysis.report.summarize` on the `RunRecord` kept here, never recomputed.
"""

from __future__ import annotations

import datetime as dt
import statistics
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal

from explorer.analysis import servers as server_axis
from explorer.analysis.judge import Judgement, judge
from explorer.analysis.report import SummaryRow, summarize
from explorer.analysis.units import MIB
from explorer.analysis.units import human_bytes as _size
from explorer.analysis.units import human_count as _count
from explorer.lab.view.stream import narrate
from explorer.models import (
    Capabilities,
    Event,
    FkTiming,
    Notice,
    PhaseEnded,
    PhaseStarted,
    Profile,
    RunEnded,
    RunRecord,
    RunStarted,
    SampleTaken,
    ServerInfo,
    TrialEnded,
    TrialStarted,
    Variant,
)

MARKS_LEN = 200
"""Phase starts kept for the charts' rules (the series hold fewer samples than that)."""

SERIES_LEN = 480
"""Samples kept per series: two minutes at the runner's 0.25 s interval."""

IO_OPS = ("writes", "extends", "fsyncs")
"""pg_stat_io operations the activity chart follows."""

DOING_WINDOW = 2.5
"""Seconds of samples `RunView.doing` reads: the backend's waits of the last moments."""

SHORT_BACKEND = {
    "client backend": "client",
    "checkpointer": "ckpt",
    "background writer": "bgwriter",
    "autovacuum worker": "autovac",
    "autovacuum launcher": "av-launcher",
    "background worker": "bgworker",
    "walwriter": "walwriter",
    "startup": "startup",
    "standalone backend": "standalone",
    "walsender": "walsender",
}
"""pg_stat_io backend_type → a label short enough for a chart legend."""


def _num(value: Any) -> float:
    """A counter from a loosely typed sample dict; anything odd counts as 0."""
    return float(value) if isinstance(value, int | float) else 0.0


@dataclass
class PhaseProgress:
    """How far the running phase has got, from the samples' progress views."""

    fraction: float | None = None
    """0..1 when a progress view gives a total, else None."""
    text: str = ""
    """'6.1M / 10M rows', '120.0 MiB / 300.0 MiB', 'table 34.0 MiB'…"""


@dataclass
class ActivitySeries:
    """The server-activity time series, x = seconds since the run started."""

    wal: deque[tuple[float, float]] = field(default_factory=lambda: deque(maxlen=SERIES_LEN))
    """(t, WAL MiB/s) from pg_current_wal_insert_lsn() deltas: live even mid-statement."""
    io: dict[str, deque[tuple[float, float]]] = field(default_factory=dict)
    """'client extends' → (t, operations/s) from pg_stat_io deltas."""
    waits: deque[tuple[float, dict[str, float]]] = field(
        default_factory=lambda: deque(maxlen=SERIES_LEN)
    )
    """(t, {'IO:DataFileExtend': average backends in that wait}) of the workload's backends."""
    last_io: dict[str, float] = field(default_factory=dict)
    """The latest non-empty pg_stat_io flush: 'client extends' → operations."""
    relation_bytes: int | None = None
    """Size of the trial's tables at the latest sample."""
    relation_since: float = 0.0
    """When `relation_bytes` last changed (seconds since the run started)."""
    samples: int = 0
    """Samples seen in this run."""

    def add(self, at: float, sample: dict[str, Any]) -> None:
        """Append one sampler reading (a dict, so that missing keys degrade, not crash)."""
        self.samples += 1
        interval = _num(sample.get("interval")) or 1.0
        self.wal.append((at, _num(sample.get("wal_bytes_per_s")) / MIB))
        flushed: dict[str, float] = {}
        for row in sample.get("io") or []:
            if not isinstance(row, dict):
                continue
            backend = str(row.get("backend_type", "?"))
            label = SHORT_BACKEND.get(backend, backend)
            wal = "wal-" if row.get("object") == "wal" else ""
            for op in IO_OPS:
                value = _num(row.get(op))
                if value:
                    key = f"{label} {wal}{op}"
                    flushed[key] = flushed.get(key, 0.0) + value
        for key in sorted(flushed.keys() - self.io.keys()):
            self.io[key] = deque(maxlen=SERIES_LEN)
        for key, series in self.io.items():
            series.append((at, flushed.get(key, 0.0) / interval))
        if flushed:
            self.last_io = dict(flushed)
        polls = _num(sample.get("wait_polls")) or 1.0
        waits = sample.get("waits") or {}
        self.waits.append(
            (at, {str(k): _num(v) / polls for k, v in waits.items() if _num(v)})
            if isinstance(waits, dict)
            else (at, {})
        )
        sizes = sample.get("relation_bytes")
        if isinstance(sizes, dict) and sizes:
            size = int(sum(_num(v) for v in sizes.values()))
            if size != self.relation_bytes:
                self.relation_bytes, self.relation_since = size, at


@dataclass
class RunView:
    """The run on screen: identity, where it is, what it measured, what it said.

    Args:
        profile: The profile being run, when known (replays of old runs may not know it).
        scale: The size multiplier of the run.
    """

    profile: Profile | None = None
    scale: float = 1.0
    server: ServerInfo | None = None
    """From RunStarted: masked DSN and capabilities."""
    run_id: str | None = None
    status: str = "idle"
    """idle, running, finished, failed, cancelled, incomplete."""
    reason: str | None = None
    total_trials: int = 0
    """Trials the run plans, from its start (the most it may take when `trials_upto`)."""
    trials_upto: bool = False
    """`total_trials` is a maximum: repeats = "auto" may end the run sooner."""
    trial_index: int = 0
    variant: str | None = None
    """Variant of the trial in flight."""
    repeat: int = 0
    round_plan: str | None = None
    """Where the run stands ("round 7 of ≤ 30 · ~3 min left · 3 comparisons open")."""
    phase: str | None = None
    """Phase in flight, None between phases."""
    phase_started: float = 0.0
    trial_started: float = 0.0
    expected_rows: int | None = None
    now: float = 0.0
    """Seconds since the run started, as of the latest event (or the live clock)."""
    last_phase: tuple[str, float] | None = None
    """The phase that ended last in this trial, and its seconds."""
    trial_phases: list[tuple[str, float | None]] = field(default_factory=list)
    """The trial's phases so far in order: (name, seconds), seconds None while it runs."""
    progress: PhaseProgress = field(default_factory=PhaseProgress)
    phase_marks: deque[tuple[float, str]] = field(default_factory=lambda: deque(maxlen=MARKS_LEN))
    """(seconds, phase) of each phase start in this run: the charts draw a rule there."""
    trial_marks: deque[tuple[float, str]] = field(default_factory=lambda: deque(maxlen=MARKS_LEN))
    """(seconds, variant) of each trial start in this run: the charts label its band."""
    activity: ActivitySeries = field(default_factory=ActivitySeries)
    record: RunRecord | None = None
    """Trials so far, kept as the store keeps them, for `summarize`."""
    summary: list[SummaryRow] = field(default_factory=list)
    """`summarize(record)`, recomputed when a trial ends."""
    accumulate: bool = False
    """Keep the previous run's trials when the next run has the same workload and size, so
    that one-variant runs (key r) line up as bars and rows of one table."""
    servers: list[str] = field(default_factory=list)
    """The labels of the servers the run takes turns on ('15', '18'); empty: one server.
    Their events come through `apply_on`, and the run shows each variant on each server as
    'unlogged @ 15', 'unlogged @ 18' (see `several`)."""
    shares: dict[str, RunRecord] = field(default_factory=dict)
    """Each server's own run as its events tell it (variants under their own names)."""
    server_rows: list[SummaryRow] = field(default_factory=list)
    """The verdicts between servers ('unlogged on 18 vs 15'), once the run has ended."""
    between: list[str] = field(default_factory=list)
    """Those of the whole run's time as sentences: 'unlogged total on 18 vs 15: 0.93× …'."""
    _turns: dict[str, tuple[int, int]] = field(default_factory=dict)
    _judged: tuple[tuple[int, int, tuple[str, ...]], Judgement] | None = None
    """The latest judgement of one server's `record` (its table's), with what it judged."""
    """Each server's (trial index, trials planned), summed into `trial_index`/`total_trials`."""

    @property
    def running(self) -> bool:
        """A run is in flight."""
        return self.status == "running"

    @property
    def count(self) -> str:
        """Where the run stands in its trials: '5/27', or '5/≤27' when it may end sooner."""
        return f"{self.trial_index}/{'≤' if self.trials_upto else ''}{self.total_trials}"

    @property
    def caps(self) -> Capabilities | None:
        """Capabilities of the run's server."""
        return self.server.capabilities if self.server else None

    def apply(self, event: Event) -> None:
        """Fold one engine event into the state."""
        self.now = max(self.now, event.at)
        if isinstance(event, SampleTaken):
            self._sample(event)
        elif isinstance(event, RunStarted):
            self._started(event)
        elif isinstance(event, TrialStarted):
            self.trial_index, self.total_trials = event.index, event.total
            self.trials_upto = event.upto
            self.variant, self.repeat = event.variant, event.repeat
            self.round_plan = event.plan
            self.trial_started = event.at
            self.trial_marks.append((event.at, event.variant))
            # The previous trial's last phase is not this variant's: forget it.
            self.phase, self.last_phase, self.progress = None, None, PhaseProgress()
            self.trial_phases = []
        elif isinstance(event, PhaseStarted):
            self.variant, self.repeat = event.variant, event.repeat
            self.phase, self.phase_started = event.phase, event.at
            self.phase_marks.append((event.at, event.phase))
            self.trial_phases.append((event.phase, None))
            self.expected_rows = event.expected_rows
            self.progress = PhaseProgress()
        elif isinstance(event, PhaseEnded):
            self.last_phase = (event.result.name, event.result.seconds)
            self.phase = None
            # Phases may overlap (a restore's COMMIT starts before its load is reported).
            for n in range(len(self.trial_phases) - 1, -1, -1):
                if self.trial_phases[n] == (event.result.name, None):
                    self.trial_phases[n] = (event.result.name, event.result.seconds)
                    break
        elif isinstance(event, TrialEnded):
            self._trial_ended(event)
        elif isinstance(event, RunEnded):
            self.status, self.reason = event.status, event.reason
            if self.record is not None:
                self.record.status, self.record.reason = event.status, event.reason
            self.phase = None
            self.variant = None
        elif isinstance(event, Notice):
            pass

    def several(self, labels: list[str]) -> None:
        """The next run takes turns on the servers labelled so (empty or one: one server)."""
        if self.servers:
            self.record = None  # a run on one server never adds to a table of several
        self.servers = list(labels) if len(labels) > 1 else []
        self.shares, self.server_rows, self.between, self._turns = {}, [], [], {}

    def apply_on(self, label: str, event: Event) -> Event:
        """Fold one event of the server labelled `label` of a run on several servers.

        Returns the event as the screen tells it: its variant named with the server
        ('unlogged @ 18'), a notice saying which server it is about.
        """
        told = on_server(event, label)
        if isinstance(event, RunStarted):
            first = not self.shares
            self.shares[label] = RunRecord(
                id=event.run_id,
                profile=(self.profile or _unknown(event.profile)).model_copy(deep=True),
                scale=self.scale,
                server=event.server,
                started_at=dt.datetime(2000, 1, 1, tzinfo=dt.UTC),
            )
            self._turns[label] = (0, event.total_trials)
            self._count_turns()
            if not first:
                # Told, not folded again: the run on screen began with the first server's.
                return Notice(at=event.at, message=narrate(event) or "")
            self.accumulate = False
            self._started(event)
            assert self.record is not None
            self.record.profile = each_on_servers(self.record.profile, self.servers)
            self._count_turns()
            return told
        if isinstance(event, TrialStarted):
            self._turns[label] = (event.index, event.total)
            self._count_turns()
            # The log counts as the header does: every server's trials ([27/36], not [13/18]).
            told = told.model_copy(update={"index": self.trial_index, "total": self.total_trials})
        if isinstance(event, TrialEnded) and label in self.shares:
            self.shares[label].trials.append(event.result)
        if isinstance(event, RunEnded):
            share = self.shares.get(label)
            if share is not None:
                share.status, share.reason = event.status, event.reason
            if any(s.status == "running" for s in self.shares.values()):
                # The others still take their turns: told, and the run goes on on screen.
                self.now = max(self.now, event.at)
                loud: Literal["info", "warning"] = (
                    "info" if event.status == "finished" else "warning"
                )
                return Notice(at=event.at, level=loud, message=f"on {label}: {narrate(event)}")
            told = event.model_copy(update={"status": together(self.shares)})
        self.apply(told)
        return told

    def _count_turns(self) -> None:
        self.trial_index = sum(i for i, _ in self._turns.values())
        self.total_trials = sum(n for _, n in self._turns.values())

    def _summarize(self) -> list[SummaryRow]:
        """The table: one server's run alone, or each variant on each server (each against
        its own server's baseline), then the verdicts between servers."""
        if not self.servers or self.record is None:
            if self.record is None:
                return []
            judged = judge(self.record)
            self._judged = (judged_key(self.record), judged)
            return summarize(self.record, judged)
        rows: list[SummaryRow] = []
        for label in self.servers:
            share = self.shares.get(label)
            if share is None:
                continue
            for row in summarize(share):
                row.variant = f"{row.variant} @ {label}"
                rows.append(row)
        order = {v.name: n for n, v in enumerate(self.record.profile.variants)}
        rows.sort(key=lambda r: order.get(r.variant, len(order)))  # stable: phases stay
        return rows + self.server_rows

    def judgement_of(self, record: RunRecord) -> Judgement | None:
        """The judgement the table was made from, when `record` is the view's run and has
        not changed since (so the end card of a replay does not judge it again)."""
        if self._judged is None or record is not self.record:
            return None
        key, judged = self._judged
        return judged if key == judged_key(record) else None

    def judge_servers(
        self, runs: list[RunRecord], group: server_axis.ServerJudgement | None = None
    ) -> None:
        """The verdicts between servers over the servers' stored runs, under the table
        (`group`: their judgement when the caller made it, so it is not judged again)."""
        if group is None and len(runs) > 1:
            group = server_axis.judge_servers(runs, within=False)
        judged = group.rows if group is not None and len(runs) > 1 else []
        # each server's own rows stand as the last trial left them: only the servers' change
        kept = len(self.summary) - len(self.server_rows)
        own = self.summary[:kept] if self.servers and self.record is not None else None
        self.server_rows = server_rows(judged)
        # The whole run's time in the log, as the command line says it; the table has all.
        self.between = [r.sentence() for r in judged if r.phase == "total"] or [
            r.sentence() for r in judged
        ]
        self.summary = own + self.server_rows if own is not None else self._summarize()

    def _started(self, event: RunStarted) -> None:
        self.run_id, self.server = event.run_id, event.server
        self.status, self.reason = "running", None
        self.total_trials, self.trial_index = event.total_trials, 0
        self.trials_upto = event.upto
        self.variant, self.repeat, self.phase, self.last_phase = None, 0, None, None
        self.progress = PhaseProgress()
        self.activity = ActivitySeries()
        self.phase_marks = deque(maxlen=MARKS_LEN)
        self.trial_marks = deque(maxlen=MARKS_LEN)
        self.now = event.at
        profile = self.profile or _unknown(event.profile)
        previous = self.record
        self.record = RunRecord(
            id=event.run_id,
            profile=profile.model_copy(deep=True),
            scale=self.scale,
            server=event.server,
            started_at=dt.datetime(2000, 1, 1, tzinfo=dt.UTC),
        )
        self.summary = []
        if self.accumulate and previous is not None and same_experiment(previous, self.record):
            known = [v.name for v in previous.profile.variants]
            extra = [v for v in profile.variants if v.name not in known]
            self.record.profile = previous.profile.model_copy(
                update={"variants": [*previous.profile.variants, *extra]}
            )
            self.record.trials = list(previous.trials)
            self.summary = summarize(self.record)

    def _trial_ended(self, event: TrialEnded) -> None:
        if self.record is None:
            return
        result = event.result
        names = [v.name for v in self.record.profile.variants]
        if result.variant not in names:
            # A replay without its profile learns the variants as trials end.
            if names == ["?"]:
                self.record.profile.variants = []
            self.record.profile.variants.append(Variant(name=result.variant))
        self.record.trials.append(result)
        self.summary = self._summarize()
        if result.status == "ok":
            self.variant = None

    def _sample(self, event: SampleTaken) -> None:
        sample = event.sample
        self.activity.add(event.at, sample)
        self.progress = phase_progress(sample, self.expected_rows, self.activity.relation_bytes)

    def doing(self) -> str:
        """What the workload's backends do in the running phase, from the samples so far.

        'checking the deferred FKs · on CPU 100% · no WAL · table 217.1 MiB steady (last
        2.5 s)': during one long statement pg_stat_io says nothing, but the waits, the WAL
        position and the table's size do. Empty between phases or before a sample in the phase.
        """
        if not self.phase:
            return ""
        since = max(self.phase_started, self.now - DOING_WINDOW)
        waits: dict[str, float] = {}
        seen = 0
        for at, shares in reversed(self.activity.waits):
            if at < since:
                break
            seen += 1
            for name, value in shares.items():
                waits[name] = waits.get(name, 0.0) + value
        if not seen:
            return ""
        parts = []
        hint = self._hint()
        if hint:
            parts.append(hint)
        busy = sum(waits.values())
        if busy:
            name, value = max(waits.items(), key=lambda kv: kv[1])
            what = "on CPU" if name == "CPU" else f"waiting on {name}"
            parts.append(f"{what} {value / busy:.0%}")
        else:
            parts.append("no workload backend active")
        rates = [rate for at, rate in self.activity.wal if at >= since]
        if rates:
            peak = max(rates)
            parts.append("no WAL" if peak < 0.05 else f"WAL {sum(rates) / len(rates):.1f} MiB/s")
        size = self.activity.relation_bytes
        if size is not None:
            steady = self.activity.relation_since < since
            parts.append(f"table {_size(size)} {'steady' if steady else 'growing'}")
        window = min(self.now - since, DOING_WINDOW)
        tail = f" (last {window:.1f} s)" if window >= 0.1 else " (first sample)"
        return " · ".join(parts) + tail

    def _hint(self) -> str:
        """What the knobs say this phase does, where that is a fact and not a guess."""
        record = self.record
        phase = self.phase or ""
        if record is None or not (phase == "commit" or phase.endswith("-commit")):
            return ""
        variant = next((v for v in record.profile.variants if v.name == self.variant), None)
        if variant is not None and variant.knobs.fk is FkTiming.DEFERRED:
            return "checking the deferred FKs"
        return ""

    def elapsed(self) -> tuple[float, float]:
        """(seconds in the current phase, seconds in the current trial)."""
        phase = self.now - self.phase_started if self.phase else 0.0
        trial = self.now - self.trial_started if self.variant else 0.0
        return max(phase, 0.0), max(trial, 0.0)


def _unknown(name: str) -> Profile:
    """The profile of a replayed run that does not carry it: the variants are learnt."""
    return Profile(name=name, title=name, workload="?", variants=[Variant(name="?")])


def on_server(event: Event, label: str) -> Event:
    """An event of one server of several as the screen tells it: 'unlogged @ 18'."""
    tag = f" @ {label}"
    if isinstance(event, TrialStarted | PhaseStarted | PhaseEnded):
        return event.model_copy(update={"variant": event.variant + tag})
    if isinstance(event, TrialEnded):
        result = event.result.model_copy(update={"variant": event.result.variant + tag})
        return event.model_copy(update={"result": result})
    if isinstance(event, Notice):
        return event.model_copy(update={"message": f"on {label}: {event.message}"})
    return event


def each_on_servers(profile: Profile, labels: list[str]) -> Profile:
    """The profile as a run on several servers shows it: each variant on each server, in
    turn ('logged @ 15', 'logged @ 18', 'unlogged @ 15' …), the baseline on the first."""
    variants = [
        v.model_copy(update={"name": f"{v.name} @ {label}"})
        for v in profile.variants
        for label in labels
    ]
    base = f"{profile.baseline_name()} @ {labels[0]}" if labels else None
    return profile.model_copy(update={"variants": variants, "baseline": base})


def together(shares: dict[str, RunRecord]) -> str:
    """How a run on several servers ended: the first server's run that did not finish."""
    return next((s.status for s in shares.values() if s.status != "finished"), "finished")


def judged_key(record: RunRecord) -> tuple[int, int, tuple[str, ...]]:
    """What a judgement of the view's run depends on that the view changes: the record, its
    trials (only ever appended) and its variants (a replay without its profile learns them)."""
    return id(record), len(record.trials), tuple(v.name for v in record.profile.variants)


def server_rows(judged: list[server_axis.ServerRow]) -> list[SummaryRow]:
    """The verdicts between servers as table rows: 'unlogged on 18 vs 15', phase, verdict —
    the command line's words (`explorer.analysis.servers`)."""
    return [
        SummaryRow(
            f"{row.variant} on {row.server} vs {row.reference}",
            row.phase,
            len(row.seconds),
            min(row.seconds),
            statistics.median(row.seconds),
            max(row.seconds),
            verdict=row.verdict,
            note=f"{row.server}'s trials, judged against {row.reference}'s",
        )
        for row in judged
    ]


def same_experiment(a: RunRecord, b: RunRecord) -> bool:
    """Two runs measure the same thing: same workload, parameters, size and server."""
    return (
        a.profile.workload == b.profile.workload
        and a.profile.params == b.profile.params
        and a.scale == b.scale
        and a.server.capabilities.system_identifier == b.server.capabilities.system_identifier
    )


def phase_progress(
    sample: dict[str, Any], expected_rows: int | None, relation_bytes: int | None
) -> PhaseProgress:
    """The best progress measure a sample offers: COPY, CREATE INDEX, VACUUM, table size."""
    progress = sample.get("progress") or {}
    copies = [c for c in progress.get("copy") or [] if isinstance(c, dict)]
    if copies:
        rows = sum(_num(c.get("tuples_processed")) for c in copies)
        done = sum(_num(c.get("bytes_processed")) for c in copies)
        total = sum(_num(c.get("bytes_total")) for c in copies)
        if expected_rows:
            return PhaseProgress(
                min(rows / expected_rows, 1.0), f"{_count(rows)} / {_count(expected_rows)} rows"
            )
        if total:
            return PhaseProgress(min(done / total, 1.0), f"{_size(done)} / {_size(total)}")
        return PhaseProgress(None, f"{_count(rows)} rows · {_size(done)} read")
    for key, done_key, total_key, unit in (
        ("create_index", "blocks_done", "blocks_total", "blocks"),
        ("vacuum", "heap_blks_scanned", "heap_blks_total", "heap blocks"),
    ):
        items = [i for i in progress.get(key) or [] if isinstance(i, dict)]
        if items:
            done = sum(_num(i.get(done_key)) for i in items)
            total = sum(_num(i.get(total_key)) for i in items)
            phase = str(items[0].get("phase", key))
            if total:
                return PhaseProgress(
                    min(done / total, 1.0), f"{phase}: {_count(done)} / {_count(total)} {unit}"
                )
            return PhaseProgress(None, phase)
    if relation_bytes is not None:
        return PhaseProgress(None, f"table {_size(relation_bytes)}")
    return PhaseProgress()
