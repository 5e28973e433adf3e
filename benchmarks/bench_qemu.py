"""Boot time and deploy rates on the QEMU guest (``qemu-aarch64-virt``) next to the embedded
simulator's.

Why: a real UART is slow (QEMU's PL011 raises an interrupt per received character) and a real kernel
boots in seconds, not the simulator's configured time; these numbers decide ``deploy.method`` and
timeouts on real targets. Run ``python benchmarks/bench_qemu.py [--kib 256] [--ssh-mib 4] [--boots
3]`` after ``fvp-harness guest build``. Prints per platform: launch-to-shell seconds (median of
``--boots``), console upload of ``--kib`` KiB random bytes (typed as base64) and download of as much
text, ssh (SFTP) upload and download of ``--ssh-mib`` MiB, all sha256 checked; then the console
methods side by side on the same ``--kib`` KiB: base64 lines of ``SAFE_CHUNK_CHARS`` and of
``CHUNK_CHARS`` (the longest line a tty's 4096-byte canonical buffer takes), random bytes and
compressible text, plain and gzip+base64. The simulator runs twice: as fast as the host goes, and
with ``uart_rate`` set to QEMU's measured PL011 rate (``--uart-rate``, bytes/s) so its console
deploy behaves like the real line. Nothing is asserted: this measures, it does not test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from fvp_harness.guest import guest_image
from fvp_harness.profiles import load_profile
from fvp_harness.scenario.model import FvpConfig
from fvp_harness.targets.fvp_target import FvpTarget
from fvp_harness.targets.transfer import CHUNK_CHARS, SAFE_CHUNK_CHARS, upload_console


def _platforms(uart_rate: float) -> dict[str, tuple[FvpConfig, str]]:
    image = guest_image()
    return {
        "qemu": (FvpConfig(binary="qemu-system-aarch64",
                           firmware={"kernel": str(image.kernel), "initrd": str(image.initrd)}),
                 "qemu-aarch64-virt"),
        "sim": (FvpConfig(binary="sim", sim={"boot_seconds": 1.0}), "corstone1000-a320"),
        "sim-uart": (FvpConfig(binary="sim", sim={"boot_seconds": 1.0, "uart_rate": uart_rate}),
                     "corstone1000-a320"),
    }


def _console_methods(target: FvpTarget, binary: Path, text: Path) -> list[str]:
    """Each console method on the same files: lines of two lengths, plain and gzip (random bytes do
    not shrink, so they go plain whatever is asked; text does)."""
    rows = []
    for label, local, chunk, compress in (
        ("random, plain, short lines", binary, SAFE_CHUNK_CHARS, False),
        ("random, plain, long lines ", binary, CHUNK_CHARS, False),
        ("text, plain, long lines   ", text, CHUNK_CHARS, False),
        ("text, gzip, long lines    ", text, CHUNK_CHARS, True),
    ):
        began = time.monotonic()
        how = upload_console(target, local, "/tmp/method.bin", chunk_chars=chunk, compress=compress)
        rows.append(f"  console {label} {_rate(local.stat().st_size, time.monotonic() - began)} "
                    f"[{how}]")
    return rows


def _rate(size: int, seconds: float) -> str:
    return f"{size / 1024 / seconds:8.1f} KiB/s ({seconds:5.1f} s)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kib", type=int, default=256)
    parser.add_argument("--ssh-mib", type=float, default=4.0)
    parser.add_argument("--boots", type=int, default=3)
    parser.add_argument("--only", choices=["qemu", "sim", "sim-uart"], default=None)
    parser.add_argument("--uart-rate", type=float, default=30 * 1024,
                        help="the sim-uart run's uart_rate, bytes/s")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes (seconds): only proves the script still runs "
                             "(tests/benchmarks)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.kib, args.ssh_mib, args.boots = 4, 0.05, 1
    with tempfile.TemporaryDirectory(prefix="bench-qemu-") as folder:
        work = Path(folder)
        binary = work / "random.bin"
        binary.write_bytes(os.urandom(args.kib * 1024))
        text = work / "text.txt"
        text.write_text("".join(f"{os.urandom(39).hex()}\n" for _ in range(args.kib * 1024 // 79)))
        big = work / "big.bin"
        big.write_bytes(os.urandom(int(args.ssh_mib * (1 << 20))))
        for name, (fvp, profile) in _platforms(args.uart_rate).items():
            if args.only and name != args.only:
                continue
            boots = []
            for index in range(args.boots):
                began = time.monotonic()
                with FvpTarget(fvp, load_profile(profile),
                               log_dir=work / f"{name}-{index}") as target:
                    boots.append(time.monotonic() - began)
                    if index:
                        continue
                    began = time.monotonic()
                    target.put(binary, "/tmp/random.bin")
                    console_up = time.monotonic() - began
                    methods = _console_methods(target, binary, text)
                    target.put(text, "/tmp/text.txt")
                    began = time.monotonic()
                    assert target.get("/tmp/text.txt") == text.read_bytes()
                    console_down = time.monotonic() - began
                    target.transfer = "ssh"
                    target.run("true")
                    began = time.monotonic()
                    target.ssh.connect(target._deadline(None, "deploy"))
                    ssh_connect = time.monotonic() - began
                    began = time.monotonic()
                    target.put(big, "/tmp/big.bin")
                    ssh_up = time.monotonic() - began
                    began = time.monotonic()
                    assert target.get("/tmp/big.bin") == big.read_bytes()
                    ssh_down = time.monotonic() - began
            print(f"{name}: launch to shell {statistics.median(boots):.1f} s (median of "
                  f"{len(boots)}: {', '.join(f'{b:.1f}' for b in boots)})")
            print(f"  console upload   {_rate(binary.stat().st_size, console_up)}")
            print(f"  console download {_rate(text.stat().st_size, console_down)}")
            print("\n".join(methods))
            print(f"  ssh connect      {ssh_connect:.1f} s")
            print(f"  ssh upload       {_rate(big.stat().st_size, ssh_up)}")
            print(f"  ssh download     {_rate(big.stat().st_size, ssh_down)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
