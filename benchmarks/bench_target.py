"""The target layer's own costs on the embedded simulator: deploy throughput, command latency, boot
overhead.

Why: a benchmark session spends its time in boot, deploy and many short guest commands; these
numbers say how much of that is the harness. Run ``python benchmarks/bench_target.py [--mib 4]
[--commands 100] [--boots 3]``. Prints:

- console and ssh deploy throughput (MB/s) for two files of ``--mib`` MiB (sha256 checked in the
  guest): random bytes (incompressible, the worst case) and machine code (the start of this Python's
  shared library, as compressible as a runner binary), with how each went (``console`` plain or
  gzip, ``ssh/sftp``);
- framed command round-trip latency (``:``), median and 95th percentile;
- launch-to-prompt time minus the simulator's configured ``boot_seconds``: the harness's own boot
  overhead (process start, port banner, terminal connects, prompt matching), median of ``--boots``
  boots.

Nothing is asserted: this measures, it does not test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from fvp_harness.run.deploy import Deployer
from fvp_harness.run.instances import open_target
from fvp_harness.scenario.model import Scenario

BOOT_SECONDS = 1.0


def _scenario() -> Scenario:
    return Scenario.model_validate({
        "name": "bench-target",
        "builds": {"before": {"runner": "/bin/true"}},
        "models": {"m": {"file": "/bin/true"}},
        "fvp": {"binary": "sim", "sim": {"boot_seconds": BOOT_SECONDS},
                "timeouts": {"boot": 60, "login": 30, "command": 30, "deploy": 600}},
    })


def _machine_code(size: int) -> bytes:
    """``size`` bytes of real machine code: this Python's shared library (else its executable),
    repeated if short."""
    library = Path(str(sysconfig.get_config_var("LIBDIR") or ""),
                   str(sysconfig.get_config_var("LDLIBRARY") or ""))
    source = library if library.is_file() else Path(os.path.realpath(sys.executable))
    data = source.read_bytes()[:size]
    return (data * (size // max(1, len(data)) + 1))[:size]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=float, default=4.0)
    parser.add_argument("--commands", type=int, default=100)
    parser.add_argument("--boots", type=int, default=3)
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes (seconds): only proves the script still runs "
                             "(tests/benchmarks)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.mib, args.commands, args.boots = 0.05, 3, 1
    with tempfile.TemporaryDirectory(prefix="bench-target-") as folder:
        work = Path(folder)
        size = int(args.mib * (1 << 20))
        blobs = {"random": work / "random.bin", "code": work / "code.bin"}
        blobs["random"].write_bytes(os.urandom(size))
        blobs["code"].write_bytes(_machine_code(size))
        overheads = []
        for boot in range(args.boots):
            began = time.monotonic()
            with open_target(_scenario(), log_dir=work / f"logs{boot}") as target:
                ready = time.monotonic() - began
                prompt = float(target.metadata["boot_seconds"])  # launch -> login prompt
                overheads.append(prompt - BOOT_SECONDS)
                print(f"boot {boot}: launch->prompt {prompt:.3f} s, ready (logged in, shell "
                      f"prepared) {ready:.3f} s")
                if boot:
                    continue
                latencies = []
                for _ in range(args.commands):
                    start = time.perf_counter()
                    target.run(":")
                    latencies.append(time.perf_counter() - start)
                results = {}
                for kind, blob in blobs.items():
                    for method in ("console", "ssh"):
                        deployed = Deployer(target, method=method).deploy(
                            blob, name=f"{method}-{kind}.bin"
                        )
                        results[(kind, method)] = deployed
        size_mb = size / 1e6
        print(f"\ndeploy of {args.mib:g} MiB ({size_mb:.2f} MB), sha256 checked in the guest:")
        for (kind, method), deployed in results.items():
            rate = size_mb / deployed.seconds
            print(f"  {kind:7} {method:8} {deployed.seconds:7.2f} s  {rate:7.2f} MB/s  "
                  f"({deployed.method})")
        latencies.sort()
        p95 = latencies[int(0.95 * (len(latencies) - 1))]
        print(f"\ncommand round trip ({args.commands} x ':'): median "
              f"{statistics.median(latencies) * 1e3:.2f} ms, p95 {p95 * 1e3:.2f} ms")
        print(f"launch-to-prompt minus configured boot ({BOOT_SECONDS} s): median "
              f"{statistics.median(overheads):.3f} s over {len(overheads)} boot(s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
