"""The four floors hold: fusion < adapters < recordings < hyperframes, nothing imports upward.

Every module's imports are read with ``ast`` (top-level, lazy inside functions
and under ``TYPE_CHECKING`` alike), relative ones resolved, and each import of
a package on a higher floor fails the test with its file, line and target.
Import cycles are looked for twice: among the imports that run when a module
loads, and with the lazy ones inside functions too (only ``TYPE_CHECKING``
imports, which never run, are left out). The import-cost test runs a fresh
interpreter, so what an earlier test imported cannot hide a heavy import.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FLOORS = {"fusion": 1, "adapters": 2, "recordings": 3, "hyperframes": 4}
HEAVY = (
    "onnxruntime", "onnx", "av", "open3d", "matplotlib", "ray", "rosbags", "mcap", "cv2",
    "cyclonedds",
)  # fmt: skip


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path, root: Path = ROOT) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) of every import statement in ``path`` (under ``root``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module_name(path, root).split(".")
    if path.name != "__init__.py":
        package.pop()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                assert node.module is not None
                yield node.lineno, node.module
            else:
                base = package[: len(package) - node.level + 1]
                yield node.lineno, ".".join([*base, *([node.module] if node.module else [])])


def upward_imports(package: str, root: Path = ROOT) -> list[str]:
    floor = FLOORS[package]
    found = []
    for path in sorted((root / package).rglob("*.py")):
        for line, target in imported_modules(path, root):
            if FLOORS.get(target.split(".")[0], 0) > floor:
                found.append(f"{path.relative_to(root)}:{line} imports {target}")
    return found


@pytest.mark.parametrize("package", list(FLOORS))
def test_no_package_imports_a_higher_floor(package: str) -> None:
    found = upward_imports(package)
    assert not found, f"{package} (floor {FLOORS[package]}) reaches up:\n" + "\n".join(found)


def test_the_checker_sees_lazy_relative_and_type_checking_imports(tmp_path: Path) -> None:
    # The probe lives in a copy of the floor's layout under tmp_path: no test writes into the tree.
    (tmp_path / "fusion").mkdir()
    probe = tmp_path / "fusion" / "_layout_probe.py"
    probe.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from recordings import Recorder\n"
        "def f():\n    import hyperframes.cli\n"
        "from . import frames\n",
        encoding="utf-8",
    )
    found = upward_imports("fusion", tmp_path)
    lines = list(imported_modules(probe, tmp_path))
    assert "fusion/_layout_probe.py:3 imports recordings" in found
    assert "fusion/_layout_probe.py:5 imports hyperframes.cli" in found
    assert (6, "fusion") in lines  # the relative import, resolved, stays on its floor
    assert len([f for f in found if "_layout_probe" in f]) == 2


def loaded_after(statement: str) -> list[str]:
    code = f"import sys\n{statement}\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return done.stdout.split()


def test_importing_the_library_loads_no_heavy_library() -> None:
    assert loaded_after("import fusion, adapters, recordings") == []
    assert loaded_after("import adapters.ros") == []


def test_the_heavy_library_loads_when_its_feature_is_first_used() -> None:
    assert loaded_after("import adapters; adapters.VideoSource") == ["av"]
    assert loaded_after("import fusion.workers; fusion.workers.ModelSession") == []


def type_checking_only(tree: ast.Module) -> set[int]:
    """``id`` of every node under an ``if TYPE_CHECKING:`` block (never run)."""
    hidden: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                hidden.update(id(n) for n in ast.walk(child))
    return hidden


def face_homes(path: Path) -> dict[str, str]:
    """Name -> home module of a package face that loads names on first use (``lazy_exports``):
    ``from face import name`` runs the home's import there and then."""
    if path.name != "__init__.py":
        return {}
    homes: dict[str, str] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                key_text = key.value if isinstance(key, ast.Constant) else None
                home = value.value if isinstance(value, ast.Constant) else None
                if isinstance(key_text, str) and isinstance(home, str):
                    homes[key_text] = home
    return homes


def import_graph(*, lazy: bool, paths: dict[str, Path] | None = None) -> dict[str, set[str]]:
    """Module -> our modules it imports: at load time only, or with ``lazy`` also those
    imported inside functions (``TYPE_CHECKING`` imports never run, so never count).

    ``from pkg import name`` is an edge to ``pkg.name`` when that is a module, else
    to ``pkg`` (its ``__init__`` runs).
    """
    if paths is None:
        paths = {module_name(p): p for f in FLOORS for p in (ROOT / f).rglob("*.py")}
    edges: dict[str, set[str]] = {m: set() for m in paths}
    for name, path in paths.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        hidden = type_checking_only(tree) if lazy else set()
        nodes = ast.walk(tree) if lazy else iter(tree.body)
        for node in nodes:
            targets: list[str] = []
            if id(node) in hidden:
                continue
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level == 0:
                    base = node.module or ""
                else:
                    base = ".".join(
                        package[: len(package) - node.level + 1]
                        + ([node.module] * bool(node.module))
                    )
                modules = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in paths]
                targets = modules if len(modules) == len(node.names) else [base, *modules]
                homes = face_homes(paths[base]) if base in paths else {}
                targets += [homes[a.name] for a in node.names if a.name in homes]
            edges[name].update(t for t in targets if t in paths and t != name)
    return edges


def first_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``edges`` (``[a, b, a]``), or ``None``."""
    done: set[str] = set()

    def visit(module: str, trail: list[str]) -> list[str] | None:
        if module in trail:
            return [*trail[trail.index(module) :], module]
        if module in done:
            return None
        for target in sorted(edges[module]):
            cycle = visit(target, [*trail, module])
            if cycle is not None:
                return cycle
        done.add(module)
        return None

    for module in sorted(edges):
        cycle = visit(module, [])
        if cycle is not None:
            return cycle
    return None


def test_no_module_imports_itself_in_a_circle_at_load_time() -> None:
    edges = import_graph(lazy=False)
    cycle = first_cycle(edges)
    assert cycle is None, "import cycle at load time: " + " -> ".join(cycle or [])
    assert "fusion._frames" in edges["fusion"]  # the graph is real, not empty


def test_no_circle_through_lazy_imports_within_or_across_packages() -> None:
    """A function-level import that closes a circle still ties two modules into one:
    neither can be read, moved or tested without the other."""
    edges = import_graph(lazy=True)
    cycle = first_cycle(edges)
    assert cycle is None, "import cycle (lazy imports included): " + " -> ".join(cycle or [])
    assert "adapters.bags._summary" in edges["hyperframes.cli._baginfo"]  # lazy, through a face


def test_the_cycle_checker_sees_lazy_circles_and_ignores_type_checking(tmp_path: Path) -> None:
    package = tmp_path / "fusion"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "a.py").write_text("def f():\n    from fusion import b\n", encoding="utf-8")
    (package / "b.py").write_text("def g():\n    from .a import f\n", encoding="utf-8")
    (package / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from fusion.a import f\n",
        encoding="utf-8",
    )
    (package / "d.py").write_text("import fusion.c\n", encoding="utf-8")
    paths = {f"fusion.{p.stem}": p for p in package.glob("[a-z].py")}
    paths["fusion"] = package / "__init__.py"
    lazy = import_graph(lazy=True, paths=paths)
    assert first_cycle(lazy) == ["fusion.a", "fusion.b", "fusion.a"]
    assert lazy["fusion.c"] == set()  # TYPE_CHECKING never runs
    assert lazy["fusion.d"] == {"fusion.c"}
    assert first_cycle(import_graph(lazy=False, paths=paths)) is None


# -- rooms and privacy (principle 12) ----------------------------------------------------

FACE_HELPER = "fusion._exports"  # every package's face uses it to load names on first use


def private_room(target: str) -> str | None:
    """The room a private module belongs to: the package path before its first ``_part``,
    at most two deep (``recordings.hfr._reader`` -> ``recordings.hfr``); ``None`` if public."""
    parts = target.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[: min(i, 2)])
    return None


def library_modules() -> dict[str, Path]:
    return {module_name(p): p for f in FLOORS for p in (ROOT / f).rglob("*.py")}


def test_private_modules_are_imported_only_inside_their_room() -> None:
    found = []
    for name, path in library_modules().items():
        for line, target in imported_modules(path):
            room = private_room(target)
            if room is None or target == FACE_HELPER:
                continue
            if not (name == room or name.startswith(room + ".")):
                found.append(f"{path.relative_to(ROOT)}:{line} imports {target} (room {room})")
    assert not found, "a room's internals used from outside it:\n" + "\n".join(found)
    assert private_room("recordings.hfr._reader") == "recordings.hfr"
    assert private_room("recordings.hfr.video._packets") == "recordings.hfr"
    assert private_room("recordings._extras") == "recordings"
    assert private_room("recordings.outputs") is None


@pytest.mark.parametrize(
    ("room", "subpackages"),
    [
        ("recordings.hfr", {"recordings.hfr.video"}),
        ("recordings.outputs", {"encoders", "files", "live"}),
        ("adapters.ros", set()),
        ("adapters.bags", set()),
    ],
)
def test_a_room_shows_only_its_face(room: str, subpackages: set[str]) -> None:
    """Every module of the room but its packages' faces is private (``_name.py``)."""
    folder = ROOT / room.replace(".", "/")
    public = sorted(
        str(p.relative_to(ROOT))
        for p in folder.rglob("*.py")
        if p.name != "__init__.py" and not any(part.startswith("_") for part in p.parts[-1:])
    )
    assert public == [], f"{room}: public modules {public}"
    packages = {p.parent.name for p in folder.rglob("__init__.py") if p.parent != folder}
    assert packages <= {s.rsplit(".", 1)[-1] for s in subpackages}


def test_outputs_and_ros_each_live_in_one_room() -> None:
    """The live publishers, file exports and encoders sit together in ``recordings.outputs``;
    DDS (``cyclonedds``) and ROS types (``rosbags.typesys``, ``rosbags.interfaces``) are
    spoken only in the ROS room: the bag room reads bags with rosbags' readers, the exporters
    and the publisher go through ``adapters.ros``."""
    modules = library_modules()
    outputs = {m for m in modules if m.startswith("recordings.outputs")}
    for wanted in ("live._foxglove_server", "live._ros2_publisher", "files._mcap_ros2",
                   "encoders._ros2", "encoders._foxglove"):  # fmt: skip
        assert f"recordings.outputs.{wanted}" in outputs
    assert not [m for m in modules if m.startswith(("recordings.export", "adapters.ros2"))]
    dds = sorted(
        name
        for name, path in modules.items()
        if any(t.split(".")[0] == "cyclonedds" for _, t in imported_modules(path))
    )
    assert all(m.startswith("adapters.ros") for m in dds), dds

    def importers(*prefixes: str) -> list[str]:
        return sorted(
            name
            for name, path in modules.items()
            if any(
                t == p or t.startswith(p + ".") for _, t in imported_modules(path) for p in prefixes
            )
        )

    typesys = importers("rosbags.typesys", "rosbags.serde")
    assert all(m.startswith("adapters.ros") for m in typesys), typesys
    interfaces = importers("rosbags.interfaces")  # the bag room builds rosbags connections
    assert all(
        m.startswith(("adapters.ros", "adapters.bags", "hyperframes.cli")) for m in interfaces
    )
    rosbags = importers("rosbags")
    assert all(
        m.startswith(("adapters.ros", "adapters.bags", "hyperframes.cli"))
        or m == "recordings.outputs.files._ros1_bag"  # rosbags' ROS 1 bag writer
        for m in rosbags
    ), rosbags


def test_every_face_name_has_a_home_that_defines_it() -> None:
    import importlib

    for name, path in library_modules().items():
        for exported, home in face_homes(path).items():
            if not home.startswith(tuple(FLOORS)) or ("." not in exported and exported.islower()):
                continue
            module = importlib.import_module(home)
            assert hasattr(module, exported), f"{name} exports {exported} from {home}: not there"


PUBLIC_MODULES = {
    "fusion.clock": "the clock models' home, which the contract names",
    "fusion.errors": "the root of the error tree (principle 9)",
    "adapters.errors": "the sources' errors (principle 9)",
    "adapters.synthetic": "synthetic sensors with ground truth, which the contract names",
    "recordings.errors": "the storage errors (principle 9)",
    "recordings.output_files": "outputs never touch inputs: every command's temp name and lock",
    "recordings.pytest_plugin": "the pytest entry point ``hyperframes``",
    "hyperframes.__main__": "``python -m hyperframes``",
}
"""The library's public modules besides the faces, each with why (principle 12)."""


def test_every_library_module_is_private_unless_listed_with_a_reason() -> None:
    public = sorted(
        name
        for name, path in library_modules().items()
        if path.name != "__init__.py"
        and private_room(name) is None
        and not name.startswith("hyperframes.config.sources.")  # a source's options, declared once
    )
    assert public == sorted(PUBLIC_MODULES), "public modules without a reason: " + ", ".join(
        sorted(set(public) - set(PUBLIC_MODULES))
    )
