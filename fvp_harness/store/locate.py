"""Which stored run a user means: ``results/x``, ``results/x/runs/<id>``, ``x@main``, ``scenarios/x.yaml@3f2a1bc``.

``compare RUN_A RUN_B``, ``compare.baseline_from`` and ``--baseline-from`` name runs the same way (``find_run``):

- ``PATH``: a run folder (``runs/<id>/``, or any folder with a ``manifest.json``) is that run; a scenario's results
  folder means its newest run; a scenario file (``.yaml``/``.yml``) means the newest run of its results folder;
- ``WHERE@REF``: the run of a scenario's results folder (``WHERE`` is that folder, a scenario file, or a scenario
  file stem under the results base) stored for ``REF``; ``@REF`` alone is the scenario's own folder (only where a
  scenario is known: ``compare.baseline_from``);
- ``REF`` is, in this order: a run id; ``latest``; a git commit (4 to 40 hex digits, a prefix of the commit a run
  recorded); a branch a run recorded; a ref of the git checkout around the folder or the current directory
  (``main``, ``origin/main``, a tag), read to its commit. When several runs match, the newest complete one wins
  (the newest of any status when none is complete). ``REF~N`` steps N runs back from there (``latest~1``: the run
  before the newest).

Why no ``git`` process: only the targets layer and the user's build commands start processes; the refs a CI job
needs are plain files (``.git/refs/...``, ``packed-refs``), read as ``run.manifest.git_head`` reads ``HEAD``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from fvp_harness.errors import ConfigurationError
from fvp_harness.store.folder import (
    DEFAULT_RESULTS_BASE,
    MANIFEST_FILE,
    RECORDS_FILE,
    RUNS_DIR,
    ResultStore,
    StoredRun,
)

__all__ = ["RunSpec", "describe_run", "find_run", "parse_run_spec", "pinned_spec", "read_git_ref"]

_HEX = re.compile(r"[0-9a-fA-F]{4,40}")
_BACK = re.compile(r"^(?P<ref>.*?)~(?P<steps>\d+)$")
_SCENARIO_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class RunSpec:
    """A parsed run name: ``where`` (a path or stem; empty for ``@REF``), ``ref`` (None: the folder's own run or its
    newest), ``back`` (``~N``)."""

    text: str
    where: str
    ref: str | None
    back: int = 0


def parse_run_spec(text: str) -> RunSpec:
    """Split ``WHERE@REF~N``; a ConfigurationError says what is wrong with the text. The ``@`` that separates is
    the last one (folders may contain ``@``, refs do not)."""
    text = text.strip()
    if not text:
        raise ConfigurationError("an empty run name: give a results folder, a run folder or SCENARIO@REF")
    where, sep, ref = text.rpartition("@")
    if not sep:
        where, ref = text, ""
    back = 0
    match = _BACK.match(ref) if sep else None
    if match:
        ref, back = match.group("ref"), int(match.group("steps"))
    if sep and not ref:
        raise ConfigurationError(f"run {text!r}: nothing after '@'; give a run id, latest, a commit or a branch")
    return RunSpec(text, where, ref if sep else None, back)


def pinned_spec(run: StoredRun, folder: Path) -> str:
    """The run name that finds exactly this run again, even after it moved into ``runs/<id>/``:
    ``<absolute scenario folder>@<run id>``."""
    return f"{folder.resolve()}@{run.run_id}"


def describe_run(run: StoredRun) -> str:
    """``run 20260101-120000-ab12 (commit 3f2a1bc, branch main, 2026-01-01)`` for messages and reports."""
    bits = [f"commit {run.commit[:7]}" if run.commit else "no commit recorded"]
    if run.branch:
        bits.append(f"branch {run.branch}")
    if run.started:
        bits.append(run.started[:10])
    if run.status and run.status != "complete":
        bits.append(run.status)
    return f"run {run.run_id} ({', '.join(bits)})"


def _is_run_folder(path: Path) -> bool:
    return (path / MANIFEST_FILE).is_file() or (path / RECORDS_FILE).is_file()


def _scenario_folder(where: str, results_base: Path, scenario_folder: Path | None, text: str) -> Path:
    """The scenario results folder ``where`` names (see the module docstring)."""
    if not where:
        if scenario_folder is None:
            raise ConfigurationError(f"run {text!r}: '@REF' alone needs a scenario; write SCENARIO@REF (a results "
                                     "folder, a scenario file or its stem)")
        return scenario_folder
    path = Path(where)
    if path.suffix in _SCENARIO_SUFFIXES and path.is_file():
        return results_base / path.stem
    if path.is_dir():
        return path
    by_stem = results_base / where
    if "/" not in where and by_stem.is_dir():
        return by_stem
    raise ConfigurationError(f"run {text!r}: {where} is no results folder, scenario file or scenario name under "
                             f"{results_base}/")


def find_run(text: str, *, results_base: Path | str = DEFAULT_RESULTS_BASE, scenario_folder: Path | None = None,
             cwd: Path | None = None) -> StoredRun:
    """The stored run ``text`` names (module docstring), or a ConfigurationError that says what exists instead.

    ``scenario_folder`` is the results folder ``@REF`` alone refers to; ``cwd`` where to look for a git checkout
    besides the folder itself (default: the current directory)."""
    spec = parse_run_spec(text)
    base = Path(results_base)
    if spec.ref is None and spec.where:
        path = Path(spec.where)
        if path.is_dir() and _is_run_folder(path) and path.parent.name == RUNS_DIR:
            return _back(StoredRun.of(path, current=False), path.parent.parent, spec)
        folder = _scenario_folder(spec.where, base, scenario_folder, text)
        runs = _runs(folder, text)
        return _back(runs[-1], folder, spec)
    folder = _scenario_folder(spec.where, base, scenario_folder, text)
    runs = _runs(folder, text)
    ref = spec.ref or "latest"
    chosen = _match(runs, ref)
    if chosen is None:
        commit = read_git_ref(ref, [folder, cwd or Path.cwd()])
        if commit is not None:
            chosen = _newest([run for run in runs if run.commit == commit])
        if chosen is None:
            raise ConfigurationError(_no_match(text, folder, ref, runs, commit))
    return _back(chosen, folder, spec)


def _runs(folder: Path, text: str) -> list[StoredRun]:
    if not folder.is_dir():
        raise ConfigurationError(f"run {text!r}: {folder} does not exist (run the scenario first)")
    runs = ResultStore(folder, create=False).stored_runs()
    if not runs:
        raise ConfigurationError(f"run {text!r}: {folder} holds no stored run (no manifest.json, no runs/<id>/)")
    return runs


def _newest(runs: list[StoredRun]) -> StoredRun | None:
    """The newest complete run of ``runs`` (oldest first), else the newest of any status."""
    complete = [run for run in runs if run.status == "complete"]
    chosen = complete or runs
    return chosen[-1] if chosen else None


def _match(runs: list[StoredRun], ref: str) -> StoredRun | None:
    by_id = [run for run in runs if run.run_id == ref or run.path.name == ref]
    if by_id:
        return by_id[-1]
    if ref == "latest":
        return runs[-1]
    if _HEX.fullmatch(ref):
        found = _newest([run for run in runs if run.commit and run.commit.lower().startswith(ref.lower())])
        if found is not None:
            return found
    return _newest([run for run in runs if run.branch == ref])


def _back(run: StoredRun, folder: Path, spec: RunSpec) -> StoredRun:
    if not spec.back:
        return run
    runs = ResultStore(folder, create=False).stored_runs() if folder.is_dir() else []
    paths = [item.path.resolve() for item in runs]
    try:
        index = paths.index(run.path.resolve())
    except ValueError:
        raise ConfigurationError(f"run {spec.text!r}: {run.path} is not a run of {folder}") from None
    if index - spec.back < 0:
        raise ConfigurationError(f"run {spec.text!r}: only {index} run(s) of {folder} are older than "
                                 f"{run.run_id}; ~{spec.back} goes past the oldest")
    return runs[index - spec.back]


def _no_match(text: str, folder: Path, ref: str, runs: list[StoredRun], commit: str | None) -> str:
    shown = "\n".join(f"  {describe_run(run)}" for run in runs[-8:])
    more = f"\n  ... and {len(runs) - 8} older" if len(runs) > 8 else ""
    via = f" (git ref {ref} is commit {commit[:12]})" if commit else ""
    return (f"run {text!r}: no stored run of {folder} matches {ref!r}{via}; the runs it holds, newest last:\n"
            f"{shown}{more}\nname one by id, commit or branch (or 'latest')")


# --- git refs, read from files ------------------------------------------------------------------------------------


def _git_dirs(start: Path) -> list[Path]:
    """The git folders of the checkout holding ``start`` (its own and, for a worktree, the common one); [] when
    there is none."""
    for parent in (start, *start.parents):
        dot_git = parent / ".git"
        if dot_git.is_file():
            text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
            if not text.startswith("gitdir:"):
                return []
            gitdir = (parent / text.split(":", 1)[1].strip()).resolve()
        elif dot_git.is_dir():
            gitdir = dot_git
        else:
            continue
        dirs = [gitdir]
        common = gitdir / "commondir"
        if common.is_file():
            dirs.append((gitdir / common.read_text(encoding="utf-8").strip()).resolve())
        return dirs
    return []


def read_git_ref(ref: str, places: list[Path]) -> str | None:
    """The commit ``ref`` names in the first git checkout holding one of ``places``: ``HEAD``, a branch, a tag
    (annotated tags only through ``packed-refs``), ``origin/main``-style remote refs; None when it names none."""
    if ".." in ref or ref.startswith("/"):
        return None
    names = [ref] if ref == "HEAD" else [f"refs/heads/{ref}", f"refs/tags/{ref}", f"refs/remotes/{ref}",
                                         f"refs/remotes/origin/{ref}", ref]
    for place in places:
        dirs = _git_dirs(place.resolve())
        if not dirs:
            continue
        for name in names:
            commit = _ref_in(dirs, name, depth=0)
            if commit is not None:
                return commit
        return None
    return None


def _ref_in(dirs: list[Path], name: str, depth: int) -> str | None:
    if depth > 5:
        return None
    for base in dirs:
        file = base / name
        if file.is_file():
            text = file.read_text(encoding="utf-8", errors="replace").strip()
            if text.startswith("ref:"):
                return _ref_in(dirs, text.split(":", 1)[1].strip(), depth + 1)
            return text.lower() if re.fullmatch(r"[0-9a-fA-F]{40}", text) else None
    for base in dirs:
        packed = base / "packed-refs"
        if not packed.is_file():
            continue
        lines = packed.read_text(encoding="utf-8", errors="replace").splitlines()
        for index, line in enumerate(lines):
            parts = line.split()
            if len(parts) == 2 and parts[1] == name:
                following = lines[index + 1] if index + 1 < len(lines) else ""
                return (following[1:].strip() if following.startswith("^") else parts[0]).lower()
    return None
