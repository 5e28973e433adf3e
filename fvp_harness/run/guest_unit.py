"""Units as guest commands: a Linux guest over its console or ssh (``GuestCommands``), or this
host's shell (``HostProcess``, ``target: host``). Each unit is one framed line (``run.framed``):
prepare, run, status, hashes and clean-up in a single round trip."""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from fvp_harness.errors import CommandFailed, UnitFailure
from fvp_harness.run.framed import frame_unit, new_token, parse_framed
from fvp_harness.run.plan import Unit
from fvp_harness.run.unit_command import UnitCommand, framed_outputs, render_unit_command
from fvp_harness.run.unit_context import Ran, UnitContext, Uploads, name_the_users_command
from fvp_harness.scenario.model import Scenario
from fvp_harness.targets.base import CommandResult, CopiesOverSsh, SharesHostFiles, Target
from fvp_harness.targets.transfer import check_guest_sha256

__all__ = ["GuestCommands", "HostProcess"]


def _builtin_wanted(scenario: Scenario, name: str) -> bool:
    """True when the scenario measures the built-in metric ``name`` (listed without a regex of its
    own)."""
    spec = scenario.metric(name)
    return spec is not None and spec.regex is None


class GuestCommands:
    """A guest shell reached over a console or ssh: artifacts are uploaded (``deploy.method``), a
    unit is one framed command line. ``ssh``: the target when it copies over ssh; ``run_unit``: how
    a unit's line is run (in the ``unit`` phase when the target names phases)."""

    in_place = False

    def __init__(
        self,
        target: Target,
        *,
        ssh: CopiesOverSsh | None,
        run_unit: Callable[[str, float], CommandResult],
    ) -> None:
        self.target = target
        self.ssh = ssh
        self.run_unit = run_unit

    def guest_dir(self) -> str | None:
        return None

    def copy(self, uploads: Uploads, local: Path, remote: str, digest: str) -> str:
        return uploads.upload(local, remote, digest, self.ssh)

    def render(
        self, ctx: UnitContext, unit: Unit, placed: Mapping[Path, str], guest_root: str
    ) -> UnitCommand:
        scenario = ctx.scenario
        build = scenario.builds[unit.build]
        runner, model = (
            placed[Path(build.runner)],
            placed[Path(scenario.model_file(unit.build, unit.model))],
        )
        inputs = [placed[Path(item.file)] for item in scenario.models[unit.model].inputs]
        libraries = [placed[Path(item.file)] for item in build.libraries]
        return render_unit_command(
            scenario,
            unit,
            runner=runner,
            model=model,
            inputs=inputs,
            guest_root=guest_root,
            libraries=libraries,
        )

    def prepare(self, ctx: UnitContext, rendered: UnitCommand) -> None:
        """Nothing: the framed line prepares the folder itself."""

    def run(
        self,
        ctx: UnitContext,
        rendered: UnitCommand,
        timeout: float,
        fetched: Sequence[str],
        log_rel: str,
    ) -> Ran:
        """The unit as one framed guest line: the log and the scraper see only the runner's own
        output and status, exactly as if it had run alone; the outputs' digests come from the same
        line. With ``run.fetch`` files the folder stays until they are read back (``cleanup``)."""
        token = new_token()
        line = frame_unit(
            rendered.command,
            rendered.unit_dir,
            token,
            cleanup=not fetched,
            peak_rss=_builtin_wanted(ctx.scenario, "peak_rss"),
        )
        try:
            raw = self.run_unit(line, timeout)
        except CommandFailed as exc:  # a timeout: say the user's command, not the framed line
            name_the_users_command(exc, line, rendered.command)
            raise
        framed = parse_framed(raw.output, token)
        if not framed.ready:
            return Ran(
                None,
                failure=CommandFailed(
                    f"cannot prepare the unit folder {rendered.unit_dir}: "
                    f"{framed.output.strip()[-300:]}",
                    exit_status=raw.exit_status,
                ),
            )
        if framed.status is None:
            return Ran(
                None,
                failure=CommandFailed(
                    f"the unit's command line ended without its exit status "
                    f"(the console text is in {log_rel}): "
                    f"{framed.output.strip()[-300:]}",
                    exit_status=raw.exit_status,
                ),
            )
        result = CommandResult(
            rendered.command, framed.status, framed.output, raw.duration_s, raw.log_path
        )
        return Ran(result, framed=framed)

    def outputs(
        self, ctx: UnitContext, rendered: UnitCommand, ran: Ran, exclude: Sequence[str]
    ) -> dict[str, str]:
        """The framed line's digests (``run.unit_command.framed_outputs``)."""
        assert ran.framed is not None, "a guest unit runs as a framed line"
        return framed_outputs(ran.framed, rendered.unit_dir, exclude=exclude)

    def cleanup(self, ctx: UnitContext, rendered: UnitCommand, fetched: Sequence[str]) -> None:
        """The folder of a unit with ``run.fetch`` files (the framed line removed every other)."""
        if fetched:
            with contextlib.suppress(UnitFailure):
                ctx.guest(self.target, f"rm -rf {shlex.quote(rendered.unit_dir)}")


class HostProcess(GuestCommands):
    """This host (``target: host``): units run as for a guest, artifacts are plain copies into the
    target's own working folder."""

    def __init__(
        self,
        target: Target,
        files: SharesHostFiles,
        *,
        run_unit: Callable[[str, float], CommandResult],
    ) -> None:
        super().__init__(target, ssh=None, run_unit=run_unit)
        self.files = files

    def guest_dir(self) -> str | None:
        return self.files.guest_dir

    def copy(self, uploads: Uploads, local: Path, remote: str, digest: str) -> str:
        self.target.put(local, remote)  # this host: a plain copy
        check_guest_sha256(self.target, remote, digest, "copy", uploads.timeout)
        return "host"
