"""The import rules of docs/architecture.md, checked on the source of every module.

The package's folders are its layers. A module may import its own layer and the layers below it,
never one above: that keeps the data flow one-way and lets each layer be tested (and understood)
without the ones above it. The simulator is a world of its own that imports nothing of the harness,
and the targets layer may import only errors, profiles, events, files and itself (a scenario is
turned into targets by ``run.instances``).

Inside the simulator the same rule ranks its worlds (``SIM_RANKS``): a world (a folder of ``sim/``)
imports the shared modules and the worlds below it, never one above or beside it; the platforms
compose the guest, the workloads and the NPU models, which never know a platform. ``REPORT_RANKS``
ranks the rooms of ``report/`` the same way: the analysis below the rendering below the stored
history, ``format`` under all three.

And nowhere in the package may imports go round in a circle, not even between two modules of one
folder, nor through an import made only for type checking or inside a function (the root
``fvp_harness`` is left out: it re-exports the public API on first use, and no module imports
it; ``__version__`` lives at the bottom, in ``fvp_harness.version``).

An import inside a function is allowed only with a ``# late: <why>`` comment on its line or on the
comment lines right above its import block (the CLI defers pandas and matplotlib so ``--help`` stays
fast, for example): a hidden import is how an upward dependency creeps in unnoticed.

The checker is tested on synthetic modules too, so it is shown to fail on each kind of violation.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "fvp_harness"

RANKS: dict[str, int] = {
    "errors": 0,
    "events": 0,
    "files": 0,
    "located": 0,
    "version": 0,
    "profiles": 1,
    "formats": 1,  # readers of ExecuTorch's files (flatbuffer, .pte): errors only
    "guest": 1,  # the QEMU guest builder: errors only (apt and dpkg-deb do the work)
    # the real ExecuTorch toolchain (its own venv, our runner build): errors and files only
    "toolchain": 1,
    "scenario": 2,
    "store": 2,
    "targets": 2,
    "report": 3,
    "vgf": 4,
    "run": 5,
    "batch": 6,
    "cli": 7,
    "pytest_plugin": 7,  # a front end like cli/ (pytest's), its peer: neither imports the other
    "__main__": 8,
}
"""Layer of each top-level module or package of ``fvp_harness``; a module may import only lower
ranks (and its own layer). ``sim`` is not ranked: it may import only itself."""

TARGETS_MAY_IMPORT = {"errors", "profiles", "events", "files", "targets"}

SIM_RANKS: dict[str, int] = {
    "clock": 0,  # shared by every world
    "knobs": 0,
    "fvp": 1,  # what every simulated FVP has: command line, parameter tables, how it stops
    "networks": 1,  # the networks and their compiled files
    "npu": 2,  # cost models over a compiled network
    "guest": 3,  # the Linux guest: shell, builtins, applets, file system, the program registry
    "workloads": 4,  # the programs the guest runs (emulated runners): register into guest.programs
    "corstone1000": 5,  # the platforms: compose the guest, the workloads and the NPU models
    "baremetal": 5,
    "main": 6,  # the entry points and the `sim` tools, shared at sim's top
    "tools": 6,
    "knob_check": 6,  # every knob value checked at once (the scenario loader asks: KNOB_READER)
    "vgf_runner": 6,
    "": 6,  # sim/__init__.py
    "__main__": 7,
}
"""Rank of each world (folder) and shared module of ``fvp_harness.sim``; a sim module may import
only its own world and lower ranks (peers in one rank import none of each other)."""

REPORT_RANKS: dict[str, int] = {
    "format": 0,  # how every number looks: shared by the rooms (and the CLI, vgf/, run/)
    "stats": 1,  # the analysis: pure statistics on records
    "rendering": 2,  # markdown, CSV, JSON, JUnit, charts, pages of an analysis
    "stored": 3,  # the stored history: compare of stored runs, history, the summary cache, the site
    "": 4,  # report/__init__.py
}
"""Rank of each room (folder) and shared module of ``fvp_harness.report``: the rule of
``SIM_RANKS``."""

SIM_READER = "fvp_harness.toolchain.export"
"""The one module outside ``sim/`` and ``cli/verb_sim`` that reads the simulator: a script run in
the ExecuTorch toolchain's own python (``toolchain/exporting.py`` starts it), which builds real
programs from the simulator's networks. It may import ``sim.networks`` only, and no harness module
may import it (torch is not in the harness's environment)."""

KNOB_READER = ("fvp_harness.scenario.sim_knobs", "fvp_harness.sim.knob_check")
"""The one harness module besides ``cli/verb_sim`` and ``SIM_READER`` that reads the simulator, and
the one module it may import: a scenario's ``fvp.sim`` values are checked at load by the
simulator's own rules."""

SIM_WORLD_PREFIXES = ("baremetal_", "shell_", "vela_", "applets_", "guest_", "corstone", "npu_")

LATE_MARK = "# late:"


def _layer(module: str) -> str:
    """``fvp_harness.run.plan`` -> ``run``; the package root is ``""``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _sim_world(module: str) -> str:
    """``fvp_harness.sim.guest.shell`` -> ``guest``; ``fvp_harness.sim.clock`` -> ``clock``;
    ``fvp_harness.sim`` -> ``""``."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 else ""


def _sim_violation(where: str, module: str, target: str, layer: str = "sim") -> str | None:
    """The broken rule when ``module`` imports ``target``, both in ``layer`` (``sim`` or ``report``,
    ranked by ``SIM_RANKS`` or ``REPORT_RANKS``), or None."""
    ranks, table = (SIM_RANKS, "SIM_RANKS") if layer == "sim" else (REPORT_RANKS, "REPORT_RANKS")
    own, world = _sim_world(module), _sim_world(target)
    if own == world and own in ranks:
        return None
    if own not in ranks or world not in ranks:
        unknown = own if own not in ranks else world
        return f"{where}: {layer}'s {unknown or 'root'} has no rank in {table}"
    if ranks[world] >= ranks[own]:
        return (f"{where}: {layer}'s {own or 'root'} (rank {ranks[own]}) imports {target} "
                f"({world}, rank {ranks[world]}), which is not below it")
    return None


def _module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imported(node: ast.Import | ast.ImportFrom, module: str,
              is_package: bool) -> list[tuple[str, list[str]]]:
    """(imported module, names taken from it) for each harness module an import statement
    reaches."""
    if isinstance(node, ast.Import):
        return [(alias.name, [])
                for alias in node.names if alias.name.split(".")[0] == "fvp_harness"]
    base = node.module or ""
    if node.level:
        anchor = module.split(".") if is_package else module.split(".")[:-1]
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join([*anchor, base] if base else anchor)
    if base.split(".")[0] != "fvp_harness":
        return []
    names = [alias.name for alias in node.names]
    if base == "fvp_harness":  # `from fvp_harness import run` takes a layer, not a name of the root
        layers = [name for name in names if name in RANKS or name == "sim"]
        rest = [name for name in names if name not in layers]
        return [(f"fvp_harness.{name}", []) for name in layers] + ([(base, rest)] if rest else [])
    return [(base, names)]


def _explained(lines: list[str], lineno: int) -> bool:
    """True when the import at ``lineno`` (1-based) or the comment/import lines right above it say
    ``# late:``."""
    index = lineno - 1
    if LATE_MARK in lines[index]:
        return True
    index -= 1
    while index >= 0:
        text = lines[index].strip()
        if not (text.startswith("#") or text.startswith(("from ", "import ")) or
                text.endswith(("(", ",", ")"))):
            return False
        if LATE_MARK in text:
            return True
        index -= 1
    return False


@functools.cache
def _imports(source: str) -> tuple[tuple[ast.Import | ast.ImportFrom, bool], ...]:
    """Every import statement of ``source`` and whether it sits inside a function, in one walk of
    one parse. Why cached: the layer check and the cycle check read the same 170 modules, and
    parsing them is most of the cost."""
    found: list[tuple[ast.Import | ast.ImportFrom, bool]] = []
    pending: list[tuple[ast.AST, bool]] = [(ast.parse(source), False)]
    while pending:
        node, in_function = pending.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append((node, in_function))
            continue
        inner = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        pending.extend((child, inner) for child in ast.iter_child_nodes(node))
    return tuple(sorted(found, key=lambda item: (item[0].lineno, item[0].col_offset)))


def violations(module: str, source: str, *, is_package: bool = False) -> list[str]:
    """Every broken import rule in one module's source, as ``module:line: what``."""
    lines = source.splitlines()
    own = _layer(module)
    found: list[str] = []
    for node, in_function in _imports(source):
        for target, names in _imported(node, module, is_package):
            where = f"{module}:{node.lineno}"
            layer = _layer(target)
            if in_function and not _explained(lines, node.lineno):
                found.append(f"{where}: imports {target} inside a function without a '{LATE_MARK} "
                             "<why>' comment")
            if layer == "":
                if module not in ("fvp_harness", "fvp_harness.version"):
                    taken = ", ".join(names) if names else "the package"
                    found.append(f"{where}: takes {taken} from the package root, which imports "
                                 "every layer (import it from its layer: __version__ from "
                                 "fvp_harness.version)")
                continue
            if target == SIM_READER and module != SIM_READER:
                found.append(f"{where}: imports {target}, a script of the toolchain's python "
                             "(run it, as toolchain/exporting.py does)")
                continue
            if module == SIM_READER and layer == "sim":
                if _sim_world(target) != "networks":
                    found.append(f"{where}: {module} may read only the simulator's networks, "
                                 f"not {target}")
                continue
            if module == KNOB_READER[0] and layer == "sim":
                if target != KNOB_READER[1]:
                    found.append(f"{where}: {module} may read only {KNOB_READER[1]}, not {target}")
                continue
            if own == "sim" or layer == "sim":
                if own != layer and module != "fvp_harness.cli.verb_sim":
                    what = ("the simulator imports the harness" if own == "sim"
                            else "imports the simulator")
                    found.append(f"{where}: {what} ({target}); sim is a world of its own")
                elif own == layer and (problem := _sim_violation(where, module, target)):
                    found.append(problem)
                continue
            # `from fvp_harness.report import format`: a module of its top
            if own == layer == "report":
                top = target == "fvp_harness.report"
                reached = [f"{target}.{name}" for name in names] if top else [target]
                found += [problem for each in reached
                          if (problem := _sim_violation(where, module, each, "report"))]
            if own == layer or module == "fvp_harness":
                continue
            if own == "targets" and layer not in TARGETS_MAY_IMPORT:
                found.append(f"{where}: the targets layer imports {target} (allowed: "
                             f"{', '.join(sorted(TARGETS_MAY_IMPORT))})")
            elif RANKS.get(layer, 99) >= RANKS.get(own, -1):
                found.append(f"{where}: {own} (layer {RANKS.get(own)}) imports {target} (layer "
                             f"{RANKS.get(layer)}), which is not below it")
    return found


def import_graph(sources: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """Module -> the modules it imports, from ``{module: (source, is_package)}``: every import
    statement counts (at the top, inside a function, under ``TYPE_CHECKING``); ``from package import
    module`` reaches the module. The root ``fvp_harness`` is left out (its exports load on first
    use; no module imports it)."""
    graph: dict[str, set[str]] = {module: set() for module in sources}
    for module, (source, is_package) in sources.items():
        for node, _ in _imports(source):
            for target, names in _imported(node, module, is_package):
                reached = [f"{target}.{name}" for name in names if f"{target}.{name}" in sources]
                for found in reached or [target]:
                    if (found in sources and found != module and
                        "fvp_harness" not in (module, found)):
                        graph[module].add(found)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every group of modules that import each other round in a circle (the strongly connected
    components of more than one module, Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def _sources() -> list[tuple[str, Path]]:
    return [(_module_name(path), path) for path in sorted(PACKAGE.rglob("*.py"))]


@functools.cache
def _source(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def test_every_module_belongs_to_a_ranked_layer_or_the_simulator() -> None:
    unknown = sorted({_layer(name) for name, _ in _sources()} - set(RANKS) - {"", "sim"})
    assert not unknown, f"new top-level modules or packages need a layer in RANKS: {unknown}"


@pytest.mark.parametrize(("module", "path"), _sources(), ids=[name for name, _ in _sources()])
def test_imports_follow_the_layers(module: str, path: Path) -> None:
    assert violations(module, _source(path), is_package=path.name == "__init__.py") == []


def test_no_imports_go_round_in_a_circle() -> None:
    sources = {name: (_source(path), path.name == "__init__.py") for name, path in _sources()}
    assert cycles(import_graph(sources)) == []


def test_every_sim_world_has_a_rank() -> None:
    sim = PACKAGE / "sim"
    names = {path.stem for path in sim.glob("*.py")} | {
        path.name for path in sim.iterdir() if path.is_dir() and (path / "__init__.py").exists()
    }
    unknown = sorted(names - set(SIM_RANKS) - {"__init__"})
    assert not unknown, f"sim's new modules or worlds need a rank in SIM_RANKS: {unknown}"


def test_sim_holds_its_shared_modules_and_one_folder_per_world() -> None:
    sim = PACKAGE / "sim"
    modules = sorted(path.stem for path in sim.glob("*.py"))
    shared = ["__init__", "__main__", "clock", "knob_check", "knobs", "main", "tools", "vgf_runner"]
    assert modules == shared, (
        "sim's top holds what every world shares (and the entry points), not a world's modules: "
        f"{modules}")
    prefixed = sorted(str(path.relative_to(sim)) for path in sim.rglob("*.py")
                      if path.stem.startswith(SIM_WORLD_PREFIXES))
    assert not prefixed, f"a world's prefix belongs in its folder's name: {prefixed}"


def test_report_holds_its_shared_module_and_one_folder_per_room() -> None:
    report = PACKAGE / "report"
    modules = sorted(path.stem for path in report.glob("*.py"))
    assert modules == ["__init__", "format"], (
        f"report's top holds what every room shares, not a room's modules: {modules}")
    rooms = {path.name for path in report.iterdir() if (path / "__init__.py").exists()}
    assert rooms == set(REPORT_RANKS) - {"", "format"}, (
        f"report's rooms need a rank in REPORT_RANKS: {rooms}")


def test_the_top_level_shows_the_layers() -> None:
    top = sorted(path.name for path in PACKAGE.glob("*.py"))
    bottom = ["__init__.py", "__main__.py", "errors.py", "events.py", "files.py", "located.py",
              "version.py"]
    assert top == bottom, (
        f"the top of fvp_harness/ should hold the layers' folders, not modules: {top}")
    assert not (PACKAGE / "target").exists(), (
        "the session layer lives in targets/ (a 'target/' folder is ignored ")
    "by common .gitignore templates)"


# --- the checker, shown to fail -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        ("fvp_harness.targets.x", "from fvp_harness.run.pipeline import run_scenario\n",
         "the targets layer imports"),
        ("fvp_harness.targets.x", "from fvp_harness.scenario import Scenario\n",
         "the targets layer imports"),
        ("fvp_harness.store.x", "from fvp_harness.report.stats.analysis import analyse\n",
         "which is not below it"),
        ("fvp_harness.scenario.x", "import fvp_harness.run.plan\n", "which is not below it"),
        ("fvp_harness.scenario.x", "from fvp_harness.store.records import Record\n",
         "which is not below it"),
        ("fvp_harness.sim.x", "from fvp_harness.errors import HarnessError\n",
         "the simulator imports the harness"),
        ("fvp_harness.run.x", "from fvp_harness.sim.workloads.executor_runner import main\n",
         "imports the simulator"),
        ("fvp_harness.report.x", "from fvp_harness import run_scenario\n", "from the package root"),
        ("fvp_harness.run.x", "from fvp_harness import __version__\n", "from the package root"),
        ("fvp_harness.errors", "from fvp_harness import __version__\n", "from the package root"),
        ("fvp_harness.cli.x", "from fvp_harness import __version__\n", "from the package root"),
        ("fvp_harness.store.x", "import fvp_harness\n", "from the package root"),
        ("fvp_harness.run.x", "def f():\n    from fvp_harness.store.folder import ResultStore\n",
         "inside a function without"),
        ("fvp_harness.report.render", "from .. import run\n", "which is not below it"),
        ("fvp_harness.sim.guest.shell",
         "from fvp_harness.sim.corstone1000.machine import Machine\n",
         "sim's guest (rank 3) imports fvp_harness.sim.corstone1000.machine"),
        ("fvp_harness.sim.workloads.x", "from fvp_harness.sim.baremetal import runner\n",
         "which is not below it"),
        ("fvp_harness.sim.corstone1000.x",
         "from fvp_harness.sim.baremetal.platform import run_baremetal\n", "which is not below it"),
        ("fvp_harness.sim.clock", "from fvp_harness.sim.guest.fs import GuestFS\n",
         "which is not below it"),
        ("fvp_harness.sim.npu.x", "from ..workloads.executor_runner import EtLog\n",
         "which is not below it"),
        ("fvp_harness.sim.guest.x", "from fvp_harness.sim.newworld.y import z\n",
         "has no rank in SIM_RANKS"),
        ("fvp_harness.toolchain.export", "from fvp_harness.sim.npu.vela import run_vela\n",
         "may read only the simulator's networks"),
        ("fvp_harness.toolchain.exporting", "from fvp_harness.toolchain.export import main\n",
         "a script of the toolchain's python"),
        ("fvp_harness.toolchain.x", "from fvp_harness.sim.networks.architectures import Layer\n",
         "imports the simulator"),
        ("fvp_harness.scenario.sim_knobs", "from fvp_harness.sim.knobs import parse_knobs\n",
         "may read only fvp_harness.sim.knob_check"),
        ("fvp_harness.scenario.load", "from fvp_harness.sim.knob_check import knob_problems\n",
         "imports the simulator"),
        ("fvp_harness.report.stats.x",
         "from fvp_harness.report.rendering.cells import metric_label\n",
         "report's stats (rank 1) imports fvp_harness.report.rendering.cells"),
        ("fvp_harness.report.rendering.x",
         "from fvp_harness.report.stored.history import History\n", "which is not below it"),
        ("fvp_harness.report.format", "from fvp_harness.report.stats.spec import Settings\n",
         "which is not below it"),
        ("fvp_harness.report.stats.x", "from fvp_harness.report.newroom.y import z\n",
         "has no rank in REPORT_RANKS"),
    ],
)
def test_the_checker_catches(module: str, source: str, expected: str) -> None:
    found = violations(module, source)
    assert found and expected in found[0], found


def test_the_checker_accepts_what_the_rules_allow() -> None:
    allowed = {
        "fvp_harness.run.x": "from fvp_harness.targets.base import Target\n"
                             "from fvp_harness.version import __version__\n",
        "fvp_harness.targets.x": "from fvp_harness.profiles import Profile\n"
                                 "from fvp_harness.files import atomic_write\n",
        "fvp_harness.cli.x": "def f():\n    # late: pandas loads only when this verb runs\n"
                             "    from fvp_harness.run.pipeline import run_scenario\n"
                             "    from fvp_harness.batch.engine import make\n",
        "fvp_harness.sim.workloads.x": "from fvp_harness.sim.npu.cycles import inference_cycles\n"
                                       "from fvp_harness.sim.guest import programs\nfrom ..clock "
                                       "import SimClock\n",
        "fvp_harness.sim.guest.x": "from fvp_harness.sim.guest.session import Session\n",
        "fvp_harness.sim.main": "from fvp_harness.sim.corstone1000.platform import "
                                "SimulatedModel\n",
        "fvp_harness.toolchain.export":
            "from fvp_harness.sim.networks.modelfile import compile_model\n",
        "fvp_harness.scenario.sim_knobs":
            "def f():\n    # late: heavy\n"
            "    from fvp_harness.sim.knob_check import knob_problems\n",
        "fvp_harness.report.stored.x": "from fvp_harness.report.rendering.junit import "
                                       "write_junit\nfrom fvp_harness.report.stats.spec import "
                                       "Settings\nfrom fvp_harness.report import format as fmt\n",
        "fvp_harness.report.stats.x": "from fvp_harness.report.stats.spec import Settings\n",
    }
    for module, source in allowed.items():
        assert violations(module, source) == [], module



def test_the_cycle_check_catches_a_circle_within_one_folder() -> None:
    sources = {
        "fvp_harness.report.a": ("from fvp_harness.report.b import f\n", False),
        "fvp_harness.report.b": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                 "    from fvp_harness.report.a import A\n", False),
        "fvp_harness.report": ("", True),
        "fvp_harness.report.c": ("from fvp_harness.report import a\n", False),
    }
    assert cycles(import_graph(sources)) == [["fvp_harness.report.a", "fvp_harness.report.b"]]


def test_the_cycle_check_catches_a_circle_through_a_late_import_and_across_folders() -> None:
    sources = {
        "fvp_harness.sim.guest.programs": ("def load():\n    # late: heavy\n"
                                           "    from fvp_harness.sim.workloads import runner\n",
                                           False),
        "fvp_harness.sim.workloads": ("", True),
        "fvp_harness.sim.workloads.runner": ("from fvp_harness.sim.guest import programs\n", False),
        "fvp_harness.sim.guest": ("", True),
        "fvp_harness": ("from fvp_harness.run.x import y\n", True),
        "fvp_harness.run.x": ("from fvp_harness.version import __version__\n", False),
    }
    assert (cycles(import_graph(sources))
            == [["fvp_harness.sim.guest.programs", "fvp_harness.sim.workloads.runner"]])
