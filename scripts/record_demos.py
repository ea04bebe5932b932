"""Record the demos shipped under profiles/recordings/, made by pgwx itself.

    python scripts/record_demos.py                 # both
    python scripts/record_demos.py quick-demo      # one

Each demo runs its shipped profile on a throwaway bundled PostgreSQL 18 (sampler on, at a
small --scale so the file stays under ~300 KB), then is exported exactly as `pgwx export
RUN --redact-host` would write it. `pgwx replay quick-demo` plays them with no server.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from explorer.lab.profiles.catalog import load_profile
from explorer.lab.run.runner import Runner, RunOptions
from explorer.lab.store.recording import SUFFIX, export_run, write_recording
from explorer.lab.store.replay import recordings_dir
from explorer.lab.store.results import ResultStore
from explorer.server.connect import Target
from explorer.server.embedded import LocalServer

DEMOS: dict[str, tuple[float, int]] = {
    "quick-demo": (1.0, 10),
    "fk-timing-restore": (0.5, 10),
}
"""Profile → (scale, repeats): big enough to see the mechanism, small enough to ship, and ten
repeats: with the whole table held to 95 % (Holm over 12–14 comparisons), five a side can
decide nothing, so a demo of five would end on `undecided` everywhere."""

LIMIT = 300 * 1024
"""Largest recording shipped, in bytes."""


async def record(base: Path, name: str, scale: float, repeats: int) -> str:
    """Run one profile on a fresh bundled server into a scratch store; the run's id."""
    server = LocalServer(base / "pg18")
    server.start()
    try:
        store = ResultStore(base / "results.sqlite")
        profile = load_profile(name).model_copy(update={"repeats": repeats})
        runner = Runner(
            Target(bundled=server), profile, store, RunOptions(scale=scale, sample_interval=0.25)
        )
        record = await runner.run(lambda _event: None)
        store.close()
        if record.status != "finished":
            raise SystemExit(f"{name}: the run {record.status}: {record.reason}")
        return record.id
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"some of {', '.join(DEMOS)} (default: all)")
    args = parser.parse_args()
    unknown = set(args.names) - set(DEMOS)
    if unknown:
        parser.error(f"no demo {', '.join(sorted(unknown))}; choose from {', '.join(DEMOS)}")
    out_dir = recordings_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in args.names or list(DEMOS):
        base = Path(tempfile.mkdtemp(prefix="pgwx-demo-", dir="/tmp"))
        base.chmod(0o755)  # the bundled server runs as its own user
        try:
            run_id = asyncio.run(record(base, name, *DEMOS[name]))
            store = ResultStore(base / "results.sqlite")
            data = export_run(store, run_id, redact_host=True)
            store.close()
        finally:
            shutil.rmtree(base, ignore_errors=True)
        path = write_recording(data, out_dir / f"{name}{SUFFIX}", force=True)  # re-recorded
        path.chmod(0o644)  # shipped with the package: everyone may read it
        size = path.stat().st_size
        print(f"{name}: {len(data['events'])} events, {size / 1024:.0f} KiB → {path}")
        if size > LIMIT:
            print(f"  larger than {LIMIT // 1024} KiB: lower its scale in DEMOS")


if __name__ == "__main__":
    main()
