"""Which stored run a user means: ``results/x``, ``results/x/runs/<id>``, ``x@main``,
``scenarios/x.yaml@3f2a1bc``.

Why it is shaped so: docs/architecture.md, "Inside `store/`"."""

from __future__ import annotations

import contextlib
import difflib
import logging
import re
import subprocess
from collections.abc import Collection
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
from fvp_harness.store.state import ok_builds, run_state

__all__ = ["GIT_TIMEOUT", "RunSpec", "describe_run", "find_run", "parse_run_spec", "pinned_spec",
           "read_git_ref", "results_folder", "scenario_file", "unknown_folder_hint"]

_log = logging.getLogger(__name__)

GIT_TIMEOUT = 10.0
"""Seconds ``git rev-parse`` may take before the ref counts as unknown (a hung network filesystem
must not hang CI)."""

_HEX = re.compile(r"[0-9a-fA-F]{4,40}")
_BACK = re.compile(r"^(?P<ref>.*?)#-(?P<steps>\d+)$")
_WRONG_BACK = re.compile(r"^(?P<ref>.*?)#\+?(?P<steps>\d+)$")
# git's exit status outside a checkout (an unknown ref is 1 with --quiet)
_GIT_NOT_A_REPOSITORY = 128
_OLD_BACK = re.compile(r"^(?P<ref>.*?)~(?P<steps>\d+)$")
_SCENARIO_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class RunSpec:
    """A parsed run name: ``where`` (a path or stem; empty for ``@REF``), ``ref`` (None: the
    folder's own run or its newest), ``back`` (``#-N``: stored runs back)."""

    text: str
    where: str
    ref: str | None
    back: int = 0


def parse_run_spec(text: str) -> RunSpec:
    """Split ``WHERE@REF#-N``; a ConfigurationError says what is wrong with the text. The ``@`` that
    separates is the last one (folders may contain ``@``, refs do not)."""
    text = text.strip()
    if not text:
        raise ConfigurationError("an empty run name: give a results folder, a run folder or "
                                 "SCENARIO@REF")
    where, sep, ref = text.rpartition("@")
    if not sep:
        where, ref = text, ""
    back = 0
    match = _BACK.match(ref) if sep else None
    if match:
        ref, back = match.group("ref"), int(match.group("steps"))
    elif sep and (wrong := _WRONG_BACK.match(ref)):
        raise ConfigurationError(f"run {text!r}: stored runs are counted back only: write "
                                 f"{wrong.group('ref')}#-{wrong.group('steps')} for "
                                 f"{wrong.group('steps')} run(s) before the one "
                                 f"{wrong.group('ref') or 'latest'} names")
    if sep and not ref:
        raise ConfigurationError(f"run {text!r}: nothing after '@'; give a run id, latest, a "
                                 "commit or a branch")
    return RunSpec(text, where, ref if sep else None, back)


def pinned_spec(run: StoredRun, folder: Path) -> str:
    """The run name that finds exactly this run again, even after it moved into ``runs/<id>/``:
    ``<absolute scenario folder>@<run id>``."""
    return f"{folder.resolve()}@{run.run_id}"


def describe_run(run: StoredRun) -> str:
    """``run 20260101-120000-ab12 (commit 3f2a1bc, branch main, 2026-01-01)`` for messages and
    reports."""
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


def _results_folders(places: list[Path]) -> list[Path]:
    """The scenario results folders (a manifest, records or stored runs inside) directly under
    ``places``."""
    found: dict[Path, None] = {}
    for place in places:
        try:
            children = sorted(place.iterdir()) if place.is_dir() else []
        except OSError:
            continue
        for child in children:
            if child.is_dir() and (_is_run_folder(child) or (child / RUNS_DIR).is_dir()):
                found.setdefault(child, None)
    return list(found)


def unknown_folder_hint(where: str, results_base: Path | str = DEFAULT_RESULTS_BASE) -> str:
    """`` (did you mean 'results/smoke'?); the results folders under results/ are: ...`` for a
    results folder name that matches nothing: the closest results folder beside the one typed or
    under ``results_base``, by the text typed (a path) or by its last part (a stem). Empty when
    there is no results folder to name."""
    base = Path(results_base)
    typed = Path(where)
    places = [typed.parent] if str(typed.parent) not in ("", ".") else []
    folders = _results_folders([*places, base])
    if not folders:
        return ""
    names = [str(folder) for folder in folders]
    close = difflib.get_close_matches(str(typed), names, n=1, cutoff=0.6)
    if not close:  # a stem typed for a folder under the base: match it against the folders' names
        by_name = {folder.name: str(folder) for folder in folders}
        stem = difflib.get_close_matches(typed.stem if typed.suffix in _SCENARIO_SUFFIXES
                                         else typed.name, list(by_name), n=1, cutoff=0.6)
        close = [by_name[stem[0]]] if stem else []
    shown = ", ".join(names[:8]) + (f", ... ({len(names) - 8} more)" if len(names) > 8 else "")
    mean = f" (did you mean {close[0]!r}?)" if close else ""
    return f"{mean}; the results folders there are: {shown}"


def results_folder(where: str | Path, results_base: Path | str = DEFAULT_RESULTS_BASE, *,
                   what: str = "") -> Path:
    """The scenario results folder a user names: the folder itself, a scenario file
    (``<base>/<stem>``, where ``run`` writes by default) or a scenario file stem under
    ``results_base``; ``report``, ``runs``, ``prune``, ``history`` and ``compare`` all take the same
    three. A name that matches nothing is a ConfigurationError (exit 2) that says so and names the
    closest results folder there is (``what`` prefixes the message)."""
    text = str(where)
    base = Path(results_base)
    prefix = f"{what}: " if what else ""
    path = Path(text)
    if path.suffix in _SCENARIO_SUFFIXES and path.is_file():
        folder = base / path.stem
        if not folder.is_dir():
            raise ConfigurationError(f"{prefix}{text} is a scenario file; its results folder "
                                     f"{folder} does not exist yet (run it: fvp-harness run "
                                     f"{text}), or give the folder a run wrote (-o DIR)")
        return folder
    if path.is_dir():
        return path
    by_stem = base / text
    if "/" not in text and by_stem.is_dir():
        return by_stem
    raise ConfigurationError(f"{prefix}{text} is no results folder, scenario file or scenario name "
                             f"under {base}/{unknown_folder_hint(text, base)}")


def _recorded_scenario(folder: Path) -> Path | None:
    """The scenario file the newest run of a results folder was run from (``scenario.file``)."""
    try:
        data = ResultStore(folder, create=False).read_manifest() or {}
    except ConfigurationError:
        return None
    scenario = data.get("scenario")
    file = scenario.get("file") if isinstance(scenario, dict) else None
    return Path(file) if isinstance(file, str) and file else None


def _shown_path(path: Path) -> str:
    with contextlib.suppress(ValueError, OSError):
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    return str(path)


def _scenario_files_near(typed: Path, results_base: Path) -> list[str]:
    """Scenario files a name may have meant: ``*.yaml``/``*.yml`` beside the typed path, in the
    current folder and under ``scenarios/`` (two levels), and the files the results folders under
    ``results_base`` were run from."""
    found: dict[str, None] = {}
    scenarios = Path("scenarios")
    places = [(typed.parent, "*"), (Path("."), "*"), (scenarios, "*"), (scenarios, "*/*")]
    for place, pattern in places:
        with contextlib.suppress(OSError):
            for suffix in _SCENARIO_SUFFIXES:
                for path in sorted(place.glob(pattern + suffix))[:200]:
                    found.setdefault(str(path), None)
    for folder in _results_folders([results_base]):
        recorded = _recorded_scenario(folder)
        if recorded is not None and recorded.is_file():
            found.setdefault(_shown_path(recorded), None)
    return list(found)


def _closest_scenario(text: str, candidates: list[str]) -> str | None:
    """The scenario file of ``candidates`` a mistyped name most likely meant (same stem first)."""
    path = Path(text)
    stem = path.stem if path.suffix in _SCENARIO_SUFFIXES else path.name
    same = [name for name in candidates if Path(name).stem == stem]
    if same:
        return same[0]
    close = difflib.get_close_matches(text, candidates, n=1, cutoff=0.6)
    if close:
        return close[0]
    stems = difflib.get_close_matches(stem, [Path(item).stem for item in candidates], n=1,
                                      cutoff=0.6)
    return next((name for name in candidates if Path(name).stem in stems), None)


def scenario_file(text: str, results_base: Path | str = DEFAULT_RESULTS_BASE) -> str:
    """The scenario file a user names to ``run``, ``make``, ``validate``, ...: the path itself when
    it exists, or a scenario file stem as ``report``, ``runs`` and ``history`` take it
    (``results/<stem>``): the file the newest run of that results folder was run from. Anything
    else is a ConfigurationError (exit 2) naming the closest scenario file there is (``smok``: did
    you mean 'scenarios/smoke.yaml'?)."""
    path = Path(text)
    if path.exists():
        return text
    folder = Path(results_base) / text
    stem_like = "/" not in text and path.suffix not in _SCENARIO_SUFFIXES
    recorded = _recorded_scenario(folder) if stem_like else None
    if recorded is not None and recorded.is_file():
        if recorded.stem == text:
            return _shown_path(recorded)
        raise ConfigurationError(  # run -o results/<name> of another scenario
            f"{text}: no scenario file of that name; {folder} holds runs of "
            f"{_shown_path(recorded)} (run it with -o {folder}, or name the file)")
    candidates = _scenario_files_near(path, Path(results_base))
    close = _closest_scenario(text, candidates)
    mean = f" (did you mean {close!r}?)" if close else ""
    known = ""
    if candidates:
        more = f", ... ({len(candidates) - 8} more)" if len(candidates) > 8 else ""
        known = f"; the scenario files here are: {', '.join(candidates[:8])}{more}"
    nor = f", nor the stem of a scenario with runs in {folder}" if stem_like else ""
    raise ConfigurationError(f"{text}: no such scenario file or folder{nor}{mean}{known}")


def _scenario_folder(where: str, results_base: Path, scenario_folder: Path | None,
                     text: str) -> Path:
    """The scenario results folder ``where`` names (see the module docstring)."""
    if not where:
        if scenario_folder is None:
            raise ConfigurationError(f"run {text!r}: '@REF' alone needs a scenario; write "
                                     "SCENARIO@REF (a results folder, a scenario file or its stem)")
        return scenario_folder
    path = Path(where)
    if path.suffix in _SCENARIO_SUFFIXES and path.is_file():
        # a run not stored yet is told by _runs, with the folder's name
        return results_base / path.stem
    return results_folder(where, results_base, what=f"run {text!r}")


def find_run(text: str, *, results_base: Path | str = DEFAULT_RESULTS_BASE,
             scenario_folder: Path | None = None,
             cwd: Path | None = None, builds: Collection[str] | None = None,
             skipped: list[str] | None = None) -> StoredRun:
    """The stored run ``text`` names (module docstring), or a ConfigurationError that says what
    exists instead.

    ``scenario_folder`` is the results folder ``@REF`` alone refers to; ``cwd`` where to look for a
    git checkout besides the folder itself (default: the current directory).

    ``builds``: a run a ref picks (``latest``, a commit, a branch, a git revision) must hold an ok
    record of one of these builds (of any build when empty); the newer runs passed over are appended
    to ``skipped``, one line each, and when every run the ref names fails the test it is a
    ConfigurationError saying why. A run named exactly (its folder, its id) is never passed over:
    the caller judges it."""
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
    chosen, passed = _match(runs, ref, builds)
    if chosen is None and not passed:
        commit = read_git_ref(ref, [folder, cwd or Path.cwd()])
        if commit is not None:
            chosen, passed = _pick([run for run in runs if run.commit == commit], builds)
        if chosen is None and not passed:
            raise ConfigurationError(_no_match(text, folder, ref, runs, commit)
                                     + _old_back_hint(spec, runs))
    lines = [f"{describe_run(run)} in {run.path}: {why}" for run, why in passed]
    if chosen is None:
        shown = "\n".join(f"  skipped {line}" for line in lines)
        raise ConfigurationError(
            f"run {text!r}: no stored run of {folder} that {ref!r} names measured anything to "
            f"use:\n{shown}\nname a run that did by its id (fvp-harness runs {folder})")
    if skipped is not None:
        skipped.extend(lines)
    return _back(chosen, folder, spec)


def _unusable(run: StoredRun, builds: Collection[str] | None) -> str | None:
    """Why ``run`` cannot serve a ref that needs an ok record of one of ``builds`` (any build when
    empty), or None when it can (or nothing is needed)."""
    if builds is None:
        return None
    measured = ok_builds(run)  # damaged records are refused, as everywhere: none can be trusted
    wanted = set(builds)
    if measured & wanted if wanted else measured:
        return None
    what = f"build {', '.join(repr(name) for name in sorted(wanted))}" if wanted else "any build"
    return f"no ok record of {what} ({run_state(run)}: nothing measured to compare with)"


def _pick(runs: list[StoredRun], builds: Collection[str] | None, *, complete: bool = True
          ) -> tuple[StoredRun | None, list[tuple[StoredRun, str]]]:
    """The newest complete run of ``runs`` (oldest first) that ``builds`` accepts, else the newest
    accepted of any status (``complete=False``: the newest accepted); with the runs newer than it
    that were passed over, and why (all of them when none is chosen). Reads records newest first
    and stops at the first run it takes."""
    usable: list[StoredRun] = []
    passed: list[tuple[StoredRun, str]] = []
    for run in reversed(runs):
        why = _unusable(run, builds)
        if why is not None:
            passed.append((run, why))
            continue
        usable.append(run)
        if run.status == "complete" or not complete:
            break
    fallback = usable[0] if usable else None
    chosen = next((run for run in usable if run.status == "complete"), fallback)
    if chosen is None:
        return None, passed[::-1]
    newer = {id(run) for run in runs[runs.index(chosen) + 1:]}
    return chosen, [(run, why) for run, why in passed[::-1] if id(run) in newer]


def _old_back_hint(spec: RunSpec, runs: list[StoredRun]) -> str:
    """For ``REF~N`` that git could not place where ``REF`` alone names a stored run: the spelling
    of "N stored runs back" (``REF#-N``), since ``~N`` used to mean that and now means git's N
    commits back."""
    old = _OLD_BACK.match(spec.ref or "")
    if old is None or _match(runs, old.group("ref"))[0] is None:
        return ""
    where = f"{spec.where}@" if spec.where else "@"
    return (f"\n'~{old.group('steps')}' is git's (commits back), not stored runs back; for the run "
            f"{old.group('steps')} stored run(s) before {old.group('ref')}'s, write "
            f"{where}{old.group('ref')}#-{old.group('steps')}")


def _runs(folder: Path, text: str) -> list[StoredRun]:
    if not folder.is_dir():
        raise ConfigurationError(f"run {text!r}: {folder} does not exist (run the scenario first)")
    runs = ResultStore(folder, create=False).stored_runs()
    if not runs:
        raise ConfigurationError(f"run {text!r}: {folder} holds no stored run (no manifest.json, "
                                 "no runs/<id>/)")
    return runs


def _match(runs: list[StoredRun], ref: str, builds: Collection[str] | None = None
           ) -> tuple[StoredRun | None, list[tuple[StoredRun, str]]]:
    """The run ``ref`` names among the stored ``runs`` (``_pick``'s answer); (None, []) for none."""
    by_id = [run for run in runs if run.run_id == ref or run.path.name == ref]
    if by_id:
        return by_id[-1], []
    if ref == "latest":
        return _pick(runs, builds, complete=False)
    if _HEX.fullmatch(ref):
        prefix = ref.lower()
        found = _pick([run for run in runs if run.commit and run.commit.lower().startswith(prefix)],
                      builds)
        if found != (None, []):
            return found
    return _pick([run for run in runs if run.branch == ref], builds)


def _back(run: StoredRun, folder: Path, spec: RunSpec) -> StoredRun:
    if not spec.back:
        return run
    runs = ResultStore(folder, create=False).stored_runs() if folder.is_dir() else []
    paths = [item.path.resolve() for item in runs]
    try:
        index = paths.index(run.path.resolve())
    except ValueError:
        raise ConfigurationError(f"run {spec.text!r}: {run.path} is not a run of "
                                 f"{folder}") from None
    if index - spec.back < 0:
        raise ConfigurationError(f"run {spec.text!r}: only {index} run(s) of {folder} are older "
                                 f"than {run.run_id}; #-{spec.back} goes past the oldest")
    return runs[index - spec.back]


def _no_match(text: str, folder: Path, ref: str, runs: list[StoredRun], commit: str | None) -> str:
    shown = "\n".join(f"  {describe_run(run)}" for run in runs[-8:])
    more = f"\n  ... and {len(runs) - 8} older" if len(runs) > 8 else ""
    via = f" (git ref {ref} is commit {commit[:12]})" if commit else ""
    names = ["latest", *(run.run_id for run in runs), *(run.branch for run in runs if run.branch)]
    close = (difflib.get_close_matches(ref, list(dict.fromkeys(names)), n=1, cutoff=0.6)
             if commit is None else [])
    mean = f" (did you mean {close[0]!r}?)" if close else ""
    branches = list(dict.fromkeys(run.branch for run in reversed(runs) if run.branch))
    known = ", ".join(["latest", *branches[:8]])
    return (f"run {text!r}: no stored run of {folder} matches {ref!r}{via}{mean}; the refs it "
            f"knows: {known} (or a run's id or commit, REF#-N); the runs it holds, newest last:\n"
            f"{shown}{more}\nname one by id, commit or branch (or 'latest')")


# --- git refs, read by git ------------------------------------------------------------------------


def read_git_ref(ref: str, places: list[Path], *, timeout: float = GIT_TIMEOUT) -> str | None:
    """The commit ``ref`` names (``git rev-parse --verify REF^{commit}``) in the first of ``places``
    inside a git checkout; None when git is missing, none of them is in a checkout, or the ref names
    no commit there.

    A name that starts with ``-`` is never handed to git (it would read as an option)."""
    if not ref or ref.startswith("-") or any(ord(char) < 32 for char in ref):
        return None
    for place in places:
        directory = place if place.is_dir() else place.parent
        if not directory.is_dir():
            continue
        try:
            done = subprocess.run(["git", "-C", str(directory), "rev-parse", "--verify", "--quiet",
                                   f"{ref}^{{commit}}"], capture_output=True, text=True,
                                  timeout=timeout, check=False)
        except FileNotFoundError:
            _log.debug("git is not installed: %r is not read as a git ref", ref)
            return None
        except subprocess.TimeoutExpired:
            _log.warning("git rev-parse took more than %.0f s in %s: %r is not read as a git ref",
                         timeout, directory, ref)
            return None
        if done.returncode == _GIT_NOT_A_REPOSITORY:
            continue
        commit = done.stdout.strip().lower()
        return (commit if done.returncode == 0 and
                re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", commit) else None)
    return None
