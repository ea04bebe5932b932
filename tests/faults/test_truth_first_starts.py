"""Several first starts at once, as root: making the server's system user is idempotent and
safe against a concurrent creator (issue 20).

Twelve `pgwx run` started together on a fresh machine used to race on `useradd`: one was
refused with "user 'pgwx' already exists", two ran initdb as a uid nobody could look up yet.
The machine's own `pgwx` user serves every test server here, so the race is run on a user
made for this test (and removed after it), through the same function pgwx uses.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from explorer.server.embedded import ensure_system_user

ROOT = Path(__file__).resolve().parents[2]
CHILD = (
    "import sys, pathlib; from explorer.server.embedded import ensure_system_user as e; "
    "u = e(sys.argv[1], lock=pathlib.Path(sys.argv[2])); print(u.pw_uid, u.pw_gid)"
)


@pytest.fixture
def fresh_user() -> Iterator[str]:
    if os.geteuid() != 0:
        pytest.skip("creating a system user needs root")
    name = f"pgwxt{os.getpid() % 100000}"
    subprocess.run(["userdel", name], capture_output=True, check=False)
    yield name
    subprocess.run(["userdel", name], capture_output=True, check=False)


async def test_twelve_first_starts_at_once_all_get_the_same_user(
    fresh_user: str, tmp_path: Path
) -> None:
    lock = tmp_path / "user.lock"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    children = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            CHILD,
            fresh_user,
            str(lock),
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        for _ in range(12)
    ]
    said = [await asyncio.wait_for(c.communicate(), 120) for c in children]
    errors = [err.decode() for c, (_out, err) in zip(children, said, strict=True) if c.returncode]
    assert not errors, errors
    entry = pwd.getpwnam(fresh_user)
    assert {out.decode().strip() for out, _err in said} == {f"{entry.pw_uid} {entry.pw_gid}"}
    # and again, now that it exists: an existing user is simply success
    assert ensure_system_user(fresh_user, lock=lock).pw_uid == entry.pw_uid
