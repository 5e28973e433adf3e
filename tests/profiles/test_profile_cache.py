"""``load_profile`` remembers what it validated (every scenario load reads its profile), keyed by
the file's bytes: an edit is seen at once whatever the file's stat says, unchanged bytes are not
validated again, and no caller can change the profile another caller gets."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from fvp_harness import located, profiles
from fvp_harness.errors import ConfigurationError
from fvp_harness.profiles import builtin_profile_path, load_profile
from fvp_harness.scenario import load_scenario
from tests.helpers import REPO


@pytest.fixture
def validated(monkeypatch) -> list[Path]:
    """The paths ``load_profile`` validated (composed and checked) during the test, with the cache
    emptied first."""
    monkeypatch.setattr(profiles, "_VALIDATED", {})
    calls: list[Path] = []
    real = profiles._validate

    def counted(data: bytes, path: Path) -> Any:
        calls.append(path)
        return real(data, path)

    monkeypatch.setattr(profiles, "_validate", counted)
    return calls


@pytest.fixture
def profile_file(tmp_path) -> Path:
    source = builtin_profile_path("corstone1000-a320")
    assert source is not None
    path = tmp_path / "mine.yaml"
    path.write_bytes(source.read_bytes())
    return path


def set_stop_timeout(path: Path, value: int) -> None:
    text = path.read_text()
    line = next(line for line in text.splitlines() if line.startswith("stop_timeout:"))
    path.write_text(text.replace(line, f"stop_timeout: {value}"))


def test_an_unchanged_profile_is_validated_once(validated):
    first = load_profile("corstone1000-a320")
    second = load_profile("corstone1000-a320")
    assert first == second and first is not second
    assert second.model_fields_set == first.model_fields_set
    assert len(validated) == 1


def test_callers_cannot_change_the_profile_others_get(validated, profile_file):
    first = load_profile(profile_file)
    expected = first.model_dump()
    first.params["host.ethosu.num_macs"] = 1
    first.login_prompts.clear()
    first.ssh_forward_enabled_by["board.hostbridge.userNetPorts"].append("x")
    first.firmware.clear()
    first.boot_stages.clear()
    second = load_profile(profile_file)
    assert second.model_dump() == expected
    assert second.params["host.ethosu.num_macs"] == 256 and second.login_prompts and second.firmware
    second.params.clear()
    assert load_profile(profile_file).model_dump() == expected
    assert len(validated) == 1


def test_a_changed_file_is_seen_at_once(validated, profile_file):
    assert load_profile(profile_file).stop_timeout == 10
    set_stop_timeout(profile_file, 200)
    assert load_profile(profile_file).stop_timeout == 200
    assert len(validated) == 2


def test_a_rewrite_that_keeps_size_and_time_is_seen(validated, profile_file):
    """Within one tick of the file system's clock a rewrite keeps st_mtime_ns; the bytes differ, and
    they decide."""
    assert load_profile(profile_file).stop_timeout == 10
    before = profile_file.stat()
    set_stop_timeout(profile_file, 30)
    os.utime(profile_file, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = profile_file.stat()
    assert (after.st_mtime_ns, after.st_size, after.st_ino) == (
        before.st_mtime_ns,
        before.st_size,
        before.st_ino,
    )
    assert load_profile(profile_file).stop_timeout == 30
    assert len(validated) == 2


def test_a_profile_pulls_in_no_other_file(validated, profile_file):
    """Why the bytes of the one file are the whole key: a profile has no ``extends`` or includes to
    follow."""
    profile_file.write_text("extends: corstone1000-a320.yaml\n" + profile_file.read_text())
    with pytest.raises(ConfigurationError, match=r"mine\.yaml:1:1: .*extends"):
        load_profile(profile_file)


def test_an_edited_profile_is_seen_by_the_scenario_that_names_it(
    validated, profile_file, write, monkeypatch
):
    """The scenario is the file that pulls the profile in: its own bytes are unchanged, the
    profile's are not."""
    monkeypatch.chdir(profile_file.parent)
    smoke = (
        (REPO / "scenarios" / "smoke.yaml")
        .read_text()
        .replace("${scenario_dir}/../.artifacts", "/x")
    )
    scenario = write("s.yaml",
                     smoke.replace("platform: corstone1000-a320\n", "platform: ./mine.yaml\n"))
    assert load_scenario(scenario, check_files=False).profile.stop_timeout == 10
    before = profile_file.stat()
    set_stop_timeout(profile_file, 40)
    os.utime(profile_file, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert load_scenario(scenario, check_files=False).profile.stop_timeout == 40
    assert len(validated) == 2


def test_one_relative_name_in_two_folders_is_two_profiles(
    validated, profile_file, tmp_path, monkeypatch
):
    other = tmp_path / "other"
    other.mkdir()
    (other / "mine.yaml").write_bytes(profile_file.read_bytes())
    set_stop_timeout(other / "mine.yaml", 50)
    monkeypatch.chdir(tmp_path)
    assert load_profile("mine.yaml").stop_timeout == 10
    monkeypatch.chdir(other)
    assert load_profile("mine.yaml").stop_timeout == 50
    assert load_profile(Path("mine.yaml"), base_dir=tmp_path).stop_timeout == 10


def test_the_same_bytes_elsewhere_are_validated_once(validated, profile_file):
    copy = profile_file.with_name("copy.yaml")
    copy.write_bytes(profile_file.read_bytes())
    assert load_profile(profile_file) == load_profile(copy)
    assert validated == [profile_file]


def test_a_bad_profile_is_refused_every_time_naming_its_file_line_and_field(
    validated, profile_file, monkeypatch
):
    monkeypatch.chdir(profile_file.parent)
    good = profile_file.read_text()
    set_stop_timeout(profile_file, -1)
    line = 1 + profile_file.read_text().splitlines().index("stop_timeout: -1")
    copy = profile_file.with_name("copy.yaml")
    copy.write_bytes(profile_file.read_bytes())
    messages = []
    for path in (profile_file, profile_file, copy):
        with pytest.raises(ConfigurationError) as caught:
            load_profile(path)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert f"profile mine.yaml has problems:\nmine.yaml:{line}:15: stop_timeout" in messages[0]
    # errors are not kept: each names its file
    assert messages[2] == messages[0].replace("mine.yaml", "copy.yaml")
    profile_file.write_text(good)
    assert load_profile(profile_file).stop_timeout == 10
    assert len(validated) == 4


def test_the_limits_apply_to_a_profile_already_validated(validated, monkeypatch):
    """How YAML is read is part of the key: a lower limit refuses what was accepted under the old
    one."""
    load_profile("corstone1000-a320")
    monkeypatch.setattr(located, "MAX_VALUES", 10)
    with pytest.raises(ConfigurationError, match="more than 10 values"):
        load_profile("corstone1000-a320")


def test_at_most_so_many_profiles_are_kept_the_oldest_going_first(validated, profile_file):
    paths = []
    for number in range(profiles._VALIDATED_KEPT + 5):
        path = profile_file.with_name(f"p{number}.yaml")
        path.write_bytes(profile_file.read_bytes())
        set_stop_timeout(path, 100 + number)
        load_profile(path)
        paths.append(path)
    assert len(profiles._VALIDATED) == profiles._VALIDATED_KEPT
    load_profile(paths[-1])
    assert len(validated) == len(paths)
    load_profile(paths[0])
    assert len(validated) == len(paths) + 1
