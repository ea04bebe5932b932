"""The rounds of a run: the second of the runner's three parts (`explorer.lab.run.context`).

Round after round of the variants in balanced order (each trial in `explorer.lab.run.trial`),
until the round plan (`explorer.analysis.rounds`: fixed repeats, or auto — the verdicts at
the planned looks, max_repeats, the budget) says the run is done; with several servers the
runs agree on every next round (`explorer.analysis.servers.next_round`). Nothing here calls
back into the runner: `run_rounds` takes the run's context and scope and fills the list of
trials it is given.
"""

from __future__ import annotations

import datetime as dt

from explorer.analysis.judge import Judgement, judge, undecided_text
from explorer.analysis.rounds import RoundPlan
from explorer.analysis.servers import RoundVote, next_round
from explorer.lab.run.context import RunContext, RunScope
from explorer.lab.run.trial import run_trial, server_back
from explorer.models import RunRecord, TrialResult, TrialStarted


async def run_rounds(ctx: RunContext, scope: RunScope, trials: list[TrialResult]) -> None:
    """Round after round of the variants in balanced order, until the round plan (fixed
    repeats, or auto: the verdicts, max_repeats, the budget) says the run is done.

    Args:
        trials: Filled with each trial as it ends (the caller stores the run with them
            however the rounds end).
    """
    reasons = scope.reasons
    by_name = {v.name: v for v in ctx.variants()}
    rounds = ctx.round_plan()
    done, index, more = 0, 0, True
    while more:
        for name in rounds.order(done):
            if reasons[name]:
                skip_once(ctx, name, done + 1, reasons[name] or "", trials)
                continue
            index += 1
            async with ctx.turn():  # servers of one run alternate, trial by trial
                ctx.emit(
                    TrialStarted(
                        at=ctx.clock(),
                        variant=name,
                        repeat=done + 1,
                        index=index,
                        total=max(index, ctx.most_trials),
                        upto=rounds.auto,
                        plan=rounds.progress(done, ctx.clock()),
                    )
                )
                began = ctx.clock()
                result = await run_trial(ctx, scope, by_name[name], done + 1)
            result.warmup = done < ctx.profile.warmup
            rounds.record(name, ctx.clock() - began)
            trials.append(ctx.finish(result))
            if ctx.lost:
                # The server went away mid-trial: wait for it before the next one.
                await server_back(ctx)
        done += 1
        more = await after_round(ctx, scope.record, trials, rounds, done)


def skip_once(ctx: RunContext, name: str, repeat: int, why: str, trials: list[TrialResult]) -> None:
    """A variant this server cannot run: stored as skipped, once a run."""
    if any(t.variant == name and t.status == "skipped" for t in trials):
        return
    skipped = TrialResult(
        run_id=ctx.run_id,
        variant=name,
        repeat=repeat,
        status="skipped",
        reason=f"not available here: {why}",
        started_at=dt.datetime.now(dt.UTC),
    )
    trials.append(ctx.finish(skipped))


async def after_round(
    ctx: RunContext, record: RunRecord, trials: list[TrialResult], rounds: RoundPlan, done: int
) -> bool:
    """At the end of a round: judge at a look, say who stops, agree with the other
    servers; whether another round follows."""
    before = list(rounds.active)
    judged = judge_look(ctx, record, trials, rounds, done)
    more = rounds.after_round(done, judged, ctx.clock())
    if judged is not None:
        say_after_look(ctx, judged, rounds, before, done)
    if ctx.turnstile is not None and rounds.auto:
        more = await agree(ctx, rounds, record, trials, done, more)
    return more


def judge_look(
    ctx: RunContext, record: RunRecord, trials: list[TrialResult], rounds: RoundPlan, done: int
) -> Judgement | None:
    """At a look of an auto run, the judgement of the trials so far; None otherwise."""
    measured = done - ctx.profile.warmup
    if not rounds.auto or measured not in rounds.looks:
        return None
    skipped = {t.variant for t in trials if t.status == "skipped"}
    names = [n for n in rounds.variants if n not in skipped]
    if rounds.baseline not in names:
        return Judgement(baseline=rounds.baseline, threshold=ctx.profile.threshold)
    return judge(record.model_copy(update={"trials": trials}), variants=names)


def say_after_look(
    ctx: RunContext, judged: Judgement, rounds: RoundPlan, before: list[str], done: int
) -> None:
    """Notices at a look: who stops getting rounds, and why the run ends if it does."""
    measured = done - ctx.profile.warmup
    dropped = [v for v in before if v not in rounds.active]
    if judged.verdicts and not judged.undecided:
        ctx.notice(f"every verdict settled after {measured} rounds")
    elif rounds.stopped_why is not None:
        ctx.notice(
            f"stopped after {measured} rounds: {rounds.stopped_why}. {undecided_text(judged)}",
            "warning",
        )
    elif dropped:
        ctx.notice(
            f"settled after {measured} rounds: {', '.join(dropped)} — no more rounds for "
            f"{'it' if len(dropped) == 1 else 'them'}"
        )


async def agree(
    ctx: RunContext,
    rounds: RoundPlan,
    record: RunRecord,
    trials: list[TrialResult],
    done: int,
    more: bool,
) -> bool:
    """Auto repeats on several servers: after each round the servers agree on the next.

    They go on while any server's own comparisons, or any comparison between the servers
    (judged only at the planned looks of that table), has more to do, and run the same
    variants, so the trials keep alternating; a server that reached max_repeats or the
    budget ends the rounds for all.
    """
    assert ctx.turnstile is not None and ctx.axis is not None
    mine = RoundVote(
        more=more,
        active=list(rounds.active),
        stopped_why=rounds.stopped_why,
        run=record.model_copy(update={"trials": list(trials)}),
        clock=ctx.clock(),
        round_seconds=rounds.round_seconds() or 0.0,
    )
    posts = await ctx.turnstile.gather(ctx.axis.position, ("round", done), mine)
    active, ctx.between_open = next_round(
        [posts[i] for i in sorted(posts)],
        measured=done - ctx.profile.warmup,
        profile=ctx.profile,
        variants=rounds.variants,
        between=ctx.between_open,
    )
    if active is None:
        return False
    rounds.active = active
    if not more:
        ctx.notice(
            "going on with the other servers: comparisons on another server or between "
            "the servers are still open"
        )
    return True
