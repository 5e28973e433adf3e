"""A bare-metal unit's semihosting folder and the command line its runner gets (platforms of kind
``baremetal``).

On Corstone-300/320 every unit is one model launch: the runner ELF is the application (``-a``) and,
with semihosting, it reads its model and inputs from a host folder (``<cpu>.semihosting-cwd``) and
writes its outputs there, driven by a command line the model hands it
(``<cpu>.semihosting-cmd_line``). The model truncates long command lines, so upstream's
``backends/arm/test/runner_utils.py`` copies the inputs into that folder under short names and
refuses a line over 256 characters. The harness does the same: the unit's folder (where execute
hashes outputs) is the semihosting folder, the model file and the inputs appear there under their
own file names, and ``run.cmd_line`` is rendered with those names, ``out`` as the output prefix and
``.`` as the folder. So the line is known exactly from the scenario alone: the loader checks its
length, with the file and line of the template, before anything runs; the launch checks it again.

Pure: no I/O (the target links the files; execute and the loader call these functions).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from fvp_harness.scenario.model import Scenario, render_template

__all__ = ["SEMIHOSTING_OUTPUT", "SemihostingUnit", "cmd_line_problem", "semihosting_names",
           "semihosting_unit"]

SEMIHOSTING_OUTPUT = "out"
"""The output prefix a bare-metal runner gets (``-o out``: it writes ``out-0.bin``, ... into the
unit folder)."""

_SAFE_WORD = re.compile(r"^[^\s'\"\\]+$")
"""What a value in a semihosting command line may be: the runner's C library splits the line at
white space and does not undo shell quoting, so a name with spaces or quotes cannot be passed."""


@dataclass(frozen=True)
class SemihostingUnit:
    """What one bare-metal unit hands its runner: the rendered command line (None: semihosting off)
    and the files that must be in its semihosting folder (name there -> host path)."""

    cmd_line: str | None
    files: Mapping[str, str] = field(default_factory=dict)


def semihosting_names(model_file: str, input_files: Sequence[str]) -> dict[str, str]:
    """Name in the unit folder -> host path, for the model file and the inputs: each keeps its own
    file name; an input whose name is taken (by the model, an earlier input or the outputs' ``out``
    prefix) gets ``i<index>-`` in front, so every name is known from the scenario alone."""
    names: dict[str, str] = {os.path.basename(model_file): model_file}
    for index, path in enumerate(input_files):
        name = os.path.basename(path)
        if name in names or name.startswith(SEMIHOSTING_OUTPUT + "-"):
            name = f"i{index}-{name}"
        names[name] = path
    return names


def semihosting_unit(scenario: Scenario, build: str, model: str, unit_id: str, *,
                     model_file: str | None = None,
                     input_files: Sequence[str] | None = None) -> SemihostingUnit:
    """The semihosting command line and folder of one unit. ``model_file`` and ``input_files``
    default to the scenario's (the launch passes the files it really hands over; their names are the
    same). Raises ValueError when a value cannot be written into a command line (white space or
    quotes in a name)."""
    model_path = model_file if model_file is not None else scenario.model_file(build, model)
    inputs = (
        list(input_files)
        if input_files is not None
        else [item.file for item in scenario.models[model].inputs]
    )
    run = scenario.run
    if not run.semihosting:
        return SemihostingUnit(None, {})
    files = semihosting_names(model_path, inputs)
    names = list(files)
    spec = scenario.builds[build]
    runner = " ".join([os.path.basename(spec.runner), *spec.args])
    values = {
        "runner": runner,
        "model": names[0],
        "inputs": ",".join(names[1:]),
        "input_args": " ".join(f"-i {name}" for name in names[1:]),
        "iterations": str(run.executions),
        "output": SEMIHOSTING_OUTPUT,
        "unit_dir": ".",
        "build": build,
        "model_name": model,
        "unit": unit_id,
    }
    for key, value in values.items():
        words = value.split() if key in ("runner", "input_args") else [value] if value else []
        bad = next((word for word in words if not _SAFE_WORD.match(word)), None)
        if bad is not None or (key not in ("runner", "input_args") and value != value.strip()):
            raise ValueError(f"{{{key}}} would be {value!r}, which a semihosting command line "
                             "cannot carry (it is split at white space and quotes are not "
                             "removed): rename the file or the build")
    line = " ".join(render_template(run.cmd_line_template, values, quote=False).split())
    return SemihostingUnit(line, files)


def cmd_line_problem(line: str, limit: int) -> str | None:
    """Why ``line`` cannot be a semihosting command line (longer than ``limit``), or None."""
    if len(line) <= limit:
        return None
    return (f"the semihosting command line would be {len(line)} characters, over the platform's "
            f"{limit} (the model truncates longer ones; upstream's runner_utils.py refuses them): "
            f"{line[:80]}...; use shorter file, build or model names, or a shorter run.cmd_line")
