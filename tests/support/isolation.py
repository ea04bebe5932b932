"""No test can reach the user's real pgwx files (issue 20), whatever the code under test does.

Loaded by tests/conftest.py as a plugin, before any test module is imported: every default
location pgwx writes to — the bundled cluster, the results store, the journal and log, the
user's profiles, the temporary directory — is pointed at a scratch directory of this test
session, for this process and every child it starts. What the real locations hold is noted
first; a session that created anything there fails loudly at its end, naming it.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from explorer import paths

SCRATCH_PREFIX = "pgwxT"
RUN_DIRS = ("pgwx-run-", "pgwx-making-")
"""Names of pgwx's scratch directories in the temporary directory."""


def _real_locations() -> dict[str, Path]:
    """Where pgwx would write with this process's environment as it came (explorer.paths)."""
    found = {
        "data (results store, bundled cluster)": paths.data_home(),
        "state (undo journal, log)": paths.state_dir(),
        "profiles": paths.user_profiles_dir().parent,
        "bundled cluster": paths.cluster_data_dir(),
        **{f"cluster of root, PG {n}": Path(f"/var/lib/pgwx/pg{n}") for n in range(13, 19)},
    }
    if "://" not in paths.results_location():
        found["results store"] = Path(paths.results_location())
    return found


SIDECARS = ("-wal", "-shm", "-journal")
"""SQLite's transient files beside a store: another program's use of it, not a new file."""


def _look(path: Path) -> frozenset[str]:
    """What is at `path`: nothing, a file, or a directory's names."""
    try:
        return frozenset(n for n in os.listdir(path) if not n.endswith(SIDECARS)) | {"<dir>"}
    except NotADirectoryError:
        return frozenset({"<file>"})
    except OSError:
        return frozenset()


def _run_dirs(tmp: Path) -> frozenset[str]:
    try:
        return frozenset(n for n in os.listdir(tmp) if n.startswith(RUN_DIRS))
    except OSError:
        return frozenset()


REAL = _real_locations()
REAL_TMP = Path(tempfile.gettempdir())
BEFORE = {name: _look(path) for name, path in REAL.items()}
BEFORE_TMP = _run_dirs(REAL_TMP)
# Short names: clusters made under tmp_path put their socket there (a 107-byte limit).
SCRATCH = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir="/tmp"))
SCRATCH.chmod(0o755)  # the bundled server's user must be able to enter it
PLACES = {"XDG_DATA_HOME": "d", "XDG_STATE_HOME": "s", "XDG_CONFIG_HOME": "c", "TMPDIR": "t"}
"""Variables pointed at the scratch directory; the store and the journal follow XDG."""
for variable, sub in PLACES.items():
    (SCRATCH / sub).mkdir(mode=0o755)
    os.environ[variable] = str(SCRATCH / sub)
for variable in ("PGWX_STATE_DIR", "PGWX_RESULTS"):
    os.environ.pop(variable, None)  # else they would win over the scratch XDG directories
if os.geteuid() == 0:
    # root's clusters are in /var/lib/pgwx (pg18, pg15 …) whatever XDG says
    os.environ["PGWX_CLUSTER_HOME"] = str(SCRATCH / "d" / "pgwx")
tempfile.tempdir = None  # gettempdir() reads TMPDIR again
# Last thing at exit (atexit runs in reverse): temporary directories of plugins go first.
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)


def created_in_real_locations() -> list[str]:
    """What appeared in the real default locations since the session began, one phrase each."""
    found = []
    for name, path in REAL.items():
        new = _look(path) - BEFORE[name]
        if new:
            what = ", ".join(sorted(n for n in new if not n.startswith("<"))) or "itself"
            found.append(f"{path} ({name}): {what}")
    return found


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the session, loudly, when a real default location was written to.

    Run directories that appeared in the real temporary directory are only reported: other
    programs on the machine (another test session) make them too.
    """
    made = created_in_real_locations()
    if made:
        print(
            "\n\nTESTS WROTE TO REAL pgwx LOCATIONS (they must only use their scratch "
            f"directories under {SCRATCH}):\n  " + "\n  ".join(made),
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    new_runs = _run_dirs(REAL_TMP) - BEFORE_TMP
    if new_runs:
        print(
            f"\nnote: pgwx run directories appeared in {REAL_TMP} during the session (this "
            f"session's pgwx use {SCRATCH / 't'}; another program's?): "
            + ", ".join(sorted(new_runs))
        )
