"""``SCENARIO@REF`` through git itself: in a real repository, tags (annotated too), packed refs,
short hashes and ``HEAD~2`` name the run of the commit git says they name, ``REF~N`` is git's, and
``REF#-N`` counts stored runs.

Why real git: the refs were read by hand from ``.git`` files before, and an annotated tag resolved
to the tag object instead of its commit; only a repository git made can show that this is gone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from fvp_harness.errors import ConfigurationError
from fvp_harness.store.locate import find_run, read_git_ref
from tests.report.stored_runs import write_run

pytestmark = pytest.mark.skipif(shutil.which("git") is None,
                                reason="needs git (apt-get install -y git)")

BASE = {("before", "m1"): 2.0, ("after", "m1"): 1.0}
_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1"}


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True, timeout=30, env=os.environ | _ENV)
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, list[str]]:
    """A repository with three commits on ``main`` and one stored run per commit (oldest first),
    plus a run of a feature branch at the newest commit that ``main#-1`` must step over to the main
    run before."""
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    commits = []
    for number in range(3):
        (root / "file.txt").write_text(f"{number}\n")
        _git(root, "add", "file.txt")
        _git(root, "commit", "-q", "-m", f"c{number}")
        commits.append(_git(root, "rev-parse", "HEAD"))
    folder = root / "results" / "demo"
    for number, commit in enumerate(commits):
        write_run(folder, BASE, run_id=f"2026030{number + 1}-100000-000{number}", commit=commit,
                  branch="main", started=f"2026-03-0{number + 1}T10:00:00Z")
    return root, commits


def _run_of(name: str, root: Path) -> str:
    return find_run(name, results_base=root / "results", cwd=root).run_id


def test_an_annotated_tag_names_the_run_of_its_commit_also_once_refs_are_packed(
    repo: tuple[Path, list[str]],
):
    root, commits = repo
    _git(root, "tag", "-a", "v9", "-m", "release 9", commits[1])
    _git(root, "tag", "light", commits[0])
    tag_object = _git(root, "rev-parse", "v9")
    assert tag_object != commits[1], "an annotated tag is an object of its own"
    assert read_git_ref("v9", [root]) == commits[1]
    assert _run_of("demo@v9", root) == "20260302-100000-0001"
    assert _run_of("demo@light", root) == "20260301-100000-0000"
    _git(root, "pack-refs", "--all")
    assert not (root / ".git" / "refs" / "tags" / "v9").exists(), (
        "the tag now lives in packed-refs only")
    assert _run_of("demo@v9", root) == "20260302-100000-0001"
    assert _run_of("demo@light", root) == "20260301-100000-0000"


def test_head_tilde_short_hashes_and_git_tilde_are_git_s(repo: tuple[Path, list[str]]):
    root, commits = repo
    assert read_git_ref("HEAD~2", [root]) == commits[0]
    assert read_git_ref(commits[1][:7], [root]) == commits[1]
    assert _run_of("demo@HEAD~2", root) == "20260301-100000-0000"
    assert _run_of("demo@HEAD", root) == "20260303-100000-0002"
    assert _run_of("demo@main~1", root) == "20260302-100000-0001", (
        "main~1 is git's commit before main")


def test_stored_runs_back_are_counted_with_hash_minus(repo: tuple[Path, list[str]]):
    root, commits = repo
    folder = root / "results" / "demo"
    write_run(folder, BASE, run_id="20260304-100000-0003", commit=commits[2], branch="feature",
              started="2026-03-04T10:00:00Z")
    assert _run_of("demo@latest#-1", root) == "20260303-100000-0002"
    assert _run_of("demo@main#-1", root) == "20260302-100000-0001"
    assert _run_of("demo@main#-0", root) == "20260303-100000-0002"
    with pytest.raises(ConfigurationError, match=r"write latest#-1"):
        _run_of("demo@latest#1", root)


def test_the_old_spelling_of_runs_back_is_refused_naming_the_new_one(repo: tuple[Path, list[str]]):
    root, _commits = repo
    with pytest.raises(ConfigurationError) as info:
        _run_of("demo@latest~1", root)
    assert "git's (commits back)" in str(info.value) and "demo@latest#-1" in str(info.value)
    # a ref git knows but no stored run recorded: the error names the commit git found
    (root / "file.txt").write_text("new\n")
    _git(root, "commit", "-q", "-am", "c3")
    with pytest.raises(ConfigurationError, match=r"git ref HEAD is commit [0-9a-f]{12}"):
        _run_of("demo@HEAD", root)


def test_names_git_cannot_read_safely_are_not_handed_to_it(
    repo: tuple[Path, list[str]], tmp_path: Path
):
    root, _commits = repo
    assert read_git_ref("--output=/tmp/x", [root]) is None, "an option is never passed as a ref"
    assert read_git_ref("nosuch", [root]) is None
    outside = tmp_path / "outside"
    outside.mkdir()
    assert read_git_ref("HEAD", [outside]) is None, "no checkout, no commit"
    assert read_git_ref("HEAD", [outside, root]) is not None, "the next place is tried"
