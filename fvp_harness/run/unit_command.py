"""A unit's guest command (``run.command`` filled and quoted), the guest paths it uses and the
digests of the files it leaves (docs/architecture.md, "Running a unit")."""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from fvp_harness.errors import CommandFailed, storing
from fvp_harness.run.framed import FramedResult
from fvp_harness.run.plan import Unit
from fvp_harness.run.scrape import ETDUMP_FILES
from fvp_harness.scenario.model import Scenario, render_template
from fvp_harness.targets.baremetal import BaremetalLaunch
from fvp_harness.targets.base import CommandResult, Target
from fvp_harness.targets.transfer import sha256sum_digests

__all__ = [
    "LIBRARY_PATH",
    "UnitCommand",
    "etdump_path",
    "fetch",
    "fetch_paths",
    "framed_outputs",
    "hash_outputs",
    "render_unit_command",
]

LIBRARY_PATH = "LD_LIBRARY_PATH"


@dataclass(frozen=True)
class UnitCommand:
    """The command of one unit and the guest paths it uses."""

    command: str
    unit_dir: str
    output: str
    staged: tuple[str, ...] = ()
    """Files the harness puts into the unit folder (semihosting model and inputs): not outputs."""
    launch: BaremetalLaunch | None = None
    """A bare-metal unit's model launch (then ``command`` is only its description, for the log)."""
    etdump: str | None = None
    """Where a traced Linux build writes its ETDump (``--etdump_path``); None: untraced."""
    model: str = ""
    inputs: tuple[str, ...] = ()


def _quoted_env(env: Mapping[str, str], library_dirs: Sequence[str] = ()) -> str:
    """``NAME=value`` words; with ``library_dirs`` (a build's deployed libraries)
    ``LD_LIBRARY_PATH`` holds those folders first, then the env's own value, else the guest's
    (expanded by the guest shell when it is set)."""
    words = []
    for name, value in env.items():
        if name == LIBRARY_PATH and library_dirs:
            value = ":".join([*library_dirs, value]) if value else ":".join(library_dirs)
        words.append(f"{name}={shlex.quote(value)}")
    if library_dirs and LIBRARY_PATH not in env:
        folders = shlex.quote(":".join(library_dirs))
        words.append(f'{LIBRARY_PATH}={folders}"${{{LIBRARY_PATH}:+:${LIBRARY_PATH}}}"')
    return " ".join(words)


def render_unit_command(
    scenario: Scenario,
    unit: Unit,
    *,
    runner: str,
    model: str,
    inputs: Sequence[str],
    guest_root: str,
    libraries: Sequence[str] = (),
) -> UnitCommand:
    """The unit's guest command: ``run.command`` with every placeholder filled and quoted.
    ``libraries``: the guest paths of the build's deployed shared libraries; their folders, in
    order, go first on ``LD_LIBRARY_PATH``."""
    build = scenario.builds[unit.build]
    run = scenario.run
    unit_dir = posixpath.join(guest_root, "units", unit.id)
    output = posixpath.join(unit_dir, "out")
    env = {**run.env, **build.env}
    library_dirs = list(dict.fromkeys(posixpath.dirname(path) for path in libraries))
    simple = run.command.lstrip().startswith("{runner}")
    runner_word = shlex.quote(runner)
    if build.args:
        runner_word += " " + " ".join(shlex.quote(arg) for arg in build.args)
    etdump = etdump_path(unit_dir) if build.traced else None
    if (
        etdump is not None
    ):  # a runner built with the event tracer writes its ETDump where the harness says
        runner_word += " " + shlex.quote(f"--etdump_path={etdump}")
    if (env or library_dirs) and simple:
        runner_word = f"{_quoted_env(env, library_dirs)} {runner_word}"
    values = {
        "model": model,
        "inputs": ",".join(inputs),
        "iterations": str(run.executions),
        "output": output,
        "unit_dir": unit_dir,
        "build": unit.build,
        "model_name": unit.model,
        "unit": unit.id,
    }
    quoted = {name: shlex.quote(value) for name, value in values.items()}
    quoted["runner"] = runner_word
    command = render_template(run.command, quoted, quote=False)
    if library_dirs and not simple:  # a subshell: no later unit (another build) inherits them
        command = f"(export {_quoted_env(env, library_dirs)}; {command})"
    elif env and not simple:
        command = f"export {_quoted_env(env)}; {command}"
    return UnitCommand(command, unit_dir, output, etdump=etdump, model=model, inputs=tuple(inputs))


def etdump_path(unit_dir: str) -> str:
    """Where a traced Linux build writes its ETDump: the unit folder's ``etdump.bin``, the name the
    bare-metal runner's file has, so ``fetched/<unit>/etdump.bin`` is every unit's trace."""
    return posixpath.join(unit_dir, ETDUMP_FILES[0])


def fetch_paths(scenario: Scenario, unit: Unit, rendered: UnitCommand) -> list[str]:
    """The guest paths ``run.fetch`` names for this unit (templates filled, unquoted), and a traced
    Linux build's ETDump file."""
    values = {
        "runner": "",
        "model": "",
        "inputs": "",
        "iterations": "",
        "output": rendered.output,
        "unit_dir": rendered.unit_dir,
        "build": unit.build,
        "model_name": unit.model,
        "unit": unit.id,
    }
    paths = [render_template(template, values, quote=False) for template in scenario.run.fetch]
    traced = rendered.etdump
    return [*paths, traced] if traced is not None and traced not in paths else paths


def _skipped(unit_dir: str, exclude: Sequence[str]) -> set[str]:
    """The names in ``unit_dir`` of the excluded guest paths (``run.fetch`` files, staged
    inputs)."""
    folder = posixpath.normpath(unit_dir)
    return {
        posixpath.basename(path)
        for path in exclude
        if posixpath.dirname(posixpath.normpath(path)) == folder
    }


def hash_outputs(
    guest: Callable[[str], CommandResult], unit_dir: str, *, exclude: Sequence[str] = ()
) -> dict[str, str]:
    """sha256 of every file the runner left in the unit folder (computed in the guest), except the
    guest paths in ``exclude``."""
    quoted = shlex.quote(unit_dir)
    listing = guest(f"ls {quoted}")
    if not listing.ok:
        raise CommandFailed(
            f"cannot list {unit_dir}: {listing.output.strip()}", exit_status=listing.exit_status
        )
    skipped = _skipped(unit_dir, exclude)
    names = sorted(name for name in listing.output.split() if name and name not in skipped)
    if not names:
        return {}
    hashed = guest(f"cd {quoted} && sha256sum {' '.join(shlex.quote(n) for n in names)}")
    if not hashed.ok:
        raise CommandFailed(
            f"sha256sum of the outputs in {unit_dir} failed: {hashed.output.strip()[-300:]}",
            exit_status=hashed.exit_status,
        )
    return sha256sum_digests(hashed.output)


def framed_outputs(
    framed: FramedResult, unit_dir: str, *, exclude: Sequence[str]
) -> dict[str, str]:
    """The framed line's digests without the excluded guest paths; a problem line about any other
    name (a folder among the outputs, an unreadable file) fails the unit."""
    skipped = _skipped(unit_dir, exclude)
    problems = [line for line in framed.problems if not any(name in line for name in skipped)]
    if problems:
        raise CommandFailed(
            f"sha256sum of the outputs in {unit_dir} failed: {'; '.join(problems)[-300:]}",
            exit_status=1,
        )
    return {name: digest for name, digest in framed.digests.items() if name not in skipped}


def fetch(target: Target, folder: Path, remotes: Sequence[str]) -> None:
    """Copy the ``run.fetch`` files back into ``folder`` (``<results>/fetched/<unit>/``)."""
    for remote in remotes:
        try:
            data = target.get(remote)
        except FileNotFoundError as exc:
            raise CommandFailed(
                f"run.fetch: {remote} is not in the guest ({exc})", exit_status=1
            ) from exc
        kept = folder / posixpath.basename(remote)
        with storing(kept):
            folder.mkdir(parents=True, exist_ok=True)
            kept.write_bytes(data)
