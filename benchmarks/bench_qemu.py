"""Boot time and deploy rates on the QEMU guest (``qemu-aarch64-virt``) next to the embedded simulator's.

Why: a real UART is slow (QEMU's PL011 raises an interrupt per received character) and a real kernel boots in
seconds, not the simulator's configured time; these numbers decide ``deploy.method`` and timeouts on real targets.
Run ``python benchmarks/bench_qemu.py [--kib 256] [--ssh-mib 4] [--boots 3]`` after ``fvp-harness guest build``.
Prints per platform: launch-to-shell seconds (median of ``--boots``), console upload of ``--kib`` KiB random bytes
(typed as base64) and download of as much text, ssh (SFTP) upload and download of ``--ssh-mib`` MiB, all sha256
checked. Nothing is asserted: this measures, it does not test.
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


def _platforms() -> dict[str, tuple[FvpConfig, str]]:
    image = guest_image()
    return {
        "qemu": (FvpConfig(binary="qemu-system-aarch64",
                           firmware={"kernel": str(image.kernel), "initrd": str(image.initrd)}), "qemu-aarch64-virt"),
        "sim": (FvpConfig(binary="sim", sim={"boot_seconds": 1.0}), "corstone1000-a320"),
    }


def _rate(size: int, seconds: float) -> str:
    return f"{size / 1024 / seconds:8.1f} KiB/s ({seconds:5.1f} s)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kib", type=int, default=256)
    parser.add_argument("--ssh-mib", type=float, default=4.0)
    parser.add_argument("--boots", type=int, default=3)
    parser.add_argument("--only", choices=["qemu", "sim"], default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-qemu-") as folder:
        work = Path(folder)
        binary = work / "random.bin"
        binary.write_bytes(os.urandom(args.kib * 1024))
        text = work / "text.txt"
        text.write_text("".join(f"{os.urandom(39).hex()}\n" for _ in range(args.kib * 1024 // 79)))
        big = work / "big.bin"
        big.write_bytes(os.urandom(int(args.ssh_mib * (1 << 20))))
        for name, (fvp, profile) in _platforms().items():
            if args.only and name != args.only:
                continue
            boots = []
            for index in range(args.boots):
                began = time.monotonic()
                with FvpTarget(fvp, load_profile(profile), log_dir=work / f"{name}-{index}") as target:
                    boots.append(time.monotonic() - began)
                    if index:
                        continue
                    began = time.monotonic()
                    target.put(binary, "/tmp/random.bin")
                    console_up = time.monotonic() - began
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
            print(f"{name}: launch to shell {statistics.median(boots):.1f} s (median of {len(boots)}: "
                  f"{', '.join(f'{b:.1f}' for b in boots)})")
            print(f"  console upload   {_rate(binary.stat().st_size, console_up)}")
            print(f"  console download {_rate(text.stat().st_size, console_down)}")
            print(f"  ssh connect      {ssh_connect:.1f} s")
            print(f"  ssh upload       {_rate(big.stat().st_size, ssh_up)}")
            print(f"  ssh download     {_rate(big.stat().st_size, ssh_down)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
