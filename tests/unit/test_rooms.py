"""The tests stay in rooms (issue 17, item 7).

Every test file lives in a room named for what it needs; no module under tests/ imports a
test module or conftest (shared helpers are in tests/support/); and the `server` marker is
set by the fixtures and the rooms, so that `pytest -m "not server"` leaves out every test
that needs a PostgreSQL (and `app`, set by the room, the app's slower pilot tests).
"""

from __future__ import annotations

import ast
import os
import shutil
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
ROOMS = {"unit", "server", "app", "cli", "faults"}


def module_name(path: Path) -> str:
    """The dotted name a file under tests/ is imported as (tests/app/x.py: tests.app.x)."""
    parts = path.relative_to(TESTS.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, source: str) -> list[str]:
    """Every module `source` imports, anywhere in it, relative imports resolved."""
    package = module_name(path).rsplit(".", 1)[0]
    names: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            names.append(base)
            names += [f"{base}.{alias.name}" for alias in node.names]
    return names


def is_forbidden(name: str) -> bool:
    """conftest (bare or as tests.conftest), or a test module (tests.….test_…)."""
    parts = name.split(".")
    if parts == ["conftest"] or name.startswith("conftest."):
        return True
    return parts[0] == "tests" and any(p == "conftest" or p.startswith("test_") for p in parts)


def offences(path: Path, source: str) -> list[str]:
    return [
        f"{path.relative_to(TESTS)} imports {n}" for n in imported(path, source) if is_forbidden(n)
    ]


@pytest.mark.parametrize(
    ("where", "source"),
    [
        ("unit/test_x.py", "from tests.conftest import fake_caps"),
        ("unit/test_x.py", "import tests.conftest"),
        ("unit/test_x.py", "from tests import conftest"),
        ("server/test_x.py", "from conftest import RunProfile"),
        ("app/test_x.py", "from tests.test_tui import FIXTURE"),
        ("app/test_x.py", "from tests.app.test_app import wait_for"),
        ("app/test_x.py", "from .test_app import wait_for"),
        ("app/test_x.py", "from ..server import test_runner"),
        ("faults/test_x.py", "def test():\n    from tests.server.test_sampler import lab\n"),
    ],
)
def test_the_check_finds_each_way_of_importing_a_test_module(where: str, source: str) -> None:
    assert offences(TESTS / where, source)


@pytest.mark.parametrize(
    "source",
    [
        "from tests.support.app import wait_for",
        "from tests.support import faults",
        "from ..support.server import server_state",
        "import pytest",
        "from explorer.lab.run.runner import Runner",
    ],
)
def test_the_check_lets_helpers_and_the_code_through(source: str) -> None:
    assert offences(TESTS / "app" / "test_x.py", source) == []


def test_no_module_under_tests_imports_a_test_module_or_conftest() -> None:
    found = [
        offence
        for path in sorted(TESTS.rglob("*.py"))
        for offence in offences(path, path.read_text())
    ]
    assert found == [], "import helpers from tests/support/ instead:\n" + "\n".join(found)


def test_every_test_file_is_in_a_room() -> None:
    homeless = [
        str(path.relative_to(TESTS))
        for path in sorted(TESTS.rglob("test_*.py"))
        if path.relative_to(TESTS).parts[0] not in ROOMS
    ]
    assert homeless == [], f"move these into one of {sorted(ROOMS)}: {homeless}"


# the inner run has no pyproject of its own: pytest-asyncio asks for its loop scope
@pytest.mark.filterwarnings("ignore:The configuration option .asyncio_default_fixture_loop_scope")
def test_not_server_leaves_out_what_needs_a_server(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The snapshot plugin keeps its report folder's name in the environment; the inner run
    # replaces it and removes its own, so this run's name is put back afterwards.
    monkeypatch.setenv("TEXTUAL_SNAPSHOT_TEMPDIR", os.environ.get("TEXTUAL_SNAPSHOT_TEMPDIR", ""))
    shutil.copy(TESTS / "conftest.py", pytester.path / "conftest.py")
    plain = "def test_plain():\n    pass\n"
    pytester.makepyfile(
        **{
            "unit/test_a": plain + "\ndef test_pg(pg18):\n    pass\n",
            "unit/test_b": "import pytest\n\n@pytest.fixture\ndef db(any_pg):\n    return any_pg\n"
            "\ndef test_through_a_fixture(db):\n    pass\n",
            "app/test_c": plain + "\ndef test_base(pg_base):\n    pass\n",
            "server/test_d": plain,
            "cli/test_e": plain,
            "faults/test_f": plain,
        }
    )

    # only what collecting needs: the other plugins cost seconds a run and see nothing here
    unneeded = ("cacheprovider", "benchmark", "hypothesispytest", "syrupy", "textual-snapshot")
    options = [f"-pno:{name}" for name in unneeded]

    def collected(marks: str) -> list[str]:
        result = pytester.runpytest("-m", marks, "--collect-only", "-q", *options)
        return sorted(line for line in result.outlines if "::" in line)

    assert collected("not server") == ["app/test_c.py::test_plain", "unit/test_a.py::test_plain"]
    assert collected("not server and not app") == ["unit/test_a.py::test_plain"]
    assert collected("app") == ["app/test_c.py::test_base", "app/test_c.py::test_plain"]
