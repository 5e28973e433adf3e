"""The bisect's decisions (``run.bisect``) and a build at a commit (``run.source_build``) on a real
git repository: the verdict from intervals, the neighbour of a skipped commit, the first-parent
range, the tree key."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fvp_harness.errors import ConfigurationError
from fvp_harness.run.bisect import Level, _pick, judge
from fvp_harness.run.source_build import (
    CachedBuild,
    commits_between,
    resolve_commit,
    source_checkout,
    tree_of,
)
from fvp_harness.scenario.model import BuildSource

GOOD = {"m": Level(1.0, 0.98, 1.02, 2)}
BAD = {"m": Level(2.0, 1.97, 2.03, 2)}


@pytest.mark.parametrize(
    ("level", "verdict"),
    [
        (Level(1.01, 0.99, 1.03, 2), "good"),
        (Level(1.99, 1.95, 2.01, 2), "bad"),
        (Level(1.5, 0.9, 2.1, 2), "cannot decide"),  # overlaps both: more units, or say so
        (Level(1.2, 1.15, 1.25, 2), "good"),  # between the levels, nearer the good one
        (Level(1.8, 1.75, 1.85, 2), "bad"),
    ],
)
def test_a_commit_is_judged_by_which_end_its_interval_overlaps(level, verdict):
    assert judge({"m": level}, GOOD, BAD, ["m"])[0] == verdict


def test_an_unmeasured_model_cannot_decide_and_one_bad_model_makes_the_commit_bad():
    assert judge({}, GOOD, BAD, ["m"])[0] == "cannot decide"
    good2, bad2 = {**GOOD, "n": GOOD["m"]}, {**BAD, "n": BAD["m"]}
    assert judge({"m": GOOD["m"], "n": BAD["m"]}, good2, bad2, ["m", "n"])[0] == "bad"


def test_a_skipped_commit_is_replaced_by_its_nearest_untried_neighbour():
    assert _pick(0, 15, set()) == 7
    assert _pick(0, 15, {7}) == 8
    assert _pick(0, 15, {7, 8}) == 6
    assert _pick(3, 5, {4}) is None
    assert _pick(3, 4, set()) is None


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@e", *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    for text in ("a", "b", "a"):  # the third commit has the first one's files: the same tree
        (repo / "f.txt").write_text(text)
        _git(repo, "add", "f.txt")
        _git(repo, "commit", "-q", "-m", f"set {text}")
    return repo


def test_refs_resolve_unknown_ones_say_did_you_mean_and_equal_trees_share_a_build(repo, tmp_path):
    head = resolve_commit(repo, "main")
    first = resolve_commit(repo, "main~2")
    assert len(head) == 40 and head != first
    with pytest.raises(ConfigurationError, match="did you mean 'main'"):
        resolve_commit(repo, "mian", what="--bad")
    with pytest.raises(ConfigurationError, match="not a git revision"):
        resolve_commit(repo, "--all")
    assert tree_of(repo, head) == tree_of(repo, first)
    assert CachedBuild.of(tmp_path, tree_of(repo, head), "cmd", "r") == CachedBuild.of(
        tmp_path, tree_of(repo, first), "cmd", "r"
    )
    assert CachedBuild.of(tmp_path, tree_of(repo, head), "cmd2", "r") != CachedBuild.of(
        tmp_path, tree_of(repo, first), "cmd", "r"
    )
    assert commits_between(repo, first, head) == [resolve_commit(repo, "main~1"), head]
    with pytest.raises(ConfigurationError, match="not an ancestor"):
        commits_between(repo, head, first)


def test_a_checkout_is_the_commits_files_and_leaves_the_users_checkout_alone(repo, tmp_path):
    (repo / "f.txt").write_text("edited, not committed")
    folder = source_checkout(repo, resolve_commit(repo, "main~1"), tmp_path / "cache")
    assert (folder / "f.txt").read_text() == "b"
    assert (repo / "f.txt").read_text() == "edited, not committed"
    assert _git(repo, "worktree", "list").count("\n") == 0
    assert source_checkout(repo, resolve_commit(repo, "main~1"), tmp_path / "cache") == folder


def test_a_ref_is_accepted_only_with_a_local_repository():
    assert BuildSource(repository="./repo", commit="main").commit == "main"
    assert BuildSource(repository="pytorch/executorch", commit="ABCDEF1").commit == "abcdef1"
    with pytest.raises(ValueError, match="local path"):
        BuildSource(repository="pytorch/executorch", commit="main")


def test_source_placeholder_needs_a_local_repository():
    from fvp_harness.scenario.model import Build

    assert (
        Build(
            runner="r",
            build="make -C {source} O={output}",
            source={"repository": "./repo", "commit": "main"},
        ).source
        is not None
    )
    with pytest.raises(ValueError, match="uses \\{source\\}"):
        Build(runner="r", build="make -C {source} O={output}")
    with pytest.raises(ValueError, match="uses \\{source\\}"):
        Build(
            runner="r", build="make -C {source}", source={"repository": "a/b", "commit": "abcdef1"}
        )
