"""The guest shell's builtin commands: echo, printf, cat, mkdir, rm, cd, pwd, ls, chmod, base64,
sha256sum, stty, export, unset, set, uname, sync, dmesg, poweroff, true, false, ``:``, exit,
``.``/source, test/``[`` (``guest/shell.py`` has the language; ``applets/`` the everyday tools such
as head, grep and sort, merged into ``BUILTINS`` here).

Each is ``f(shell, argv, io) -> exit status`` and prints busybox's messages; ``BUILTINS`` maps names
to them. They read and change the calling shell (cwd, variables, ``$?``; typed as
``session.Session``) and its machine, and poll ``_check(shell)`` in loops so Ctrl-C interrupts them.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import posixpath
import re
import shutil
import stat
import time

from fvp_harness.sim.guest import programs
from fvp_harness.sim.guest.applets import APPLETS
from fvp_harness.sim.guest.applets.gzip import GZIP_APPLETS
from fvp_harness.sim.guest.io import IO, VARIABLE_NAME, ExitShell, LoopControl, read_chunks
from fvp_harness.sim.guest.session import Builtin, Session

__all__ = ["BUILTINS", "Builtin"]

"""A builtin command: ``(shell, argv, io) -> exit status``."""


def _check(sh: Session) -> None:
    if sh.interrupted():
        raise programs.ProgramInterrupted


def _true(sh: Session, argv: list[str], io: IO) -> int:
    return 0


def _false(sh: Session, argv: list[str], io: IO) -> int:
    return 1


def _unset(sh: Session, argv: list[str], io: IO) -> int:
    for name in argv[1:]:
        if name in ("-v", "-f"):
            continue
        sh.vars.pop(name, None)
        sh.exported.discard(name)
    return 0


def _set(sh: Session, argv: list[str], io: IO) -> int:
    args = argv[1:]
    if not args:
        for name in sorted(sh.vars):
            value = sh.vars[name].replace("'", "'\\''")
            io.say(f"{name}='{value}'\n")
        return 0
    while args and args[0][:1] in ("-", "+") and args[0] not in ("-", "+"):
        arg = args.pop(0)
        if arg == "--":
            sh.args = args
            return 0
        for letter in arg[1:]:
            if letter not in sh.OPTIONS:
                io.complain(f"{sh.argv0}: set: illegal option {arg[0]}{letter}\n")
                return 2
            if arg[0] == "-":
                sh.options.add(letter)
            else:
                sh.options.discard(letter)
    if args:
        sh.args = args
    return 0


def _source(sh: Session, argv: list[str], io: IO) -> int:
    if len(argv) < 2:
        io.complain(f"{sh.argv0}: {argv[0]}: filename argument required\n")
        return 2
    name = argv[1]
    path = name if "/" in name else sh.find_command(name)
    try:
        text = sh.fs.read(path if isinstance(path, str) else name, sh.cwd)
    except OSError:
        io.complain(f"{sh.argv0}: {argv[0]}: can't open '{name}'\n")
        return 2
    saved = sh.args
    if len(argv) > 2:
        sh.args = argv[2:]
    try:
        return sh.source(text.decode("utf-8", "replace"), io)
    finally:
        sh.args = saved


def _test(sh: Session, argv: list[str], io: IO) -> int:
    args = argv[1:]
    if argv[0] == "[":
        if not args or args[-1] != "]":
            io.complain(f"{sh.argv0}: [: missing ]\n")
            return 2
        args = args[:-1]
    try:
        return 0 if _test_expr(sh, args) else 1
    except ValueError as exc:
        io.complain(f"{sh.argv0}: {argv[0]}: {exc}\n")
        return 2


def _exit(sh: Session, argv: list[str], io: IO) -> int:
    try:
        status = int(argv[1]) & 0xFF if len(argv) > 1 else sh.status
    except ValueError:
        io.complain(f"{sh.argv0}: exit: Illegal number: {argv[1]}\n")
        status = 2
    raise ExitShell(status)


def _loop_control(sh: Session, argv: list[str], io: IO) -> int:
    """``break [N]`` and ``continue [N]``: the loops of ``shell.py`` catch what this raises."""
    try:
        count = int(argv[1]) if len(argv) > 1 else 1
    except ValueError:
        count = 0
    if count < 1:
        io.complain(f"{sh.argv0}: {argv[0]}: Illegal number: {argv[1]}\n")
        return 2
    raise LoopControl(argv[0], count)


def _echo(sh: Session, argv: list[str], io: IO) -> int:
    args = argv[1:]
    newline, escapes = True, False
    while args and re.fullmatch(r"-[neE]+", args[0]):
        flags = args.pop(0)
        newline &= "n" not in flags
        if "e" in flags:
            escapes = True
        if "E" in flags:
            escapes = False
    text = " ".join(args)
    if escapes:
        text, stop = _escapes(text, stop_at_c=True)
        newline &= not stop
    io.say(text + ("\n" if newline else ""))
    return 0


def _printf(sh: Session, argv: list[str], io: IO) -> int:
    if len(argv) < 2:
        io.complain("printf: usage: printf FORMAT [ARGUMENT...]\n")
        return 1
    out, status = _format_printf(argv[1], argv[2:])
    io.say(out)
    if status:
        io.complain(f"printf: invalid number '{status}'\n")
        return 1
    return 0


def _cat(sh: Session, argv: list[str], io: IO) -> int:
    files = [a for a in argv[1:] if a != "-u"] or ["-"]
    status = 0
    for name in files:
        _check(sh)
        if name == "-":
            for chunk in read_chunks(io.stdin):
                io.out(chunk)
            continue
        try:
            io.out(sh.fs.read(name, sh.cwd))
        except IsADirectoryError:
            io.complain("cat: read error: Is a directory\n")
            status = 1
        except FileNotFoundError:
            io.complain(f"cat: can't open '{name}': No such file or directory\n")
            status = 1
        except PermissionError:
            io.complain(f"cat: can't open '{name}': Permission denied\n")
            status = 1
    return status


def _mkdir(sh: Session, argv: list[str], io: IO) -> int:
    opts, names = _split_opts(argv[1:])
    if names == [] or not set(opts) <= set("pm"):
        io.complain("mkdir: usage: mkdir [-p] DIRECTORY...\n")
        return 1
    status = 0
    for name in names:
        try:
            host = sh.fs.host_path(name, sh.cwd)
            if "p" in opts:
                if host.exists() and not host.is_dir():
                    raise FileExistsError(17, "File exists", name)
                host.mkdir(parents=True, exist_ok=True)
            else:
                host.mkdir()
        # "File exists", "No such file or directory", ...: the OS's words, as busybox
        except OSError as exc:
            io.complain(f"mkdir: can't create directory '{name}': {_reason(exc)}\n")
            status = 1
    return status


def _rm(sh: Session, argv: list[str], io: IO) -> int:
    opts, names = _split_opts(argv[1:])
    recursive = bool(set(opts) & set("rR"))
    force = "f" in opts
    if not names and not force:
        io.complain("rm: usage: rm [-rf] FILE...\n")
        return 1
    status = 0
    for name in names:
        guest = sh.fs.normalize(name, sh.cwd)
        if guest == "/" or posixpath.basename(name.rstrip("/")) in (".", ".."):
            io.complain(f"rm: can't remove '{name}'\n")
            status = 1
            continue
        try:
            host = sh.fs.host_path(name, sh.cwd)
            if host.is_dir() and not host.is_symlink():
                if not recursive:
                    io.complain(f"rm: '{name}' is a directory\n")
                    status = 1
                    continue
                shutil.rmtree(host)
            else:
                host.unlink()
        except FileNotFoundError:
            if not force:
                io.complain(f"rm: can't remove '{name}': No such file or directory\n")
                status = 1
        except OSError as exc:
            io.complain(f"rm: can't remove '{name}': {exc.strerror}\n")
            status = 1
    return status


def _cd(sh: Session, argv: list[str], io: IO) -> int:
    target = argv[1] if len(argv) > 1 else sh.vars.get("HOME", "/root")
    if target == "-":
        target = sh.vars.get("OLDPWD", sh.cwd)
    try:
        host = sh.fs.host_path(target, sh.cwd)
        ok = host.is_dir()
        reason = "Not a directory" if host.exists() else "No such file or directory"
    except OSError:
        ok, reason = False, "Permission denied"
    if not ok:
        io.complain(f"{sh.argv0}: cd: can't cd to {target}: {reason}\n")
        return 2
    sh.vars["OLDPWD"] = sh.cwd
    sh.cwd = sh.fs.normalize(target, sh.cwd)
    sh.vars["PWD"] = sh.cwd
    return 0


def _pwd(sh: Session, argv: list[str], io: IO) -> int:
    io.say(sh.cwd + "\n")
    return 0


def _ls(sh: Session, argv: list[str], io: IO) -> int:
    opts, names = _split_opts(argv[1:])
    long_form, show_all = "l" in opts, "a" in opts
    one = "1" in opts or io.tty is None or long_form
    status = 0
    files: list[str] = []
    dirs: list[str] = []
    for name in names or ["."]:
        try:
            host = sh.fs.host_path(name, sh.cwd)
            if not host.exists():
                raise FileNotFoundError
        except OSError:
            io.complain(f"ls: {name}: No such file or directory\n")
            status = 1
            continue
        (dirs if host.is_dir() and "d" not in opts else files).append(name)
    blocks: list[str] = []
    if files:
        hosts = [sh.fs.host_path(f, sh.cwd) for f in files]
        blocks.append(_ls_block(files, hosts, long_form, one))
    for d in dirs:
        host = sh.fs.host_path(d, sh.cwd)
        entries = sorted(os.listdir(host))
        entries = ([".", "..", *entries] if show_all
                   else [e for e in entries if not e.startswith(".")])
        text = _ls_block(entries, [host / e for e in entries], long_form, one)
        if len(names) > 1:
            text = f"{d}:\n{text}"
        blocks.append(text)
    io.say("\n".join(b for b in blocks))
    return status


def _ls_block(names: list[str], hosts: list, long_form: bool, one: bool) -> str:
    if not names:
        return ""
    if long_form:
        lines = []
        for name, host in zip(names, hosts, strict=True):
            st = os.stat(host)
            when = time.strftime("%b %e %H:%M", time.localtime(st.st_mtime))
            mode = stat.filemode(st.st_mode)
            lines.append(f"{mode}    1 root     root     {st.st_size:>9} {when} {name}")
        return "\n".join(lines) + "\n"
    if one:
        return "\n".join(names) + "\n"
    return "  ".join(names) + "\n"


def _chmod(sh: Session, argv: list[str], io: IO) -> int:
    args = [a for a in argv[1:] if a not in ("-R", "-f", "-v")]
    if len(args) < 2:
        io.complain("chmod: usage: chmod MODE FILE...\n")
        return 1
    spec, names = args[0], args[1:]
    status = 0
    for name in names:
        try:
            host = sh.fs.host_path(name, sh.cwd)
            current = os.stat(host).st_mode & 0o7777
            new = _chmod_mode(spec, current)
            if new is None:
                io.complain(f"chmod: invalid mode '{spec}'\n")
                return 1
            os.chmod(host, new)
        except OSError as exc:
            io.complain(f"chmod: {name}: {_reason(exc)}\n")
            status = 1
    return status


def _base64(sh: Session, argv: list[str], io: IO) -> int:
    opts, names = _split_opts(argv[1:])
    if not set(opts) <= set("di") or len(names) > 1:
        io.complain("base64: usage: base64 [-d] [FILE]\n")
        return 1
    name = names[0] if names else "-"
    try:
        data = io.stdin.read() if name == "-" else sh.fs.read(name, sh.cwd)
    except OSError as exc:
        io.complain(f"base64: can't open '{name}': {exc.strerror}\n")
        return 1
    if "d" not in opts:
        encoded = base64.b64encode(data).decode()
        io.say("".join(encoded[i:i + 76] + "\n" for i in range(0, len(encoded), 76)))
        return 0
    compact = re.sub(rb"\s+", b"", data)
    try:
        io.out(base64.b64decode(compact, validate=True))
    except (binascii.Error, ValueError):
        io.complain("base64: invalid input\n")
        return 1
    return 0


def _sha256sum(sh: Session, argv: list[str], io: IO) -> int:
    names = [a for a in argv[1:] if a not in ("-b", "-t")] or ["-"]
    status = 0
    for name in names:
        _check(sh)
        try:
            data = io.stdin.read() if name == "-" else sh.fs.read(name, sh.cwd)
        except IsADirectoryError:
            io.complain(f"sha256sum: {name}: Is a directory\n")
            status = 1
            continue
        except OSError as exc:
            io.complain(f"sha256sum: can't open '{name}': {exc.strerror}\n")
            status = 1
            continue
        io.say(f"{hashlib.sha256(data).hexdigest()}  {name}\n")
    return status


def _stty(sh: Session, argv: list[str], io: IO) -> int:
    tty = io.term  # stty works on its standard input
    if tty is None:
        io.complain("stty: standard input: Not a tty\n")
        return 1
    args = argv[1:]
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("echo", "-echo"):
            tty.echo = a == "echo"
        elif a in ("onlcr", "-onlcr"):
            tty.onlcr = a == "onlcr"
        elif a == "sane":
            tty.echo, tty.onlcr = True, True
        elif a in ("raw", "-raw", "cooked", "icanon", "-icanon", "isig", "-isig", "-ixon", "ixon",
                   "echoe", "-echoe", "echok", "-echok", "-echoctl", "echoctl"):
            pass  # accepted; the console keeps its line discipline
        elif a in ("rows", "cols", "columns") and i + 1 < len(args) and args[i + 1].isdigit():
            i += 1
            if a == "rows":
                tty.rows = int(args[i])
            else:
                tty.cols = int(args[i])
        elif a == "size":
            io.say(f"{tty.rows} {tty.cols}\n")
        elif a in ("-a", "-g"):
            io.say(f"speed 115200 baud; rows {tty.rows}; columns {tty.cols};\n"
                   f"{'' if tty.echo else '-'}echo {'' if tty.onlcr else '-'}onlcr\n")
        else:
            io.complain(f"stty: invalid argument '{a}'\n")
            return 1
        i += 1
    return 0


def _export(sh: Session, argv: list[str], io: IO) -> int:
    args = argv[1:]
    if not args or args == ["-p"]:
        for k in sorted(sh.exported):
            if k in sh.vars:
                value = sh.vars[k].replace("'", "'\\''")
                io.say(f"export {k}='{value}'\n")
        return 0
    for a in args:
        name, sep, value = a.partition("=")
        if not VARIABLE_NAME.fullmatch(name):
            io.complain(f"{sh.argv0}: export: {name}: bad variable name\n")
            return 2
        if sep:
            sh.vars[name] = value
        sh.exported.add(name)
    return 0


def _uname(sh: Session, argv: list[str], io: IO) -> int:
    fields = sh.machine.uname()
    flags = "".join(a.lstrip("-") for a in argv[1:]) or "s"
    if not set(flags) <= set("asnrvmpio"):
        io.complain(f"uname: invalid option -- '{flags}'\n")
        return 1
    order = "snrvmo" if "a" in flags else [c for c in "snrvmpio" if c in flags]
    out = [fields.get(c, "unknown") for c in order]
    io.say(" ".join(out) + "\n")
    return 0


def _sync(sh: Session, argv: list[str], io: IO) -> int:
    return 0


def _dmesg(sh: Session, argv: list[str], io: IO) -> int:
    args = argv[1:]
    if args and args[0].startswith("-n"):
        level = args[0][2:] or (args[1] if len(args) > 1 else "")
        if not level.isdigit() or not 1 <= int(level) <= 8:
            io.complain("dmesg: usage: dmesg [-c] [-n LEVEL]\n")
            return 1
        sh.machine.console_loglevel = int(level)
        return 0
    lines = sh.machine.read_kernel_log(clear="-c" in args)
    io.say("".join(line + "\n" for line in lines))
    return 0


def _poweroff(sh: Session, argv: list[str], io: IO) -> int:
    if "-f" not in argv[1:]:
        for line in ("", "Broadcast message from root@" + sh.machine.hostname + " (ttyAMA0):", "",
                     "The system is going down for poweroff NOW!", "Stopping dropbear: done",
                     "Stopping syslogd/klogd: done", "Sent SIGTERM to all processes",
                     "Sent SIGKILL to all processes", "Requesting system poweroff"):
            sh.machine.console_write((line + "\r\n").encode())
    sh.machine.printk("reboot: Power down", level=0)
    sh.machine.request_stop("poweroff")
    return 0


BUILTINS: dict[str, Builtin] = {
    "true": _true,
    "false": _false,
    ":": _true,
    "set": _set,
    "unset": _unset,
    ".": _source,
    "source": _source,
    "test": _test,
    "[": _test,
    "exit": _exit,
    "break": _loop_control,
    "continue": _loop_control,
    "echo": _echo,
    "printf": _printf,
    "cat": _cat,
    "mkdir": _mkdir,
    "rm": _rm,
    "cd": _cd,
    "pwd": _pwd,
    "ls": _ls,
    "chmod": _chmod,
    "base64": _base64,
    "sha256sum": _sha256sum,
    "stty": _stty,
    "export": _export,
    "uname": _uname,
    "sync": _sync,
    "dmesg": _dmesg,
    "poweroff": _poweroff,
    **APPLETS,
    **GZIP_APPLETS,
}
"""Every command the simulated guest knows, by name: the guest contract, the shell's own builtins
and the applets."""


def _test_expr(sh: Session, args: list[str]) -> bool:
    """``test``'s expression: ``!``, ``-a``/``-o``, unary file and string tests, binary string and
    integer comparisons."""
    if not args:
        return False
    for i, a in enumerate(args):  # -o binds loosest, then -a
        if a == "-o" and 0 < i < len(args) - 1:
            return _test_expr(sh, args[:i]) or _test_expr(sh, args[i + 1:])
    for i, a in enumerate(args):
        if a == "-a" and 0 < i < len(args) - 1:
            return _test_expr(sh, args[:i]) and _test_expr(sh, args[i + 1:])
    if args[0] == "!" and len(args) > 1:
        return not _test_expr(sh, args[1:])
    if len(args) == 1:
        return args[0] != ""
    if len(args) == 2:
        op, operand = args
        if op == "-n":
            return operand != ""
        if op == "-z":
            return operand == ""
        if op in ("-e", "-f", "-d", "-x", "-r", "-w", "-s", "-L", "-h", "-p", "-c", "-b", "-S"):
            return _file_test(sh, op, operand)
        raise ValueError(f"{op}: unary operator expected")
    if len(args) == 3:
        left, op, right = args
        if op in ("=", "=="):
            return left == right
        if op == "!=":
            return left != right
        if op in ("-eq", "-ne", "-lt", "-le", "-gt", "-ge"):
            numbers: list[int] = []
            for value in (left, right):
                if not re.fullmatch(r"\s*[-+]?\d+\s*", value):
                    raise ValueError(f"{value}: bad number")
                numbers.append(int(value))
            x, y = numbers
            return {"-eq": x == y, "-ne": x != y, "-lt": x < y, "-le": x <= y, "-gt": x > y,
                    "-ge": x >= y}[op]
        raise ValueError(f"{op}: binary operator expected")
    raise ValueError("syntax error")


def _file_test(sh: Session, op: str, name: str) -> bool:
    try:
        host = sh.fs.host_path(name, sh.cwd)
        if op in ("-L", "-h"):
            return host.is_symlink()
        st = os.stat(host)
    except OSError:
        return False
    mode = st.st_mode
    checks = {
        "-e": True, "-f": stat.S_ISREG(mode), "-d": stat.S_ISDIR(mode), "-x": bool(mode & 0o111),
        "-r": True, "-w": True, "-s": st.st_size > 0, "-p": stat.S_ISFIFO(mode),
        "-c": stat.S_ISCHR(mode), "-b": stat.S_ISBLK(mode), "-S": stat.S_ISSOCK(mode),
    }
    return checks[op]


def _reason(exc: OSError) -> str:
    """An OS error as busybox words it (``perror``): its strerror."""
    return exc.strerror or os.strerror(exc.errno or 0)


def _split_opts(args: list[str]) -> tuple[str, list[str]]:
    """Busybox-style short options (``-rf``, ``-p``) before ``--`` or the first operand."""
    opts = ""
    rest: list[str] = []
    done = False
    for a in args:
        if not done and a == "--":
            done = True
        elif not done and a.startswith("-") and len(a) > 1:
            opts += a[1:]
        else:
            rest.append(a)
    return opts, rest


_SIMPLE_ESC = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "a": "\a", "b": "\b", "f": "\f",
               "v": "\v", "e": "\x1b", '"': '"', "'": "'"}


def _escapes(text: str, stop_at_c: bool = False, printf_octal: bool = False) -> tuple[str, bool]:
    """Backslash escapes as echo -e / printf %b / printf formats read them; returns (text, stopped
    at \\c)."""
    out = []
    i = 0
    while i < len(text):
        c = text[i]
        if c != "\\" or i + 1 >= len(text):
            out.append(c)
            i += 1
            continue
        d = text[i + 1]
        if d in _SIMPLE_ESC:
            out.append(_SIMPLE_ESC[d])
            i += 2
        elif d == "c" and stop_at_c:
            return "".join(out), True
        elif d == "x":
            m = re.match(r"[0-9a-fA-F]{1,2}", text[i + 2:])
            if m:
                out.append(_byte(int(m.group(0), 16)))
                i += 2 + m.end()
            else:
                out.append("\\x")
                i += 2
        elif d in "01234567" and (printf_octal or d == "0"):
            # printf formats take \NNN; echo -e and %b take \0NNN
            start = i + 1 if printf_octal else i + 2
            m = re.match(r"[0-7]{0,3}", text[start:])
            assert m is not None
            out.append(_byte(int(m.group(0) or "0", 8) & 0xFF))
            i = start + m.end()
        else:
            out.append("\\" + d)
            i += 2
    return "".join(out), False


def _byte(value: int) -> str:
    """A byte value as text: ASCII as itself, 0x80-0xff as a surrogate so ``surrogateescape`` writes
    the raw byte."""
    return chr(value) if value < 0x80 else chr(0xDC00 + value)


_CONV = re.compile(r"%([-+ #0]*)(\d+|\*)?(?:\.(\d+|\*))?([diouxXcsbfeEgG%])")


def _format_printf(fmt: str, args: list[str]) -> tuple[str, str]:
    """printf(1): the format is reused while arguments remain. Returns (output, first bad number or
    '')."""
    fmt, _ = _escapes(fmt, printf_octal=True)
    out: list[str] = []
    bad = ""
    queue = list(args)
    first = True
    while first or queue:
        first = False
        consumed = False
        pos = 0
        for m in _CONV.finditer(fmt):
            out.append(fmt[pos:m.start()])
            pos = m.end()
            flags, width, prec, conv = m.groups()
            if conv == "%":
                out.append("%")
                continue
            if width == "*":
                width = queue.pop(0) if queue else "0"
            if prec == "*":
                prec = queue.pop(0) if queue else "0"
            arg = queue.pop(0) if queue else None
            consumed |= arg is not None
            spec = "%" + flags + (width or "") + (f".{prec}" if prec is not None else "")
            if conv in "sb":
                value = arg or ""
                if conv == "b":
                    value, _ = _escapes(value, printf_octal=False)
                out.append((spec + "s") % value)
            elif conv == "c":
                out.append((spec + "s") % ((arg or "")[:1]))
            elif conv in "diouxX":
                text = (arg or "0").strip()
                try:
                    number = int(text, 0) if not re.fullmatch(r"0\d+", text) else int(text, 8)
                except ValueError:
                    if len(text) >= 2 and text[0] in "'\"":
                        number = ord(text[1])
                    else:
                        number, bad = 0, bad or text
                out.append((spec + ("d" if conv in "iu" else conv)) % number)
            else:
                try:
                    number_f = float(arg or "0")
                except ValueError:
                    number_f, bad = 0.0, bad or (arg or "")
                out.append((spec + conv) % number_f)
        out.append(fmt[pos:])
        if not consumed:
            break
    return "".join(out), bad


def _chmod_mode(spec: str, current: int) -> int | None:
    """An octal or symbolic (``u+x,go-w``, ``+x``, ``a=rw``) mode applied to ``current``; None if
    invalid."""
    if re.fullmatch(r"[0-7]{1,4}", spec):
        return int(spec, 8)
    mode = current
    for clause in spec.split(","):
        m = re.fullmatch(r"([ugoa]*)([-+=])([rwxXst]*)", clause)
        if not m:
            return None
        who, op, perms = m.groups()
        who = who or "a"
        mask = 0
        for w in who:
            shift = {"u": [6], "g": [3], "o": [0], "a": [6, 3, 0]}[w]
            for s in shift:
                for p in perms:
                    if p == "r":
                        mask |= 4 << s
                    elif p == "w":
                        mask |= 2 << s
                    elif p in "xX":
                        mask |= 1 << s
        if op == "+":
            mode |= mask
        elif op == "-":
            mode &= ~mask
        else:
            clear = 0
            for w in who:
                for s in {"u": [6], "g": [3], "o": [0], "a": [6, 3, 0]}[w]:
                    clear |= 7 << s
            mode = (mode & ~clear) | mask
    return mode
