"""Preflight: what would otherwise fail minutes into a run, checked in seconds without booting.

Why it is shaped so: docs/architecture.md, "Inside `run/`"."""

from __future__ import annotations

import difflib
import importlib.util
import json
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from fvp_harness.errors import ConfigurationError
from fvp_harness.profiles import Profile
from fvp_harness.report.rendering.vela_estimates import npu_cycles_source
from fvp_harness.scenario import FvpConfig, Scenario
from fvp_harness.scenario.executable import host_exec_problem
from fvp_harness.scenario.fit import misfits
from fvp_harness.targets.baremetal import BaremetalLaunch, baremetal_argv, model_program
from fvp_harness.targets.fvp import (
    SIM_BINARY,
    LaunchSpec,
    build_launch,
    find_free_port,
    port_is_free,
    query_model,
    resolve_binary,
    sim_environment,
)

__all__ = ["PROBE_TIMEOUT_S", "Check", "CheckDone", "ProbeStart", "doctor_exit_code", "fit_checks",
           "parse_param_names", "preflight", "run_doctor"]

Status = Literal["ok", "warn", "fail", "skip"]

PROBE_TIMEOUT_S = 12.0
"""How long one question to the model (``--version``, ``--list-params``) may take before the binary
counts as silent. A real FVP answers both in a few seconds."""

ProbeStart = Callable[[str, str], None]
"""``on_start(check name, what is being asked)``: a probe started (called from its worker
thread)."""
CheckDone = Callable[["Check", float], None]
"""``on_done(check, seconds)``: a check ended (called from whichever thread ran it)."""


@dataclass(frozen=True)
class Check:
    """One line of the checklist. ``failure_class`` (configuration | infrastructure) decides the
    exit code."""

    name: str
    status: Status
    detail: str
    fix: str = ""
    failure_class: str = "configuration"

    @property
    def ok(self) -> bool:
        return self.status != "fail"


def parse_param_names(listing: str) -> set[str]:
    """Parameter names from ``--list-params`` output (``name=default  # (type...) ...`` lines)."""
    names = set()
    for line in listing.splitlines():
        match = re.match(r"^\s*([A-Za-z_][\w.\-\[\]]*)=", line)
        if match:
            names.add(match.group(1))
    return names


def _silent(text: str) -> bool:
    return text.startswith("no answer within")


def _version_check(program: list[str], profile: Profile, status: int | None, text: str,
                   timeout: float) -> Check:
    name = Path(program[-1]).name
    match = re.search(profile.version_pattern, text)
    if status == 0 and match:
        return Check("version", "ok", f"{match.group(1)}")
    if status == 0:
        return Check("version", "warn",
                     f"--version printed no banner matching {profile.version_pattern!r}: "
                     f"{text.strip()[:120]!r}",
                     "check that the binary is the model the profile describes")
    if status is None and _silent(text):
        return Check("version", "fail",
                     f"`{name} --version` gave no answer within {timeout:.3g} s: the binary is "
                     "silent (a licence check waiting on a server, a wrapper waiting for a "
                     "terminal, or not a model)",
                     "run it by hand to see what it waits for; pass --probe-timeout S if it is "
                     "only slow", failure_class="infrastructure")
    # it answered, and refused: a licence checkout, a missing library, not a model. That is
    # deterministic (a second try gives the same answer), so it is the configuration's to fix, in
    # the model's own words, whole
    return Check("version", "fail", f"`{name} --version` failed (exit status {status}): "
                 f"{text.strip() or '(no output)'}",
                 "run the model by hand to see why (licence, missing libraries)")


def _parameter_check(spec: LaunchSpec, status: int | None, listing: str, timeout: float,
                     option: str = "--list-params") -> Check:
    known = parse_param_names(listing) if status == 0 else set()
    # it answered and refused (a licence, a library): deterministic, the model's words
    if status not in (0, None):
        return Check("parameters", "fail", f"`--list-params` failed (exit status {status}): "
                     f"{listing.strip() or '(no output)'}",
                     "run the model with --list-params by hand to see why "
                     "(licence, missing libraries)")
    if not known:
        why = (f"no answer within {timeout:.3g} s" if status is None and _silent(listing)
               else f"exit status {status}" if status not in (0, None)
               else "no parameter lines in its output")
        return Check("parameters", "warn",
                     f"could not read {option} ({why}); parameters not checked",
                     f"run the model with {option} by hand", failure_class="infrastructure")
    # every -C of the argv: profile and scenario params, firmware given as -C, scenario args
    given = list(dict.fromkeys(arg.split("=", 1)[0]
                               for flag, arg in zip(spec.argv, spec.argv[1:], strict=False)
                               if flag in ("-C", "--parameter")))
    unknown = [name for name in given if name not in known]
    if unknown:
        hints = []
        for name in unknown:
            close = difflib.get_close_matches(name, sorted(known), n=1)
            hints.append(f"{name}" + (f" (did you mean {close[0]}?)" if close else ""))
        return Check("parameters", "fail", f"unknown to the model: {', '.join(hints)}",
                     "fix the names in fvp.params or the profile (real models ignore some misspelt "
                     "parameters silently)")
    return Check("parameters", "ok", f"all {len(given)} -C parameters exist")


def _probe_all(program: list[str], spec: LaunchSpec, profile: Profile, timeout: float,
               on_start: ProbeStart | None, on_done: CheckDone | None) -> list[Check]:
    """``--version`` and ``--list-params`` at the same time, each within ``timeout``; Ctrl-C kills
    both."""
    cancel = threading.Event()
    name = Path(program[-1]).name if len(program) == 1 else "the simulator"

    def probe(check: str, option: str) -> Check:
        if on_start is not None:
            on_start(check, f"asking {name} {option} (at most {timeout:.3g} s)")
        began = time.monotonic()
        status, text = query_model(program, option, spec.env, timeout, cancel=cancel)
        result = (_version_check(program, profile, status, text, timeout) if option == "--version"
                  else _parameter_check(spec, status, text, timeout, option))
        if on_done is not None:
            on_done(result, time.monotonic() - began)
        return result

    # QEMU lists no parameters: its options are checked by its own start
    if profile.params_option is None:
        skipped = Check("parameters", "skip",
                        f"{name} has no parameter listing (profile params_option: null)")
        if on_done is not None:
            on_done(skipped, 0.0)
        return [probe("version", "--version"), skipped]
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="doctor-probe") as pool:
        futures: list[Future[Check]] = [pool.submit(probe, "version", "--version"),
                                        pool.submit(probe, "parameters", profile.params_option)]
        try:
            for future in futures:
                while not future.done():
                    # wakes when the probe ends, or regularly so Ctrl-C reaches us
                    wait([future], timeout=0.05)
            return [future.result() for future in futures]
        except BaseException:
            cancel.set()  # each probe kills its process group and returns
            raise


def run_doctor(scenario: Scenario, profile: Profile, *, base_dir: Path | None = None,
               binary: str | None = None,
               probe_timeout: float = PROBE_TIMEOUT_S, on_start: ProbeStart | None = None,
               on_done: CheckDone | None = None, located: Sequence[str] = ()) -> list[Check]:
    """Run every preflight check for ``scenario`` on ``profile``; returns the checklist (never
    raises for a failed check). The model's probes run concurrently, each within ``probe_timeout``
    seconds; ``on_start`` / ``on_done`` report progress. ``located``: the loader's ``file:line:col``
    problems, shown by the check they concern (``target: host`` runners) or as checks of their own.
    Last, whether the platform can run the runners and programs (``fit_checks``)."""
    checks = _model_checks(scenario, profile, base_dir=base_dir, binary=binary,
                           probe_timeout=probe_timeout, on_start=on_start, on_done=on_done,
                           located=located)
    fits = fit_checks(scenario, profile, binary)
    if on_done is not None:
        for check in fits:
            on_done(check, 0.0)
    return [*checks, *fits]


def fit_checks(scenario: Scenario, profile: Profile, binary: str | None = None) -> list[Check]:
    """Can the platform run each build's runner and programs (``scenario.fit``: the ELF machine,
    the simulator's own artifacts, an Ethos-U program where there is no NPU)? Read from the files,
    so never cached: a runner rebuilt between two runs is read again. ``binary``: the model asked
    instead of ``fvp.binary``."""
    problems = misfits(scenario, profile, simulated=(binary or scenario.fvp.binary) == SIM_BINARY)
    if problems:
        return [Check("programs", "fail", problem) for problem in problems]
    where = "this host" if scenario.target == "host" else f"{profile.name}"
    shown = profile.architecture and scenario.target != "host"
    arch = f" ({profile.architecture})" if shown else ""
    return [Check("programs", "ok", f"the runners and programs that exist fit {where}{arch}")]


def _model_checks(scenario: Scenario, profile: Profile, *, base_dir: Path | None = None,
                  binary: str | None = None, probe_timeout: float = PROBE_TIMEOUT_S,
                  on_start: ProbeStart | None = None, on_done: CheckDone | None = None,
                  located: Sequence[str] = ()) -> list[Check]:
    """``run_doctor``'s checks of the model and its settings (what ``preflight`` keeps)."""

    def done(check: Check, seconds: float = 0.0) -> Check:
        if on_done is not None:
            on_done(check, seconds)
        return check

    if scenario.target == "host":
        skipped = Check("model", "skip",
                        "target: host runs no model (binary, parameters, firmware and ports are "
                                         "not needed)")
        return [done(skipped), *_runner_checks(scenario, located, done)]
    checks: list[Check] = []
    fvp = scenario.fvp
    chosen = binary or fvp.binary
    simulated = chosen == SIM_BINARY
    program: list[str] | None
    try:
        resolved = (model_program(chosen, profile) if profile.baremetal
                    else resolve_binary(chosen, profile))
    except ConfigurationError as exc:
        checks.append(
            done(
                Check(
                    "binary",
                    "fail",
                    str(exc),
                    "install the FVP, add it to PATH, or pass --fvp PATH "
                    "(--fvp sim for the simulator)",
                )
            )
        )
        program = None
    else:
        program = resolved
        what = "embedded simulator" if simulated else resolved[0]
        checks.append(done(Check("binary", "ok", f"{what}")))

    if profile.baremetal:
        return [*checks,
                *_baremetal_checks(scenario, profile, program, probe_timeout, on_start, on_done,
                                   done),
                *(done(Check("scenario", "fail", problem, "fix the scenario"))
                  for problem in located)]
    try:
        spec = build_launch(profile, fvp, binary=chosen if program else SIM_BINARY,
                            base_dir=base_dir, ssh_port=find_free_port())
    except ConfigurationError as exc:
        checks.append(done(Check("launch", "fail", str(exc),
                                 "fix fvp.firmware / fvp.params in the scenario")))
        return checks

    if program is not None:
        checks.extend(_probe_all(program, spec, profile, probe_timeout, on_start, on_done))
    else:
        checks.append(done(Check("version", "skip", "no binary")))
        checks.append(done(Check("parameters", "skip", "no binary")))

    checks.extend(done(check) for check in _firmware_checks(profile, fvp, base_dir, simulated))
    checks.append(done(_port_check(profile, spec.params)))
    checks.append(done(_ssh_check(scenario, profile, spec.ssh_ports)))
    # Vela: report/rendering/vela_estimates
    checks.append(done(Check("npu cycles", *npu_cycles_source(simulated))))
    checks.extend(done(Check("scenario", "fail", problem, "fix the scenario"))
                  for problem in located)
    return checks


def _baremetal_checks(scenario: Scenario, profile: Profile, program: list[str] | None,
                      probe_timeout: float, on_start: ProbeStart | None, on_done: CheckDone | None,
                      done: Callable[[Check], Check]) -> list[Check]:
    """A bare-metal platform: the probes over every build's launch parameters, then each build's
    files."""
    checks: list[Check] = []
    argv: list[str] = []
    try:
        # one launch per build: its -C parameters join the check
        for name, build in scenario.builds.items():
            launch = BaremetalLaunch(Path(build.runner), name, cwd=Path("."),
                                     cmd_line="runner" if scenario.run.semihosting else None,
                                     params=dict(build.fvp_params))
            # -C pairs are what the check reads
            argv += baremetal_argv([], profile, scenario.fvp, launch,
                                   timelimit=scenario.fvp.timelimit or profile.timelimit)
    except ConfigurationError as exc:
        return [done(Check("launch", "fail", str(exc),
                           "fix fvp.params, builds.<name>.fvp_params or run.cmd_line"))]
    spec = LaunchSpec(argv=argv,
                      env=sim_environment(dict(scenario.fvp.sim) if scenario.fvp.is_sim else {}),
                      params={}, ssh_port=None, simulated=scenario.fvp.is_sim)
    if program is not None:
        checks.extend(_probe_all(program, spec, profile, probe_timeout, on_start, on_done))
    else:
        checks += [done(Check("version", "skip", "no binary")),
                   done(Check("parameters", "skip", "no binary"))]
    for name, build in scenario.builds.items():
        files = [("runner", build.runner), *((f"model {model}", scenario.model_file(name, model))
                                            for model in scenario.models)]
        missing = [f"{what} {path}" for what, path in files if not Path(path).is_file()]
        if missing:
            checks.append(done(Check(f"build {name}", "skip",
                                     f"not built yet: {'; '.join(missing)} (built before "
                                     "any unit runs)")))
        else:
            address = build.data_address if build.data_address is not True else profile.data_address
            how = f"model at {address} (--data)" if address else "model by semihosting"
            checks.append(done(Check(f"build {name}", "ok",
                                     f"{build.runner} as the application, {how}")))
    checks.append(done(Check("terminals", "skip",
                             f"bare metal: the program's UART ({profile.uart}) is the model's "
                             "stdout; no terminals, ports or SSH")))
    return checks


def _runner_checks(scenario: Scenario, located: Sequence[str],
                   done: Callable[[Check], Check]) -> list[Check]:
    """``target: host``: can this host execute each build's runner? A located problem names the
    runner's field."""
    checks = []
    left = list(located)
    for name, build in scenario.builds.items():
        field = f" builds.{name}.runner: "
        mine = [problem for problem in left if field in problem]
        left = [problem for problem in left if problem not in mine]
        problem = host_exec_problem(build.runner)
        fix = "build the runner for this host (or run the scenario on the model: target: fvp)"
        if mine:
            checks.append(done(Check(f"runner {name}", "fail", "; ".join(mine), fix)))
        elif problem is not None:
            checks.append(done(Check(f"runner {name}", "fail",
                                     f"builds.{name}.runner: {build.runner}: {problem}", fix)))
        elif not Path(build.runner).exists():
            checks.append(
                done(
                    Check(
                        f"runner {name}",
                        "skip",
                        f"{build.runner} is not built yet (checked again "
                        "after its build, before any unit "
                        "runs)",
                    )
                )
            )
        else:
            checks.append(done(Check(f"runner {name}", "ok", f"{build.runner} runs on this host")))
    checks.extend(done(Check("scenario", "fail", problem, "fix the scenario")) for problem in left)
    return checks


def _firmware_checks(profile: Profile, fvp: FvpConfig, base_dir: Path | None,
                     simulated: bool) -> list[Check]:
    checks = []
    given = dict(fvp.firmware)
    for name, spec in profile.firmware.items():
        path = given.get(name)
        if path is None:
            if spec.required and not simulated:
                checks.append(Check(f"firmware {name}", "fail", f"not given ({spec.description})",
                                    f"set fvp.firmware.{name} to the file from the Arm release"))
            continue
        resolved = Path(path).expanduser()
        if not resolved.is_absolute() and base_dir is not None:
            resolved = base_dir / resolved
        if resolved.is_file():
            checks.append(Check(f"firmware {name}", "ok", str(resolved)))
        else:
            checks.append(Check(f"firmware {name}", "fail", f"{resolved} does not exist",
                                f"fix fvp.firmware.{name}"))
    if not checks:
        checks.append(Check("firmware", "ok" if simulated else "skip",
                            "none needed by the simulator" if simulated else "profile needs none"))
    return checks


def _port_check(profile: Profile, params: dict[str, str]) -> Check:
    busy = []
    for name, prefix in profile.terminals.items():
        port = int(params.get(f"{prefix}.start_port", "5000"))
        if not port_is_free(port):
            busy.append(f"{name}:{port}")
    try:
        find_free_port()
    except OSError as exc:
        return Check("ports", "fail", f"cannot bind a local TCP port: {exc}",
                     "check the loopback interface", failure_class="infrastructure")
    if busy:
        return Check("ports", "warn",
                     f"start ports busy ({', '.join(busy)}); the model will step to the next "
                     "free port", "nothing to do unless other tools expect fixed ports")
    return Check("ports", "ok",
                 "terminal start ports free; each SSH forward gets a free port per instance")


def _ssh_check(scenario: Scenario, profile: Profile, ssh_ports: list[int]) -> Check:
    needed = scenario.deploy.method == "ssh"
    if importlib.util.find_spec("asyncssh") is None:
        return Check("ssh client", "fail" if needed else "warn", "asyncssh is not installed",
                     "pip install asyncssh", failure_class="configuration")
    import asyncssh

    if needed and not ssh_ports:
        forwards = ", ".join(profile.ssh_forward_params) or "none"
        return Check("ssh client", "fail",
                     f"deploy.method is ssh, but no SSH forward ({forwards}) is on a network "
                     "device the parameters leave switched on",
                     "switch a device on in fvp.params (see the profile's ssh_forward_enabled_by) "
                     "or deploy by console")
    return Check("ssh client", "ok", f"asyncssh {asyncssh.__version__}")


def doctor_exit_code(checks: list[Check]) -> int:
    """0 when nothing failed; 2 when the input must change (configuration); 3 when the platform
    failed."""
    failed = [check for check in checks if check.status == "fail"]
    if not failed:
        return 0
    return 2 if any(check.failure_class == "configuration" for check in failed) else 3


_PREFLIGHTS: dict[str, list[Check]] = {}
"""Checklists already made in this process, by what they depend on (``_preflight_key``): a model
start-up each."""
_MAKING: dict[str, threading.Lock] = {}
"""Per key, held while its checklist is made: a second scenario with the same settings waits for it
and reuses it (``make`` checks its scenarios four at a time; four alike started eight models where
two do)."""
_PREFLIGHTS_LOCK = threading.Lock()


def _preflight_key(scenario: Scenario, profile: Profile, base_dir: Path | None, binary: str) -> str:
    """What a checklist depends on: the model settings, every build's launch parameters, the
    profile, the binary file's identity (a replaced binary is asked again) and the folder relative
    paths resolve from."""
    try:
        program = (model_program(binary, profile) if profile.baremetal
                   else resolve_binary(binary, profile))
        stat = Path(program[0]).stat()
        identity: object = (program, stat.st_mtime_ns, stat.st_size)
    except (ConfigurationError, OSError):
        identity = None
    return json.dumps([scenario.fvp.model_dump(mode="json"),
                       {n: b.fvp_params for n, b in scenario.builds.items()},
                       scenario.deploy.method, scenario.run.semihosting,
                       profile.model_dump(mode="json"),
                       str(base_dir), binary, repr(identity)], sort_keys=True, default=str)


def preflight(scenario: Scenario, profile: Profile, *, base_dir: Path | None = None,
              binary: str | None = None, probe_timeout: float = PROBE_TIMEOUT_S) -> list[Check]:
    """``run``'s preflight: ``run_doctor``'s very checks (the binary answers ``--version`` and
    ``--list-params``, every ``-C`` parameter exists, the licence is there, the platform's
    parameters are the model's, the firmware files exist), made before anything boots. A
    deterministic failure (``failure_class`` configuration: an unknown parameter, a refused licence,
    a model of another platform, a missing file) raises ``ConfigurationError`` (exit 2, nothing
    retried) naming every failed check with the model's own words, whole. What may pass on a second
    try (a probe that got no answer, a busy port) is left to the boot, whose retries are for exactly
    that. Returns the checklist. A checklist is made once per process for the same settings
    (``_preflight_key``)."""
    chosen = binary or scenario.fvp.binary
    key = _preflight_key(scenario, profile, base_dir, chosen)
    # scenarios of one batch are checked side by side: the same settings are asked once
    with _PREFLIGHTS_LOCK:
        making = _MAKING.setdefault(key, threading.Lock())
    with making:
        checks = _PREFLIGHTS.get(key)
        if checks is None:
            checks = _model_checks(scenario, profile, base_dir=base_dir, binary=binary,
                                   probe_timeout=probe_timeout)
            _PREFLIGHTS[key] = checks
    checks = [*checks, *fit_checks(scenario, profile, binary)]  # the files, read every time
    failed = [check for check in checks if check.status == "fail" and
              check.failure_class == "configuration"]
    if failed:
        lines = [f"  {check.name}: {check.detail}"
                 + (f"\n    fix: {check.fix}" if check.fix else "") for check in failed]
        raise ConfigurationError("the preflight checks failed (fvp-harness doctor shows the whole "
                                 "checklist); nothing was booted:\n" + "\n".join(lines))
    return checks

