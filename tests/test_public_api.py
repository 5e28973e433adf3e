"""``__all__`` says what each module offers: every listed name exists, and every public function or
class a module defines (not imports) is listed, so nothing becomes public API by accident and
nothing public goes unlisted.

Helpers only the module itself uses take a leading underscore instead of a place in ``__all__``.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import pytest

import fvp_harness


def _modules() -> list[ModuleType]:
    modules = [fvp_harness]
    for info in pkgutil.walk_packages(fvp_harness.__path__, prefix="fvp_harness."):
        if info.name.rsplit(".", 1)[-1] == "__main__":
            continue  # running it is its whole job (it would start the CLI or the simulator)
        modules.append(importlib.import_module(info.name))
    return modules


MODULES = _modules()


def _defined_here(module: ModuleType) -> list[str]:
    """Public functions and classes whose home is ``module`` (imported names belong to their own
    module)."""
    return sorted(
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (inspect.isfunction(value) or inspect.isclass(value))
        and getattr(value, "__module__", None) == module.__name__
    )


def test_the_package_walk_finds_the_layers() -> None:
    names = {module.__name__ for module in MODULES}
    for expected in ("fvp_harness.scenario.model", "fvp_harness.targets.fvp_target",
                     "fvp_harness.cli.main", "fvp_harness.sim.guest.shell", "fvp_harness.profiles"):
        assert expected in names


@pytest.mark.parametrize("module", MODULES, ids=lambda module: module.__name__)
def test_all_matches_what_the_module_defines(module: ModuleType) -> None:
    defined = _defined_here(module)
    exported = getattr(module, "__all__", None)
    if exported is None:
        assert not defined, f"{module.__name__} defines {defined} but has no __all__"
        return
    assert len(exported) == len(set(exported)), f"{module.__name__}.__all__ lists a name twice"
    missing = [name for name in exported if not hasattr(module, name)]
    assert not missing, f"{module.__name__}.__all__ lists names the module does not have: {missing}"
    unlisted = [name for name in defined if name not in exported]
    assert not unlisted, (
        f"{module.__name__} defines public {unlisted} not in __all__: list them, or prefix with _ "
        "if only the module uses them"
    )


# --- the chosen public API ------------------------------------------------------------------------


def test_the_promised_names_import_from_the_package() -> None:
    from fvp_harness import (  # noqa: F401
        FakeTarget,
        HarnessError,
        Record,
        analyse,
        build_plan,
        load_scenario,
        open_target,
        rebuild_report,
        run_scenario,
    )

    assert set(fvp_harness.__all__) == {"__version__", *fvp_harness._EXPORTS}
    for name in fvp_harness._EXPORTS:
        value = getattr(fvp_harness, name)
        home = fvp_harness._EXPORTS[name]
        assert getattr(importlib.import_module(home), name) is value, f"{name} is not {home}.{name}"


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'run_scenaro'"):
        fvp_harness.run_scenaro  # noqa: B018


def test_importing_the_package_loads_nothing_heavy() -> None:
    """``import fvp_harness`` (which the simulator's ``python -m fvp_harness.sim`` also does) stays
    cheap: the public names load on first use."""
    import subprocess
    import sys

    code = ("import sys, fvp_harness; heavy = [m for m in ('pandas', 'matplotlib', 'pydantic', "
            "'pexpect') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
