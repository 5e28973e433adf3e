"""Every documented command is a test: the shell blocks of README.md and docs/*.md, run as a user
would, in a fresh folder (a copy of the repository's ``scenarios/`` and ``examples/``, a git
checkout of its own), in the order the page gives, on the shipped scenarios as shipped, against the
embedded simulator.

Which blocks: every fenced block tagged ``sh``, ``bash`` or ``console`` (``text`` blocks are
transcripts of output, ``yaml`` blocks are files). A block a test cannot run is marked, with the
reason, by an HTML comment on the line right before its fence::

    <!-- not run: needs a real FVP -->
    ```sh
    fvp-harness doctor scenarios/driver_reuse.yaml --fvp /opt/FVP_Corstone-1000-A320/...
    ```

``test_every_shell_block_is_run_or_marked_not_run`` (fast lane) fails when a block is neither marked
nor run by a test here (``RUN``), and when a marker has no reason; it also parses every
``fvp-harness`` line of every fenced or indented block with the CLI's own parser, so an option the
code dropped fails CI even in a block that cannot run. The slow tests run the blocks: each line of a
``sh`` block through ``bash -c`` (so globs and quotes work as typed), ``$ ``-prefixed lines of a
``console`` block, each expected to exit 0 (or what the page says it exits).

docs/ci.md's GitHub Actions workflow (a ``yaml`` block) runs end to end: its ``run:`` steps, chosen
by their ``if:`` for a push to ``main``, then a pull request, then the nightly schedule, in one git
checkout whose results folder carries over as the workflow's cache does; ``jq`` gates included (CI
installs jq: ``.ci/run``; a test that needs it fails under ``CI=true`` when it is missing and skips
elsewhere, naming ``apt-get install -y jq``).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.helpers import REPO, eventually, skip_or_fail_in_ci
from tests.proc_scan import processes_with_env

MARK = "FVP_HARNESS_DOC_MARK"
NOT_RUN = re.compile(r"^<!--\s*not run:\s*(?P<reason>.*?)\s*-->\s*$")
FENCE = re.compile(r"^```(?P<lang>[\w-]*)\s*$")
SHELL_LANGS = ("sh", "bash", "console")
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

RUN: dict[tuple[str, str], str] = {
    ("README.md", "fvp-harness validate scenarios/*.yaml"): "test_readme_everyday_use_block",
    ("docs/ci.md",
     "fvp-harness compare driver_reuse@main results/pr-42 --junit junit.xml --github-summary"):
        "test_ci_workflow_on_a_fixed_matrix",
    ("docs/ci.md", "fvp-harness history driver_reuse"): "test_ci_workflow_on_a_fixed_matrix",
    ("docs/pytest-plugin.md",
     "$ pytest examples/test_fvp_example.py --fvp-scenario scenarios/smoke.yaml --fvp sim -n 0"):
        "test_pytest_plugin_example_block",
    ("docs/etdump.md",
     "fvp-harness run scenarios/driver_reuse_traced.yaml -q --only-model resnet8 --set "
     "run.repetitions=2"): "test_etdump_compare_block",
    ("docs/etdump.md",
     "fvp-harness run scenarios/driver_reuse_traced.yaml -q --only-model resnet8 --set "
     "run.repetitions=2 -o results/main-traced"): "test_etdump_baseline_from_block",
    ("docs/kpi.md", "fvp-harness run scenarios/kpi_corstone300_u55.yaml -q"):
        "test_kpi_nightly_history_block",
    ("docs/bisect.md", "sh examples/bisect/make_repo.sh .artifacts/bisect_sim/repo"):
        "test_bisect_block",
}
"""The blocks the slow tests below run: (page, first command line without its comment) -> the
test."""


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    lang: str
    text: str
    not_run: str | None

    @property
    def commands(self) -> list[str]:
        """The block's commands: continuation lines joined; a ``console`` block's ``$ `` lines
        only."""
        joined: list[str] = []
        pending = ""
        for raw in self.text.splitlines():
            if self.lang == "console":
                if not raw.startswith("$ "):
                    continue
                raw = raw[2:]
            line = pending + raw.strip()
            if line.endswith("\\"):
                pending = line[:-1] + " "
                continue
            pending = ""
            if line and not line.startswith("#"):
                joined.append(line)
        return joined

    @property
    def first(self) -> str:
        first = self.commands[0] if self.commands else ""
        return ("$ " if self.lang == "console" else "") + first.split("  #", 1)[0].strip()


def doc_blocks(pages: list[Path] = PAGES) -> Iterator[Block]:
    for page in pages:
        lines = page.read_text(encoding="utf-8").splitlines()
        index = 0
        while index < len(lines):
            match = FENCE.match(lines[index])
            if match is None:
                index += 1
                continue
            end = index + 1
            while end < len(lines) and not lines[end].startswith("```"):
                end += 1
            previous = lines[index - 1] if index else ""
            marker = NOT_RUN.match(previous)
            yield Block(str(page.relative_to(REPO)), index + 1, match.group("lang"),
                        "\n".join(lines[index + 1:end]), marker.group("reason") if marker else None)
            index = end + 1


def shell_blocks() -> list[Block]:
    return [block for block in doc_blocks() if block.lang in SHELL_LANGS]


def block(page: str, first: str) -> Block:
    found = [b for b in shell_blocks() if b.page == page and b.first == first]
    assert len(found) == 1, (
        f"{page}: no single shell block starts with {first!r} (the page changed?)")
    assert found[0].not_run is None, f"{page}:{found[0].line} is marked not run, yet a test runs it"
    return found[0]


# --- fast lane: the inventory and the option check ------------------------------------------------


def test_every_shell_block_is_run_or_marked_not_run() -> None:
    problems = []
    for item in shell_blocks():
        where = f"{item.page}:{item.line}"
        if item.not_run is not None:
            if not item.not_run.strip():
                problems.append(f"{where}: '<!-- not run: -->' without a reason")
            continue
        if (item.page, item.first) not in RUN:
            problems.append(f"{where}: shell block {item.first!r} is neither run by a test here "
                            "nor marked '<!-- not run: REASON -->' on the line before its fence")
    assert not problems, "\n".join(problems)


def _documented_harness_lines() -> Iterator[tuple[str, str]]:
    """Every ``fvp-harness ...`` command of every page: in fenced shell blocks, ``$ `` lines of
    transcripts, and indented (4-space) code lines."""
    for item in doc_blocks():
        if item.lang in SHELL_LANGS or item.lang == "text":
            commands = (
                item.commands
                if item.lang != "text"
                else Block(item.page, item.line, "console", item.text, None).commands
            )
            for command in commands:
                if command.startswith("fvp-harness "):
                    yield f"{item.page}:{item.line}", command
    for page in PAGES:
        pending = ""
        in_fence = False
        for number, raw in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if raw.startswith("```"):
                in_fence = not in_fence
                continue
            if in_fence or not (raw.startswith("    ") or pending):
                continue
            line = pending + raw.strip()
            if line.endswith("\\"):
                pending = line[:-1] + " "
                continue
            pending = ""
            if line.startswith("fvp-harness "):
                yield f"{page.relative_to(REPO)}:{number}", line


def test_every_documented_fvp_harness_command_parses() -> None:
    """The CLI's parser accepts each documented command line (synopses with ``[optional]`` parts and
    ``...`` are left out): a dropped or renamed option fails here, also in blocks no test can
    run."""
    from fvp_harness.cli.main import build_parser

    parser = build_parser()
    problems = []
    for where, line in _documented_harness_lines():
        command = line.split(" #", 1)[0].strip()
        if "[" in command or "..." in command or "|" in command:
            continue
        try:
            argv = shlex.split(command)[1:]
        except ValueError as exc:
            problems.append(f"{where}: {command!r}: {exc}")
            continue
        argv = [word.replace("$PR", "results/pr-42") for word in argv]
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:
            if exc.code:
                problems.append(f"{where}: {command!r} is refused by the CLI's parser")
            continue
        assert args is not None
    assert not problems, "\n".join(problems)


# --- running blocks -------------------------------------------------------------------------------


def _env(workdir: Path, token: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The user's shell: the project's fvp-harness first on PATH, a unique mark every process
    inherits."""
    bin_dir = str(Path(sys.executable).parent)
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("PYTEST_", "GITHUB_")) and key != "FVP_HARNESS_OWNER_PID"}
    env.update({"PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", MARK: token,
                "HOME": str(workdir)})
    env.update(extra or {})
    return env


def sh(workdir: Path, command: str, *, env: Mapping[str, str] | None = None, timeout: float = 900
       ) -> subprocess.CompletedProcess[str]:
    """One documented command line through ``bash -c`` in ``workdir``; fails the test if a process
    it started outlives it."""
    token = uuid.uuid4().hex
    proc = subprocess.Popen(["bash", "-c", command], cwd=workdir, env=_env(workdir, token, env),
                            text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        eventually(lambda: not processes_with_env(MARK, token), timeout=10, interval=0.2)
        left = processes_with_env(MARK, token)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        assert not left, f"`{command}` left processes running: {left}"
    return subprocess.CompletedProcess(command, proc.returncode, out, err)


def ok(workdir: Path, command: str, *, env: Mapping[str, str] | None = None,
       expect: int = 0) -> subprocess.CompletedProcess[str]:
    done = sh(workdir, command, env=env)
    assert done.returncode == expect, (f"`{command}` exited {done.returncode}, the page says "
                                       f"{expect}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


def _git(workdir: Path, *args: str) -> None:
    env = {"GIT_AUTHOR_NAME": "ci", "GIT_AUTHOR_EMAIL": "ci@example.com",
           "GIT_COMMITTER_NAME": "ci",
           "GIT_COMMITTER_EMAIL": "ci@example.com", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "-C", str(workdir), *args], check=True, capture_output=True, timeout=60,
                   env=os.environ | env)


def clone(root: Path) -> Path:
    """What a user's clone holds for these commands: the scenarios and examples, in a git checkout
    on ``main``."""
    shutil.copytree(REPO / "scenarios", root / "scenarios")
    shutil.copytree(REPO / "examples", root / "examples")
    (root / ".gitignore").write_text("/results/*\n/.artifacts/\n__pycache__/\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "main")
    return root


def need_jq() -> str:
    """jq's path; under CI=true a missing jq fails (CI installs it), elsewhere the test skips saying
    how."""
    found = shutil.which("jq")
    if found is None:
        skip_or_fail_in_ci("needs jq: apt-get install -y jq",
                           "jq is missing on CI: .ci/run installs it (apt-get install -y jq)")
    return found


# --- docs/ci.md: the workflow end to end ----------------------------------------------------------


def _workflow() -> dict:
    blocks = [b for b in doc_blocks([REPO / "docs" / "ci.md"]) if b.lang == "yaml" and
              "jobs:" in b.text]
    assert len(blocks) == 1, "docs/ci.md holds one GitHub Actions workflow"
    return yaml.safe_load(blocks[0].text)


def _steps_for(workflow: dict, event: str) -> list[tuple[str, str]]:
    """(name, run) of the job's ``run:`` steps whose ``if:`` holds for ``event`` (``always()``
    holds)."""
    chosen = []
    for step in workflow["jobs"]["measure"]["steps"]:
        if "run" not in step:
            # uses: checkout, setup-python, cache, upload: the test's folder and environment stand
            # in
            continue
        condition = step.get("if", "")
        named = re.findall(r"github\.event_name == '(\w+)'", condition)
        if named and event not in named:
            continue
        chosen.append((step.get("name", step["run"]), step["run"]))
    return chosen


def _run_step(workdir: Path, name: str, script: str, env: Mapping[str, str]) -> str:
    """One ``run:`` step through bash; its stdout and stderr (a step that prints a traceback
    fails)."""
    if script.strip() == "python -m pip install -q -e .":
        return ""  # the project is installed already: the test runs in that environment
    done = ok(workdir, "set -eo pipefail\n" + script, env=env)
    assert name and "Traceback" not in done.stderr, done.stderr
    return done.stdout + done.stderr


def _junit_errors(path: Path) -> list[int]:
    return [int(n)
            for n in re.findall(r'<testsuite [^>]*errors="(\d+)"',
                                path.read_text(encoding="utf-8"))]


def _json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _check_main_runs(workdir: Path, pushed: str, adaptive: bool) -> str:
    """Main's two stored runs of one commit: what ``run.until`` spared is recorded as spared, never
    as a record or "not run"; ``runs`` lists both; an A/A compare of the two says PASS even with
    ``--strict``. Returns the newest run's id (the pull request's baseline)."""
    folder = workdir / "results" / "driver_reuse"
    manifest = _json(folder / "manifest.json")
    records = [json.loads(line)
               for line in (folder / "records.jsonl").read_text(encoding="utf-8").splitlines()]
    spared = manifest["plan"]["spared"]
    assert bool(spared) == adaptive, spared
    assert ("spared by the stopping rule (run.until)" in pushed) == adaptive, pushed
    assert not {r["unit_id"] for r in records} & set(spared), "a spared unit never has a record"
    assert len(records) + len(spared) == manifest["plan"]["units"]
    assert _junit_errors(workdir / "junit.xml") == [0]
    header, *runs = ok(workdir, "fvp-harness runs results/driver_reuse").stdout.splitlines()
    assert header.split()[:3] == ["run", "started", "status"], header
    assert (len(runs) == 2 and
            all(re.search(rf"\s{len(records)}\s+results/", line) for line in runs)), runs
    assert all(("spared by run.until" in line) == adaptive for line in runs), runs
    same = ok(workdir,
              "fvp-harness compare driver_reuse@latest#-1 driver_reuse@latest --strict -o aa "
              "--junit aa.xml")
    assert "NOT RUN" not in same.stdout and "did not run" not in same.stdout + same.stderr
    verdict = _json(workdir / "aa" / "report.json")["verdict"]
    assert verdict["status"] == "PASS" and verdict["not_run"] == [], verdict
    assert _junit_errors(workdir / "aa.xml") == [0]
    return manifest["run"]["id"]


def _check_pull_request(workdir: Path, output: str, main_id: str, adaptive: bool) -> None:
    """The candidate measured against main's stored baseline (its drift check included), then
    compared with main's candidate: nothing "not run", no JUnit error, the gates hold."""
    pr = workdir / "results" / "pr-42"
    assert f"baseline before: from stored run {main_id}" in output, output
    verdict = _json(pr / "report.json")["verdict"]
    assert verdict["status"] in ("PASS", "NOT VERIFIED") and verdict["not_run"] == [], verdict
    assert verdict["violated_gates"] == []
    records = [json.loads(line)
               for line in (pr / "records.jsonl").read_text(encoding="utf-8").splitlines()]
    drift = [r["unit_id"] for r in records if r["build"] == "before"]
    assert 1 <= len(drift) <= 2, "the drift-check units (drift_check.units: 2 by default) still run"
    if adaptive:
        assert "## Repetitions needed (run.until)" in (pr / "report.md").read_text(encoding="utf-8")
        assert _json(pr / "manifest.json")["plan"]["spared"], (
            "the candidate side sampled adaptively")
        assert "at most" in output and "round 1/≤" in output, output
    assert "NOT RUN" not in output
    assert _json(pr / "vs-main" / "report.json")["verdict"]["not_run"] == []
    assert (_junit_errors(workdir / "junit.xml") == [0] and
            _junit_errors(workdir / "junit-compare.xml") == [0])


def _ci_workflow(workdir: Path, *, fixed: bool) -> None:
    """The workflow's push, pull request and nightly steps in one checkout, with the page's other
    blocks between them; main is measured twice (a second plain run, as the compare block needs)
    before the pull request."""
    need_jq()
    clone(workdir)
    if fixed:  # the same scenario with a fixed matrix (what ci.md's notes offer for run.until)
        path = workdir / "scenarios" / "driver_reuse.yaml"
        text = path.read_text(encoding="utf-8")
        adaptive = re.search(r"^  until: .*$", text, re.MULTILINE)
        assert adaptive is not None, "driver_reuse.yaml samples adaptively as shipped"
        path.write_text(text.replace(adaptive.group(0), "  repetitions: 3"), encoding="utf-8")
        _git(workdir, "commit", "-q", "-am", "a fixed matrix")
    workflow = _workflow()
    summary = workdir / "step-summary.md"
    env = {"PR": "results/pr-42", "GITHUB_STEP_SUMMARY": str(summary), "CI": "true"}
    # a push to main: both builds measured and stored (the cache keeps results/ for the pull
    # request)
    pushed = "".join(_run_step(workdir, name, script, env)
                     for name, script in _steps_for(workflow, "push"))
    assert (workdir / "results" / "driver_reuse" / "report.json").is_file()
    assert (workdir / "junit.xml").is_file() and "# " in summary.read_text(encoding="utf-8")
    # a second stored run of main's folder
    main_run = ok(workdir, "fvp-harness run scenarios/driver_reuse.yaml -q")
    assert main_run.returncode == 0
    main_id = _check_main_runs(workdir, pushed, adaptive=not fixed)
    # a pull request: another commit on another branch, measured against main's stored run
    _git(workdir, "checkout", "-q", "-b", "pr-42")
    (workdir / "CHANGE").write_text("the candidate\n")
    _git(workdir, "add", "CHANGE")
    _git(workdir, "commit", "-q", "-m", "candidate")
    output = "".join(_run_step(workdir, name, script, env)
                     for name, script in _steps_for(workflow, "pull_request"))
    assert (workdir / "results" / "pr-42" / "vs-main" / "report.json").is_file()
    _check_pull_request(workdir, output, main_id, adaptive=not fixed)
    assert summary.read_text(encoding="utf-8").count("# ") >= 3, (
        "run, PR run and compare each appended a report")
    # the page's other blocks, in its order: comparing two stored runs, then the history
    for command in block("docs/ci.md", RUN_CI_COMPARE).commands:
        ok(workdir, command, env=env)
    page = (workdir / "compare-page" / "index.html").read_text(encoding="utf-8")
    assert "<table>" in page and "data:image/png;base64," in page, (
        "compare --html: one page, charts inlined")
    # the nightly job
    for name, script in _steps_for(workflow, "schedule"):
        _run_step(workdir, name, script, env)
    for command in block("docs/ci.md", "fvp-harness history driver_reuse").commands:
        ok(workdir, command, env=env)
    assert (workdir / "results" / "driver_reuse" / "history" / "history.md").is_file()
    site = workdir / "history-site"  # history --html: overview, regressions page, charts
    pages = ("index.html", "regressions.html", "driver_reuse/index.html")
    assert all((site / page).is_file() for page in pages)
    # `make report`: rebuilt from the stored records
    for folder in ("results/driver_reuse", "results/pr-42"):
        ok(workdir, f"fvp-harness report -q {folder}")


RUN_CI_COMPARE = ("fvp-harness compare driver_reuse@main results/pr-42 --junit junit.xml "
                  "--github-summary")


@pytest.mark.slow
@pytest.mark.sim
@pytest.mark.timeout(1800)  # three stored runs, a pull request run, two compares and the history
def test_ci_workflow_on_a_fixed_matrix(tmp_path: Path) -> None:
    """docs/ci.md verbatim on driver_reuse.yaml with a fixed matrix: push, pull request, compare,
    jq, history."""
    _ci_workflow(tmp_path, fixed=True)


@pytest.mark.slow
@pytest.mark.sim
@pytest.mark.timeout(1800)
def test_ci_workflow_on_the_shipped_adaptive_scenario(tmp_path: Path) -> None:
    """docs/ci.md verbatim on driver_reuse.yaml as shipped (run.until): the stopping rule's spared
    units are no "not run" anywhere a stored run is read (manifest, records, ``runs``, an A/A
    ``compare --strict``, the pull request's run and compare, JUnit).
    tests/e2e/test_ci_workflow_e2e.py runs the fixed-matrix smoke.yaml."""
    _ci_workflow(tmp_path, fixed=False)


# --- README.md ------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.sim
@pytest.mark.timeout(2400)  # make -j 2 scenarios/ brings every shipped scenario up to date
def test_readme_everyday_use_block(tmp_path: Path) -> None:
    """README.md's everyday commands, in the page's order, in one clone: each run builds on the one
    before (the resume continues the run, report and runs read it, make brings every shipped
    scenario up to date)."""
    workdir = clone(tmp_path)
    for command in block("README.md", "fvp-harness validate scenarios/*.yaml").commands:
        ok(workdir, command)
    assert (workdir / "results" / "driver_reuse" / "runs").is_dir(), "the second run kept the first"


# --- docs/kpi.md ----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.sim
@pytest.mark.timeout(900)  # three runs of the KPI scenario and three histories
def test_kpi_nightly_history_block(tmp_path: Path) -> None:
    """docs/kpi.md's three nights and their histories: each history covers the three runs, tracks
    the metric it was asked for in its unit (cycles, bytes), finds no step (nothing changed), and
    the site is written."""
    workdir = clone(tmp_path)
    first = "fvp-harness run scenarios/kpi_corstone300_u55.yaml -q"
    commands = block("docs/kpi.md", first).commands
    outputs = [ok(workdir, command).stdout for command in commands]
    folder = workdir / "results" / "kpi_corstone300_u55"
    assert len(list((folder / "runs").iterdir())) == 2, "nights 1 and 2 kept"
    metrics = ("bm_cpu_cycles", "method_allocator_used", "pte_program_size")
    units = ("CPU cycles", "bytes", "bytes")
    for out, metric, unit in zip(outputs[3:], metrics, units, strict=True):
        assert f"3 run(s); {metric} of main" in out and unit in out and "no regression" in out, out
    history = _json(folder / "history" / "history.json")
    assert history["metric"] == "pte_program_size" and not history["steps"]
    assert (workdir / "kpi-site" / "index.html").is_file()


# --- docs/bisect.md ---------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.sim
@pytest.mark.timeout(900)
def test_bisect_block(tmp_path: Path) -> None:
    """docs/bisect.md from a fresh clone: the repository is made, the bisect finds the planted
    commit (11 of 16) with at most 5 builds in the middle, prints the table and writes the compare
    report."""
    workdir = clone(tmp_path)
    first = "sh examples/bisect/make_repo.sh .artifacts/bisect_sim/repo"
    commands = block("docs/bisect.md", first).commands
    outputs = [ok(workdir, command).stdout for command in commands]
    repo = workdir / ".artifacts" / "bisect_sim" / "repo"
    planted = subprocess.run(["git", "-C", str(repo), "rev-parse", "main~4"], capture_output=True,
                             text=True, check=True, timeout=30).stdout.strip()
    assert f"first bad commit: {planted}" in outputs[-1], outputs[-1]
    assert "bad end" in outputs[-1] and "skipped" in outputs[-1]  # the table as it went
    data = _json(workdir / "results" / "bisect_sim" / "bisect" / "bisect.json")
    assert data["builds"] - 2 <= 5
    assert (workdir / "results" / "bisect_sim" / "bisect" / "compare" / "report.md").is_file()


# --- docs/pytest-plugin.md ------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.sim
@pytest.mark.timeout(900)
def test_pytest_plugin_example_block(tmp_path: Path) -> None:
    """The page's command as typed, with this repository's pytest settings (``pyproject.toml``:
    its ``addopts`` add ``-n 2``): three tests on the one booted instance the page shows, not one
    boot per xdist worker."""
    workdir = clone(tmp_path)
    shutil.copy(REPO / "pyproject.toml", workdir / "pyproject.toml")
    item = block("docs/pytest-plugin.md", "$ pytest examples/test_fvp_example.py --fvp-scenario "
                 "scenarios/smoke.yaml --fvp sim -n 0")
    shown = item.text.splitlines()
    for command in item.commands:
        assert command.startswith("pytest ")
        python = shlex.quote(sys.executable)
        done = ok(workdir, f"{python} -m {command} -p no:cacheprovider")
        assert "3 passed" in done.stdout, done.stdout
        for line in ("1 FVP instance booted",  # the lines that matter, as the page shows them
                     "A/B run in examples/test_fvp_example.py::test_driver_reuse_saves_cpu_time: "
                     "PASS (results: results/pytest/ab/smoke)"):
            assert line in shown and line in done.stdout, done.stdout
        # no xdist workers in the inner run (the outer run's own worker may name its tmp_path)
        xdist = re.search(r"bringing up nodes|created: \d+/\d+ workers", done.stdout)
        assert xdist is None, done.stdout


# --- docs/etdump.md -------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.sim
@pytest.mark.timeout(900)  # two small traced runs and their compare
def test_etdump_compare_block(tmp_path: Path) -> None:
    """docs/etdump.md's two traced runs and their ``compare --html``: the compare report has the run
    report's event section (run B's builds against run A's, per inference and for the load),
    ``report.events.csv`` holds its rows, an A/A comparison's events change by nothing beyond their
    CIs, and the page holds the tables."""
    workdir = clone(tmp_path)
    commands = block("docs/etdump.md",
                     "fvp-harness run scenarios/driver_reuse_traced.yaml -q --only-model resnet8 "
                     "--set run.repetitions=2").commands
    for command in commands:
        done = ok(workdir, command)
    out = done.stdout
    report = next(line for line in out.splitlines() if line.startswith("report: ")).split(": ", 1)[
        1
    ]
    folder = workdir / Path(report).parent
    markdown = (folder / "report.md").read_text(encoding="utf-8")
    section = markdown[markdown.index("## Where the time went (ETDump events)"):]
    for build in ("before", "after"):
        assert f"### resnet8: {build}@B vs {build}@A" in section, section[:600]
    assert section.count("Method load (`Default` block") == 2
    events = _json(folder / "report.json")["etdump_events"]
    assert {(t["baseline"], t["run_block"]) for t in events["totals"]} == {
        ("before@A", "Execute"), ("before@A", "Default"), ("after@A", "Execute"),
        ("after@A", "Default")}
    assert events["warnings"] == [] and "note" not in events
    execute = [r for r in events["rows"] if r["run_block"] == "Execute" and r["present"] == "both"]
    assert ({r["event"] for r in execute}
            >= {"+EthosUBackend::execute()NPU", "DELEGATE_CALL", "Method::execute"})
    for row in execute:  # one commit twice: nothing moved beyond its CI
        assert row["change_ci_low"] <= 0 <= row["change_ci_high"], row
    csv_rows = (folder / "report.events.csv").read_text(encoding="utf-8").splitlines()
    assert len(csv_rows) == 1 + len(events["rows"])
    page = (workdir / "compare-page" / "index.html").read_text(encoding="utf-8")
    assert ("<h2>Where the time went (ETDump events)</h2>" in page and
            "+EthosUBackend::execute()NPU" in page)
    assert "data:image/png;base64," in page and "page: compare-page/index.html" in out


@pytest.mark.slow
@pytest.mark.sim
@pytest.mark.timeout(900)  # two small traced runs
def test_etdump_baseline_from_block(tmp_path: Path) -> None:
    """docs/etdump.md's ``--baseline-from`` block: the second run's event section compares its
    ``after`` with the stored run's ``before`` traces (their counts and medians, not the drift
    check's re-run unit)."""
    workdir = clone(tmp_path)
    commands = block("docs/etdump.md",
                     "fvp-harness run scenarios/driver_reuse_traced.yaml -q --only-model resnet8 "
                     "--set run.repetitions=2 -o results/main-traced").commands
    assert len(commands) == 2
    for command in commands:
        ok(workdir, command)
    stored = _json(workdir / "results/main-traced/report.json")["etdump_events"]["rows"]
    events = _json(workdir / "results/pr-traced/report.json")["etdump_events"]
    assert "note" not in events and events["warnings"] == []
    theirs = {(r["run_block"], r["event"], r["occurrence"]): r for r in stored}
    rows = [r for r in events["rows"] if r["present"] == "both"]
    assert rows and {(r["baseline"], r["candidate"]) for r in rows} == {("before", "after")}
    for row in rows:
        twin = theirs[(row["run_block"], row["event"], row["occurrence"])]
        assert (row["n_baseline"], row["baseline_median"]) == (
            twin["n_baseline"],
            twin["baseline_median"],
        ), row
    markdown = (workdir / "results/pr-traced/report.md").read_text(encoding="utf-8")
    assert (
        "### resnet8: after vs before"
        in markdown[markdown.index("## Where the time went (ETDump events)") :]
    )
