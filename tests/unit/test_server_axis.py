"""The server version as an axis, without a server: turns, verdicts per server pair, options.

The turnstile is driven by real asyncio tasks; the verdicts by made-up trials with a known
effect through the real judge (`explorer.analysis.servers`); the options by the real parser.
"""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path

import jsonschema
import pytest

from explorer import cli
from explorer.analysis import bmf, formats, report, servers
from explorer.analysis import judge as judge_module
from explorer.analysis.calibration import synthetic_caps, synthetic_record, synthetic_trial
from explorer.cli import SEVERAL_SERVERS, parse_args
from explorer.errors import UsageError
from explorer.lab.run.turns import Turnstile
from explorer.models import Profile, RunRecord, ServerAxis, Variant

SCHEMA = json.loads(
    (Path(cli.__file__).parents[1] / "schemas" / "run-v1.schema.json").read_text(encoding="utf-8")
)

# --------------------------------------------------------------------------- turns


async def test_servers_take_turns_and_one_that_leaves_stops_holding_the_others() -> None:
    gate = Turnstile(3)
    done: list[tuple[int, int]] = []

    async def runner(who: int, trials: int) -> None:
        try:
            for trial in range(trials):
                async with gate.turn(who):
                    await asyncio.sleep(0.001 * (3 - who))  # the slowest goes first
                    done.append((who, trial))
        finally:
            await gate.leave(who)

    # 1 leaves after one trial; 0 and 2 go on alternating among themselves
    await asyncio.wait_for(asyncio.gather(runner(2, 3), runner(1, 1), runner(0, 3)), 5)
    assert [who for who, _ in done] == [0, 1, 2, 0, 2, 0, 2]
    assert gate.order == [0, 1, 2, 0, 2, 0, 2]


async def test_a_runner_that_fails_before_its_first_turn_does_not_block_the_others() -> None:
    gate = Turnstile(2)
    order: list[int] = []

    async def broken() -> None:
        await gate.leave(0)  # what Runner.run does on its way out, whatever happened

    async def fine() -> None:
        for _ in range(2):
            async with gate.turn(1):
                order.append(1)

    await asyncio.wait_for(asyncio.gather(broken(), fine()), 5)
    assert order == [1, 1]


async def test_servers_agree_after_each_round_and_keep_alternating() -> None:
    gate = Turnstile(2)
    said: dict[int, list[dict[int, str]]] = {0: [], 1: []}

    async def runner(who: int, per_round: list[int]) -> None:
        try:
            for r, trials in enumerate(per_round):
                for _ in range(trials):
                    async with gate.turn(who):
                        await asyncio.sleep(0.002 if who == 0 else 0.001)
                said[who].append(await gate.gather(who, r, f"{who}@{r}"))
        finally:
            await gate.leave(who)

    # equal rounds alternate across the meeting; a round where 1 has one trial more (a
    # variant 0 cannot run) neither deadlocks nor lets 0 jump the queue
    await asyncio.wait_for(asyncio.gather(runner(0, [2, 2, 1]), runner(1, [2, 2, 2])), 5)
    assert gate.order == [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 1]
    assert said[0] == said[1] == [{0: f"0@{r}", 1: f"1@{r}"} for r in range(3)]


async def test_a_server_that_leaves_is_not_waited_for_at_the_meeting() -> None:
    gate = Turnstile(2)

    async def quits() -> None:
        async with gate.turn(0):
            pass
        await gate.leave(0)  # failed after its first trial

    async def stays() -> dict[int, str]:
        async with gate.turn(1):
            pass
        return await gate.gather(1, 0, "here")

    _, met = await asyncio.wait_for(asyncio.gather(quits(), stays()), 5)
    assert met == {1: "here"}


# --------------------------------------------------------------------------- verdicts

PROFILE = Profile(
    name="t",
    title="t",
    workload="bulk-write",
    params={"rows": 10},
    repeats=8,
    settle_seconds=0,
    variants=[Variant(name="logged"), Variant(name="unlogged")],
)


def server_run(
    major: int, position: int, factor: dict[str, float], seed: int, rounds: int = 8
) -> RunRecord:
    """`rounds` rounds of both variants on a server `factor` times the reference's speed."""
    rng = random.Random(seed)
    trials = [
        synthetic_trial(
            name,
            r,
            {
                "load": base * factor.get(name, 1.0) * rng.uniform(0.99, 1.01),
                "commit": 0.2 * rng.uniform(0.99, 1.01),
            },
        )
        for r in range(1, rounds + 1)
        for name, base in (("logged", 1.0), ("unlogged", 0.5))
    ]
    record = synthetic_record(PROFILE, trials)
    caps = synthetic_caps(major * 10000 + 6)
    return record.model_copy(
        update={
            "id": f"20261126-1200{position:02d}-aaaaa{position}",
            "status": "finished",
            "server": record.server.model_copy(update={"capabilities": caps}),
            "axis": ServerAxis(
                group="20261126-120000-aaaaa0",
                label=str(major),
                position=position,
                runs=["20261126-120000-aaaaa0", "20261126-120001-aaaaa1"],
                labels=["15", "18"],
            ),
        }
    )


def test_each_variant_and_phase_on_18_is_judged_against_15() -> None:
    on15 = server_run(15, 0, {}, seed=1)
    on18 = server_run(18, 1, {"unlogged": 0.8}, seed=2)  # 18's unlogged load 20 % faster
    judged = servers.judge_servers([on18, on15])  # any order: the axis puts 15 first
    assert [r.id for r in judged.runs] == [on15.id, on18.id]
    by = {(r.variant, r.phase): r for r in judged.rows}
    assert set(by) == {(v, p) for v in ("logged", "unlogged") for p in ("load", "commit", "total")}
    assert judged.family_size == 6  # one Holm family over every server comparison
    unlogged = by[("unlogged", "load")]
    assert unlogged.verdict.word == "faster" and 0.75 < unlogged.verdict.ratio < 0.85
    assert unlogged.sentence().startswith("unlogged load on 18 vs 15: 0.8")
    assert unlogged.sentence().endswith("faster")
    assert by[("logged", "load")].verdict.word == "same"
    # the correction is Holm's over the six: each p adjusted is at least the raw p
    assert all(
        r.verdict.p_adjusted is not None and r.verdict.p_adjusted >= r.verdict.p_value
        for r in judged.rows
        if r.verdict.p_value is not None
    )
    assert servers.outcome(judged) == "decided"


def test_the_server_table_shows_each_variant_on_each_server() -> None:
    runs = [server_run(15, 0, {}, seed=3), server_run(18, 1, {"unlogged": 1.3}, seed=4)]
    md = servers.to_markdown(runs)
    assert md.index("# On 15") < md.index("# On 18") < md.index("## Each variant on each server")
    assert "| unlogged | load | 15 | 8 |" in md and "| unlogged | load | 18 | 8 |" in md
    assert "slower |" in md.split("## Each variant on each server")[1]
    assert "Holm-corrected across the 6 server comparisons" in md
    doc = json.loads(servers.to_json(runs))
    jsonschema.validate(doc, SCHEMA)  # version 1 grows: the servers section is described
    assert doc["format"] == "pgwx-run" and doc["run"] == runs[0].id
    section = doc["servers"]
    assert [r["label"] for r in section["runs"]] == ["15", "18"]
    assert section["correction"]["comparisons"] == 6
    words = {(c["variant"], c["phase"]): c["verdict"]["word"] for c in section["comparisons"]}
    assert words[("unlogged", "load")] == "slower"
    csv_lines = servers.to_csv(runs).splitlines()
    assert csv_lines[0].startswith("server,variant,phase,n,")
    assert any(line.startswith("18 vs 15,unlogged,load,8,") for line in csv_lines)


def test_a_group_judged_once_renders_as_judged_again_and_reuses_the_runners_judgements(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runs = [server_run(15, 0, {}, seed=3), server_run(18, 1, {"unlogged": 1.3}, seed=4)]
    kept = {r.id: judge_module.judge(r) for r in runs}
    expected = {fmt: formats.render_servers(runs, fmt) for fmt in formats.SERVER_FORMATS}
    ended = servers.outcome(servers.judge_servers(runs))
    real = judge_module.judge
    calls: list[str] = []

    def counted(record: RunRecord, **kwargs: object) -> object:
        calls.append(record.id)
        return real(record, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(servers, "judge", counted)
    monkeypatch.setattr(report, "judge", counted)
    monkeypatch.setattr(bmf, "judge", counted)
    group = servers.judge_servers(runs, kept=kept)
    assert [group.within_of(r) for r in group.runs] == [kept[r.id] for r in runs]
    for fmt in formats.SERVER_FORMATS:
        assert formats.render_servers(runs, fmt, judged=group) == expected[fmt], fmt
    assert servers.outcome(group) == ended
    assert calls == [], f"judged again after the group was: {calls}"
    # a threshold other than the one a kept judgement was made at: that run is judged anew
    wider = servers.judge_servers(runs, 0.5, kept=kept)
    assert calls == [r.id for r in runs] and wider.within[0].threshold == 0.5


def test_a_failed_server_run_fails_the_whole_run() -> None:
    on15 = server_run(15, 0, {}, seed=5)
    on18 = server_run(18, 1, {}, seed=6).model_copy(update={"status": "failed"})
    assert servers.outcome(servers.judge_servers([on15, on18])) == "failed"


def test_two_servers_of_one_major_get_labels_apart() -> None:
    assert servers.labels([15, 18]) == ["15", "18"]
    assert servers.labels([18, 18, 15]) == ["18", "18 #2", "15"]


# --------------------------------------------------------------------------- agreeing on rounds

AUTO = PROFILE.model_copy(
    update={"repeats": "auto", "min_repeats": 5, "max_repeats": 15, "budget": 600.0}
)
NAMES = ["logged", "unlogged"]


def vote(
    run: RunRecord, more: bool, active: list[str], why: str | None = None, clock: float = 60.0
) -> servers.RoundVote:
    return servers.RoundVote(more, active, why, run, clock, 5.0)


def auto_runs(factor: float, rounds: int) -> list[RunRecord]:
    """Two servers' auto runs after `rounds` measured rounds, 18's unlogged `factor`× 15's."""
    runs = [
        server_run(15, 0, {}, seed=7, rounds=rounds),
        server_run(18, 1, {"unlogged": factor}, seed=8, rounds=rounds),
    ]
    return [r.model_copy(update={"profile": AUTO}) for r in runs]


def test_a_server_whose_comparisons_settled_goes_on_while_the_other_is_open() -> None:
    on15, on18 = auto_runs(1.0, 3)
    votes = [vote(on15, False, NAMES), vote(on18, True, ["logged", "unlogged"])]
    active, between = servers.next_round(
        votes, measured=3, profile=AUTO, variants=NAMES, between=None
    )
    assert active == NAMES and between is None  # before the servers' first look: all run


def test_the_rounds_end_for_all_when_one_server_stops_early_or_at_the_limits() -> None:
    on15, on18 = auto_runs(1.0, 3)
    budget = [vote(on15, True, NAMES), vote(on18, False, NAMES, why="the budget")]
    assert (
        servers.next_round(budget, measured=3, profile=AUTO, variants=NAMES, between=None)[0]
        is None
    )
    at_max = [vote(on15, True, NAMES), vote(on18, True, NAMES)]
    assert (
        servers.next_round(at_max, measured=15, profile=AUTO, variants=NAMES, between=None)[0]
        is None
    )
    late = [vote(on15, True, NAMES, clock=596.0), vote(on18, True, NAMES)]
    assert (
        servers.next_round(late, measured=4, profile=AUTO, variants=NAMES, between=None)[0] is None
    )


def test_at_the_servers_look_only_what_is_open_between_them_keeps_running() -> None:
    # both servers' own comparisons are settled; between them, unlogged is clearly faster on
    # 18 (settled) and logged the same: nothing open, the rounds end
    on15, on18 = auto_runs(0.7, 10)
    settled = [vote(on15, False, NAMES), vote(on18, False, NAMES)]
    active, between = servers.next_round(
        settled, measured=10, profile=AUTO, variants=NAMES, between=None
    )
    judged = servers.judge_servers([on15, on18])
    assert judged.planned == [10, 15] and not judged.undecided, [r.sentence() for r in judged.rows]
    assert active is None and between == set()
    # a look that leaves unlogged open between the servers keeps the baseline and unlogged on
    on15, on18 = auto_runs(0.7, 11)
    later = [vote(on15, False, NAMES), vote(on18, False, NAMES)]
    active, between = servers.next_round(
        later, measured=11, profile=AUTO, variants=NAMES, between={"unlogged"}
    )
    assert active == NAMES and between == {"unlogged"}  # 11 is no look: the last one holds
    # before the servers' first look (10) every variant goes on, though both servers settled
    on15, on18 = auto_runs(0.7, 5)
    early = [vote(on15, False, ["logged"]), vote(on18, False, ["logged"])]
    active, between = servers.next_round(
        early, measured=5, profile=AUTO, variants=NAMES, between=None
    )
    assert active == NAMES and between is None


# --------------------------------------------------------------------------- options


def parse(*argv: str) -> list[tuple[str | None, int | None]]:
    return parse_args(list(argv)).servers


def test_run_takes_several_servers_in_the_order_given() -> None:
    assert parse("run", "quick-demo", "--pg", "15", "--pg", "18") == [(None, 15), (None, 18)]
    assert parse("run", "quick-demo", "--dsn", "host=a", "--dsn", "host=b") == [
        ("host=a", None),
        ("host=b", None),
    ]
    args = parse_args(["run", "quick-demo", "--pg", "15"])
    assert args.servers == [(None, 15)] and args.pg == 15 and args.dsn is None


def test_the_app_takes_several_servers_too() -> None:
    assert parse("--pg", "15", "--pg", "18") == [(None, 15), (None, 18)]
    assert parse("--dsn", "host=a", "--dsn", "host=b") == [("host=a", None), ("host=b", None)]


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["check", "x.toml", "--pg", "15", "--pg", "18"], SEVERAL_SERVERS),
        (["--pg", "15", "--pg", "18", "--pg-bin", "/x"], "--pg-bin names one"),
        (["run", "q", "--pg", "15", "--pg", "15"], "--pg 15 is given twice"),
        (["run", "q", "--dsn", "host=a", "--dsn", "host=a"], "--dsn is given twice"),
        (["run", "q", "--pg", "15", "--pg", "18", "--data-dir", "/x"], "--data-dir names one"),
        (["run", "q", "--dsn", "host=a", "--dsn", "host=b", "--pg", "15"], "not both"),
    ],
)
def test_several_servers_where_they_cannot_be_is_one_sentence(argv: list[str], said: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse(*argv)
    assert said in str(caught.value)
    assert str(caught.value).count(". ") == 0  # one sentence


def test_a_variant_one_server_cannot_run_is_named_not_compared() -> None:
    on15 = server_run(15, 0, {}, seed=9)
    on18 = server_run(18, 1, {}, seed=10)
    on18 = on18.model_copy(update={"trials": [t for t in on18.trials if t.variant != "unlogged"]})
    judged = servers.judge_servers([on15, on18])
    assert {r.variant for r in judged.rows} == {"logged"}
    assert judged.only == [f"unlogged {p} (only on 15)" for p in ("load", "commit", "total")]
    assert "Not on every server (not compared): unlogged load (only on 15)" in (
        servers.servers_markdown(judged)
    )
