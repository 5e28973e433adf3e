"""``doctor`` (preflight checklist, no boot) and ``shell`` (boot and hand over the console) for one scenario."""

from __future__ import annotations

import argparse
import datetime
import os
import select
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from fvp_harness.cli.scenario_args import add_scenario_options, add_timeout_scale_option, load_from_args
from fvp_harness.errors import EXIT_OK, ConfigurationError
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
        help="check, without booting, that a scenario's model can run (exit 0 ok, 2 input, 3 platform)",
        description="Preflight checks: the FVP binary is found and prints its --version banner; every -C "
        "parameter of the profile and scenario exists in --list-params; firmware files exist; ports can be "
        "bound; SSH client support is present. Prints a checklist with a fix for each failure.",
    )
    doctor.add_argument("scenario", metavar="SCENARIO")
    add_scenario_options(doctor)
    add_timeout_scale_option(doctor, "multiply every timeout (slow hosts)")
    doctor.set_defaults(handler=_run_doctor_verb)

    shell = subparsers.add_parser(
        "shell",
        parents=[common],
        help="boot a scenario's platform and open its console interactively (Ctrl-] leaves)",
        description="Boot the scenario's model, log in, and hand the console to you. Every terminal is still "
        "logged to --log-dir. Ctrl-] leaves and stops the model.",
    )
    shell.add_argument("scenario", metavar="SCENARIO")
    add_scenario_options(shell)
    add_timeout_scale_option(shell, "multiply every timeout (slow hosts)")
    shell.add_argument("--log-dir", type=Path, default=None,
                       help="where terminal logs go (default: results/<scenario>/logs/shell-<time>)")
    shell.set_defaults(handler=_run_shell_verb)


def format_checks(checks: list, title: str) -> str:
    """The checklist as text: one line per check, a ``fix:`` line under each failure."""
    lines = [title]
    width = max((len(check.name) for check in checks), default=4)
    for check in checks:
        mark = {"ok": "ok", "warn": "warn", "fail": "FAIL", "skip": "skip"}[check.status]
        lines.append(f"  {mark:<4}  {check.name:<{width}}  {check.detail}")
        if check.status in ("fail", "warn") and check.fix:
            lines.append(f"  {'':<4}  {'':<{width}}  fix: {check.fix}")
    return "\n".join(lines)


def _run_doctor_verb(args: argparse.Namespace) -> int:
    from fvp_harness.run.doctor import doctor_exit_code, run_doctor  # late: the run layer only for `doctor`

    loaded = load_from_args(args, args.scenario, check_files=False)
    scenario = loaded.scenario
    checks = run_doctor(scenario, loaded.profile, base_dir=loaded.directory,
                        command_timeout=60.0 * args.timeout_scale)
    title = f"doctor {args.scenario} (platform {loaded.profile.name}, binary {scenario.fvp.binary})"
    print(format_checks(checks, title))
    code = doctor_exit_code(checks)
    print("all checks passed" if code == EXIT_OK else f"some checks failed (exit {code})")
    return code


def _run_shell_verb(args: argparse.Namespace) -> int:
    # late: the targets layer (pexpect, asyncssh) loads only for `shell`
    from fvp_harness.run.instances import open_target
    from fvp_harness.targets.fvp_target import FvpTarget

    loaded = load_from_args(args, args.scenario, check_files=False)
    if loaded.scenario.target == "host":
        raise ConfigurationError("shell needs an FVP scenario (this one has target: host)")
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    log_dir = args.log_dir or DEFAULT_RESULTS_BASE / loaded.stem / LOGS_DIR / f"shell-{stamp}"
    print(f"booting {loaded.profile.name} ({loaded.scenario.fvp.binary}); logs in {log_dir}", file=sys.stderr)
    with open_target(loaded, log_dir=log_dir, timeout_scale=args.timeout_scale) as target:
        assert isinstance(target, FvpTarget)  # target: host was refused above
        target.run("stty echo; export PS1='# '")
        console = target.console
        assert console is not None
        print(f"connected to {console.terminal.name} (port {console.terminal.port}); Ctrl-] leaves and stops "
              "the model", file=sys.stderr)
        _interact(target)
        print(f"\nstopping the model; logs in {log_dir}", file=sys.stderr)
    return EXIT_OK


def _interact(target: FvpTarget) -> None:
    """Raw keyboard <-> console until Ctrl-], EOF on stdin, or the model/console going away.

    Not ``pexpect.interact``: the console's socket is owned by its drain thread (which keeps writing the log), so
    keys go out through ``Terminal.send`` and output comes back through the terminal's tap.
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
