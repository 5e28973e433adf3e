"""busybox's ``time`` in the simulated guest, and the emulated runner's resident memory it reports:
the applet's options, messages and statuses as busybox 1.35 gives them (the QEMU lane's
test_memory.py runs the harness's line on the real busybox), and ``%M`` from what the runner holds
(its image, files, planned buffer, driver buffers)."""

from __future__ import annotations

import pytest

from fvp_harness.sim.guest.session import SHELL_RSS_KIB
from fvp_harness.sim.networks import architectures, modelfile
from fvp_harness.sim.networks.partition import choose_cpu_layers
from fvp_harness.sim.npu.driver_cost import DriverSizes
from fvp_harness.sim.workloads.executor_runner.run import RUNNER_IMAGE_BYTES
from tests.sim.guest.test_shell_language import Guest, guest  # noqa: F401 (the fixture)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("time -f '%M %x' sh -c 'true; exit $?'", ("", f"{SHELL_RSS_KIB} 0\n", 0)),
        (
            "time -f 'rss %M' sh -c 'exit 3'; echo $?",
            ("3\n", f"Command exited with non-zero status 3\nrss {SHELL_RSS_KIB}\n", 0),
        ),
        ("time -p true", ("", "real 0.00\nuser 0.00\nsys 0.00\n", 0)),
        ("time true", ("", "real\t0m 0.00s\nuser\t0m 0.00s\nsys\t0m 0.00s\n", 0)),
        (
            "time -f %M /no/such/prog",
            (
                "",
                "time: can't execute '/no/such/prog': No such file or directory\n"
                f"Command exited with non-zero status 127\n{SHELL_RSS_KIB}\n",
                127,
            ),
        ),
        ("time -f '%M' -o /tmp/t sh -c 'echo hi'; cat /tmp/t", (f"hi\n{SHELL_RSS_KIB}\n", "", 0)),
        (
            "time -f 'a' -o /tmp/t true; time -a -f 'b' -o /tmp/t true; cat /tmp/t",
            ("a\nb\n", "", 0),
        ),
        (
            "time -f 'x %C' sh -c 'exit 0' -x",
            ("", "x sh -c exit 0 -x\n", 0),
        ),  # PROG's options stay PROG's
    ],
)
def test_time_applet(guest: Guest, line: str, expected: tuple[str, str, int]) -> None:  # noqa: F811
    assert guest.run(line) == expected


def test_time_usage_and_verbose(guest: Guest) -> None:  # noqa: F811
    out, err, status = guest.run("time")
    assert (out, status) == ("", 1) and "Usage: time [-vpa] [-o FILE] PROG ARGS" in err
    out, err, status = guest.run("time -v sh -c 'exit 2'")
    assert status == 2 and '\tCommand being timed: "sh -c exit 2"\n' in err
    assert f"\tMaximum resident set size (kbytes): {SHELL_RSS_KIB}\n" in err and err.endswith(
        "\tExit status: 2\n"
    )


def _deploy(
    guest: Guest,  # noqa: F811 (the fixture's name)
    driver: str,
    partitions: int = 1,
) -> modelfile.CompiledModel:
    arch = architectures.get_architecture("ds_cnn")
    cpu_layers = choose_cpu_layers(arch, partitions) if partitions > 1 else ()
    model = modelfile.compile_model(arch, num_macs=guest.machine.npu_macs, cpu_layers=cpu_layers)
    guest.machine.fs.write("/root/model.pte", modelfile.encode_model(model))
    guest.machine.fs.write(
        f"/root/runner-{driver}", modelfile.encode_runner(modelfile.RunnerArtifact(driver))
    )
    assert guest.run(f"chmod +x /root/runner-{driver}")[2] == 0
    return model


def _peak_kib(guest: Guest, driver: str, executions: int = 3) -> int:  # noqa: F811
    _, err, status = guest.run(
        f"time -f 'rss %M' sh -c './runner-{driver} --model_path=model.pte "
        f"--num_executions={executions} --print_output=none; exit $?'"
    )
    assert status == 0, err
    return int(err.strip().splitlines()[-1].split()[1])


def test_runner_peak_is_what_it_holds(guest: Guest) -> None:  # noqa: F811
    """One partition: both builds hold the driver's buffers at their peak (before: during each
    inference; after: from method load on), so their peaks are equal, and equal to the image, the
    program file, the planned buffer and the driver's buffers, page-rounded."""
    model = _deploy(guest, "reuse")
    _deploy(guest, "per-inference")
    driver = DriverSizes.from_mapping(model.sizes.to_dict()).buffer_bytes
    planned = -(-model.sizes.input // 16) * 16 + -(-model.sizes.output // 16) * 16
    held = RUNNER_IMAGE_BYTES + len(guest.machine.fs.read("/root/model.pte")) + planned + driver
    assert _peak_kib(guest, "reuse") == _peak_kib(guest, "per-inference") == -(-held // 4096) * 4
    assert _peak_kib(guest, "reuse", executions=1) == _peak_kib(
        guest, "reuse", executions=5
    )  # no growth per run


def test_partitioned_reuse_holds_every_partition(guest: Guest) -> None:  # noqa: F811
    """Three partitions: the reuse build keeps all three partitions' buffers, the per-inference
    build holds one call's at a time, so the reuse build's peak is higher by what the other
    partitions hold."""
    _deploy(guest, "reuse", partitions=3)
    _deploy(guest, "per-inference", partitions=3)
    assert _peak_kib(guest, "reuse") > _peak_kib(guest, "per-inference") > SHELL_RSS_KIB
