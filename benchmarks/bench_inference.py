"""Wall time per inference of the four models in the simulator's numpy int8 engine, with NPU and CPU
figures.

Why: the emulated runner runs real inference on every iteration, so its speed bounds how fast
simulated benchmark sessions go. The brief asks for the four models together well under 100 ms per
inference. Run ``python benchmarks/bench_inference.py [--repeat N]``; it prints a table (best and
median of N runs).
"""

from __future__ import annotations

import argparse
import statistics
import time

from fvp_harness.sim.networks.architectures import ARCHITECTURES, get_architecture
from fvp_harness.sim.networks.inference import run_model
from fvp_harness.sim.networks.modelfile import compile_model, make_input
from fvp_harness.sim.npu.cycles import inference_cycles
from fvp_harness.sim.npu.driver_cost import DEFAULT, DriverSizes

MACS = (128, 256, 512, 1024, 2048)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes (seconds): only proves the script still runs "
                             "(tests/benchmarks)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.repeat = 1
    header = (
        f"{'model':18} {'best ms':>8} {'median ms':>9}   NPU cycles at "
        + "/".join(map(str, MACS))
        + "   CPU ms per-inference/reuse"
    )
    print(header)
    total_best = 0.0
    for name in ARCHITECTURES:
        arch = get_architecture(name)
        model = compile_model(arch)
        x = make_input(arch)
        run_model(arch, model.quant, x)  # warm up
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            run_model(arch, model.quant, x)
            times.append((time.perf_counter() - start) * 1000)
        total_best += min(times)
        cycles = "/".join(str(inference_cycles(arch.layers, model.schedule, m)) for m in MACS)
        sizes = DriverSizes.from_mapping(model.sizes.to_dict())
        cpu = (f"{DEFAULT.execute_ms(sizes, 'per-inference'):.2f}/"
               f"{DEFAULT.execute_ms(sizes, 'reuse'):.2f}")
        print(f"{name:18} {min(times):8.2f} {statistics.median(times):9.2f}   {cycles}   {cpu}")
    print(f"{'all four':18} {total_best:8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
