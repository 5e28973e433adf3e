"""The supervisor: a small program between the harness and every process tree it starts, so that
nothing the tree holds outlives the harness, whatever kills it (SIGKILL included).

Why it is shaped so: docs/architecture.md, "Inside `targets/`"."""

import os
import sys
import time

try:  # the C module: ``signal`` imports ``enum``, which would double this program's start-up time
    import _signal as signal  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - every CPython has it
    import signal

__all__ = ["main"]

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PARENT_DIED = signal.SIGUSR1
STOP = signal.SIGUSR2
IGNORED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
RESET = (*IGNORED, PARENT_DIED, STOP, signal.SIGPIPE, signal.SIGXFSZ)
"""Signals the command starts with at their default action (Python ignores SIGPIPE and SIGXFSZ)."""


class _End(Exception):
    """Stop now: the harness asked (SIGUSR2) or died."""


class _State:
    parent = 0
    child = 0
    status: "int | None" = None
    ending = False


def _end_now() -> None:
    if not _State.ending:
        _State.ending = True
        raise _End


def _on_stop(signum: int, frame: object) -> None:
    _end_now()


def _on_parent_death(signum: int, frame: object) -> None:
    if os.getppid() != _State.parent:  # else only the harness thread that started us ended
        _end_now()


def _prctl(option: int, value: int) -> bool:
    """``_prctl(option, value)`` through ``_ctypes`` (what ``ctypes`` is built on: ~1 ms to import
    where ``ctypes`` takes 10-50 ms, most of this program's start), else through ``ctypes``."""
    try:
        import _ctypes

        libc = _ctypes.dlopen(None, os.RTLD_NOW)  # type: ignore[arg-type]  # None: the program and its libc
        address = _ctypes.dlsym(libc, "_prctl")
        return bool(_ctypes.call_function(address, (option, value, 0, 0, 0)) == 0)
    except (ImportError, AttributeError, OSError):
        pass
    try:
        import ctypes

        return bool(ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0)
    except (ImportError, OSError, AttributeError):
        return False


def _descendants() -> list[int]:
    """Live (not zombie) processes below this one, by parent pid."""
    me = os.getpid()
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as file:
                fields = file.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] not in (b"Z", b"X"):
            children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    todo = [me]
    while todo:
        for pid in children.get(todo.pop(), ()):
            found.append(pid)
            todo.append(pid)
    return found


def _reap() -> bool:
    """Collect every exited child (the command's status is kept), adopted orphans included. True
    when no child is left at all: then no descendant is either (a subreaper's descendants are its
    children or theirs), and the ``/proc`` walk can be skipped."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return True
        if pid == 0:
            return False
        if pid == _State.child:
            _State.status = status


def _signal_all(pids: list[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except OSError:
            pass


def _end_all(grace: float) -> None:
    """SIGTERM to every descendant, up to ``grace`` seconds, then SIGKILL until none is left."""
    deadline = time.monotonic() + grace
    termed: set[int] = set()
    while True:
        if _reap():
            return
        left = _descendants()
        if not left:
            return
        if time.monotonic() < deadline:
            fresh = [pid for pid in left if pid not in termed]
            _signal_all(fresh, signal.SIGTERM)
            termed.update(fresh)
            time.sleep(0.02)
        else:
            _signal_all(left, signal.SIGKILL)
            time.sleep(0.002)


def _finish(grace: float) -> None:
    try:
        _end_all(grace)
    except _End:  # asked to stop (or the harness died) during the grace: at once
        _end_all(0.0)


def _wait_command() -> None:
    """Block until the command exits (reaping adopted orphans meanwhile)."""
    while _State.status is None:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return
        if pid == _State.child:
            _State.status = status


def _exit_as_command() -> None:
    status = _State.status
    if status is None:
        os._exit(1)
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        try:
            import resource

            # the command's core, if any, is its own
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        except (ImportError, OSError, ValueError):
            pass
        try:
            # refused for SIGKILL and SIGSTOP, whose action is fixed
            signal.signal(signum, signal.SIG_DFL)
        except (OSError, ValueError):
            pass
        try:
            os.kill(os.getpid(), signum)
        except OSError:
            pass
        os._exit(128 + signum)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def main(argv: list[str]) -> None:
    if len(argv) < 5 or argv[3] != "--":
        sys.stderr.write("usage: supervisor.py PARENT GRACE -- ARGV...\n")
        os._exit(2)
    _State.parent, grace, command = int(argv[1]), float(argv[2]), argv[4:]
    for signum in IGNORED:
        signal.signal(signum, signal.SIG_IGN)
    signal.signal(STOP, _on_stop)
    signal.signal(PARENT_DIED, _on_parent_death)
    if sys.platform.startswith("linux"):
        _prctl(PR_SET_CHILD_SUBREAPER, 1)
        _prctl(PR_SET_PDEATHSIG, PARENT_DIED)
    if os.getppid() != _State.parent:  # the harness died before the setting took effect
        os._exit(1)
    try:
        try:
            _State.child = os.posix_spawnp(command[0], command, os.environ, setsigdef=RESET)
        except OSError as exc:
            sys.stderr.write(f"{command[0]}: {exc.strerror}\n")
            os._exit(127)
        _wait_command()
        _finish(grace)
    except _End:
        _end_all(0.0)
        _wait_command()
    _exit_as_command()


if __name__ == "__main__":
    main(sys.argv)
