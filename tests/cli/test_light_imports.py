"""The commands users run to learn that nothing is to do load no pandas, scipy or matplotlib (issue
27).

Why a test: the analysis stack costs a second or more of imports on the 2-core machine, ten times
what these commands need; one top-level import in the wrong module (``run.adaptive`` ->
``report.analysis`` did it once) brings it back for ``make`` with nothing to do, and nobody notices
until the next measurement.

One child process runs every command in turn through ``fvp_harness.cli.main.main`` (the real CLI,
one interpreter: a heavy module loaded by any command stays loaded, so the first command that loads
one is the one named) with an import hook that remembers which harness frames first asked for each
heavy module. Last, as the control, the child imports ``report.analysis``: the hook must see it load
pandas, or it sees nothing and the test proves nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from fvp_harness.batch.engine import MakeOptions, make
from fvp_harness.run.lanes import LocalExecutor
from tests.batch.scenarios import fake_artifacts, write_fake_scenario
from tests.fakes import FakeFleet

HEAVY = ("pandas", "scipy", "matplotlib")

CHILD = textwrap.dedent("""
    import json, sys
    HEAVY = set(json.loads(sys.argv[2]))
    first = {}

    class Spy:
        '''Remembers the harness frames that first imported each heavy package; finds nothing
        itself.'''
        def find_spec(self, name, path=None, target=None):
            top = name.partition(".")[0]
            if top in HEAVY and top not in first:
                frames, frame = [], sys._getframe(1)
                while frame is not None and len(frames) < 4:
                    file = frame.f_code.co_filename.replace("\\\\", "/")
                    if "/fvp_harness/" in file:
                        frames.append(f"fvp_harness/{file.rsplit('/fvp_harness/', 1)[1]}"
                                      f":{frame.f_lineno}")
                    frame = frame.f_back
                first[top] = " <- ".join(frames) or "(no harness frame)"
            return None

    sys.meta_path.insert(0, Spy())
    from fvp_harness.cli.main import main
    results = []
    for argv in json.loads(sys.argv[3]):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
        loaded = {top: first.get(top, "?") for top in sorted(HEAVY) if top in sys.modules}
        results.append({"argv": argv, "code": code, "loaded": loaded})
    import importlib
    importlib.import_module(sys.argv[4])  # the control: this one must be seen loading pandas
    results.append({"argv": [sys.argv[4]], "code": 0,
                    "loaded": {top: first.get(top, "?") for top in HEAVY}})
    with open(sys.argv[1], "w", encoding="utf-8") as out:
        json.dump(results, out)
""")


def _adaptive_fake_scenario(folder: Path, art: Path) -> Path:
    """A ``target: host`` scenario for ``FakeFleet`` with ``run.until``: its no-op ``make`` must
    replay the stopping rule (units the rule spared have no record), which is the check that once
    needed the analysis."""
    path = write_fake_scenario(folder, "light", art, repetitions=4)
    text = path.read_text(encoding="utf-8").replace(
        "  repetitions: 4\n", "  until: {ci_width: 50, min_repetitions: 2, max_repetitions: 4}\n")
    path.write_text(text, encoding="utf-8")
    return path


def test_no_op_commands_load_no_analysis_stack(tmp_path: Path) -> None:
    art = fake_artifacts(tmp_path / "art", "m")
    scenario = _adaptive_fake_scenario(tmp_path / "sc", art)
    results = tmp_path / "results"
    first = make([scenario], MakeOptions(jobs=1, results_base=results),
                 executor=LocalExecutor(1, opener=FakeFleet().opener))
    assert first.exit_code == 0 and first.units_run == 4, (
        "the rule stops at 2 of 4 repetitions: 2 x 2 units")
    folder = str(results / "light")
    make_args = [str(scenario), "--results", str(results)]
    commands = [
        ["--version"], ["--help"], ["make", *make_args], ["make", "-n", *make_args],
        ["validate", str(scenario)],
        ["plan", str(scenario)], ["runs", folder], ["prune", folder, "--keep", "5", "-n"],
        ["profiles"], ["schema"],
    ]
    out = tmp_path / "imports.json"
    done = subprocess.run([sys.executable, "-c", CHILD, str(out), json.dumps(HEAVY),
                           json.dumps(commands), "fvp_harness.report.stats.analysis"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "nothing to do" in done.stdout, "the make checked here must be a no-op"
    rows = json.loads(out.read_text(encoding="utf-8"))
    for row in rows[:-1]:
        assert row["code"] == 0, (
            f"fvp-harness {' '.join(row['argv'])} exited {row['code']}: {done.stderr[-2000:]}")
        assert not row["loaded"], (
            f"fvp-harness {' '.join(row['argv'])} loaded " + "; ".join(
                f"{module} (first imported by {who})" for module, who in row["loaded"].items()))
    assert rows[-1]["loaded"]["pandas"].startswith("fvp_harness/report/"), \
        f"control: importing the analysis must be seen loading pandas: {rows[-1]['loaded']}"
