"""``doctor --boot``: boot one instance and ask the guest what the runners need, as a run does
before its first unit.

Why it is shaped so: docs/architecture.md, "Inside `run/`"."""

from __future__ import annotations

from pathlib import Path

from fvp_harness.errors import ConfigurationError, HarnessError
from fvp_harness.run.doctor import Check
from fvp_harness.run.guest_needs import check_guest
from fvp_harness.run.instances import open_target
from fvp_harness.scenario import LoadedScenario, Scenario

__all__ = ["boot_check"]


def _built_files(scenario: Scenario) -> list[Path]:
    """The runners, models and inputs a deploy would copy, as far as they are built (the space
    check's sizes)."""
    paths = [Path(build.runner) for build in scenario.builds.values()]
    for name, model in scenario.models.items():
        paths += [Path(scenario.model_file(build, name)) for build in scenario.builds]
        paths += [Path(item.file) for item in model.inputs]
    return list(dict.fromkeys(path for path in paths if path.is_file()))


def boot_check(loaded: LoadedScenario, *, log_dir: Path, timeout_scale: float = 1.0) -> Check:
    """Boot the scenario's platform once, check the guest against every build's runner, close it:
    one ``guest`` check (a configuration failure names the fix; a boot that fails is an
    infrastructure one)."""
    scenario, profile = loaded.scenario, loaded.profile
    if scenario.target != "fvp" or profile.kind != "linux":
        return Check("guest", "skip", "no Linux guest to boot (target: host, QEMU or bare metal)")
    try:
        with open_target(loaded, log_dir=log_dir, timeout_scale=timeout_scale,
                         name="doctor") as target:
            needs = check_guest(lambda command: target.run(command).output, scenario, profile,
                                scenario.builds, _built_files(scenario))
    except ConfigurationError as exc:
        return Check("guest", "fail", str(exc), "see the Fix: of each problem above")
    except HarnessError as exc:
        return Check("guest", "fail", f"the boot failed: {exc}", f"see the logs in {log_dir}",
                     failure_class="infrastructure")
    what = sorted({need.npu_device for need in needs.values() if need.npu_device}
                  | {need.loader for need in needs.values() if need.loader})
    return Check("guest", "ok",
                 "booted; the image has " + (", ".join(what) if what else "what the runners need"))
