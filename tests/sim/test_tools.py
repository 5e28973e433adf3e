"""``fvp-harness sim ...``: artifacts from the command line, through the simulator's tools and the
harness verb."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import numpy as np
import pytest

from fvp_harness.cli.main import main as harness_main
from fvp_harness.sim import tools
from fvp_harness.sim.networks.modelfile import RunnerArtifact, decode_model, decode_runner


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = tools.main(list(argv), out, err)
    return status, out.getvalue(), err.getvalue()


def test_runner_model_input(tmp_path: Path) -> None:
    status, out, _ = run(
        "runner",
        "--driver",
        "per-inference",
        "--id",
        "before-1",
        "--fault",
        "crash=2",
        "-o",
        str(tmp_path / "bin" / "runner"),
    )
    assert status == 0 and "before-1" in out
    runner = tmp_path / "bin" / "runner"
    assert os.access(runner, os.X_OK)
    assert decode_runner(runner.read_bytes()).build_id == "before-1"

    status, out, _ = run("model", "ds_cnn", "-o", str(tmp_path / "m.bin"), "--seed", "3", "--macs",
                         "512")
    assert status == 0 and "ethos-u85-512" in out
    model = decode_model((tmp_path / "m.bin").read_bytes())
    assert (model.arch.name, model.seed, model.num_macs) == ("ds_cnn", 3, 512)

    status, _, _ = run("input", "ds_cnn", "-o", str(tmp_path / "x.in"), "--seed", "2")
    assert status == 0 and (tmp_path / "x.in").stat().st_size == 490
    again = tmp_path / "y.in"
    run("input", "ds_cnn", "-o", str(again), "--seed", "2")
    assert again.read_bytes() == (tmp_path / "x.in").read_bytes()

    status, out, _ = run("info", str(tmp_path / "m.bin"))
    info = json.loads(out)
    assert info["model"] == "ds_cnn" and info["npu_cycles"] > 0
    assert info["cpu_ms"]["per-inference"] > info["cpu_ms"]["reuse"]
    assert not list(tmp_path.glob(".*tmp*"))  # atomic writes leave no temp files


def test_runner_instrumentation_options(tmp_path: Path) -> None:
    stock = tmp_path / "stock"
    assert run("runner", "--driver", "reuse", "-o", str(stock))[0] == 0
    assert decode_runner(stock.read_bytes()) == RunnerArtifact("reuse")
    status, out, _ = run("runner", "--driver", "reuse", "--build-id", "after-2",
                         "--cpu-time-report",
                         "--log-generation", "old", "-o", str(tmp_path / "r"))  # fmt: skip
    assert status == 0 and "build id after-2" in out and "CPU-time report" in out
    assert (decode_runner((tmp_path / "r").read_bytes())
            == RunnerArtifact("reuse", "after-2", "", True, "old"))
    info = json.loads(run("info", str(tmp_path / "r"))[1])
    assert (info["id"], info["cpu_time_report"], info["log_generation"]) == ("after-2", True, "old")
    # --id is the older spelling of --build-id
    assert run("runner", "--driver", "reuse", "--id", "x", "-o", str(tmp_path / "i"))[0] == 0
    assert decode_runner((tmp_path / "i").read_bytes()) == RunnerArtifact("reuse", "x")
    with pytest.raises(SystemExit):
        run("runner", "--driver", "reuse", "--log-generation", "ancient", "-o", str(tmp_path / "x"))


def test_runner_jitter_option_makes_a_noisy_build(tmp_path: Path) -> None:
    status, out, _ = run("runner", "--driver", "reuse", "--jitter", "0.3",
                         "-o", str(tmp_path / "n"))
    assert status == 0 and "jitter 0.3" in out
    assert decode_runner((tmp_path / "n").read_bytes()) == RunnerArtifact("reuse", jitter=0.3)
    assert json.loads(run("info", str(tmp_path / "n"))[1])["jitter"] == 0.3
    assert run("runner", "--driver", "reuse", "-o", str(tmp_path / "q"))[0] == 0
    assert decode_runner((tmp_path / "q").read_bytes()).jitter is None  # the knob's, as before
    status, _, err = run("runner", "--driver", "reuse", "--jitter", "0.9",
                         "-o", str(tmp_path / "x"))
    assert status == 2 and "jitter" in err and not (tmp_path / "x").exists()


def test_model_cycle_counter_option(tmp_path: Path) -> None:
    assert run("model", "resnet8", "-o", str(tmp_path / "on.bin"))[0] == 0
    status, out, _ = run("model", "resnet8", "--no-cycle-counter", "-o", str(tmp_path / "off.bin"))
    assert status == 0 and "cycle counter off" in out
    assert decode_model((tmp_path / "on.bin").read_bytes()).cycle_counter is True
    assert decode_model((tmp_path / "off.bin").read_bytes()).cycle_counter is False
    assert json.loads(run("info", str(tmp_path / "off.bin"))[1])["cycle_counter"] is False


def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        run("model", "resnet9", "-o", str(tmp_path / "m"))
    assert exc.value.code == 2
    status, _, err = run("runner", "--driver", "reuse", "--fault", "explode", "-o",
                         str(tmp_path / "r"))
    assert status == 2 and "unknown runner fault" in err and not (tmp_path / "r").exists()
    (tmp_path / "junk").write_bytes(b"junk")
    status, _, err = run("info", str(tmp_path / "junk"))
    assert status == 2 and "neither" in err  # bad input, as the harness's exit 2


def test_harness_verb_forwards(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "r8.in"
    assert harness_main(["sim", "input", "resnet8", "-o", str(target)]) == 0
    assert np.frombuffer(target.read_bytes(), dtype=np.int8).size == 3072
    assert harness_main(["sim", "--help"]) == 0
    assert "runner" in capsys.readouterr().out
    assert harness_main(["sim", "runner", "--driver", "nope", "-o", str(tmp_path / "x")]) == 2
