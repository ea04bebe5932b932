"""Opening a session names each run a killed pgwx left interrupted (issue 20: a promise no
test defended), and only those."""

from __future__ import annotations

import asyncio
from pathlib import Path

from explorer.lab.profiles.catalog import load_profile
from explorer.lab.run.runner import Runner, RunOptions
from explorer.lab.run.session import Session
from explorer.lab.store.results import INTERRUPTED, ResultStore
from explorer.server.connect import Target
from tests.support.faults import profile_toml


async def test_opening_a_session_names_the_runs_a_killed_pgwx_left(
    pg18: Target, tmp_path: Path
) -> None:
    (tmp_path / "tiny.toml").write_text(profile_toml({"plain": ""}, gate=False, rows=10))
    profile = load_profile(str(tmp_path / "tiny.toml"))
    store = ResultStore(tmp_path / "results.sqlite")
    try:
        options = RunOptions(sample=False, settle_seconds=0.0)
        finished = await Runner(pg18, profile, store, options).run()
        # the same run again, left "running" by a process that is gone (a killed pgwx)
        dead = await asyncio.create_subprocess_exec("true")
        await dead.wait()
        left = finished.model_copy(update={"id": "20260101-000000-dead00", "status": "running"})
        store.begin_run(left)
        store.db.execute("UPDATE owners SET pid = ? WHERE run_id = ?", (dead.pid, left.id))
        store.db.commit()
        said: list[str] = []
        await Session(pg18, store).open(said.append)
        assert said[0] == f"run {left.id} was interrupted; its finished trials are kept", said
        assert not any(finished.id in line for line in said)
        assert store.load(left.id).reason == INTERRUPTED
        assert store.load(finished.id).status == "finished"
    finally:
        store.close()
