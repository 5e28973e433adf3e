"""busybox's ``time`` applet (miscutils/time.c, busybox 1.35 as the QEMU guest's Debian
busybox-static has it): run a command, then report its resource use from ``wait4``.

Why: the harness measures a Linux runner's peak resident set as ``time -f '... %M' -o FILE sh -c
'CMD; exit $?'`` (``run/framed.py``), so the simulated guest must run that line as busybox does.
``%M`` is ``ru_maxrss`` of the waited child: the largest peak resident set among it and the children
it waited for (``session.ChildUsage``; an emulated program declares what it holds through
``GuestContext.resident``, a busybox process holds ``SHELL_RSS_KIB``). Options as busybox's
(``+vpao:f:``: option parsing stops at PROG): ``-v`` the verbose listing, ``-p`` POSIX
``real``/``user``/``sys``, ``-f FMT``, ``-o FILE`` (``-a`` appends), the report on stderr otherwise,
after ``Command exited with non-zero status N`` when PROG failed. Exit status: PROG's (127 when it
cannot be run). Times come from the simulated clock; CPU time is all user time (the emulated
programs declare no system time). The emulated programs report a signal as the shell's 128+N status
and print its message themselves, so a status is always an exit status here (busybox's ``Command
terminated by signal N`` is not emulated).
"""

from __future__ import annotations

from fvp_harness.sim.guest.applets.common import Usage, busybox_applet
from fvp_harness.sim.guest.io import IO
from fvp_harness.sim.guest.session import SHELL_RSS_KIB, ChildUsage, Session

__all__ = ["APPLETS"]

_USAGE = """[-vpa] [-o FILE] PROG ARGS

Run PROG, display resource usage when it exits

\t-v\tVerbose
\t-p\tPOSIX output format
\t-f FMT\tCustom format
\t-o FILE\tWrite result to FILE
\t-a\tAppend (else overwrite)"""

_DEFAULT = "real\t%E\nuser\t%u\nsys\t%T"
_POSIX = "real %e\nuser %U\nsys %S"
_VERBOSE = (
    '\tCommand being timed: "%C"\n\tUser time (seconds): %U\n\tSystem time (seconds): %S\n'
    "\tPercent of CPU this job got: %P\n\tElapsed (wall clock) time (h:mm:ss or m:ss): %E\n"
    "\tAverage shared text size (kbytes): %X\n\tAverage unshared data size (kbytes): %D\n"
    "\tAverage stack size (kbytes): %p\n\tAverage total size (kbytes): %K\n"
    "\tMaximum resident set size (kbytes): %M\n\tAverage resident set size (kbytes): %t\n"
    "\tMajor (requiring I/O) page faults: %F\n\tMinor (reclaiming a frame) page faults: %R\n"
    "\tVoluntary context switches: %w\n\tInvoluntary context switches: %c\n\tSwaps: %W\n"
    "\tFile system inputs: %I\n\tFile system outputs: %O\n\tSocket messages sent: %s\n"
    "\tSocket messages received: %r\n\tSignals delivered: %k\n\tPage size (bytes): %Z\n"
    "\tExit status: %x"
)


def _options(args: list[str]) -> tuple[dict[str, str], list[str]]:
    """busybox's ``getopt32(argv, "^+vpao:f:...")``: options until the first operand (PROG's own
    stay PROG's)."""
    opts: dict[str, str] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return opts, args[i + 1 :]
        if not arg.startswith("-") or arg == "-":
            break
        i += 1
        for j, flag in enumerate(arg[1:], start=1):
            if flag in "of":
                value = arg[j + 1 :]
                if not value:
                    if i >= len(args):
                        raise Usage(f"option requires an argument -- '{flag}'")
                    value, i = args[i], i + 1
                opts[flag] = value
                break
            if flag not in "vpa":
                raise Usage(f"invalid option -- '{flag}'")
            opts[flag] = ""
    return opts, args[i:]


def _seconds(value: float) -> str:
    whole = int(value)
    return f"{whole}.{int((value - whole) * 100):02d}"


def _minutes(value: float) -> str:
    """``%E``: ``Hh MMm SS.SSs`` from an hour, else ``Mm S.SSs`` (busybox, not GNU's ``m:ss``)."""
    whole = int(value)
    hundredths = int((value - whole) * 100)
    if whole >= 3600:
        return f"{whole // 3600}h {whole % 3600 // 60:02d}m {whole % 60:02d}s"
    return f"{whole // 60}m {whole % 60}.{hundredths:02d}s"


def _report(fmt: str, argv: list[str], elapsed: float, status: int, maxrss_kib: int) -> str:
    """``summarize()``: the format's conversions for one command (the counters busybox reads that
    the simulator does not model are 0)."""
    percent = "100%" if elapsed > 0 else "?%"  # all of the elapsed time is the command's user time
    values = {
        "C": " ".join(argv),
        "U": _seconds(elapsed),
        "S": "0.00",
        "e": _seconds(elapsed),
        "E": _minutes(elapsed),
        "u": _minutes(elapsed),
        "T": _minutes(0.0),
        "P": percent,
        "M": str(maxrss_kib),
        "x": str(status),
        "Z": "4096",
        "%": "%",
    }
    out: list[str] = []
    i = 0
    while i < len(fmt):
        char = fmt[i]
        if char == "%" and i + 1 < len(fmt):
            out.append(values.get(fmt[i + 1], "0" if fmt[i + 1] in "XDpKtFRwcWIOsrk" else ""))
            i += 2
        elif char == "\\" and i + 1 < len(fmt):
            out.append({"n": "\n", "t": "\t", "\\": "\\"}.get(fmt[i + 1], "\\" + fmt[i + 1]))
            i += 2
        else:
            out.append(char)
            i += 1
    return "".join(out) + "\n"


def _runnable(sh: Session, name: str) -> bool:
    """Whether execvp finds ``name``: a builtin or applet, or an existing file (by path or
    ``$PATH``)."""
    found = sh.find_command(name)
    if not isinstance(found, str):
        return found is not None
    try:
        return sh.fs.host_path(found, sh.cwd).exists()
    except OSError:
        return False


@busybox_applet(_USAGE)
def _time(sh: Session, argv: list[str], io: IO) -> int:
    opts, command = _options(argv[1:])
    if not command:
        raise Usage()
    fmt = opts.get("f", _VERBOSE if "v" in opts else _POSIX if "p" in opts else _DEFAULT)
    sink = None
    if "o" in opts:
        try:
            sink = sh.fs.open_write(opts["o"], sh.cwd, append="a" in opts)
        except OSError as exc:
            io.complain(f"time: can't open '{opts['o']}': {exc.strerror}\n")
            return 1
    clock = sh.machine.clock
    started = clock.now()
    outer, child = sh.children, ChildUsage()
    sh.children = (
        child  # the command is this applet's one child: wait4 reports it (and what it waited for)
    )
    try:
        if not _runnable(sh, command[0]):
            io.complain(f"time: can't execute '{command[0]}': No such file or directory\n")
            status = 127
        else:
            status = sh.execute(command, sh.environment(), io)
    finally:
        sh.children = outer
    maxrss = max(
        SHELL_RSS_KIB, child.maxrss_kib
    )  # a builtin command still ran in a forked busybox process
    outer.reaped(maxrss)
    text = f"Command exited with non-zero status {status}\n" if status else ""
    text += _report(fmt, command, clock.now() - started, status, maxrss)
    if sink is not None:
        with sink:
            sink.write(text.encode())
    else:
        io.complain(text)
    return status


APPLETS = {"time": _time}
