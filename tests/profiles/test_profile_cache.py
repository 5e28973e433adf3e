"""``load_profile`` remembers what it read (every scenario load reads its profile): an unchanged file is not composed
again, a changed one is, and no caller can change the profile another caller gets."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from fvp_harness import profiles
from fvp_harness.errors import ConfigurationError
from fvp_harness.profiles import builtin_profile_path, load_profile


@pytest.fixture
def composed(monkeypatch) -> list[Path]:
    """The paths ``load_profile`` composed (parsed as YAML) during the test, with the cache emptied first."""
    monkeypatch.setattr(profiles, "_LOADED", {})
    calls: list[Path] = []
    real = profiles.compose_bytes

    def counted(data: bytes, path: Path) -> Any:
        calls.append(path)
        return real(data, path)

    monkeypatch.setattr(profiles, "compose_bytes", counted)
    return calls


@pytest.fixture
def profile_file(tmp_path) -> Path:
    source = builtin_profile_path("corstone1000-a320")
    assert source is not None
    path = tmp_path / "mine.yaml"
    path.write_bytes(source.read_bytes())
    return path


def test_an_unchanged_profile_is_composed_once(composed):
    first = load_profile("corstone1000-a320")
    second = load_profile("corstone1000-a320")
    assert first == second and len(composed) == 1


def test_callers_cannot_change_the_profile_others_get(composed):
    first = load_profile("corstone1000-a320")
    first.params["host.ethosu.num_macs"] = 1
    first.login_prompts.clear()
    second = load_profile("corstone1000-a320")
    assert second is not first
    assert second.params["host.ethosu.num_macs"] == 256 and second.login_prompts
    assert len(composed) == 1


def test_a_changed_file_is_read_again(composed, profile_file):
    assert load_profile(profile_file).stop_timeout == 10
    profile_file.write_text(profile_file.read_text().replace("stop_timeout: 10", "stop_timeout: 20"))
    assert load_profile(profile_file).stop_timeout == 20
    assert len(composed) == 2


def test_a_rewrite_that_keeps_size_and_time_is_read_again(composed, profile_file):
    """Within one tick of the file system's clock a rewrite keeps st_mtime_ns; the bytes still differ."""
    assert load_profile(profile_file).stop_timeout == 10
    before = profile_file.stat()
    profile_file.write_text(profile_file.read_text().replace("stop_timeout: 10", "stop_timeout: 30"))
    os.utime(profile_file, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = profile_file.stat()
    assert (after.st_mtime_ns, after.st_size, after.st_ino) == (before.st_mtime_ns, before.st_size, before.st_ino)
    assert load_profile(profile_file).stop_timeout == 30


def test_a_bad_profile_is_refused_every_time_and_read_once_fixed(composed, profile_file):
    good = profile_file.read_text()
    profile_file.write_text(good.replace("stop_timeout: 10", "stop_timeout: -1"))
    for _ in range(2):
        with pytest.raises(ConfigurationError, match="stop_timeout"):
            load_profile(profile_file)
    profile_file.write_text(good)
    assert load_profile(profile_file).stop_timeout == 10
    assert len(composed) == 3


def test_one_file_is_remembered_once(composed, profile_file):
    for value in (11, 12, 13):
        profile_file.write_text(profile_file.read_text().replace("stop_timeout: 10", f"stop_timeout: {value}")
                                .replace(f"stop_timeout: {value - 1}", f"stop_timeout: {value}"))
        assert load_profile(profile_file).stop_timeout == value
    assert [key[0] for key in profiles._LOADED] == [profile_file.resolve()]


def test_at_most_so_many_profiles_are_kept(composed, profile_file):
    for number in range(profiles._LOADED_KEPT + 5):
        copy = profile_file.with_name(f"p{number}.yaml")
        copy.write_bytes(profile_file.read_bytes())
        load_profile(copy)
    assert len(profiles._LOADED) == profiles._LOADED_KEPT
