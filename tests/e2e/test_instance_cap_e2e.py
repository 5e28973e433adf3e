"""``-j`` and ``--max-instances`` are hard caps on live model instances (issue 38, finding 6),
counted from the simulator processes themselves while the real command line runs.

- ``make -j 1`` over two pools, each with a big and a small job: the lane that starts its small job
  used to boot the other pool's small job ahead (2 live instances at -j 1); a pre-boot now needs a
  free seat.
- two ``run``s at once with ``--max-instances 1`` (one seats folder): their instances never overlap.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.e2e.cli import assert_no_models_left, run_cli
from tests.helpers import REPO

pytestmark = [pytest.mark.slow, pytest.mark.sim]


def _ppid(pid: int) -> int | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(text.rsplit(")", 1)[1].split()[1])


def _cmdline(pid: int) -> str:
    try:
        return (
            Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        )
    except OSError:
        return ""


class LiveCounter:
    """Samples, every 20 ms, the simulator instances (``python -m fvp_harness.sim`` under the
    harness's supervisor) of the harness processes ``owners``; ``peak`` is the most seen at once."""

    def __init__(self) -> None:
        self.owners: set[int] = set()
        self.peak = 0
        self.samples = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> LiveCounter:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join(10)

    def count(self) -> int:
        live = 0
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            args = _cmdline(int(entry))
            if "-m fvp_harness.sim " not in args or "--version" in args or "--list-params" in args:
                continue  # not a simulator, or a probe of it (doctor's, the version query)
            supervisor = _ppid(int(entry))  # a booted instance runs under the harness's supervisor
            if supervisor is None or "supervisor.py" not in _cmdline(supervisor):
                continue
            if _ppid(supervisor) in self.owners:
                live += 1
        return live

    def _poll(self) -> None:
        while not self._done.wait(0.02):
            live = self.count()
            self.samples += live > 0
            self.peak = max(self.peak, live)


def _scenario(root: Path, stem: str, repetitions: int, knob: str = "") -> None:
    text = (REPO / "scenarios" / "smoke.yaml").read_text(encoding="utf-8")
    text = text.replace("  repetitions: 2\n", f"  repetitions: {repetitions}\n")
    if knob:
        text = text.replace("  binary: sim\n", f"  binary: sim\n  sim: {{{knob}}}\n")
    (root / "scenarios" / f"{stem}.yaml").write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cap")
    (root / "scenarios").mkdir()
    _scenario(root, "ya", 2)
    _scenario(root, "yb", 1)
    _scenario(root, "xa", 2, "runner_jitter: 0.02")
    _scenario(root, "xb", 1, "runner_jitter: 0.02")
    return root


def _popen(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "fvp_harness", *args],
        cwd=cwd,
        text=True,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_make_j1_over_two_pools_never_has_two_live_instances(workdir: Path) -> None:
    with LiveCounter() as counter:
        proc = _popen(
            workdir,
            "make",
            "-j",
            "1",
            "--results",
            "made",
            "--set",
            "run.iterations=10",
            "--set",
            "fvp.sim.speed=0.3",
        )
        counter.owners.add(proc.pid)
        out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, out + err
    assert counter.samples > 0, "no instance was seen: the counter cannot fail"
    assert counter.peak == 1, f"{counter.peak} instances live at once under -j 1"
    assert_no_models_left(proc.pid)


def test_two_runs_with_max_instances_1_never_overlap(workdir: Path, tmp_path: Path) -> None:
    first = run_cli(
        workdir, "run", "scenarios/ya.yaml", "-o", "out/warm", "-q"
    )  # builds the artifacts once
    assert first.returncode == 0, first.stdout + first.stderr
    env = {**os.environ, "FVP_HARNESS_SEATS_DIR": str(tmp_path / "seats")}
    with LiveCounter() as counter:
        procs = []
        for name in ("one", "two"):
            proc = _popen(
                workdir,
                "run",
                "scenarios/ya.yaml",
                "-o",
                f"out/{name}",
                "--max-instances",
                "1",
                "--set",
                "fvp.sim.speed=0.3",
                env=env,
            )
            counter.owners.add(proc.pid)
            procs.append(proc)
            time.sleep(0.2)
        outputs = [proc.communicate(timeout=600) for proc in procs]
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, out + err
    assert counter.samples > 0, "no instance was seen: the counter cannot fail"
    assert counter.peak == 1, f"{counter.peak} instances of the two runs were live at once"
    assert sorted(p.name for p in (tmp_path / "seats").iterdir()) == ["seat-0.lock"]
