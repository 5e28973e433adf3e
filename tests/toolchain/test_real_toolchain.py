"""The real toolchain: ``fvp-harness toolchain export`` makes real ``.pte`` programs of the
simulator's networks, ExecuTorch's own runtime runs them, and they compute what the simulator
computes.

Needs the built toolchain (``fvp-harness toolchain build``, about 4 minutes and 2 GB): elsewhere the
tests skip saying so; under ``CI=true`` (``.ci/run`` builds it) a missing toolchain fails them.

Tolerances, measured (docs/real-executorch.md): the portable program against eager PyTorch of the
same module differs by at most 1.3e-6 (deep_autoencoder; float32 summation order), so 1e-5. Against
the simulator's int8 inference on the same input (its output dequantised) the float program differs
by what int8 rounding accumulates over the network's layers: at most 0.92, 0.78, 3.9 and 1.75 output
quantisation steps (resnet8, ds_cnn, mobilenet_v1_025's 28 layers, deep_autoencoder), so 5 steps,
and the same arg-max.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from fvp_harness.sim.networks.architectures import ARCHITECTURES, get_architecture
from fvp_harness.sim.networks.inference import run_model
from fvp_harness.sim.networks.modelfile import compile_model, make_input
from fvp_harness.sim.npu.vela import estimate_model
from fvp_harness.toolchain import Toolchain, ToolchainError, find_toolchain
from tests.e2e.cli import run_cli
from tests.helpers import REPO, skip_or_fail_in_ci

pytestmark = pytest.mark.slow

EAGER_TOLERANCE = 1e-5
SIM_STEPS = 5.0
RUN_PTE = Path(__file__).with_name("run_pte.py")


@pytest.fixture(scope="module")
def chain() -> Iterator[Toolchain]:
    try:
        yield find_toolchain()
    except ToolchainError as exc:
        skip_or_fail_in_ci(
            f"needs the ExecuTorch toolchain: {exc}",
            f".ci/run builds the ExecuTorch toolchain, so CI must have it: {exc}",
        )


def _export(tmp_path: Path, *args: str) -> None:
    done = run_cli(tmp_path, "toolchain", "export", *args, timeout=900)
    assert done.returncode == 0, done.stderr + done.stdout


def _run_pte(
    chain: Toolchain, network: str, program: Path, input_file: Path
) -> dict[str, np.ndarray]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [str(chain.python), str(RUN_PTE), network, str(program), str(input_file)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return {key: np.asarray(values, dtype=np.float64) for key, values in found.items()}


@pytest.mark.parametrize("network", list(ARCHITECTURES))
def test_the_portable_program_computes_the_simulators_network(
    chain: Toolchain, tmp_path: Path, network: str
) -> None:
    _export(tmp_path, network, "--kind", "portable", "-o", "net.pte", "--input-out", "net.bin")
    program, input_file = tmp_path / "net.pte", tmp_path / "net.bin"
    assert program.read_bytes()[4:8] == b"ET12"
    arch = get_architecture(network)
    sim_input = make_input(arch, 0)
    assert np.array_equal(
        np.fromfile(input_file, dtype="<f4"), sim_input.ravel().astype(np.float32) / 128
    )
    outputs = _run_pte(chain, network, program, input_file)
    assert outputs["pte"].shape == (int(np.prod(arch.output_shape)),)
    assert np.abs(outputs["pte"] - outputs["eager"]).max() <= EAGER_TOLERANCE
    model = compile_model(arch, 0)
    scale, zero_point = model.output_quant
    simulated = scale * (
        run_model(arch, model.quant, sim_input).ravel().astype(np.float64) - zero_point
    )
    assert int(outputs["pte"].argmax()) == int(simulated.argmax())
    assert np.abs(outputs["pte"] - simulated).max() <= SIM_STEPS * scale


def test_exports_are_deterministic_and_each_kind_is_a_program(
    chain: Toolchain, tmp_path: Path
) -> None:
    for kind in ("portable", "xnnpack", "ethos-u85-256"):
        _export(tmp_path, "ds_cnn", "--kind", kind, "-o", f"{kind}-1.pte")
        _export(tmp_path, "ds_cnn", "--kind", kind, "-o", f"{kind}-2.pte")
        first, second = ((tmp_path / f"{kind}-{i}.pte").read_bytes() for i in (1, 2))
        assert first == second, f"{kind}: two exports differ"
    _export(tmp_path, "ds_cnn", "--input-only", "-o", "in-1.bin")
    _export(tmp_path, "ds_cnn", "--input-only", "-o", "in-2.bin")
    assert (tmp_path / "in-1.bin").read_bytes() == (tmp_path / "in-2.bin").read_bytes()
    assert len((tmp_path / "in-1.bin").read_bytes()) == 49 * 10 * 4
    _export(tmp_path, "ds_cnn", "--input-only", "--seed", "1", "-o", "in-seed1.bin")
    seeded = make_input(get_architecture("ds_cnn"), 1).ravel().astype(np.float32) / 128
    assert np.array_equal(np.fromfile(tmp_path / "in-seed1.bin", dtype="<f4"), seeded)
    xnnpack = (tmp_path / "xnnpack-1.pte").read_bytes()
    ethos = (tmp_path / "ethos-u85-256-1.pte").read_bytes()
    assert b"XnnpackBackend" in xnnpack and b"EthosUBackend" in ethos
    assert b"vela_bin_stream" in ethos
    outputs = _run_pte(chain, "ds_cnn", tmp_path / "xnnpack-1.pte", tmp_path / "in-1.bin")
    assert np.abs(outputs["pte"] - outputs["eager"]).max() <= EAGER_TOLERANCE


def test_the_ethos_u_export_reports_what_vela_placed(chain: Toolchain, tmp_path: Path) -> None:
    done = run_cli(
        tmp_path,
        "toolchain",
        "export",
        "ds_cnn",
        "--kind",
        "ethos-u85-256",
        "-o",
        "u85.pte",
        "--vela-report",
        "vela.json",
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads((tmp_path / "vela.json").read_text())
    assert len(rows) == 1, "one partition: the whole network on the NPU"
    row = rows[0]
    assert row["accelerator_configuration"] == "Ethos_U85_256"
    # DS-CNN needs no input transpose (one channel), so the real flow's Vela and the simulator's own
    # Vela run on its TFLite export count the same cycles and MACs (docs/real-executorch.md)
    simulated = estimate_model(compile_model(get_architecture("ds_cnn"), 0))[0].vela
    assert simulated is not None
    assert int(float(row["cycles_total"])) == simulated.cycles
    assert int(row["nn_macs"]) == sum(layer.macs for layer in simulated.layers)
    assert (
        row["command_stream_bytes"] > 0
        and row["weight_bytes"] > 0
        and float(row["cycles_total"]) > 0
    )
    assert "vela partition 0:" in done.stdout


def test_an_unknown_network_exits_2_with_the_list(chain: Toolchain, tmp_path: Path) -> None:
    done = run_cli(tmp_path, "toolchain", "export", "resnet9", "-o", "x.pte", timeout=120)
    assert done.returncode == 2, done.stderr
    assert (
        "unknown network 'resnet9' (known: resnet8, ds_cnn, mobilenet_v1_025, deep_autoencoder)"
        in done.stderr
    )
    assert not (tmp_path / "x.pte").exists() and not list(tmp_path.glob(".x.pte*"))


def test_a_second_build_is_already_current(chain: Toolchain, tmp_path: Path) -> None:
    done = run_cli(tmp_path, "toolchain", "build", "--dir", str(chain.folder), timeout=120)
    assert done.returncode == 0, done.stderr
    assert "already current" in done.stdout and f"python: {chain.python}" in done.stdout
