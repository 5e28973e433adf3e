"""The simulator's NPU cycle counter follows Vela: ``sim model`` runs the compiler on the exported
TFLite file and stores its estimate; ``npu.model_cycles`` returns it; the analytic model is the
fallback."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from fvp_harness.sim import tools
from fvp_harness.sim.networks.accelerator import Accelerator
from fvp_harness.sim.networks.architectures import ARCHITECTURES, get_architecture
from fvp_harness.sim.networks.estimate import VelaEstimate
from fvp_harness.sim.networks.modelfile import (
    ModelFileError,
    compile_model,
    decode_model,
    encode_model,
)
from fvp_harness.sim.npu import tool, vela
from fvp_harness.sim.npu.cycles import cycle_source, inference_cycles, model_cycles
from fvp_harness.sim.npu.vela import VelaFailed, estimate_model, run_vela

pytest.importorskip("ethosu.vela",
                    reason="ethos-u-vela is a dependency of the simulator's NPU cycles")


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = tools.main(list(argv), out, err)
    return status, out.getvalue(), err.getvalue()


def _vela_summary(folder: Path, stem: str) -> dict[str, str]:
    (path,) = folder.glob(f"{stem}_summary_*.csv")
    with path.open(newline="") as handle:
        (row,) = csv.DictReader(handle)
    return row


@pytest.mark.parametrize("name", sorted(ARCHITECTURES))
def test_the_counter_at_256_macs_is_velas_estimate(
    name: str, model_files: dict[str, bytes], tmp_path: Path
) -> None:
    """Each of the four models: the counter is what Vela estimates for the exported TFLite file with
    ExecuTorch's U85 settings (read from the summary CSV Vela writes), and Vela's per-layer
    estimates add up to it."""
    model, tflite = estimate_model(decode_model(model_files[name]))
    again = run_vela(tflite, Accelerator("ethos-u85", 256), keep_dir=tmp_path, stem=name)
    summary = _vela_summary(tmp_path, name)
    assert (summary["system_config"], summary["memory_mode"]) == (
        "Ethos_U85_SYS_DRAM_Mid",
        "Sram_Only",
    )
    assert model_cycles(model) == round(float(summary["cycles_total"])) == again.cycles
    assert model.vela is not None and model.vela.tflite_sha256 == again.tflite_sha256
    assert sum(layer.cycles for layer in model.vela.layers) == model.vela.cycles


@pytest.mark.slow
def test_sim_model_counters_equal_the_vela_command_on_the_written_files(tmp_path: Path) -> None:
    """End to end through both command lines: ``sim model NAME --macs 256`` writes the model and its
    TFLite file; the ``vela`` program, run on that file with ExecuTorch's U85 flags, estimates
    exactly the file's counter."""
    for name in ARCHITECTURES:
        status, out, err = run("model", name, "-o", str(tmp_path / f"{name}.bin"), "--macs", "256")
        assert status == 0, err
        model = decode_model((tmp_path / f"{name}.bin").read_bytes())
        done = subprocess.run(
            [sys.executable, "-m", "ethosu.vela", str(tmp_path / f"{name}.tflite"),
             "--accelerator-config",
             "ethos-u85-256", "--config", "Arm/vela.ini", "--system-config",
             "Ethos_U85_SYS_DRAM_Mid",
             "--memory-mode", "Sram_Only", "--output-format", "raw", "--output-dir",
             str(tmp_path / "vela")],
            capture_output=True, text=True, timeout=300, check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert model_cycles(model) == round(
            float(_vela_summary(tmp_path / "vela", name)["cycles_total"])
        ), name
        assert f"NPU cycles {model_cycles(model)} per inference: Vela" in out


def test_the_ds_cnn_mac_scaling_is_velas(tmp_path: Path) -> None:
    """128 -> 2048 MACs: the counters' ratio is Vela's ratio for the same TFLite file (the issue:
    the analytic model said x7, Vela about x4.5)."""
    counters = {}
    for macs in ("128", "2048"):
        assert run("model", "ds_cnn", "-o", str(tmp_path / f"m{macs}.bin"), "--macs", macs)[0] == 0
        counters[macs] = model_cycles(decode_model((tmp_path / f"m{macs}.bin").read_bytes()))
    tflite = (tmp_path / "m128.tflite").read_bytes()
    assert tflite == (tmp_path / "m2048.tflite").read_bytes(), "one network, two configurations"
    vela = {macs: run_vela(tflite, Accelerator("ethos-u85", int(macs)),
                           keep_dir=tmp_path / macs).cycles
            for macs in ("128", "2048")}
    ratio, velas = counters["128"] / counters["2048"], vela["128"] / vela["2048"]
    assert abs(ratio / velas - 1) < 0.01
    assert 3.5 < velas < 6, velas


def test_the_estimate_travels_in_the_model_file() -> None:
    model, _ = estimate_model(compile_model(get_architecture("deep_autoencoder"), 0, 512))
    decoded = decode_model(encode_model(model))
    assert decoded.vela == model.vela and model_cycles(decoded) == model.vela.cycles
    version = vela.vela_version()
    assert cycle_source(decoded) == (f"Vela {version} (ethos-u85-512, Ethos_U85_SYS_DRAM_Mid, "
                                     "Sram_Only)")
    assert model.vela.clock_hz == 1_000_000_000


def test_a_file_without_an_estimate_counts_with_the_analytic_model(
        model_files: dict[str, bytes]) -> None:
    """Older files and files made without Vela: the fallback, unchanged."""
    model = decode_model(model_files["resnet8"])
    assert model.vela is None and b'"vela"' not in encode_model(model)
    assert model_cycles(model) == inference_cycles(model.arch.layers, model.schedule, 256)
    assert cycle_source(model).startswith("analytic cycle model")


def test_a_broken_or_mismatched_estimate_is_refused() -> None:
    model, _ = estimate_model(compile_model(get_architecture("deep_autoencoder"), 0, 512))
    assert model.vela is not None
    wrong = dataclasses.replace(model,
                                vela=dataclasses.replace(model.vela, accelerator="ethos-u85-256"))
    with pytest.raises(ModelFileError,
                       match="estimate is for ethos-u85-256, the model for ethos-u85-512"):
        decode_model(encode_model(wrong))
    data = encode_model(model).replace(b'"cycles":', b'"cycled":', 1)
    with pytest.raises(ModelFileError, match="vela estimate lacks 'cycles'"):
        decode_model(data)
    with pytest.raises(ValueError, match="0 cycles"):
        VelaEstimate.from_dict({**model.vela.to_dict(), "cycles": 0})


def test_u55_uses_executorchs_corstone300_settings(tmp_path: Path) -> None:
    status, out, err = run("model", "ds_cnn", "--accelerator", "ethos-u55-128", "-o",
                           str(tmp_path / "u55.bin"), "--vela-dir", str(tmp_path / "vela"))
    assert status == 0, err
    model = decode_model((tmp_path / "u55.bin").read_bytes())
    assert model.vela is not None
    assert (model.vela.system_config, model.vela.memory_mode) == (
        "Ethos_U55_High_End_Embedded",
        "Shared_Sram",
    )
    assert model_cycles(model) == round(
        float(_vela_summary(tmp_path / "vela", "u55")["cycles_total"])
    )
    assert (tmp_path / "vela" / "u55_per-layer.csv").is_file() and "Vela's reports:" in out


def test_sim_model_options(tmp_path: Path) -> None:
    # analytic on request: no estimate, the TFLite file all the same, somewhere else
    status, out, _ = run("model", "ds_cnn", "-o", str(tmp_path / "a.bin"), "--npu-cycles",
                         "analytic", "--tflite", str(tmp_path / "t" / "a.tflite"))
    assert status == 0 and "analytic cycle model (--npu-cycles analytic)" in out
    assert decode_model((tmp_path / "a.bin").read_bytes()).vela is None
    assert (tmp_path / "t" / "a.tflite").is_file() and not (tmp_path / "a.tflite").exists()
    # no TFLite file
    assert run("model", "deep_autoencoder", "-o", str(tmp_path / "n.bin"), "--no-tflite")[0] == 0
    assert not (tmp_path / "n.tflite").exists()
    # an output named .tflite leaves no place for the TFLite file
    status, _, err = run("model", "deep_autoencoder", "-o", str(tmp_path / "m.tflite"))
    assert status == 1 and "--tflite PATH" in err
    # a system config Vela does not know fails the command: no silent fallback
    status, _, err = run("model", "deep_autoencoder", "-o", str(tmp_path / "x.bin"),
                         "--vela-system-config", "Nope")
    assert status == 1 and "Vela 5" in err and not (tmp_path / "x.bin").exists()
    # sim info says where the counter comes from
    run("model", "ds_cnn", "-o", str(tmp_path / "d.bin"))
    info = json.loads(run("info", str(tmp_path / "d.bin"))[1])
    assert (info["npu_cycles_source"].startswith("Vela ") and
            info["vela"]["cycles"] == info["npu_cycles"])
    assert set(info["vela"]["layers"]) >= {"conv1", "dw1", "pw4", "avgpool", "fc"}


def test_without_vela_sim_model_falls_back_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tool, "vela_version", lambda: None)
    status, _, err = run("model", "ds_cnn", "-o", str(tmp_path / "v.bin"), "--npu-cycles", "vela")
    assert status == 1 and "Vela is not installed" in err
    status, out, _ = run("model", "ds_cnn", "-o", str(tmp_path / "a.bin"))
    assert status == 0 and "NPU cycles from the analytic cycle model (Vela is not installed)" in out
    assert decode_model((tmp_path / "a.bin").read_bytes()).vela is None

    def no_schema(model: object) -> bytes:
        raise ImportError("writing TFLite needs the TFLite schema code Vela ships: pip install "
                          "ethos-u-vela")

    monkeypatch.setattr(tool, "export_tflite", no_schema)
    status, out, _ = run("model", "ds_cnn", "-o", str(tmp_path / "b.bin"))
    assert (status == 0 and "no TFLite file: writing TFLite needs" in out and
            not (tmp_path / "b.tflite").exists())
    status, _, err = run("model", "ds_cnn", "-o", str(tmp_path / "c.bin"), "--tflite",
                         str(tmp_path / "c.tflite"))
    assert status == 1 and "pip install ethos-u-vela" in err


def test_run_vela_reports_what_went_wrong(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vela, "vela_version", lambda: None)
    with pytest.raises(VelaFailed, match="not installed"):
        run_vela(b"", Accelerator("ethos-u85", 256))
    monkeypatch.undo()
    with pytest.raises(VelaFailed, match="Vela 5"):
        run_vela(b"not a flatbuffer", Accelerator("ethos-u85", 256))
