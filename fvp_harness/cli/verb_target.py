"""``doctor`` (preflight checklist, no boot) and ``shell`` (boot and hand over the console) for one
scenario."""

from __future__ import annotations

import argparse
import datetime
import os
import select
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from fvp_harness.cli.scenario_args import (
    add_scenario_options,
    add_timeout_scale_option,
    load_from_args,
    positive_float,
)
from fvp_harness.errors import EXIT_OK, ConfigurationError, ScenarioError
from fvp_harness.store.folder import DEFAULT_RESULTS_BASE, LOGS_DIR

if TYPE_CHECKING:
    from fvp_harness.targets.fvp_target import FvpTarget

ORDER = 60

__all__ = ["ORDER", "format_checks", "register"]

ESCAPE = b"\x1d"  # Ctrl-]: leaves the shell, as telnet does


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    doctor = subparsers.add_parser(
        "doctor",
        parents=[common],
        help="check, without booting, that a scenario's model can run (exit 0 ok, 2 input, 3 "
             "platform)",
        description="Preflight checks: the FVP binary is found and prints its --version banner; "
                    "every -C "
        "parameter of the profile and scenario exists in --list-params; firmware files exist; "
        "ports can be bound; SSH client support is present. The two questions to the model run at "
        "the same time, each within --probe-timeout. With target: host, each build's runner must "
        "be executable on this host instead. Prints each check as it starts and ends, with a fix "
        "for each failure (-q: only the checks that fail or warn, and the last line). Exit 0 ok, 2 "
        "bad input, 3 platform.",
    )
    doctor.add_argument("scenario", metavar="SCENARIO")
    add_scenario_options(doctor)
    add_timeout_scale_option(doctor, "multiply every timeout (slow hosts)")
    doctor.add_argument("--probe-timeout", type=positive_float, default=None, metavar="S",
                        help="seconds the model may take to answer --version and --list-params "
                             "before it counts as "
                        "silent (default 12, times --timeout-scale)")
    doctor.add_argument("--boot", action="store_true",
                        help="also boot one instance and check that the image has what the runners "
                             "need (the NPU "
                        "node, the runner's C library loader, an ssh server for deploy.method: "
                        "ssh), as a run does before its first unit")
    doctor.set_defaults(handler=_run_doctor_verb)

    shell = subparsers.add_parser(
        "shell",
        parents=[common],
        help="boot a scenario's platform and open its console interactively (Ctrl-] leaves)",
        description="Boot the scenario's model, log in, and hand the console to you. Every "
                    "terminal is still "
        "logged to --log-dir. Ctrl-] leaves and stops the model.",
    )
    shell.add_argument("scenario", metavar="SCENARIO")
    add_scenario_options(shell)
    add_timeout_scale_option(shell, "multiply every timeout (slow hosts)")
    shell.add_argument("--log-dir", type=Path, default=None,
                       help="where terminal logs go (default: "
                            "results/<scenario>/logs/shell-<time>)")
    shell.set_defaults(handler=_run_shell_verb)


def _check_lines(check, width: int) -> list[str]:
    mark = {"ok": "ok", "warn": "warn", "fail": "FAIL", "skip": "skip"}[check.status]
    lines = [f"  {mark:<4}  {check.name:<{width}}  {check.detail}"]
    if check.status in ("fail", "warn") and check.fix:
        lines.append(f"  {'':<4}  {'':<{width}}  fix: {check.fix}")
    return lines


def format_checks(checks: list, title: str) -> str:
    """The checklist as text: one line per check, a ``fix:`` line under each failure."""
    lines = [title]
    width = max((len(check.name) for check in checks), default=4)
    for check in checks:
        lines += _check_lines(check, width)
    return "\n".join(lines)


def _run_doctor_verb(args: argparse.Namespace) -> int:
    import platform
    import threading
    import time

    # late: only for `doctor`
    from fvp_harness.run.doctor import PROBE_TIMEOUT_S, doctor_exit_code, run_doctor

    began = time.monotonic()
    loaded = load_from_args(args, args.scenario, check_files=False)
    scenario = loaded.scenario
    located: list[str] = []
    # the runners must run here: the loader's file checks say where each is written
    if scenario.target == "host":
        try:
            load_from_args(args, args.scenario)
        except ScenarioError as exc:
            located = list(exc.problems)
        where = f"target host: {platform.machine()}"
    else:
        where = f"platform {loaded.profile.name}, binary {scenario.fvp.binary}"
    # -q: only the checks that failed or warn, with their fix, and the end
    quiet = getattr(args, "quiet", 0) > 0
    if not quiet:
        print(f"doctor {args.scenario} ({where})", flush=True)
    lock = threading.Lock()
    width = max([11, *(len(f"runner {name}") for name in scenario.builds)]
                if scenario.target == "host" else [11])

    def started(name: str, what: str) -> None:
        if quiet:
            return
        with lock:
            print(f"  {'..':<4}  {name:<{width}}  {what}", flush=True)

    def ended(check, seconds: float) -> None:
        if quiet and check.status not in ("fail", "warn"):
            return
        took = f" ({seconds:.1f} s)" if seconds >= 0.05 else ""
        lines = _check_lines(check, width)
        lines[0] += took
        with lock:
            print("\n".join(lines), flush=True)

    timeout = (args.probe_timeout or PROBE_TIMEOUT_S) * args.timeout_scale
    checks = run_doctor(scenario, loaded.profile, base_dir=loaded.directory, probe_timeout=timeout,
                        on_start=started, on_done=ended, located=located)
    if args.boot and doctor_exit_code(checks) == EXIT_OK:
        # late: the targets layer loads only for --boot
        from fvp_harness.run.doctor_boot import boot_check

        started("guest", "booting one instance")
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        check = boot_check(loaded,
                           log_dir=DEFAULT_RESULTS_BASE / loaded.stem / LOGS_DIR
                           / f"doctor-{stamp}", timeout_scale=args.timeout_scale)
        ended(check, 0.0)
        checks.append(check)
    code = doctor_exit_code(checks)
    seconds = time.monotonic() - began
    if code == EXIT_OK:
        print(f"all checks passed ({seconds:.1f} s)")
    else:
        failed = ", ".join(check.name for check in checks if check.status == "fail")
        print(f"some checks failed (exit {code}): {failed} ({seconds:.1f} s)")
    return code


def _run_shell_verb(args: argparse.Namespace) -> int:
    # late: the targets layer (pexpect, asyncssh) loads only for `shell`
    from fvp_harness.run.instances import open_target
    from fvp_harness.targets.fvp_target import FvpTarget

    loaded = load_from_args(args, args.scenario, check_files=False)
    if loaded.scenario.target == "host":
        raise ConfigurationError("shell needs an FVP scenario (this one has target: host)")
    if loaded.profile.baremetal:
        raise ConfigurationError(f"shell needs a platform with a console; {loaded.profile.name} is "
                                 "bare metal (one model launch per unit, no shell): use run, or "
                                 "doctor to check the launch")
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    log_dir = args.log_dir or DEFAULT_RESULTS_BASE / loaded.stem / LOGS_DIR / f"shell-{stamp}"
    print(f"booting {loaded.profile.name} ({loaded.scenario.fvp.binary}); logs in {log_dir}",
          file=sys.stderr)
    with open_target(loaded, log_dir=log_dir, timeout_scale=args.timeout_scale) as target:
        assert isinstance(target, FvpTarget)  # target: host was refused above
        target.run("stty echo; export PS1='# '")
        console = target.console
        assert console is not None
        print(f"connected to {console.terminal.name} (port {console.terminal.port}); Ctrl-] leaves "
              "and stops the model", file=sys.stderr)
        _interact(target)
        print(f"\nstopping the model; logs in {log_dir}", file=sys.stderr)
    return EXIT_OK


def _interact(target: FvpTarget) -> None:
    """Raw keyboard <-> console until Ctrl-], EOF on stdin, or the model/console going away.

    Not ``pexpect.interact``: the console's socket is owned by its drain thread (which keeps writing
    the log), so keys go out through ``Terminal.send`` and output comes back through the terminal's
    tap.
    """
    import termios
    import tty

    console, process = target.console, target.process
    assert console is not None and process is not None  # open_target hands out booted targets only
    terminal = console.terminal
    out = sys.stdout.buffer

    def show(data: bytes) -> None:
        out.write(data)
        out.flush()

    terminal.set_tap(show)
    terminal.send("\n")
    stdin = sys.stdin.fileno()
    saved = termios.tcgetattr(stdin) if os.isatty(stdin) else None
    try:
        if saved is not None:
            tty.setraw(stdin)
        while not terminal.closed and process.alive():
            ready, _, _ = select.select([stdin], [], [], 0.2)
            if not ready:
                continue
            data = os.read(stdin, 1024)
            if not data or ESCAPE in data:
                data = data.split(ESCAPE, 1)[0]
                if data:
                    terminal.send(data)
                break
            terminal.send(data)
    finally:
        terminal.set_tap(None)
        if saved is not None:
            termios.tcsetattr(stdin, termios.TCSADRAIN, saved)
