"""Platform checks and an A/B measurement as ordinary pytest tests (the fvp-harness pytest plugin).

Run it on the embedded simulator from the repository root::

    pytest examples/test_fvp_example.py --fvp-scenario scenarios/smoke.yaml --fvp sim -n 0

or on a real Corstone-1000 FVP with ``--fvp /path/to/FVP_Corstone-1000-A320`` (the scenario's ``fvp.firmware``
must name your images). The three tests share one booted instance: the boot is paid once for the session.
docs/pytest-plugin.md explains every fixture and option.
"""

from __future__ import annotations

import shlex

# The example asks for the plugin itself, so a bare `pytest examples/test_fvp_example.py` skips its three tests with
# the reason (no FVP configured) instead of erroring on fixtures pytest does not know.
pytest_plugins = ["fvp_harness.pytest_plugin"]


def test_guest_is_up(fvp_target):
    """``fvp_target``: a booted, logged-in instance; ``run`` returns the exit status and the clean output."""
    result = fvp_target.run("uname -a")
    assert result.ok, result.output
    assert "Linux" in result.output
    assert "corstone1000" in fvp_target.run("hostname", check=True).output


def test_after_build_runs_the_model(fvp_target, fvp_deployed):
    """``fvp_deployed``: the scenario's builds and models are in the guest (deployed once); run one by hand."""
    runner = fvp_deployed.runner("after")
    model = fvp_deployed.model("ds_cnn")
    inputs = ",".join(fvp_deployed.inputs("ds_cnn"))
    command = " ".join([shlex.quote(runner), f"--model_path={shlex.quote(model)}",
                        f"--inputs={shlex.quote(inputs)}", "--num_executions=2", "--output_file=/tmp/example-out"])
    result = fvp_target.run(command)
    assert result.ok, result.output
    assert "Model executed successfully 2 time(s)" in result.output


def test_driver_reuse_saves_cpu_time(fvp_ab):
    """``fvp_ab``: the scenario's A/B run (here with two repetitions) on the same instance, as assertions."""
    result = fvp_ab(repetitions=2)
    assert result.verdicts["ds_cnn"] == "faster", result.markdown
    assert result.saved("ds_cnn") > 20          # percent of CPU time per inference
    assert result.identical("outputs")          # both builds wrote the same output tensors
    assert result.identical("npu_cycles")       # and kept the NPU busy for the same cycles
    assert set(result.frame["build"]) == {"before", "after"}
