"""busybox's applets that run commands or touch the system: xargs, env, seq, sleep, basename,
dirname, touch, hostname, whoami."""

from __future__ import annotations

import os
import posixpath
import re
import threading
import time

from fvp_harness.sim.guest.applets.common import (
    Fail,
    Usage,
    busybox_applet,
    check,
    getopt,
)
from fvp_harness.sim.guest.io import IO, BytesStdin
from fvp_harness.sim.guest.session import Builtin, Session

__all__ = ["APPLETS"]

# --------------------------------------------------------------------------------------------------
# xargs, env


_QUOTE_NAMES = {'"': "double", "'": "single"}


def _xargs_items(data: bytes) -> list[str]:
    """Arguments from xargs' input: blanks separate them; quotes and backslash as busybox reads
    them."""
    text = data.decode("utf-8", "surrogateescape")
    items: list[str] = []
    cur: list[str] = []
    have = False
    quote = ""
    i = 0
    while i < len(text):
        c = text[i]
        i += 1
        if quote:
            if c == quote:
                quote = ""
            elif c == "\n":
                raise Fail(f"unmatched {_QUOTE_NAMES[quote]} quote")
            else:
                cur.append(c)
            continue
        if c in "'\"":
            quote, have = c, True
        elif c == "\\" and i < len(text):
            cur.append(text[i])
            i += 1
            have = True
        elif c in " \t\n\v\f\r":
            if have or cur:
                items.append("".join(cur))
            cur, have = [], False
        else:
            cur.append(c)
    if quote:
        raise Fail(f"unmatched {_QUOTE_NAMES[quote]} quote")
    if have or cur:
        items.append("".join(cur))
    return items


@busybox_applet("[OPTIONS] [PROG ARGS]")
def _xargs(sh: Session, argv: list[str], io: IO) -> int:
    args = argv[1:]
    flags = ""
    per_call = None
    # options stop at the command (xargs does not permute)
    while args and args[0].startswith("-") and args[0] != "-":
        arg = args.pop(0)
        if arg == "--":
            break
        j = 1
        while j < len(arg):
            c = arg[j]
            if c in "ns":
                value = arg[j + 1:] or (args.pop(0) if args else "")
                if not value:
                    raise Usage(f"option requires an argument -- '{c}'")
                if not value.isdigit() or int(value) < 1:
                    raise Fail(f"invalid number '{value}'")
                if c == "n":
                    per_call = int(value)
                break
            if c not in "rt0":
                raise Usage(f"invalid option -- '{c}'")
            flags += c
            j += 1
    no_empty = "r" in flags
    trace = "t" in flags
    command = args or ["echo"]
    data = io.stdin.read()
    if "0" in flags:
        items = data.decode("utf-8", "surrogateescape").split("\0")
        if items and items[-1] == "":
            items.pop()
    else:
        items = _xargs_items(data)
    batches = ([items[k:k + per_call] for k in range(0, len(items), per_call)] if per_call
               else [items])
    if not items:
        if no_empty:
            return 0
        batches = [[]]
    exitcode = 0
    for batch in batches:
        check(sh)
        call = [*command, *batch]
        if trace:
            io.complain(" ".join(call) + "\n")
        sub = sh.subshell()
        found = sub.find_command(call[0], sub.environment())
        if found is None or (isinstance(found, str) and not _exists(sub, found)):
            io.complain(f"xargs: {call[0]}: No such file or directory\n")
            return 127
        status = sub.execute(call, sub.environment(), IO(io.out, io.err, BytesStdin(), None, None))
        if status == 255:
            io.complain(f"xargs: {call[0]}: exited with status 255; aborting\n")
            return 124
        if status in (126, 127):
            return status
        if status > 128:
            io.complain(f"xargs: '{call[0]}' terminated by signal {status - 128}\n")
            return 125
        if status:
            exitcode = 123
    return exitcode


def _exists(sh: Session, path: str) -> bool:
    try:
        return sh.fs.host_path(path, sh.cwd).exists()
    except OSError:
        return False


@busybox_applet("[-i] [-u NAME] [NAME=VALUE]... [PROG ARGS]")
def _env(sh: Session, argv: list[str], io: IO) -> int:
    args = argv[1:]
    env = sh.environment()
    while args and args[0].startswith("-") and args[0] != "-":
        flag = args.pop(0)
        if flag in ("-i", "--ignore-environment"):
            env = {}
        elif flag == "-u" and args:
            env.pop(args.pop(0), None)
        elif flag == "--":
            break
        else:
            raise Usage(f"invalid option -- '{flag[1:2]}'")
    if args[:1] == ["-"]:
        env = {}
        args = args[1:]
    while args and re.fullmatch(r"[^=]+=.*", args[0], re.DOTALL):
        name, _, value = args.pop(0).partition("=")
        env[name] = value
    if not args:
        io.say("".join(f"{k}={v}\n" for k, v in env.items()))
        return 0
    sub = sh.subshell()
    sub.vars = dict(env)
    sub.exported = set(env)
    found = sub.find_command(args[0], env)
    if found is None:
        io.complain(f"env: can't execute '{args[0]}': No such file or directory\n")
        return 127
    return sub.execute(args, env, io)


# --------------------------------------------------------------------------------------------------
# small ones


@busybox_applet("[-w] [-s SEP] [FIRST [INC]] LAST")
def _seq(sh: Session, argv: list[str], io: IO) -> int:
    args = argv[1:]
    sep, width = "\n", False
    while args and (args[0] in ("-w", "-s") or (args[0].startswith("-s") and len(args[0]) > 2)):
        flag = args.pop(0)
        if flag == "-w":
            width = True
        elif flag == "-s":
            if not args:
                raise Usage("option requires an argument -- 's'")
            sep = args.pop(0)
        else:
            sep = flag[2:]
    if not 1 <= len(args) <= 3:
        raise Usage()
    try:
        nums = [float(a) for a in args]
    except ValueError:
        bad = next(a for a in args if not re.fullmatch(r"[-+]?\d*\.?\d+(e[-+]?\d+)?", a))
        raise Fail(f"invalid number '{bad}'") from None
    first, step, last = (1.0, 1.0, nums[0]) if len(nums) == 1 else (
        (nums[0], 1.0, nums[1]) if len(nums) == 2 else (nums[0], nums[1], nums[2]))
    decimals = max((len(a.split(".")[1]) if "." in a else 0) for a in args)
    values = []
    k = 0
    while step and (first + k * step <= last if step > 0 else first + k * step >= last):
        values.append(f"{first + k * step:.{decimals}f}")
        k += 1
        if k % 1000 == 0:
            check(sh)
    if width and values:
        wide = max(len(v) for v in values)
        values = [v.zfill(wide) if not v.startswith("-") else "-" + v[1:].zfill(wide - 1)
                  for v in values]
    if values:
        io.say(sep.join(values) + "\n")
    return 0


def _duration(text: str) -> float:
    m = re.fullmatch(r"(\d*\.?\d+)([smhd]?)", text)
    if not m:
        raise Fail(f"invalid number '{text}'")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]


@busybox_applet("[N]...")
def _sleep(sh: Session, argv: list[str], io: IO) -> int:
    if len(argv) < 2:
        raise Usage()
    seconds = sum(_duration(a) for a in argv[1:])
    done = threading.Event()
    deadline = time.monotonic() + seconds
    while not done.is_set():
        check(sh)
        left = deadline - time.monotonic()
        if left <= 0:
            break
        done.wait(min(left, 0.1))
    return 0


@busybox_applet("FILE [SUFFIX]")
def _basename(sh: Session, argv: list[str], io: IO) -> int:
    if not 2 <= len(argv) <= 3:
        raise Usage()
    path = argv[1].rstrip("/") or ("/" if argv[1] else "")
    base = posixpath.basename(path) if path != "/" else "/"
    if len(argv) == 3 and base.endswith(argv[2]) and base != argv[2]:
        base = base[:-len(argv[2])]
    io.say(base + "\n")
    return 0


@busybox_applet("FILENAME")
def _dirname(sh: Session, argv: list[str], io: IO) -> int:
    if len(argv) != 2:
        raise Usage()
    path = argv[1].rstrip("/")
    if not path:
        io.say(("/" if argv[1] else ".") + "\n")
        return 0
    head = path.rpartition("/")[0].rstrip("/") if "/" in path else "."
    io.say((head or "/") + "\n")
    return 0


@busybox_applet("[-c] FILE...")
def _touch(sh: Session, argv: list[str], io: IO) -> int:
    opts, files = getopt(argv[1:], "cham")
    if not files:
        raise Usage()
    status = 0
    for name in files:
        try:
            host = sh.fs.host_path(name, sh.cwd)
            if host.exists():
                os.utime(host)
            elif not any(o == "c" for o, _ in opts):
                sh.fs.write(name, b"", sh.cwd)
        except OSError as exc:
            io.complain(f"touch: {name}: {exc.strerror or os.strerror(exc.errno or 0)}\n")
            status = 1
    return status


def _hostname(sh: Session, argv: list[str], io: IO) -> int:
    io.say(sh.machine.hostname + "\n")
    return 0


def _df(sh: Session, argv: list[str], io: IO) -> int:
    """busybox ``df [-kP] [PATH...]`` in 1K blocks: the guest's one file system (``rootfs`` on
    ``/``), sized by what really backs it (the host folder the guest's files live in), so a deploy
    that would not fit is seen."""
    names = [arg for arg in argv[1:] if not arg.startswith("-")]
    for name in names:
        try:
            if not sh.fs.host_path(name, sh.cwd).exists():
                raise FileNotFoundError
        except OSError:
            io.complain(f"df: {name}: No such file or directory\n")
            return 1
    st = os.statvfs(sh.fs.host_path("/"))
    total, free = st.f_blocks * st.f_frsize // 1024, st.f_bavail * st.f_frsize // 1024
    used = total - st.f_bfree * st.f_frsize // 1024
    percent = -(-used * 100 // (used + free)) if used + free else 0
    io.say("Filesystem           1K-blocks      Used Available Use% Mounted on\n")
    for _ in names or ["/"]:
        io.say(f"{'rootfs':<20} {total:>9} {used:>9} {free:>9} {percent:>3}% /\n")
    return 0


def _whoami(sh: Session, argv: list[str], io: IO) -> int:
    io.say("root\n")
    return 0

APPLETS: dict[str, Builtin] = {
    "xargs": _xargs,
    "env": _env,
    "seq": _seq,
    "sleep": _sleep,
    "basename": _basename,
    "dirname": _dirname,
    "touch": _touch,
    "hostname": _hostname,
    "whoami": _whoami,
    "df": _df,
}
"""This module's applets, by name."""
