"""The profile commands: profiles (the list), new (a starting profile), check (against a server)."""

from __future__ import annotations

import argparse
import asyncio
import sys

from explorer.cli.choice import results_store
from explorer.cli.entry import quiet_on_broken_pipe
from explorer.cli.run import resolve_session
from explorer.lab.profiles.catalog import ProfileError, ProfileShadowed, list_profiles


@quiet_on_broken_pipe
def cmd_profiles(_args: argparse.Namespace) -> int:
    """Every profile under a heading that says whose it is and where it lives."""
    from explorer.lab.profiles.catalog import profile_origin

    heading = None
    for path, prof in list_profiles():
        origin = profile_origin(path)
        if origin != heading:
            print(("\n" if heading else "") + origin)
            heading = origin
        if isinstance(prof, ProfileError):
            state = "(hidden)" if isinstance(prof, ProfileShadowed) else "(broken)"
            print(f"  {path.stem:<20} {state} {prof}")
        else:
            reps = (
                f"auto {prof.min_repeats}–{prof.max_repeats}"
                if prof.repeats == "auto"
                else prof.repeats
            )
            print(f"  {path.stem:<20} {prof.title}  [{len(prof.variants)} variants × {reps}]")
    return 0


def cmd_new(args: argparse.Namespace) -> int:
    """`pgwx new NAME`: a commented starting profile."""
    from explorer.lab.profiles.userprofile import write_new_profile

    path = write_new_profile(args.name, force=args.force)
    print(f"wrote {path}; edit it, then `pgwx check {path.name}` and `pgwx run {path.name}`")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """`pgwx check FILE`: every problem as one sentence, or what each variant will do."""
    from explorer.lab.profiles.catalog import find_profile
    from explorer.lab.profiles.check import check_file, check_on_server

    path = find_profile(args.profile, lambda m: print(f"pgwx: {m}", file=sys.stderr))
    report = check_file(path)
    if report.ok:
        say = lambda m: print(m, file=sys.stderr)  # noqa: E731
        store = results_store(args)
        session = resolve_session(args, store, say)
        try:
            asyncio.run(check_on_server(session.target, path, report))
        finally:
            session.release(say)
            store.close()
    for line in report.skipped:
        print(line)
    for line in report.problems:
        print(line)
    if report.ok:
        for variant, steps in report.plan.items():
            print(f"{variant}:")
            print("\n".join(f"  {step}" for step in steps))
        print(f"{path}: ok")
    return 0 if report.ok else 1
