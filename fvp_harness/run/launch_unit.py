"""Units as model launches (``ModelLaunch``, bare-metal platforms): the runner is the application,
the model at its ``data_address`` or in the unit folder for semihosting with the rendered
``run.cmd_line``. Nothing is deployed; the unit folder is the semihosting folder, hashed like a
guest's. docs/baremetal.md."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import posixpath
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fvp_harness.errors import CommandFailed, ConfigurationError, UnitFailure
from fvp_harness.run.plan import Unit
from fvp_harness.run.scrape import ETDUMP_FILES, printed_outputs
from fvp_harness.run.unit_command import UnitCommand, hash_outputs
from fvp_harness.run.unit_context import Ran, UnitContext, Uploads
from fvp_harness.scenario.baremetal import SEMIHOSTING_OUTPUT, semihosting_unit
from fvp_harness.targets.baremetal import BaremetalLaunch, LaunchesModel, LaunchResult
from fvp_harness.targets.base import SharesHostFiles, Target

__all__ = ["PRINTED_OUTPUTS", "ModelLaunch"]

PRINTED_OUTPUTS = "uart:Output"
"""``Record.outputs`` name of a bare-metal unit's printed output tensors (``Output[i][j]: ...``
lines) when it ran without semihosting and so wrote no output files: the sha256 of those lines."""


def _provenance(result: LaunchResult, model: str, inputs: Sequence[str]) -> dict[str, Any]:
    """A bare-metal unit's provenance: the sha256 of the model file (and inputs) as the launch
    handed them over."""
    extra: dict[str, Any] = {}
    if model in result.handed:
        extra["model_sha256"] = result.handed[model]
    digests = [result.handed[path] for path in inputs if path in result.handed]
    if digests:
        extra["inputs_sha256"] = ",".join(digests)
    return extra


class ModelLaunch:
    """A bare-metal platform: each unit one launch of the model. ``files``: the target when its unit
    folders are host folders (then the ETDump files a semihosting runner writes there are found and
    kept)."""

    in_place = True

    def __init__(
        self, target: Target, launcher: LaunchesModel, files: SharesHostFiles | None
    ) -> None:
        self.target = target
        self.launcher = launcher
        self.files = files

    def guest_dir(self) -> str | None:
        return self.files.guest_dir if self.files is not None else None

    def copy(self, uploads: Uploads, local: Path, remote: str, digest: str) -> str:
        """Nothing to copy: the model reads the file where it is."""
        return "in place"

    def render(
        self, ctx: UnitContext, unit: Unit, placed: Mapping[Path, str], guest_root: str
    ) -> UnitCommand:
        """The unit's folder (also the semihosting folder), the command line its runner gets and the
        launch that runs it. Raises ConfigurationError when a name cannot be put into a command
        line."""
        scenario, profile = ctx.scenario, ctx.profile
        build = scenario.builds[unit.build]
        runner, model = (
            placed[Path(build.runner)],
            placed[Path(scenario.model_file(unit.build, unit.model))],
        )
        inputs = [placed[Path(item.file)] for item in scenario.models[unit.model].inputs]
        unit_dir = posixpath.join(guest_root, "units", unit.id)
        try:
            semihosting = semihosting_unit(
                scenario, unit.build, unit.model, unit.id, model_file=model, input_files=inputs
            )
        except ValueError as exc:
            raise ConfigurationError(f"run.cmd_line of {unit.id}: {exc}") from exc
        data: list[tuple[Path, str]] = []
        if build.data_address:
            address = profile.data_address if build.data_address is True else build.data_address
            if address is None:
                raise ConfigurationError(
                    f"builds.{unit.build}.data_address: true, but platform "
                    f"{profile.name} has no data_address; give the address"
                )
            data.append((Path(model), str(address)))
        launch = BaremetalLaunch(
            runner=Path(runner),
            label=unit.id,
            cwd=Path(unit_dir) if semihosting.cmd_line is not None else None,
            cmd_line=semihosting.cmd_line,
            files={name: Path(path) for name, path in semihosting.files.items()},
            data=data,
            params=dict(build.fvp_params),
        )
        described = (
            f"(launch) semihosting-cmd_line: {semihosting.cmd_line}"
            if semihosting.cmd_line is not None
            else f"(launch) {runner}"
        )
        return UnitCommand(
            described,
            unit_dir,
            posixpath.join(unit_dir, SEMIHOSTING_OUTPUT),
            staged=tuple(semihosting.files),
            launch=launch,
            model=model,
            inputs=tuple(inputs),
        )

    def prepare(self, ctx: UnitContext, rendered: UnitCommand) -> None:
        """An empty unit folder before the launch (the runner writes its outputs there)."""
        quoted = shlex.quote(rendered.unit_dir)
        prepare = ctx.guest(self.target, f"rm -rf {quoted} && mkdir -p {quoted}")
        if not prepare.ok:
            raise CommandFailed(
                f"cannot prepare the unit folder {rendered.unit_dir}: {prepare.output.strip()}",
                exit_status=prepare.exit_status,
            )

    def run(
        self,
        ctx: UnitContext,
        rendered: UnitCommand,
        timeout: float,
        fetched: Sequence[str],
        log_rel: str,
    ) -> Ran:
        assert rendered.launch is not None, "a bare-metal unit is a launch"
        result = self.launcher.launch(rendered.launch, timeout)
        kept: tuple[str, ...] = ()
        if self.files is not None:  # a semihosting runner's ETDump files
            files = self.files
            dumps = [posixpath.join(rendered.unit_dir, name) for name in ETDUMP_FILES]
            kept = tuple(path for path in dumps if files.local_path(path).is_file())
        return Ran(
            result, provenance=_provenance(result, rendered.model, rendered.inputs), kept=kept
        )

    def outputs(
        self, ctx: UnitContext, rendered: UnitCommand, ran: Ran, exclude: Sequence[str]
    ) -> dict[str, str]:
        """The files the runner wrote, hashed by the host's shell; without semihosting (no files)
        the printed output tensors (``PRINTED_OUTPUTS``)."""
        outputs = hash_outputs(
            functools.partial(ctx.guest, self.target), rendered.unit_dir, exclude=exclude
        )
        launch, result = rendered.launch, ran.result
        assert launch is not None and result is not None, "a bare-metal unit is a launch that ran"
        if launch.cmd_line is None:  # no semihosting, so no files: the printed output tensors
            tensors = printed_outputs(result.output)
            if tensors:
                outputs[PRINTED_OUTPUTS] = hashlib.sha256("\n".join(tensors).encode()).hexdigest()
        return outputs

    def cleanup(self, ctx: UnitContext, rendered: UnitCommand, fetched: Sequence[str]) -> None:
        with contextlib.suppress(UnitFailure):
            ctx.guest(self.target, f"rm -rf {shlex.quote(rendered.unit_dir)}")
