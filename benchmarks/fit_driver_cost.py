"""Fit the driver cost model's constants to the published before/after figures and print them with
the fit.

Why a script: the constants in ``fvp_harness/sim/npu/driver_cost.py`` must come from a reproducible
fit over the four models' compiled sizes, not from hand-picking per model. Run ``python
benchmarks/fit_driver_cost.py`` after changing the size model in ``modelfile.py`` and paste the
printed constants into ``driver_cost.DEFAULT`` and its docstring.
"""

from __future__ import annotations

from fvp_harness.sim.networks.architectures import get_architecture
from fvp_harness.sim.networks.modelfile import sizes_of
from fvp_harness.sim.npu.driver_cost import DriverCostModel, DriverSizes, fit

PUBLISHED: dict[str, tuple[float, float]] = {
    # ExecuTorch PR "Stop re-creating Ethos-U driver objects per inference on Linux": execute() CPU
    # ms before, after
    "resnet8": (2.60, 0.93),
    "ds_cnn": (1.99, 0.93),
    "mobilenet_v1_025": (4.35, 1.01),
    "deep_autoencoder": (3.97, 0.93),
}


def observations() -> list[tuple[str, DriverSizes, float, float]]:
    rows = []
    for name, (before, after) in PUBLISHED.items():
        sizes = DriverSizes.from_mapping(sizes_of(get_architecture(name)).to_dict())
        rows.append((name, sizes, before, after))
    return rows


def table(model: DriverCostModel) -> str:
    lines = [f"{'model':18} {'before pub/model':18} {'after pub/model':17} saved pub/model"]
    for name, sizes, before, after in observations():
        b = model.execute_ms(sizes, "per-inference")
        a = model.execute_ms(sizes, "reuse")
        lines.append(
            f"{name:18} {before:.2f} / {b:.2f}        {after:.2f} / {a:.2f}       "
            f"{1 - after / before:.0%} / {1 - a / b:.0%}"
        )
    return "\n".join(lines)


def main() -> int:
    model = fit([(sizes, before, after) for _, sizes, before, after in observations()])
    print(f"FIXED {model.fixed_ms:.4f} ms   IO {model.io_us_per_kib:.4f} us/KiB")
    print(f"OBJECT {model.object_ms:.4f} ms   BYTE {model.byte_us_per_kib:.4f} us per KiB per pass")
    print(table(model))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
