"""``formats/pte.py`` against an independent reader, ``flatc --json`` (Debian's
flatbuffers-compiler) decoding the same bytes with the same schema file: programs flatc itself
builds from JSON (fast, no toolchain), and real programs exported with ExecuTorch 1.5.1 (slow:
the toolchain's Python; skipped when missing, failed under ``CI=true``). Damaged bytes give
``PteError``, nothing else."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from fvp_harness.formats.pte import (
    ETHOS_U_BACKEND,
    SCHEMA_FILE,
    Program,
    PteError,
    is_program,
    read_program,
    read_program_file,
)
from tests.formats.programs import flatc, flatc_program
from tests.formats.toolchain import export_programs


def _flatc_json(path: Path) -> dict:
    subprocess.run(
        [
            flatc(),
            "--json",
            "--strict-json",
            "--raw-binary",
            "--defaults-json",
            "-o",
            str(path.parent),
            str(SCHEMA_FILE),
            "--",
            str(path),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return json.loads(path.with_suffix(".json").read_text())


def _agree(program: Program, decoded: dict) -> None:
    """Every field the reader returns equals flatc's reading of the same bytes."""
    plans = decoded.get("execution_plan", [])
    assert [plan.name for plan in program.plans] == [plan["name"] for plan in plans]
    for ours, theirs in zip(program.plans, plans, strict=True):
        assert [(op.name, op.overload) for op in ours.operators] == [
            (op.get("name", ""), op.get("overload", "")) for op in theirs.get("operators", [])
        ]
        assert [(d.backend, list(d.compile_specs)) for d in ours.delegates] == [
            (d["id"], [spec["key"] for spec in d.get("compile_specs", [])])
            for d in theirs.get("delegates", [])
        ]
        assert list(ours.non_const_buffer_sizes) == theirs.get("non_const_buffer_sizes", [])
        assert (ours.inputs, ours.outputs) == (
            len(theirs.get("inputs", [])),
            len(theirs.get("outputs", [])),
        )
    assert [list(segment) for segment in program.segments] == [
        [segment.get("offset", 0), segment.get("size", 0)]
        for segment in decoded.get("segments", [])
    ]
    assert program.version == decoded.get("version", 0)


PLAN = {
    "version": 0,
    "execution_plan": [
        {
            "name": "forward",
            "inputs": [0],
            "outputs": [2, 3],
            "operators": [
                {"name": "aten::convolution", "overload": "out"},
                {"name": "aten::relu", "overload": "out"},
            ],
            "delegates": [
                {
                    "id": "EthosUBackend",
                    "processed": {"location": "SEGMENT", "index": 0},
                    "compile_specs": [{"key": "target", "value": [1, 2]}],
                }
            ],
            "non_const_buffer_sizes": [0, 64000, 16],
        },
        {"name": "other", "non_const_buffer_sizes": [0]},
    ],
}


@pytest.fixture
def built(tmp_path: Path) -> Path:
    """A program flatc builds from JSON with our schema (no extended header, no segments)."""
    return flatc_program(tmp_path / "p.pte", plan=PLAN)


def test_a_program_flatc_built_reads_as_flatc_reads_it(built: Path) -> None:
    program = read_program_file(built)
    assert program.identifier == "ET12" and program.header is None
    forward = program.plan("forward")
    assert [op.qualified for op in forward.operators] == ["aten::convolution.out", "aten::relu.out"]
    assert forward.backends == (ETHOS_U_BACKEND,) and forward.delegates[0].compile_specs == (
        "target",
    )
    assert forward.planned_buffer_sizes == (
        64000,
        16,
    )  # MethodMeta::memory_planned_buffer_size(0), (1)
    assert (forward.inputs, forward.outputs) == (1, 2)
    assert program.plan("other").planned_buffer_sizes == () and program.backends == (
        ETHOS_U_BACKEND,
    )
    decoded = built.with_name("again.pte")
    decoded.write_bytes(built.read_bytes())
    _agree(program, _flatc_json(decoded))


def test_damaged_bytes_give_a_pte_error_and_nothing_else(built: Path) -> None:
    data = built.read_bytes()
    for cut in range(len(data)):
        try:
            read_program(data[:cut])
        except PteError:
            pass
    for at in range(0, len(data), 3):  # every third byte flipped, one at a time
        damaged = bytearray(data)
        damaged[at] ^= 0xA5
        try:
            read_program(bytes(damaged))
        except PteError:
            pass
    with pytest.raises(PteError, match="identifier b'FVPS' at byte 4"):
        read_program(b"\0\0\0\0FVPSIMMD" + bytes(40))
    with pytest.raises(PteError, match="another schema version"):
        read_program(data[:4] + b"ET99" + data[8:])


def test_the_extended_header_is_checked() -> None:
    head = bytearray(
        b"\x30\0\0\0ET12eh00"
        + (32).to_bytes(4, "little")
        + (4096).to_bytes(8, "little")
        + bytes(16)
        + bytes(8)
    )
    with pytest.raises(PteError, match="says the program is 4096 bytes; the file has 48"):
        read_program(bytes(head))
    assert (
        is_program(bytes(head))
        and not is_program(b"\0\0\0\0FVPSIMMD")
        and not is_program(b"\x7fELF\2\1\1\0")
    )


@pytest.fixture(scope="module")
def real_programs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return export_programs(tmp_path_factory.mktemp("pte"))


@pytest.mark.slow
def test_real_programs_read_as_flatc_reads_them(real_programs: dict[str, Path]) -> None:
    read = {kind: read_program_file(path) for kind, path in real_programs.items()}
    for kind, program in read.items():
        assert (
            program.header is not None
            and program.header.program_size < real_programs[kind].stat().st_size
        )
        _agree(program, _flatc_json(real_programs[kind]))
    portable = read["portable"].plan("forward")
    assert {"aten::convolution.out", "aten::relu.out"} <= {
        op.qualified for op in portable.operators
    }
    assert (
        portable.delegates == ()
        and len(portable.planned_buffer_sizes) == 1
        and portable.planned_buffer_sizes[0]
    )
    assert read["xnnpack"].backends == ("XnnpackBackend",)
    assert read["ethos-u85-256"].backends == (ETHOS_U_BACKEND,)
    assert "target" in read["ethos-u85-256"].plan("forward").delegates[0].compile_specs
