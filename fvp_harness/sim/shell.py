"""The guest shell: a busybox ``ash`` subset that is exactly the guest contract (shared/ARCHITECTURE.md).

Syntax: ``;`` ``&&`` ``||``, ``$?`` and ``$NAME``/``${NAME}`` expansion, ``>`` ``>>`` ``<`` and ``2>&1`` style
redirections, single and double quotes and backslash as in sh, ``NAME=value`` prefixes and ``export``, ``~``
and ``*``/``?`` globbing, ``#`` comments. Expansions are not field-split (the harness quotes every value with
``shlex.quote``, so nothing depends on splitting). Pipes, ``&``, subshells, command substitution and control
flow are refused with a message naming the contract, rather than half-implemented.

Commands (``builtins.py``): echo, printf, cat, mkdir, rm, cd, pwd, ls, chmod, base64, sha256sum, stty, export,
uname, sync, poweroff, dmesg, true, false, exit. Anything else is ``sh: X: not found`` (status 127). A path runs a
file: a registered guest program (``guest_programs.find_program`` on its first 64 bytes) runs in this thread against a
``GuestContext``; a shell script runs in a child shell; a foreign binary is ``Exec format error`` (126); no
execute bit is ``Permission denied`` (126); a missing file or interpreter is ``not found`` (127).

The same ``Shell`` serves the console (with a tty: echo, CRLF) and ssh exec (no tty), over one guest
filesystem.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import posixpath
import re
import stat
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

from fvp_harness.sim import guest_programs
from fvp_harness.sim.builtins import BUILTINS
from fvp_harness.sim.machine import Machine
from fvp_harness.sim.shell_io import IO, VARIABLE_NAME, BytesStdin, ExitShell, Stdin, Tty

__all__ = [
    "IO",
    "BytesStdin",
    "ExitShell",
    "Incomplete",
    "Redir",
    "Seg",
    "Shell",
    "ShellSyntaxError",
    "Simple",
    "Stdin",
    "Tty",
    "parse",
]

log = logging.getLogger(__name__)

PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
COMMAND_SIM_SECONDS = 0.002


# ------------------------------------------------------------------------------------------------------------
# ---
# parsing


class ShellSyntaxError(Exception):
    """A line the shell refuses (status 2); the message is what busybox would print after ``sh: ``."""


class Incomplete(Exception):
    """The line needs more input (open quote, trailing backslash, ``&&`` at the end): prompt ``> `` and read
    on."""


@dataclass
class Seg:
    """A piece of a word: literal text, or a variable name to expand (``var``). ``quoted`` pieces are not
    globbed."""

    text: str
    quoted: bool = False
    var: bool = False


@dataclass
class Redir:
    """``fd op target``: op is ``>``, ``>>``, ``<`` or ``>&`` (target a descriptor number)."""

    fd: int
    op: str
    target: list[Seg]


@dataclass
class Simple:
    """One simple command: assignments, words, redirections."""

    assigns: list[tuple[str, list[Seg]]] = field(default_factory=list)
    words: list[list[Seg]] = field(default_factory=list)
    redirs: list[Redir] = field(default_factory=list)

    def empty(self) -> bool:
        return not (self.assigns or self.words or self.redirs)


_NAME = VARIABLE_NAME
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
_UNSUPPORTED = {"|": "pipes", "&": "background jobs", "(": "subshells", ")": "subshells", ";;": "case"}
_NO_BACKTICKS = "command substitution `...` is not in the simulated guest contract"
_RESERVED = {"if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac", "{",
             "}",
             "function", "!"}


def _tokenize(line: str) -> list[tuple[str, object]]:
    """Split a line into ("word", [Seg...]) and ("op", text) tokens."""
    tokens: list[tuple[str, object]] = []
    word: list[Seg] = []
    in_word = False
    i, n = 0, len(line)

    def lit(ch: str, quoted: bool) -> None:
        if word and not word[-1].var and word[-1].quoted == quoted:
            word[-1].text += ch
        else:
            word.append(Seg(ch, quoted))

    def flush() -> None:
        nonlocal word, in_word
        if in_word:
            tokens.append(("word", word))
        word, in_word = [], False

    def dollar(j: int, quoted: bool) -> int:
        """Parse ``$...`` at ``line[j] == '$'``; return the next index."""
        if j + 1 >= n:
            lit("$", quoted)
            return j + 1
        c = line[j + 1]
        if c in "?$#@*!0123456789-":
            word.append(Seg(c, quoted, var=True))
            return j + 2
        if c == "{":
            end = line.find("}", j + 2)
            if end < 0:
                raise Incomplete
            name = line[j + 2:end]
            if not (_NAME.fullmatch(name) or name in ("?", "$", "#") or name.isdigit()):
                raise ShellSyntaxError(f"syntax error: bad substitution ${{{name}}}")
            word.append(Seg(name, quoted, var=True))
            return end + 1
        if c == "(":
            raise ShellSyntaxError("command substitution $(...) is not in the simulated guest contract")
        m = _NAME.match(line, j + 1)
        if m:
            word.append(Seg(m.group(0), quoted, var=True))
            return m.end()
        lit("$", quoted)
        return j + 1

    while i < n:
        c = line[i]
        if c in " \t":
            flush()
            i += 1
        elif c == "\n":
            flush()
            tokens.append(("op", "\n"))
            i += 1
        elif c == "#" and not in_word:
            end = line.find("\n", i)
            i = n if end < 0 else end
        elif c in ";&|<>()":
            fd: int | None = None
            if c in "<>" and in_word and len(word) == 1 and not word[0].quoted and not word[0].var \
                    and word[0].text.isdigit():
                fd = int(word[0].text)
                word, in_word = [], False
            flush()
            two = line[i:i + 2]
            if two in ("&&", "||", ">>", ">&", ";;"):
                op, i = two, i + 2
            else:
                op, i = c, i + 1
            if op in (">", ">>", "<", ">&"):
                tokens.append(("op", f"{'' if fd is None else fd}{op}"))
            else:
                tokens.append(("op", op))
        elif c == "'":
            end = line.find("'", i + 1)
            if end < 0:
                raise Incomplete
            in_word = True
            word.append(Seg(line[i + 1:end], True))
            i = end + 1
        elif c == '"':
            in_word = True
            word.append(Seg("", True))
            i += 1
            while True:
                if i >= n:
                    raise Incomplete
                d = line[i]
                if d == '"':
                    i += 1
                    break
                if d == "\\" and i + 1 < n and line[i + 1] in '\\"$`\n':
                    if line[i + 1] != "\n":
                        lit(line[i + 1], True)
                    i += 2
                elif d == "\\" and i + 1 >= n:
                    raise Incomplete
                elif d == "$":
                    i = dollar(i, True)
                elif d == "`":
                    raise ShellSyntaxError(_NO_BACKTICKS)
                else:
                    lit(d, True)
                    i += 1
        elif c == "\\":
            if i + 1 >= n:
                raise Incomplete
            if line[i + 1] == "\n":
                i += 2
                continue
            in_word = True
            lit(line[i + 1], True)
            i += 2
        elif c == "$":
            in_word = True
            i = dollar(i, False)
        elif c == "`":
            raise ShellSyntaxError(_NO_BACKTICKS)
        else:
            in_word = True
            lit(c, False)
            i += 1
    flush()
    return tokens


def parse(line: str) -> list[tuple[str | None, Simple]]:
    """Parse a command line into ``[(connector, command), ...]``; connector is None, ``;``, ``&&`` or ``||``.

    Raises Incomplete when more input is needed and ShellSyntaxError for what the shell refuses.
    """
    items: list[tuple[str | None, Simple]] = []
    cur = Simple()
    connector: str | None = None
    pending: tuple[int, str] | None = None
    for kind, value in _tokenize(line):
        if kind == "word":
            segs = value
            assert isinstance(segs, list)
            if pending is not None:
                cur.redirs.append(Redir(pending[0], pending[1], segs))
                pending = None
                continue
            first = segs[0]
            m = _ASSIGN.match(first.text) if not first.quoted and not first.var else None
            if m and not cur.words:
                rest = [Seg(first.text[m.end():], False), *segs[1:]]
                cur.assigns.append((m.group(1), rest))
                continue
            if not cur.words and len(segs) == 1 and not first.quoted and first.text in _RESERVED:
                raise ShellSyntaxError(f"'{first.text}' (control flow) is not in the simulated guest "
                                       "contract")
            cur.words.append(segs)
            continue
        op = str(value)
        if pending is not None:
            raise ShellSyntaxError(f'syntax error: unexpected "{op}"')
        if op in _UNSUPPORTED:
            raise ShellSyntaxError(f"{_UNSUPPORTED[op]} ('{op}') are not in the simulated guest contract")
        if op == "\n":
            if cur.empty():
                if connector in ("&&", "||"):
                    continue  # the command after && / || may follow on the next line
                continue
            op = ";"
        if op in (";", "&&", "||"):
            if cur.empty():
                if op == ";" and not items and connector is None:
                    raise ShellSyntaxError('syntax error: unexpected ";"')
                if op == ";" and connector == ";":
                    continue  # blank line between commands
                raise ShellSyntaxError(f'syntax error: unexpected "{op}"')
            items.append((connector, cur))
            cur, connector = Simple(), op
            continue
        m2 = re.fullmatch(r"(\d*)(>>|>&|>|<)", op)
        assert m2 is not None
        fd = int(m2.group(1)) if m2.group(1) else (0 if m2.group(2) == "<" else 1)
        pending = (fd, m2.group(2))
    if pending is not None:
        raise ShellSyntaxError("syntax error: unexpected newline")
    if not cur.empty():
        items.append((connector, cur))
    elif connector in ("&&", "||"):
        raise Incomplete
    return items


# ------------------------------------------------------------------------------------------------------------
# ---
# I/O


class _RedirError(Exception):
    """A redirection that cannot be set up; the message follows ``sh: ``."""


def _discard(data: bytes) -> None:
    """Where ``> /dev/null`` writes go."""


# ------------------------------------------------------------------------------------------------------------
# ---
# the shell


class Shell:
    """One shell session: variables, cwd and ``$?``, over the machine's guest filesystem."""

    def __init__(
        self,
        machine: Machine,
        *,
        interrupted: Callable[[], bool] = lambda: False,
        args: list[str] | None = None,
        login: bool = True,
    ) -> None:
        self.machine = machine
        self.fs = machine.fs
        self.interrupted = interrupted
        self.cwd = "/root"
        self.status = 0
        self.args = args or []  # positional parameters ($1...) of a script
        self.vars: dict[str, str] = {
            "HOME": "/root", "PATH": PATH, "SHELL": "/bin/sh", "USER": "root", "LOGNAME": "root",
            "TERM": "vt102", "PWD": "/root", "PS1": r"\u@\h:\w\$ ", "HOSTNAME": machine.hostname,
        }
        self.exported: set[str] = {"HOME", "PATH", "SHELL", "USER", "LOGNAME", "TERM", "PWD"}
        self.login = login

    # -- prompt ----------------------------------------------------------------------------------------------

    def prompt(self) -> str:
        """``root@corstone1000-fvp:~# `` (busybox expands PS1's \\u@\\h:\\w\\$)."""
        home = self.vars.get("HOME", "/root")
        at_home = self.cwd == home or self.cwd.startswith(home + "/")
        where = "~" + self.cwd[len(home):] if at_home else self.cwd
        return f"root@{self.machine.hostname}:{where}# "

    # -- running ---------------------------------------------------------------------------------------------

    def run_line(self, line: str, io: IO) -> int:
        """Parse and run one command line; returns (and records in ``$?``) the last status.

        Raises Incomplete (the caller asks for more input) and ExitShell.
        """
        # every command line costs the guest a little simulated time (a fork and exec on a slow model)
        self.machine.clock.advance(COMMAND_SIM_SECONDS, pace=False)
        try:
            items = parse(line)
        except ShellSyntaxError as exc:
            io.complain(f"sh: {exc}\n")
            self.status = 2
            return 2
        for connector, cmd in items:
            if connector == "&&" and self.status != 0:
                continue
            if connector == "||" and self.status == 0:
                continue
            self.status = self._run_simple(cmd, io)
            if self.machine.halted.is_set() or self.machine.stopping.is_set():
                break
        return self.status

    def _expand_var(self, name: str) -> str:
        if name == "?":
            return str(self.status)
        if name == "$":
            return "1"
        if name == "#":
            return str(len(self.args))
        if name in ("@", "*"):
            return " ".join(self.args)
        if name == "0":
            return "sh"
        if name.isdigit():
            idx = int(name)
            return self.args[idx - 1] if idx <= len(self.args) else ""
        if name == "PWD":
            return self.cwd
        return self.vars.get(name, "")

    def expand(self, segs: list[Seg]) -> list[str]:
        """A word's fields: variables expanded, ``~`` and globs resolved; an unquoted empty expansion
        vanishes."""
        text = ""
        pattern = ""
        globbing = False
        anything_quoted = False
        for k, seg in enumerate(segs):
            value = self._expand_var(seg.text) if seg.var else seg.text
            if k == 0 and not seg.quoted and not seg.var and (value == "~" or value.startswith("~/")):
                value = self.vars.get("HOME", "/root") + value[1:]
            anything_quoted |= seg.quoted
            text += value
            if seg.quoted or seg.var:
                pattern += re.sub(r"([*?\[])", r"[\1]", value)
            else:
                pattern += value
                globbing |= any(ch in value for ch in "*?[")
        if not text and not anything_quoted:
            return []
        if globbing:
            matches = self._glob(pattern)
            if matches:
                return matches
        return [text]

    def _glob(self, pattern: str) -> list[str]:
        absolute = pattern.startswith("/")
        parts = [p for p in pattern.split("/") if p]
        results = ["/" if absolute else ""]
        for part in parts:
            nxt = []
            for base in results:
                if any(ch in part for ch in "*?["):
                    try:
                        host = self.fs.host_path(base or ".", self.cwd)
                        names = sorted(os.listdir(host)) if host.is_dir() else []
                    except OSError:
                        names = []
                    for name in names:
                        if name.startswith(".") and not part.startswith("."):
                            continue
                        if fnmatch.fnmatchcase(name, part):
                            nxt.append(posixpath.join(base, name) if base else name)
                else:
                    literal = re.sub(r"\[([*?\[])\]", r"\1", part)
                    nxt.append(posixpath.join(base, literal) if base else literal)
            results = nxt
        return [r for r in results if self._exists(r)]

    def _exists(self, path: str) -> bool:
        try:
            return self.fs.host_path(path, self.cwd).exists()
        except OSError:
            return False

    def _run_simple(self, cmd: Simple, io: IO) -> int:
        words: list[str] = []
        for w in cmd.words:
            words.extend(self.expand(w))
        assigns = {name: "".join(self.expand(value) or [""]) for name, value in cmd.assigns}
        opened: list = []
        try:
            try:
                cio = self._redirect(cmd.redirs, io, opened)
            except _RedirError as exc:
                io.complain(f"sh: {exc}\n")
                return 1
            if not words:
                for name, value in assigns.items():
                    self.vars[name] = value
                return 0
            env = {k: v for k, v in self.vars.items() if k in self.exported}
            env["PWD"] = self.cwd
            env.update(assigns)
            return self.execute(words, env, cio)
        finally:
            for fh in opened:
                try:
                    fh.close()
                except OSError:
                    pass

    def _redirect(self, redirs: list[Redir], io: IO, opened: list) -> IO:
        fds: dict[int, object] = {0: io.stdin, 1: io.out, 2: io.err}
        tty_out = io.tty
        for r in redirs:
            target = "".join(self.expand(r.target) or [""])
            if r.op == ">&":
                if target not in ("0", "1", "2"):
                    raise _RedirError(f"{target}: bad file descriptor")
                fds[r.fd] = fds[int(target)]
                continue
            if r.op == "<":
                try:
                    fds[r.fd] = BytesStdin(b"" if target == "/dev/null" else self.fs.read(target, self.cwd))
                except OSError as exc:
                    raise _RedirError(f"can't open '{target}': {exc.strerror}") from None
                continue
            if target == "/dev/null":
                fds[r.fd] = _discard
                continue
            try:
                fh = self.fs.open_write(target, self.cwd, append=r.op == ">>")
            except FileNotFoundError:
                raise _RedirError(f"can't create {target}: nonexistent directory") from None
            except OSError as exc:
                raise _RedirError(f"can't create {target}: {exc.strerror}") from None
            opened.append(fh)
            fds[r.fd] = fh.write
            if r.fd == 1:
                tty_out = None
        return IO(fds[1], fds[2], fds[0], tty_out)  # type: ignore[arg-type]

    # -- command lookup and execution ------------------------------------------------------------------------

    def execute(self, argv: list[str], env: dict[str, str], io: IO) -> int:
        """Run one command: a builtin, or a guest file (by path or $PATH)."""
        name = argv[0]
        if "/" not in name:
            builtin = BUILTINS.get(name)
            if builtin is not None:
                try:
                    return int(builtin(self, argv, io))
                except guest_programs.ProgramInterrupted:
                    return 130
            for d in env.get("PATH", PATH).split(":"):
                candidate = posixpath.join(d or ".", name)
                try:
                    if self.fs.host_path(candidate, self.cwd).is_file():
                        return self.run_file(candidate, argv, env, io)
                except OSError:
                    continue
            io.complain(f"sh: {name}: not found\n")
            return 127
        return self.run_file(name, argv, env, io)

    def run_file(self, path: str, argv: list[str], env: dict[str, str], io: IO) -> int:
        """Execute a guest file as Linux and ash would."""
        shown = argv[0]
        try:
            host = self.fs.host_path(path, self.cwd)
            mode = os.stat(host).st_mode
        except FileNotFoundError:
            io.complain(f"sh: {shown}: not found\n")
            return 127
        except OSError:
            io.complain(f"sh: {shown}: Permission denied\n")
            return 126
        if not stat.S_ISREG(mode) or not mode & 0o111:
            io.complain(f"sh: {shown}: Permission denied\n")
            return 126
        with open(host, "rb") as fh:
            head = fh.read(64)
        program = _find_program(head)
        if program is not None:
            return self._run_program(program, path, argv, env, io)
        if head.startswith(b"#!"):
            interp = head[2:].split(b"\n", 1)[0].strip().split(b" ")[0].decode("latin-1")
            if posixpath.basename(interp) not in ("sh", "ash", "busybox"):
                io.complain(f"sh: {shown}: not found\n")
                return 127
            return self._run_script(host.read_bytes(), argv, env, io)
        if b"\0" in head or head.startswith(b"\x7fELF"):
            io.complain(f"sh: {shown}: Exec format error\n")
            return 126
        # ash runs a text file without #! as a script
        return self._run_script(host.read_bytes(), argv, env, io)

    def _run_program(self, program: guest_programs.GuestProgram, path: str, argv: list[str],
                     env: dict[str, str], io: IO) -> int:
        from fvp_harness.sim.context import SimGuestContext  # late: context imports this module's IO

        resolved = self.fs.normalize(path, self.cwd) if path.startswith("/") else path
        ctx = SimGuestContext(self, [resolved, *argv[1:]], env, io)
        try:
            status = program(ctx)
        except guest_programs.ProgramInterrupted:
            return 130
        except Exception:
            # a bug in a guest program: show it where a developer will look (the model's stderr), and fail the
            # command as a crashed process would
            sys.stderr.write(f"fvp-sim: guest program {argv[0]} crashed:\n{traceback.format_exc()}")
            sys.stderr.flush()
            io.complain("Segmentation fault\n")
            return 139
        return int(status) & 0xFF if status is not None else 0

    def _run_script(self, text: bytes, argv: list[str], env: dict[str, str], io: IO) -> int:
        child = Shell(self.machine, interrupted=self.interrupted, args=argv[1:], login=False)
        child.cwd = self.cwd
        child.vars.update(env)
        child.exported |= set(env)
        buffer = ""
        status = 0
        for line in text.decode("utf-8", "replace").splitlines():
            buffer += line + "\n"
            try:
                parse(buffer)
            except Incomplete:
                continue
            except ShellSyntaxError:
                pass
            try:
                status = child.run_line(buffer, io)
            except ExitShell as exc:
                return exc.status
            buffer = ""
            if self.interrupted():
                return 130
        if buffer.strip():
            io.complain("sh: syntax error: unterminated quoted string\n")
            return 2
        return status



_warned_programs = False


def _find_program(head: bytes) -> guest_programs.GuestProgram | None:
    """``guest_programs.find_program``, tolerant of a workload module that fails to import (it is developed
    separately; a broken one must not take the shell down)."""
    global _warned_programs
    try:
        return guest_programs.find_program(head)
    except Exception:
        if not _warned_programs:
            _warned_programs = True
            sys.stderr.write(f"fvp-sim: guest programs unavailable:\n{traceback.format_exc()}")
            sys.stderr.flush()
        return None
