"""Partly delegated programs: the partitioner, the model file, the per-partition costs and the
runner's K calls."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from fvp_harness.sim import tools
from fvp_harness.sim.networks.architectures import ARCHITECTURES, get_architecture
from fvp_harness.sim.networks.modelfile import (
    ModelFileError,
    compile_model,
    decode_model,
    encode_model,
    sizes_of,
)
from fvp_harness.sim.networks.partition import (
    choose_cpu_layers,
    delegation_of,
    max_partitions,
    planned_edge_bytes,
)
from fvp_harness.sim.npu.cycles import inference_cycles, model_cycles
from fvp_harness.sim.npu.partitions import cpu_layer_ms, partition_cycles, partition_sizes
from fvp_harness.sim.workloads.executor_runner import UsageError
from fvp_harness.sim.workloads.executor_runner.partitioned import partition_factors

from ..workloads.conftest import RunRunner, run_runner  # noqa: F401  (the fixture)


@pytest.mark.parametrize("name", sorted(ARCHITECTURES))
def test_k_partitions_cover_every_layer_once_with_a_cpu_layer_between_each_two(name: str) -> None:
    arch = get_architecture(name)
    for k in range(1, max_partitions(arch) + 1):
        delegation = delegation_of(arch, choose_cpu_layers(arch, k))
        assert len(delegation.partitions) == k and len(delegation.cpu_layers) == k - 1
        covered = sorted([i for p in delegation.partitions for i in p.layers]
                         + list(delegation.cpu_layers))
        assert covered == list(range(len(arch.layers)))
        assert [kind for kind, _ in delegation.steps] == ["npu", "cpu"] * (k - 1) + ["npu"]
        assert (0 in delegation.partitions[0].layers and
                len(arch.layers) - 1 in delegation.partitions[-1].layers)


def test_partition_edges_are_the_tensors_that_cross_them() -> None:
    """ResNet8 with s2_add on the CPU: the first partition hands both the add's inputs (the conv
    branch and the skip convolution) over; the second reads the add's output and writes the model's
    output."""
    arch = get_architecture("resnet8")
    first, second = delegation_of(arch, ("s2_add",)).partitions
    assert first.inputs == (arch.input_name,) and set(first.outputs) == {"s2_conv2", "s2_skip"}
    assert second.inputs == ("s2_add",) and second.outputs == (arch.output_name,)


def test_the_cpu_planned_buffer_also_holds_the_tensors_between_partitions_and_cpu_layers() -> None:
    """ResNet8 with s2_add on the CPU: its two inputs and its output (16x16x32 int8 each, 8192 B)
    are alive at once outside the delegates, so executor_runner.cpp:556's planned buffer grows by
    24576 B; fully delegated, by 0."""
    arch = get_architecture("resnet8")
    assert planned_edge_bytes(arch, delegation_of(arch, ("s2_add",))) == 3 * 8192
    assert planned_edge_bytes(arch, delegation_of(arch)) == 0


def test_too_many_partitions_or_an_unknown_layer_is_refused() -> None:
    arch = get_architecture("deep_autoencoder")  # 10 layers: at most 5 partitions
    with pytest.raises(ValueError, match="at most 5 partitions"):
        choose_cpu_layers(arch, 6)
    with pytest.raises(ValueError, match="no layer 'nope'"):
        compile_model(arch, 0, 256, cpu_layers=("nope",))


def test_the_model_file_keeps_the_cpu_layers_and_a_fully_delegated_file_is_unchanged() -> None:
    arch = get_architecture("ds_cnn")
    whole = compile_model(arch, 0, 256)
    assert b'"delegation"' not in encode_model(whole), (
        "files made before partitions existed read the same")
    split = compile_model(arch, 0, 256, cpu_layers=choose_cpu_layers(arch, 3))
    back = decode_model(encode_model(split))
    assert back.cpu_layers == split.cpu_layers == ("pw2", "dw4")
    data = encode_model(split).replace(b'"cpu_layers":["pw2"', b'"cpu_layers":["zz9"')
    with pytest.raises(ModelFileError, match="no layer 'zz9'"):
        decode_model(data)


def test_per_partition_numbers_come_from_the_partitions_work() -> None:
    arch = get_architecture("resnet8")
    whole = compile_model(arch, 0, 256)
    assert partition_cycles(whole) == (model_cycles(whole),), (
        "a fully delegated model counts as before")
    assert (partition_sizes(whole, whole.delegation.partitions[0]).command_stream
            == sizes_of(arch).command_stream)
    split = compile_model(arch, 0, 256, cpu_layers=choose_cpu_layers(arch, 3))
    cycles = partition_cycles(split)
    for partition, value in zip(split.delegation.partitions, cycles, strict=True):
        layers = [arch.layers[i] for i in partition.layers]
        assert value == inference_cycles(layers, [split.schedule[i] for i in partition.layers], 256)
    sizes = [partition_sizes(split, p) for p in split.delegation.partitions]
    assert sum(s.weights for s in sizes) < sizes_of(arch).weights, (
        "the CPU layers' weights are not the NPU's")
    conv = arch.layers[split.delegation.cpu_layers[0]]
    assert cpu_layer_ms(conv) > cpu_layer_ms(arch.layers[-1]), (
        "a CPU convolution costs more than the small FC")


def test_the_partition_cycles_knob_names_a_partition_and_a_build() -> None:
    knobs = {"runner_partition_cycles": "reuse:2=1.5"}
    assert partition_factors(knobs, "reuse", 3) == (1.0, 1.5, 1.0)
    assert partition_factors(knobs, "per-inference", 3) == (1.0, 1.0, 1.0)
    assert partition_factors({"runner_partition_cycles": "1=0.5"}, "reuse", 2) == (0.5, 1.0)
    for bad, why in (("4=2", "partitions 1..3"), ("2", "FACTOR"), ("x=2", "not"),
                     ("2=0", "0.1..100")):
        with pytest.raises(UsageError, match=why):
            partition_factors({"runner_partition_cycles": bad}, "reuse", 3)


def test_outputs_do_not_depend_on_the_partitioning(run_runner: RunRunner) -> None:  # noqa: F811
    """The CPU layers' int8 work is the same numpy code as the NPU's: the output files are
    byte-identical."""
    arch = get_architecture("resnet8")
    files = {
        f"/root/k{k}.bin": encode_model(
            compile_model(arch, 0, 256, cpu_layers=choose_cpu_layers(arch, k))
        )
        for k in (1, 3)
    }
    outputs = []
    for k in (1, 3):
        status, ctx = run_runner("per-inference", f"--model_path=k{k}.bin", "--inputs=resnet8.in",
                                 "--output_file=out", extra_files=files)
        assert status == 0
        outputs.append(ctx.files["/root/out-0.bin"])
    assert outputs[0] == outputs[1]


def test_sim_model_partitions_on_the_command_line(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    path = tmp_path / "m.model"
    status = tools.main(["model", "ds_cnn", "--partitions", "2", "--npu-cycles", "analytic",
                         "--no-tflite", "-o", str(path)], out, err)
    assert status == 0, err.getvalue()
    assert "2 Ethos-U partitions" in out.getvalue() and "pw3" in out.getvalue()
    info = io.StringIO()
    assert tools.main(["info", str(path)], info, err) == 0
    shown = json.loads(info.getvalue())
    assert ([p["npu_cycles"] for p in shown["partitions"]]
            == list(partition_cycles(decode_model(path.read_bytes()))))
    assert shown["npu_cycles"] == sum(p["npu_cycles"] for p in shown["partitions"])
    assert tools.main(["model", "ds_cnn", "--partitions", "9", "-o", str(path)], out, err) == 2
    assert "at most 6 partitions" in err.getvalue()
