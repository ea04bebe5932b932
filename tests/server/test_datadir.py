"""What pgwx may do with a --data-dir: create, use its own, refuse the rest untouched.

Also: one data directory and two pgwx (the lock), and repairing a bundled cluster's
postgresql.auto.conf offline when a value in it keeps the server from starting.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from explorer.server.embedded import LocalServer, ServerError
from tests.support.paths import ROOT as WORKTREE

ROOT = os.geteuid() == 0


@pytest.fixture(scope="module")
def base() -> Iterator[Path]:
    """A short directory the server's user can enter (sockets have a path limit)."""
    path = Path(tempfile.mkdtemp(prefix="pgwx-d-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def own(base: Path) -> Iterator[LocalServer]:
    """A cluster pgwx made, stopped between tests."""
    server = LocalServer(base / "own")
    server.start()
    server.stop()
    yield server
    _force_stop(server)


def _force_stop(server: LocalServer) -> None:
    """Stop whatever runs in the directory, whatever pgwx's code thinks (test cleanup)."""
    if (server.data_dir / "postmaster.pid").exists():
        server._run([str(server.tool("pg_ctl")), "-D", str(server.data_dir), "-m", "i", "stop"])


def _snapshot(path: Path) -> dict[str, tuple[int, int, int]]:
    """Mode, owner and group of `path` and everything below it."""
    found = {}
    for item in [path, *(path.rglob("*") if path.is_dir() else [])]:
        st = os.lstat(item)
        found[str(item.relative_to(path))] = (st.st_mode, st.st_uid, st.st_gid)
    return found


def _refused(data_dir: Path, *words: str) -> str:
    server = LocalServer(data_dir)
    try:
        with pytest.raises(ServerError) as err:
            server.start()
    finally:
        _force_stop(server)
    text = str(err.value)
    assert "\n" not in text and str(data_dir) in text
    for word in words:
        assert word in text
    return text


def test_non_empty_directory_is_refused_untouched(base: Path) -> None:
    target = base / "stuff"
    target.mkdir(mode=0o755)
    (target / "notes.txt").write_text("mine\n")
    before = _snapshot(target)
    _refused(target, "not empty")
    assert _snapshot(target) == before


def test_empty_existing_directory_is_refused_untouched(base: Path) -> None:
    target = base / "empty"
    target.mkdir(mode=0o755)
    before = _snapshot(target)
    _refused(target, "does not exist yet")
    assert _snapshot(target) == before


def test_sticky_world_writable_directory_is_refused_untouched(base: Path) -> None:
    target = base / "sticky"
    target.mkdir()
    target.chmod(0o1777)
    (target / "someone-elses-file").write_text("x")
    before = _snapshot(target)
    _refused(target)
    assert _snapshot(target) == before
    assert before["."][0] & 0o7777 == 0o1777


def test_a_file_is_refused(base: Path) -> None:
    target = base / "a-file"
    target.write_text("x")
    before = _snapshot(target)
    _refused(target, "not a directory")
    assert _snapshot(target) == before


def _foreign_cluster(base: Path) -> Path:
    """A cluster made by running the bundled initdb directly, as embedded.py would."""
    target = base / "foreign"
    probe = LocalServer(target)
    target.mkdir(mode=0o700)
    if ROOT:
        entry = pwd.getpwnam("pgwx")
        os.chown(target, entry.pw_uid, entry.pw_gid)
    proc = probe._run([str(probe.tool("initdb")), "-D", str(target), "--no-sync", "-U", "x"])
    assert proc.returncode == 0, proc.stderr
    return target


def test_foreign_cluster_is_refused_untouched(base: Path) -> None:
    target = _foreign_cluster(base)
    before = _snapshot(target)
    _refused(target, "cluster pgwx did not make")
    with pytest.raises(ServerError):
        LocalServer(target).stop()
    assert _snapshot(target) == before
    assert not (target / "sock").exists() and not (target / "server.log").exists()
    # What an older pgwx left in a foreign cluster does not make it pgwx's own.
    (target / "sock").mkdir()
    (target / "server.log").touch()
    _refused(target, "cluster pgwx did not make")


def test_marker_and_lock_files_belong_to_the_cluster_user(own: LocalServer) -> None:
    owner = os.stat(own.data_dir).st_uid
    for name in ("pgwx-cluster.json", "pgwx.lock", "pgwx-users.lock"):
        assert os.stat(own.data_dir / name).st_uid == owner


@pytest.mark.skipif(not ROOT, reason="the server runs as another user only when pgwx is root")
def test_parent_the_server_user_cannot_enter(base: Path) -> None:
    parent = base / "private"
    parent.mkdir(mode=0o700)
    before = _snapshot(parent)
    text = _refused(parent / "pg", "cannot enter", str(parent))
    assert "Permission denied" not in text
    assert _snapshot(parent) == before  # nothing created below it, its mode kept


def test_new_directory_gets_a_marker_and_is_used_again(own: LocalServer) -> None:
    marker = own.data_dir / "pgwx-cluster.json"
    assert '"format": 1' in marker.read_text()
    again = LocalServer(own.data_dir)
    again.start()
    try:
        assert again.is_running() and again.started_here
    finally:
        assert again.stop() is True


def test_cluster_of_an_older_pgwx_without_marker_is_accepted(own: LocalServer) -> None:
    marker = own.data_dir / "pgwx-cluster.json"
    marker.unlink()
    again = LocalServer(own.data_dir)
    again.start()
    try:
        assert again.started_here
        assert marker.exists()  # adopted: marked now
    finally:
        again.stop()


# --------------------------------------------------------------------------- two pgwx, one dir


def test_second_server_object_attaches_and_never_stops_the_first(own: LocalServer) -> None:
    first = LocalServer(own.data_dir)
    first.start()
    second = LocalServer(own.data_dir)
    try:
        second.start()
        assert second.started_here is False
        assert second.holder is not None and f"pid {os.getpid()}" in second.holder
        with pytest.raises(ServerError) as err:
            second.stop()
        assert f"pid {os.getpid()}" in str(err.value) and "since" in str(err.value)
        assert first.is_running()
        # The first does not stop the server under the second while it is attached.
        assert first.stop() is False
        assert first.is_running()
        second.release()
        assert first.stop() is True
        assert not first.is_running()
    finally:
        _force_stop(first)


def test_another_process_holding_the_directory(own: LocalServer) -> None:
    code = (
        "import sys, time\n"
        "from explorer.server.embedded import LocalServer\n"
        f"s = LocalServer({str(own.data_dir)!r}); s.start()\n"
        "print('ready', flush=True); time.sleep(120)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(WORKTREE)}
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        mine = LocalServer(own.data_dir)
        with pytest.raises(ServerError) as err:
            mine.stop()
        assert f"pid {child.pid}" in str(err.value) and os.uname().nodename in str(err.value)
        assert mine.is_running()
        child.kill()  # a holder that dies releases the lock with it
        child.wait()
        assert mine.stop() is True
    finally:
        child.kill()
        child.wait()
        _force_stop(own)


# --------------------------------------------------------------------------- auto.conf repair


def test_bad_auto_conf_value_is_named_then_repaired_offline(own: LocalServer) -> None:
    auto = own.data_dir / "postgresql.auto.conf"
    original = auto.read_text()
    st = auto.stat()
    with auto.open("a") as f:
        f.write("work_mem = '8MB'\nshared_buffers = '7TB'\n")
    server = LocalServer(own.data_dir)
    try:
        with pytest.raises(ServerError) as err:
            server.start()
        text = str(err.value)
        assert "\n" not in text
        assert str(auto) in text and "shared_buffers" in text
        assert server.repair_auto_conf(["shared_buffers"]) == ["shared_buffers"]
        assert auto.read_text() == original + "work_mem = '8MB'\n"
        assert (auto.stat().st_mode, auto.stat().st_uid) == (st.st_mode, st.st_uid)
        server.start()
        assert server.is_running()
        with pytest.raises(ServerError):
            server.repair_auto_conf(["work_mem"])  # not while it runs
    finally:
        _force_stop(server)
        auto.write_text(original)
