"""Small scenarios for the batch tests and what they check in results folders.

``write_scenario``: the simulator's runners and models (built by ``fvp-harness sim`` build
commands), for the tests that boot the simulator. ``write_fake_scenario``: plain files as artifacts
and a runner command that ``tests.fakes.FakeFleet`` answers, for the tests of the engine's logic
without any model.
"""

from __future__ import annotations

from pathlib import Path

from fvp_harness.store.folder import ResultStore
from fvp_harness.store.records import Record

__all__ = ["FAKE_SCENARIO", "SIM_SCENARIO", "copy_artifacts", "fake_artifacts", "records",
           "snapshot", "write_fake_scenario", "write_scenario"]

SIM_SCENARIO = """\
name: {name}
platform: corstone1000-a320
vars:
  art: {art}
fvp:
  binary: sim
builds:
  before:
    runner: ${{vars.art}}/runner-before
    build: "{{fvp_harness}} sim runner --driver per-inference --cpu-time-report
      --build-id driver-per-inference -o {{output}}"
    id: driver-per-inference
  after:
    runner: ${{vars.art}}/runner-after
    build: "{{fvp_harness}} sim runner --driver reuse --cpu-time-report --build-id driver-reuse
      -o {{output}}"
    id: {after_id}
models:
  {model}:
    file: ${{vars.art}}/{name}.model
    build: "{{fvp_harness}} sim model {model} --seed 1 --macs 256 -o {{output}}"
    inputs:
      - file: ${{vars.art}}/{name}.input.bin
        build: "{{fvp_harness}} sim input {model} --seed 1 -o {{output}}"
run:
  command: >-
    {{runner}} --model_path={{model}} --inputs={{inputs}}
    --num_executions={{iterations}} --output_file={{output}}
  warmup: 0
  iterations: {iterations}
  repetitions: {repetitions}
metrics:
  - {{name: cpu_time, required: true}}
  - npu_cycles
compare: {{baseline: before, candidate: after, primary: cpu_time, min_effect: 5}}
report:
  title: {title}
  outputs: [markdown, json]
"""


def write_scenario(folder: Path, name: str, art: Path, *, model: str = "ds_cnn",
                   title: str = "Batch test",
                   after_id: str = "driver-reuse", repetitions: int = 1,
                   iterations: int = 2) -> Path:
    """``<folder>/<name>.yaml``: a simulator scenario whose artifacts are built into ``art`` by
    ``fvp-harness sim`` (the runners print build ids ``driver-per-inference`` and ``driver-reuse``;
    the scenario expects ``after_id`` of the after build, so another value makes its after units
    provenance failures; model ``<name>.model``)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(SIM_SCENARIO.format(name=name, art=art, model=model, title=title,
                                        after_id=after_id,
                                    repetitions=repetitions, iterations=iterations),
                    encoding="utf-8")
    return path


def snapshot(root: Path) -> dict[str, tuple[int, bytes]]:
    """Every file under root with its mtime and bytes: a no-op must leave this unchanged."""
    return {str(p.relative_to(root)): (p.stat().st_mtime_ns, p.read_bytes())
            for p in sorted(root.rglob("*")) if p.is_file()}


def records(results: Path, stem: str) -> list[Record]:
    return ResultStore(results / stem, create=False).records()


FAKE_SCENARIO = """\
name: {name}
target: host
fvp:
  timeouts: {{boot: {boot_timeout}}}
builds:
  before: {{runner: {art}/runner-before, id: id-before}}
  after: {{runner: {art}/runner-after, id: {after_id}}}
models:
  {model}: {{file: {art}/{model}.model}}
run:
  command: "{{runner}} --model_path={{model}} --num_executions={{iterations}}
    --output_file={{output}}"
  warmup: 1
  iterations: {iterations}
  repetitions: {repetitions}
metrics: [{{name: cpu_time, required: true}}, npu_cycles]
compare: {{baseline: before, candidate: after, min_effect: 5}}
report: {{title: {title}, outputs: [markdown, json]}}
"""


def fake_artifacts(art: Path, *models: str) -> Path:
    """Plain files standing in for the runners and the ``<model>.model`` files (the fake runs no
    artifact). The runners are executable text, as a ``target: host`` runner must be (the loader
    checks)."""
    art.mkdir(parents=True, exist_ok=True)
    for name in ("runner-before", "runner-after", *(f"{model}.model" for model in models)):
        (art / name).write_text(f"fake {name}\n", encoding="utf-8")
        if name.startswith("runner-"):
            (art / name).chmod(0o755)
    return art


def write_fake_scenario(folder: Path, name: str, art: Path, *, model: str = "m",
                        title: str = "Batch test",
                        after_id: str = "id-after", repetitions: int = 1, iterations: int = 2,
                        boot_timeout: int = 600) -> Path:
    """``<folder>/<name>.yaml`` for ``FakeFleet`` instances: builds ``before``/``after`` (ids
    ``id-before`` and ``after_id``; the fake runner prints ``id-<build>``), one model. Scenarios
    with another ``boot_timeout`` are in another pool (they may not share an instance)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(FAKE_SCENARIO.format(name=name, art=art, model=model, title=title,
                                         after_id=after_id,
                                         repetitions=repetitions, iterations=iterations,
                                         boot_timeout=boot_timeout), encoding="utf-8")
    return path


def copy_artifacts(art: Path, dest: Path, names: dict[str, str]) -> None:
    """The package's simulator artifacts (``art``) under other scenario names (``write_scenario``
    names files by scenario): both runners, and each new name's model and input copied from the old
    name's, each with its build record (``.NAME.build``: the harness made it, so a build may replace
    it; run.artifacts.check_replaceable)."""
    dest.mkdir(parents=True, exist_ok=True)

    def copy(source: Path, target: Path) -> None:
        target.write_bytes(source.read_bytes())
        record = source.with_name(f".{source.name}.build")
        if record.is_file():
            target.with_name(f".{target.name}.build").write_bytes(record.read_bytes())

    for runner in ("runner-before", "runner-after"):
        copy(art / runner, dest / runner)
        (dest / runner).chmod(0o755)
    for new, old in names.items():
        for suffix in (".model", ".input.bin"):
            copy(art / f"{old}{suffix}", dest / f"{new}{suffix}")
