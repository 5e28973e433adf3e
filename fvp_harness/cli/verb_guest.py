"""``fvp-harness guest build``: the QEMU guest (``qemu-aarch64-virt``) from Debian's arm64 packages,
cached.

Wiring only: ``fvp_harness.guest.build_guest`` does the work (private apt state, ``dpkg-deb -x``,
initramfs); this verb prints its progress and where the files are, and exits 0 when the guest is
there (built now or before).
"""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["ORDER", "register"]

ORDER = 85


def _handler(args: argparse.Namespace) -> int:
    from fvp_harness import guest  # late: only this verb needs the builder

    image = guest.build_guest(args.dir, force=args.force, log=lambda line: print(line, flush=True))
    print(f"kernel: {image.kernel}\ninitrd: {image.initrd}")
    return 0


def register(subparsers: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    parser = subparsers.add_parser(
        "guest", parents=[common],
        help="build the QEMU Linux guest (qemu-aarch64-virt) from Debian packages",
        description="Build the guest the qemu-aarch64-virt profile boots: a Debian arm64 kernel "
                    "and a busybox + "
        "dropbear initramfs, from Debian's packages through a private apt state (the system's apt "
        "state is not touched). Idempotent: a current guest is left as it is. Needs root, apt-get "
        "and dpkg-deb.")
    verbs = parser.add_subparsers(dest="guest_verb", required=True, metavar="build")
    build = verbs.add_parser("build", parents=[common],
                             help="build (or find) the guest's kernel and initramfs")
    build.add_argument("--dir", type=Path, default=None,
                       help="cache folder (default $FVP_HARNESS_GUEST or "
                            "~/.cache/fvp-harness/guest)")
    build.add_argument("--force", action="store_true",
                       help="rebuild even when the cached guest is current")
    build.set_defaults(handler=_handler)
