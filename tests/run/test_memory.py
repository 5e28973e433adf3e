"""The memory the harness measures itself: a real ELF's sections summed by their flags (a program
compiled here with arrays of known sizes in each kind of section), the model file's size, and the
framed line's peak resident set read by the host's real ``/bin/sh`` and ``time`` around a process of
known size."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fvp_harness.formats.pte import read_program_file
from fvp_harness.run.framed import PEAK_RSS_FILE, frame_unit, new_token, parse_framed
from fvp_harness.run.memory import elf_sections, harness_samples
from tests.formats.programs import flatc_program

_SOURCE = """
const char table[50000] = {1};            /* .rodata */
char state[30000] = {1};                  /* .data */
static char pool[100000];                 /* .bss */
int main(int argc, char **argv) { pool[argc] = state[argc] + table[argc]; return pool[1]; }
"""


@pytest.fixture(scope="module")
def elf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    compiler = os.environ.get("CC_AARCH64", "aarch64-linux-gnu-gcc")
    if shutil.which(compiler) is None and shutil.which("cc") is None:
        pytest.skip("no C compiler (aarch64-linux-gnu-gcc or cc)")
    compiler = compiler if shutil.which(compiler) else "cc"
    folder = tmp_path_factory.mktemp("elf")
    (folder / "p.c").write_text(_SOURCE)
    subprocess.run(
        [compiler, "-O0", "-static", "-o", str(folder / "p"), str(folder / "p.c")],
        check=True,
        timeout=120,
    )
    return folder / "p"


def test_elf_sections_hold_the_arrays(elf: Path) -> None:
    sections = elf_sections(elf)
    assert sections["runner_rodata"] >= 50000 and sections["runner_data"] >= 30000
    assert 100000 <= sections["runner_bss"] < 100000 + 64 * 1024  # libc's own .bss is small
    assert sections["runner_text"] > 1000  # main and the static C library
    assert sections["runner_flash"] == (
        sections["runner_text"] + sections["runner_rodata"] + sections["runner_data"]
    )
    assert (
        sections["runner_flash"] < elf.stat().st_size
    )  # symbols and other unloaded sections are not counted


def test_elf_sections_follow_the_source(elf: Path, tmp_path: Path) -> None:
    """A bigger array moves only its own section."""
    bigger = tmp_path / "p.c"
    bigger.write_text(_SOURCE.replace("pool[100000]", "pool[300000]"))
    compiler = os.environ.get("CC_AARCH64", "aarch64-linux-gnu-gcc")
    compiler = compiler if shutil.which(compiler) else "cc"
    subprocess.run(
        [compiler, "-O0", "-static", "-o", str(tmp_path / "p"), str(bigger)],
        check=True,
        timeout=120,
    )
    old, new = elf_sections(elf), elf_sections(tmp_path / "p")
    assert new["runner_bss"] - old["runner_bss"] == 200000
    assert new["runner_flash"] == old["runner_flash"]


def test_harness_samples_and_why_not(elf: Path, tmp_path: Path) -> None:
    model = tmp_path / "m.pte"
    model.write_bytes(b"x" * 1234)
    got = harness_samples(
        ["runner_flash", "model_bytes", "peak_rss"], runner=elf, model=model, peak_rss_kib=10
    )
    assert got.samples == {
        "runner_flash": [float(elf_sections(elf)["runner_flash"])],
        "model_bytes": [1234.0],
        "peak_rss": [10240.0],
    }
    script = tmp_path / "runner.sh"
    script.write_text("#!/bin/sh\n")
    got = harness_samples(["runner_text", "peak_rss"], runner=script, model=None)
    assert got.samples == {} and "not an ELF" in got.reasons["runner_text"]
    assert "time" in got.reasons["peak_rss"]


@pytest.mark.skipif(shutil.which("time") is None, reason="the host has no time program")
def test_framed_line_reads_the_peak_of_a_real_process(tmp_path: Path) -> None:
    """The framed line under the host's /bin/sh and time: a process that touches 64 MiB peaks above
    that; one killed by SIGABRT still ends with 134 (the inner shell's status, not time's bare
    signal number)."""
    token = new_token()
    folder = str(tmp_path / "unit")
    touch = f"{sys.executable} -c 'b = bytearray(64 << 20); import sys; sys.exit(3)'"
    text = subprocess.run(
        ["/bin/sh", "-c", frame_unit(touch, folder, token, peak_rss=True)],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    framed = parse_framed(text, token)
    assert (
        framed.status == 3 and framed.peak_rss_kib is not None and framed.peak_rss_kib > 64 * 1024
    )
    assert not framed.problems and PEAK_RSS_FILE not in framed.digests
    abort = f"{sys.executable} -c 'import os; os.abort()'"
    text = subprocess.run(
        ["/bin/sh", "-c", frame_unit(abort, folder, token, peak_rss=True)],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    framed = parse_framed(text, token)
    assert (
        framed.status == 134 and framed.peak_rss_kib is not None and framed.peak_rss_kib < 64 * 1024
    )


def test_a_guest_without_time_still_runs_the_command(tmp_path: Path) -> None:
    """A busybox built without the ``time`` applet: the command runs as it is, with its own status,
    and there is no peak (the record then says why)."""
    token = new_token()
    line = frame_unit("sh -c 'echo out; exit 5'", str(tmp_path / "unit"), token, peak_rss=True)
    path = tmp_path / "bin"
    path.mkdir()
    for tool in ("rm", "mkdir", "printf", "grep", "sha256sum", "sh"):  # everything but time
        (path / tool).symlink_to(shutil.which(tool) or f"/bin/{tool}")
    text = subprocess.run(["/bin/sh", "-c", line], capture_output=True, text=True, timeout=60,
                          env={"PATH": str(path)}).stdout
    framed = parse_framed(text, token)
    assert (framed.output.strip(), framed.status, framed.peak_rss_kib) == ("out", 5, None)


def test_framed_line_without_peak_rss_is_unchanged() -> None:
    assert "time" not in frame_unit("./r", "/tmp/u", "fvpunitx") and frame_unit(
        "./r", "/tmp/u", "fvpunitx"
    ) == frame_unit("./r", "/tmp/u", "fvpunitx", peak_rss=False)


def test_program_planned_reads_the_memory_plan_of_a_real_program(tmp_path: Path) -> None:
    program = flatc_program(tmp_path / "conv.pte")
    expected = sum(read_program_file(program).plan("forward").planned_buffer_sizes)
    measured = harness_samples({"program_planned"}, runner=None, model=program)
    assert measured.samples == {"program_planned": [float(expected)]} and expected > 0


def test_program_planned_has_no_sample_for_a_file_that_is_no_program(tmp_path: Path) -> None:
    model = tmp_path / "resnet8.model"
    model.write_bytes(b"FVPSIMMD" + bytes(56))
    measured = harness_samples({"program_planned"}, runner=None, model=model)
    assert not measured.samples
    assert "not an ExecuTorch program" in measured.reasons["program_planned"]
