"""docs/architecture.md stays true: its layers, rooms and contracts are pyproject.toml's
import-linter contracts, its room-to-room imports are the ones the code makes, and every
module, function and folder it names exists."""

from __future__ import annotations

import importlib
import re
import tomllib
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "architecture.md"
PYPROJECT = ROOT / "pyproject.toml"
TICKED = re.compile(r"`([^`]+)`")


def block(text: str, name: str) -> str:
    """The text between `<!-- name… -->` and `<!-- /name -->`."""
    found = re.search(rf"<!-- {name}\b[^>]*-->\n(.*?)<!-- /{name} -->", text, re.S)
    assert found, f"docs/architecture.md has no <!-- {name} --> … <!-- /{name} --> block"
    return found.group(1)


def table_rows(text: str) -> list[list[str]]:
    """The cells of a markdown table's body rows (header and rule left out)."""
    rows = [line for line in text.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:]]


def contracts() -> list[dict[str, object]]:
    config = tomllib.loads(PYPROJECT.read_text())
    found: list[dict[str, object]] = config["tool"]["importlinter"]["contracts"]
    return found


def layers_contract() -> dict[str, object]:
    """The contract whose top layer is the command line: the package's layers."""
    (found,) = [
        c for c in contracts() if c["type"] == "layers" and c["layers"][0] == "explorer.cli"
    ]
    return found


def rooms_contract() -> dict[str, object]:
    """The layers contract inside explorer.lab: the engine's rooms."""
    (found,) = [
        c
        for c in contracts()
        if c["type"] == "layers" and all(x.startswith("explorer.lab.") for x in c["layers"])
    ]
    return found


def siblings(layer: str) -> set[str]:
    """'explorer.server | explorer.analysis' → both (':' joins siblings that may import)."""
    return {part.strip() for part in re.split(r"[|:]", layer)}


def page_layers(text: str) -> list[set[str]]:
    return [set(TICKED.findall(row[1])) for row in table_rows(block(text, "layers"))]


def page_rooms(text: str) -> list[tuple[str, set[str]]]:
    rows = table_rows(block(text, "rooms"))
    return [(TICKED.findall(row[0])[0], set(TICKED.findall(row[1]))) for row in rows]


def page_contract_names(text: str) -> set[str]:
    return set(re.findall(r"\*\*(.+?)\*\*", block(text, "contracts")))


def layers_disagree(text: str) -> list[str]:
    """What the page's layers, rooms and contract names say that pyproject.toml does not."""
    problems = []
    wanted = [siblings(layer) for layer in layers_contract()["layers"]]  # type: ignore[attr-defined]
    if page_layers(text) != wanted:
        problems.append(f"layers: the page has {page_layers(text)}, the contract {wanted}")
    rooms = [r.removeprefix("explorer.lab.") for r in rooms_contract()["layers"]]  # type: ignore[attr-defined]
    named = [room for room, _ in page_rooms(text)]
    if named != rooms:
        problems.append(f"rooms: the page has {named}, the contract {rooms}")
    others = {str(c["name"]) for c in contracts() if c not in (layers_contract(), rooms_contract())}
    if page_contract_names(text) != others:
        problems.append(
            f"contracts: the page names {sorted(page_contract_names(text))}, "
            f"pyproject.toml has {sorted(others)}"
        )
    return problems


def test_the_page_names_the_contracts_layers_rooms_and_contracts() -> None:
    assert layers_disagree(PAGE.read_text()) == []


def test_the_check_fails_when_a_layer_or_room_is_changed_on_either_side() -> None:
    """Each side changed alone is caught: a room dropped from the page, a layer merged, a
    contract renamed on the page."""
    text = PAGE.read_text()
    dropped_room = text.replace("| `view` | —", "| `viewer` | —", 1)
    assert any(p.startswith("rooms:") for p in layers_disagree(dropped_room))
    merged = text.replace("| 5 | `explorer.files` |", "| 5 | `explorer.files`, `explorer.text` |")
    assert any(p.startswith("layers:") for p in layers_disagree(merged))
    renamed = text.replace("**Analysis is pure", "**Analysis is clean", 1)
    assert any(p.startswith("contracts:") for p in layers_disagree(renamed))


def room_imports() -> dict[str, set[str]]:
    """Direct imports between the engine's rooms, as the code makes them."""
    rooms = [r.removeprefix("explorer.lab.") for r in rooms_contract()["layers"]]  # type: ignore[attr-defined]
    graph = grimp.build_graph("explorer")

    def room_of(module: str) -> str | None:
        parts = module.split(".")
        if len(parts) >= 3 and parts[:2] == ["explorer", "lab"] and parts[2] in rooms:
            return parts[2]
        return None

    edges: dict[str, set[str]] = {room: set() for room in rooms}
    for module in graph.modules:
        source = room_of(module)
        if source is None:
            continue
        for imported in graph.find_modules_directly_imported_by(module):
            target = room_of(imported)
            if target is not None and target != source:
                edges[source].add(target)
    return edges


def test_the_rooms_import_what_the_page_says() -> None:
    on_page = {room: imports for room, imports in page_rooms(PAGE.read_text())}
    assert on_page == room_imports()


def named_objects(text: str) -> list[str]:
    """Dotted names the page gives with their package (`lab.run.runner.Runner.run`)."""
    heads = ("explorer.", "cli.", "tui.", "lab.", "server.", "analysis.")
    names = []
    for ticked in TICKED.findall(text):
        name = ticked.split("(")[0]
        if name.endswith(".py"):  # a file (`server.py`), not a module path
            continue
        if name.startswith(heads) and re.fullmatch(r"[\w.]+", name):
            names.append(name if name.startswith("explorer.") else f"explorer.{name}")
    return names


def resolves(name: str) -> bool:
    """Whether a dotted name is a module, or an attribute reached from one."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            if not hasattr(found, attr):
                return False
            found = getattr(found, attr)
        return True
    return False


def test_every_module_and_function_the_page_names_exists() -> None:
    names = named_objects(PAGE.read_text())
    assert len(names) > 30  # the walks are read, not skipped
    assert [n for n in names if not resolves(n)] == []


@pytest.mark.parametrize("made_up", ["explorer.lab.run.runner.Runner.fly", "lab.run.nowhere"])
def test_a_name_that_does_not_exist_is_caught(made_up: str) -> None:
    (name,) = named_objects(f"`{made_up}`")
    assert not resolves(name)


def test_every_folder_and_file_the_page_names_exists() -> None:
    paths = [p for p in TICKED.findall(PAGE.read_text()) if p.startswith("explorer/")]
    assert paths
    assert [p for p in paths if not (ROOT / p).exists()] == []
