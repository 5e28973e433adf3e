"""Scraper throughput on a synthetic console log, and the ratio against a naive line-by-line
scraper.

Run: ``python benchmarks/bench_scrape.py [--mb 8] [--repeat 3]``. Prints MB/s for both, measured
side by side in one run (best of ``--repeat``), and checks that both found the same values. Nothing
is asserted: this is a measurement of the harness itself, not a test.

The log imitates what a unit's console shows: CRLF line ends, colour codes on some lines, ExecuTorch
log lines (CPU time, NPU cycle counter, iteration times), printed tensors, and a kernel message
every few hundred lines, some of them cut into the middle of a runner line.
"""

from __future__ import annotations

import argparse
import random
import re
import time

from fvp_harness.run.scrape import BUILTIN_METRICS, BUILTINS, clean_console_text, scrape
from fvp_harness.scenario.model import MetricSpec

SPECS = [MetricSpec(name=name) for name in BUILTIN_METRICS]


def synthetic_log(megabytes: float, seed: int = 1) -> str:
    """About ``megabytes`` MB of console text from many runner invocations."""
    rng = random.Random(seed)
    parts: list[str] = []
    size = 0
    target = int(megabytes * 1_000_000)
    stamp = 10.0
    while size < target:
        lines = [
            "\x1b[1;32mroot@corstone1000-a320:~#\x1b[0m ./executor_runner --model_path=m.pte "
            "--num_executions=21",
            "I 00:00:00.000100 executorch:executor_runner.cpp:190] Model file m.pte is loaded.",
            "I 00:00:00.000200 executorch:executor_runner.cpp:240] Using method forward",
            "I 00:00:00.012000 executorch:executor_runner.cpp:260] Model loaded in "
            f"{rng.uniform(5, 20):.3f} ms.",
        ]
        for i in range(1, 22):
            cpu = rng.gauss(0.93, 0.01)
            lines.append(
                f"I 00:00:00.{i:06d} executorch:EthosUBackend.cpp:312] EthosUBackend::execute() "
                f"CPU time: {cpu:.3f} ms"
            )
            counter = ("I 00:00:00.000001 executorch:EthosUBackend.cpp:330] Ethos-U Linux delegate "
                       "cycle counter: 85092")
            if rng.random() < 0.02:  # a kernel message lands in the middle of the line
                cut = rng.randrange(40, len(counter) - 2)
                stamp += 0.5
                lines.append(f"{counter[:cut]}[{stamp:12.6f}] random: crng init done")
                lines.append(counter[cut:])
            else:
                lines.append(counter)
            lines.append(
                f"I 00:00:00.{i:06d} executorch:executor_runner.cpp:700] Iteration {i} of 21: "
                f"{cpu + 0.2:.3f} ms"
            )
            if rng.random() < 0.05:
                stamp += 0.1
                lines.append(f"[{stamp:12.6f}] ethosu 1c000000.npu: inference done")
        lines.append(
            "I 00:00:00.030000 executorch:executor_runner.cpp:791] "
            "Model executed successfully 21 time(s) in 19.600000 ms."
        )
        lines.append("I 00:00:00.030100 executorch:executor_runner.cpp:800] 1 outputs: ")
        lines.append("Output 0: tensor(sizes=[1, 10], [-12, 3, 7, 1, 0, -4, 9, 2, -1, 5])")
        text = "\r\n".join(lines) + "\r\n"
        parts.append(text)
        size += len(text)
    return "".join(parts)


_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")


def naive_scrape(text: str) -> dict[str, list[float]]:
    """What a first version usually looks like: split into lines, strip each, try every pattern on
    every line. Kernel fragments are not repaired (so it finds slightly fewer cycle counts)."""
    found: dict[str, list[float]] = {name: [] for name in BUILTINS}
    for raw in text.split("\n"):
        line = _ANSI.sub("", raw.rstrip("\r"))
        for name, builtin in BUILTINS.items():
            match = builtin.pattern.search(line)
            if match is not None:
                group = 2 if name == "run_time" else 1
                value = float(match.group(group))
                if name == "cpu_time" and match.group(2) == "us":
                    value /= 1000
                found[name].append(value)
    return found


def best_of(repeat: int, func: object, *args: object) -> tuple[float, object]:
    best = float("inf")
    result: object = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = func(*args)  # type: ignore[operator]
        best = min(best, time.perf_counter() - start)
    return best, result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=8.0,
                        help="size of the synthetic log (default 8 MB)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per scraper; the best is kept")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes (seconds): only proves the script still runs "
                             "(tests/benchmarks)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.mb, args.repeat = 0.05, 1

    text = synthetic_log(args.mb)
    megabytes = len(text.encode()) / 1e6
    ours_s, ours = best_of(args.repeat, scrape, text, SPECS)
    naive_s, naive = best_of(args.repeat, naive_scrape, text)
    clean_s, _ = best_of(args.repeat, clean_console_text, text)

    print(f"log: {megabytes:.1f} MB, {text.count(chr(10)):,} lines")
    print(f"scrape():        {megabytes / ours_s:8.1f} MB/s  ({ours_s * 1000:.0f} ms)")
    print(f"  of which clean_console_text: {clean_s * 1000:.0f} ms")
    print(f"naive per line:  {megabytes / naive_s:8.1f} MB/s  ({naive_s * 1000:.0f} ms)")
    print(f"ratio:           {naive_s / ours_s:8.1f}x faster than the naive scraper")
    samples = ours.samples  # type: ignore[attr-defined]
    for name in ("cpu_time", "npu_cycles", "iteration_time", "run_time"):
        theirs = len(naive[name])  # type: ignore[index]
        print(f"  {name:15s} scrape(): {len(samples[name]):7d} values   naive: {theirs:7d}")


if __name__ == "__main__":
    main()
