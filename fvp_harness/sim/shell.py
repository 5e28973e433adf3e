"""The guest shell: a busybox ``ash`` subset that is exactly the guest contract (shared/ARCHITECTURE.md).

Syntax: ``;`` ``&&`` ``||``, ``$?`` and ``$NAME``/``${NAME}`` expansion, ``>`` ``>>`` ``<`` and ``2>&1`` style
redirections, single and double quotes and backslash as in sh, ``NAME=value`` prefixes and ``export``, ``~``
and ``*``/``?`` globbing, ``#`` comments. Expansions are not field-split (the harness quotes every value with
``shlex.quote``, so nothing depends on splitting). Pipes, ``&``, subshells, command substitution and control
flow are refused with a message naming the contract, rather than half-implemented.

Commands: echo, printf, cat, mkdir, rm, cd, pwd, ls, chmod, base64, sha256sum, stty, export, uname, sync,
poweroff, dmesg, true, false, exit. Anything else is ``sh: X: not found`` (status 127). A path runs a file: a
registered guest program (``guest_programs.find_program`` on its first 64 bytes) runs in this thread against a
``GuestContext``; a shell script runs in a child shell; a foreign binary is ``Exec format error`` (126); no
execute bit is ``Permission denied`` (126); a missing file or interpreter is ``not found`` (127).

The same ``Shell`` serves the console (with a tty: echo, CRLF) and ssh exec (no tty), over one guest
filesystem.
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import hashlib
import logging
import os
import posixpath
import re
import shutil
import stat
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from fvp_harness.sim import guest_programs
from fvp_harness.sim.machine import Machine

__all__ = ["IO", "BytesStdin", "Incomplete", "Shell", "ShellSyntaxError", "Stdin", "Tty", "parse"]

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


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
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
            segs = value  # type: ignore[assignment]
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


class Stdin(Protocol):
    """A command's standard input."""

    def read(self) -> bytes:
        """Everything up to end of file (blocks; raises guest_programs.ProgramInterrupted on Ctrl-C)."""


class BytesStdin:
    """Standard input from bytes (a file redirection, or nothing)."""

    def __init__(self, data: bytes = b"") -> None:
        self._data = data

    def read(self) -> bytes:
        data, self._data = self._data, b""
        return data


@dataclass
class Tty:
    """The console's terminal settings that ``stty`` changes and the console honours."""

    echo: bool = True
    onlcr: bool = True
    rows: int = 24
    cols: int = 80


@dataclass
class IO:
    """A command's three streams. ``out``/``err`` take bytes exactly as the program wrote them; a console's
    writers turn ``\\n`` into ``\\r\\n`` as the tty does."""

    out: Callable[[bytes], None]
    err: Callable[[bytes], None]
    stdin: Stdin
    tty: Tty | None = None  # set when fd 0 and 1 are the console

    def say(self, text: str) -> None:
        self.out(text.encode("utf-8", "surrogateescape"))

    def complain(self, text: str) -> None:
        self.err(text.encode("utf-8", "surrogateescape"))


class _RedirError(Exception):
    """A redirection that cannot be set up; the message follows ``sh: ``."""


def _discard(data: bytes) -> None:
    """Where ``> /dev/null`` writes go."""


class ExitShell(Exception):
    """``exit``: ends the shell (console: back to the login prompt; ssh: the channel's exit status)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


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
            builtin = getattr(self, "_b_" + name.replace("-", "_"), None) if name in BUILTINS else None
            if builtin is not None:
                try:
                    return int(builtin(argv, io))
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

    # -- builtins (each returns an exit status) --------------------------------------------------------------

    def _check(self) -> None:
        if self.interrupted():
            raise guest_programs.ProgramInterrupted

    def _b_true(self, argv: list[str], io: IO) -> int:
        return 0

    def _b_false(self, argv: list[str], io: IO) -> int:
        return 1

    def _b_exit(self, argv: list[str], io: IO) -> int:
        try:
            status = int(argv[1]) & 0xFF if len(argv) > 1 else self.status
        except ValueError:
            io.complain(f"sh: exit: Illegal number: {argv[1]}\n")
            status = 2
        raise ExitShell(status)

    def _b_echo(self, argv: list[str], io: IO) -> int:
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

    def _b_printf(self, argv: list[str], io: IO) -> int:
        if len(argv) < 2:
            io.complain("printf: usage: printf FORMAT [ARGUMENT...]\n")
            return 1
        out, status = _printf(argv[1], argv[2:])
        io.say(out)
        if status:
            io.complain(f"printf: invalid number '{status}'\n")
            return 1
        return 0

    def _b_cat(self, argv: list[str], io: IO) -> int:
        files = [a for a in argv[1:] if a != "-u"] or ["-"]
        status = 0
        for name in files:
            self._check()
            if name == "-":
                io.out(io.stdin.read())
                continue
            try:
                io.out(self.fs.read(name, self.cwd))
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

    def _b_mkdir(self, argv: list[str], io: IO) -> int:
        opts, names = _split_opts(argv[1:])
        if names == [] or not set(opts) <= set("pm"):
            io.complain("mkdir: usage: mkdir [-p] DIRECTORY...\n")
            return 1
        status = 0
        for name in names:
            try:
                host = self.fs.host_path(name, self.cwd)
                if "p" in opts:
                    if host.exists() and not host.is_dir():
                        raise FileExistsError(17, "File exists", name)
                    host.mkdir(parents=True, exist_ok=True)
                else:
                    host.mkdir()
            except FileExistsError:
                io.complain(f"mkdir: can't create directory '{name}': File exists\n")
                status = 1
            except FileNotFoundError:
                io.complain(f"mkdir: can't create directory '{name}': No such file or directory\n")
                status = 1
            except OSError as exc:
                io.complain(f"mkdir: can't create directory '{name}': {exc.strerror}\n")
                status = 1
        return status

    def _b_rm(self, argv: list[str], io: IO) -> int:
        opts, names = _split_opts(argv[1:])
        recursive = bool(set(opts) & set("rR"))
        force = "f" in opts
        if not names and not force:
            io.complain("rm: usage: rm [-rf] FILE...\n")
            return 1
        status = 0
        for name in names:
            guest = self.fs.normalize(name, self.cwd)
            if guest == "/" or posixpath.basename(name.rstrip("/")) in (".", ".."):
                io.complain(f"rm: can't remove '{name}'\n")
                status = 1
                continue
            try:
                host = self.fs.host_path(name, self.cwd)
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

    def _b_cd(self, argv: list[str], io: IO) -> int:
        target = argv[1] if len(argv) > 1 else self.vars.get("HOME", "/root")
        if target == "-":
            target = self.vars.get("OLDPWD", self.cwd)
        try:
            host = self.fs.host_path(target, self.cwd)
            ok = host.is_dir()
            reason = "Not a directory" if host.exists() else "No such file or directory"
        except OSError:
            ok, reason = False, "Permission denied"
        if not ok:
            io.complain(f"sh: cd: can't cd to {target}: {reason}\n")
            return 2
        self.vars["OLDPWD"] = self.cwd
        self.cwd = self.fs.normalize(target, self.cwd)
        self.vars["PWD"] = self.cwd
        return 0

    def _b_pwd(self, argv: list[str], io: IO) -> int:
        io.say(self.cwd + "\n")
        return 0

    def _b_ls(self, argv: list[str], io: IO) -> int:
        opts, names = _split_opts(argv[1:])
        long_form, show_all = "l" in opts, "a" in opts
        one = "1" in opts or io.tty is None or long_form
        status = 0
        files: list[str] = []
        dirs: list[str] = []
        for name in names or ["."]:
            try:
                host = self.fs.host_path(name, self.cwd)
                if not host.exists():
                    raise FileNotFoundError
            except OSError:
                io.complain(f"ls: {name}: No such file or directory\n")
                status = 1
                continue
            (dirs if host.is_dir() and "d" not in opts else files).append(name)
        blocks: list[str] = []
        if files:
            hosts = [self.fs.host_path(f, self.cwd) for f in files]
            blocks.append(self._ls_block(files, hosts, long_form, one))
        for d in dirs:
            host = self.fs.host_path(d, self.cwd)
            entries = sorted(os.listdir(host))
            entries = [".", "..", *entries] if show_all else [e for e in entries if not e.startswith(".")]
            text = self._ls_block(entries, [host / e for e in entries], long_form, one)
            if len(names) > 1:
                text = f"{d}:\n{text}"
            blocks.append(text)
        io.say("\n".join(b for b in blocks))
        return status

    @staticmethod
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

    def _b_chmod(self, argv: list[str], io: IO) -> int:
        args = [a for a in argv[1:] if a not in ("-R", "-f", "-v")]
        if len(args) < 2:
            io.complain("chmod: usage: chmod MODE FILE...\n")
            return 1
        spec, names = args[0], args[1:]
        status = 0
        for name in names:
            try:
                host = self.fs.host_path(name, self.cwd)
                current = os.stat(host).st_mode & 0o7777
                new = _chmod_mode(spec, current)
                if new is None:
                    io.complain(f"chmod: invalid mode '{spec}'\n")
                    return 1
                os.chmod(host, new)
            except FileNotFoundError:
                io.complain(f"chmod: {name}: No such file or directory\n")
                status = 1
            except OSError as exc:
                io.complain(f"chmod: {name}: {exc.strerror}\n")
                status = 1
        return status

    def _b_base64(self, argv: list[str], io: IO) -> int:
        opts, names = _split_opts(argv[1:])
        if not set(opts) <= set("di") or len(names) > 1:
            io.complain("base64: usage: base64 [-d] [FILE]\n")
            return 1
        name = names[0] if names else "-"
        try:
            data = io.stdin.read() if name == "-" else self.fs.read(name, self.cwd)
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

    def _b_sha256sum(self, argv: list[str], io: IO) -> int:
        names = [a for a in argv[1:] if a not in ("-b", "-t")] or ["-"]
        status = 0
        for name in names:
            self._check()
            try:
                data = io.stdin.read() if name == "-" else self.fs.read(name, self.cwd)
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

    def _b_stty(self, argv: list[str], io: IO) -> int:
        tty = io.tty
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

    def _b_export(self, argv: list[str], io: IO) -> int:
        args = argv[1:]
        if not args or args == ["-p"]:
            for k in sorted(self.exported):
                if k in self.vars:
                    value = self.vars[k].replace("'", "'\\''")
                    io.say(f"export {k}='{value}'\n")
            return 0
        for a in args:
            name, sep, value = a.partition("=")
            if not _NAME.fullmatch(name):
                io.complain(f"sh: export: bad variable name '{a}'\n")
                return 2
            if sep:
                self.vars[name] = value
            self.exported.add(name)
        return 0

    def _b_uname(self, argv: list[str], io: IO) -> int:
        fields = self.machine.uname()
        flags = "".join(a.lstrip("-") for a in argv[1:]) or "s"
        if not set(flags) <= set("asnrvmpio"):
            io.complain(f"uname: invalid option -- '{flags}'\n")
            return 1
        order = "snrvmo" if "a" in flags else [c for c in "snrvmpio" if c in flags]
        out = [fields.get(c, "unknown") for c in order]
        io.say(" ".join(out) + "\n")
        return 0

    def _b_sync(self, argv: list[str], io: IO) -> int:
        return 0

    def _b_dmesg(self, argv: list[str], io: IO) -> int:
        args = argv[1:]
        if args and args[0].startswith("-n"):
            level = args[0][2:] or (args[1] if len(args) > 1 else "")
            if not level.isdigit() or not 1 <= int(level) <= 8:
                io.complain("dmesg: usage: dmesg [-c] [-n LEVEL]\n")
                return 1
            self.machine.console_loglevel = int(level)
            return 0
        with self.machine._lock:
            lines = list(self.machine.kernel_log)
            if "-c" in args:
                self.machine.kernel_log.clear()
        io.say("".join(line + "\n" for line in lines))
        return 0

    def _b_poweroff(self, argv: list[str], io: IO) -> int:
        if "-f" not in argv[1:]:
            for line in ("", "Broadcast message from root@" + self.machine.hostname + " (ttyAMA0):", "",
                         "The system is going down for poweroff NOW!", "Stopping dropbear: done",
                         "Stopping syslogd/klogd: done", "Sent SIGTERM to all processes",
                         "Sent SIGKILL to all processes", "Requesting system poweroff"):
                self.machine.console_write((line + "\r\n").encode())
        self.machine.printk("reboot: Power down", level=0)
        self.machine.request_stop("poweroff")
        return 0


BUILTINS = frozenset({
    "true", "false", "exit", "echo", "printf", "cat", "mkdir", "rm", "cd", "pwd", "ls", "chmod", "base64",
    "sha256sum", "stty", "export", "uname", "sync", "dmesg", "poweroff",
})
"""Every command the simulated guest knows (the guest contract plus true/false/exit)."""


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


_SIMPLE_ESC = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "a": "\a", "b": "\b", "f": "\f", "v": "\v",
               "e": "\x1b", '"': '"', "'": "'"}


def _escapes(text: str, stop_at_c: bool = False, printf_octal: bool = False) -> tuple[str, bool]:
    """Backslash escapes as echo -e / printf %b / printf formats read them; returns (text, stopped at \\c)."""
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
    """A byte value as text: ASCII as itself, 0x80-0xff as a surrogate so ``surrogateescape`` writes the raw
    byte."""
    return chr(value) if value < 0x80 else chr(0xDC00 + value)


_CONV = re.compile(r"%([-+ #0]*)(\d+|\*)?(?:\.(\d+|\*))?([diouxXcsbfeEgG%])")


def _printf(fmt: str, args: list[str]) -> tuple[str, str]:
    """printf(1): the format is reused while arguments remain. Returns (output, first bad number or '')."""
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
    """An octal or symbolic (``u+x,go-w``, ``+x``, ``a=rw``) mode applied to ``current``; None if invalid."""
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
