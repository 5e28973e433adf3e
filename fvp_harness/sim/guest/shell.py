"""The guest shell: busybox ``ash`` as a person at the console and the harness meet it.

Language (parsed by ``guest/parse.py``): ``;`` ``&&`` ``||`` ``!`` and pipes ``|`` (each stage in
its own thread with a byte stream between, ``$?`` from the last stage), redirections ``>`` ``>>``
``>|`` ``<`` ``<>`` ``n>&m`` ``n>&-`` ``&>`` and here-documents (``<<EOF``, ``<<'EOF'`` unexpanded,
``<<-EOF`` without leading tabs), ``$NAME`` ``${NAME}`` ``${NAME:-x}``-style operators, ``$?``
``$$`` ``$#`` ``$@`` ``$*`` ``$0..9``, command substitution ``$(...)`` and backquotes, field
splitting of unquoted expansions on ``IFS``, ``~``, globbing (``*`` ``?`` ``[...]`` over the guest
filesystem, left as typed when nothing matches), quoting, comments, ``$((...))`` arithmetic,
``NAME=value`` prefixes, ``set -efux``; compound commands (``( )`` in a copy of the shell, ``{ }``,
``if``, ``while``/``until``, ``for``, ``break``/``continue N``). Background jobs, ``case`` and
functions are refused (status 2).

Prompts: ``PS1`` (default ``\\u@\\h:\\w\\$ `` as Poky's /etc/profile sets it) and ``PS2`` (``> ``)
are expanded as ash does: first ``$`` expansions as inside double quotes, then busybox's
line-editing escapes (``\\u`` ``\\h`` ``\\H`` ``\\w`` ``\\W`` ``\\$`` ``\\n`` ``\\t`` ``\\\\``
``\\NNN`` ``\\[`` ``\\]`` ...).

Commands: the builtins and applets of ``builtins.py`` and ``applets.py``; anything else is ``-sh: X:
not found`` (status 127; every message starts with the shell's ``$0``, as ash's do). A path runs a
file: a registered guest program (``programs.find_program`` on its first 64 bytes) runs in the
calling thread against a ``GuestContext``; a shell script runs in a child shell; a foreign binary is
``Exec format error`` (126); no execute bit is ``Permission denied`` (126); a missing file or
interpreter (a ``#!`` line's, or the dynamic loader a guest program's build names:
``programs.find_interpreter``) is ``not found`` (127).

The same ``Shell`` serves the console (with a tty: echo, CRLF) and ssh (no tty), over one guest
filesystem.
"""

from __future__ import annotations

import itertools
import logging
import os
import posixpath
import re
import stat
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from fvp_harness.sim.guest import arith, programs
from fvp_harness.sim.guest.builtins import BUILTINS, Builtin
from fvp_harness.sim.guest.io import (
    IO,
    BytesStdin,
    ExitShell,
    LoopControl,
    Pipe,
    PipeClosed,
    Stdin,
    Tty,
)
from fvp_harness.sim.guest.parse import (
    AndOr,
    Command,
    Compound,
    Incomplete,
    Part,
    Pipeline,
    Redir,
    ShellSyntaxError,
    Word,
    parse,
    parse_heredoc_body,
    parse_prompt,
)
from fvp_harness.sim.guest.session import SHELL_RSS_KIB, ChildUsage, GuestMachine

__all__ = [
    "IO",
    "BytesStdin",
    "ExitShell",
    "Incomplete",
    "Shell",
    "ShellSyntaxError",
    "Stdin",
    "Tty",
    "glob_regex",
    "parse",
]

log = logging.getLogger(__name__)

PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
COMMAND_SIM_SECONDS = 0.002
DEFAULT_PS1 = "\\u@\\h:\\w\\$ "
"""Poky's /etc/profile sets this for ash: ``root@corstone1000-fvp:~# ``."""
USER = "root"
USER_HOME = "/root"
"""The login user and its home from /etc/passwd: what ``\\u`` shows and what ``\\w`` abbreviates to
``~``."""

_QUOTED = 1  # an expanded piece that is neither split nor globbed
_SPLIT = 2  # an unquoted expansion: split on IFS (and globbed)
_Segment = tuple[str, int] | None  # None: a field break ("$@")
_pids = itertools.count(142)


class _ExpandError(Exception):
    """An expansion that fails (``${x?}``, a bad substitution); the message follows ``sh: ``."""


class _RedirError(Exception):
    """A redirection that cannot be set up; the message follows ``sh: ``."""


def _discard(data: bytes) -> None:
    """Where ``> /dev/null`` writes go."""


@dataclass
class _Fd:
    """One open descriptor while redirections are applied."""

    read: Stdin | None = None
    write: Callable[[bytes], None] | None = None
    tty: Tty | None = None  # writes go to the console
    term: Tty | None = None  # reads come from the console


# --------------------------------------------------------------------------------------------------
# patterns


_CLASSES = {
    "alpha": "a-zA-Z", "digit": "0-9", "alnum": "0-9a-zA-Z", "upper": "A-Z", "lower": "a-z",
    "space": " \\t\\n\\r\\f\\v", "blank": " \\t", "xdigit": "0-9A-Fa-f",
    "cntrl": "\\x00-\\x1f\\x7f",
    "print": " -~", "graph": "!-~", "punct": "!-/:-@\\[-`{-~", "word": "0-9a-zA-Z_",
}


def _bracket(chars: list[tuple[str, bool]], i: int) -> tuple[str, int] | None:
    """A ``[...]`` glob bracket at ``chars[i]`` as a regex class and the index after it; None if
    unclosed."""
    j = i + 1
    negate = False
    if j < len(chars) and chars[j][0] in "!^" and not chars[j][1]:
        negate = True
        j += 1
    items: list[str] = []
    first = True
    while j < len(chars):
        ch, quoted = chars[j]
        if ch == "]" and not quoted and not first:
            body = "".join(items)
            return ("[^" if negate else "[") + body + "]", j + 1
        first = False
        if ch == "[" and not quoted and j + 1 < len(chars) and chars[j + 1][0] == ":":
            rest = "".join(c for c, _ in chars[j + 2:])
            m = re.match(r"([a-z]+):\]", rest)
            if m and m.group(1) in _CLASSES:
                items.append(_CLASSES[m.group(1)])
                j += 2 + m.end()
                continue
        if j + 2 < len(chars) and chars[j + 1] == ("-", False) and chars[j + 2][0] != "]":
            low, high = ch, chars[j + 2][0]
            if low <= high:
                items.append(f"{re.escape(low)}-{re.escape(high)}")
            j += 3
            continue
        items.append(re.escape(ch) if ch not in "-" else "\\-")
        j += 1
    return None


def glob_regex(chars: list[tuple[str, bool]]) -> str | None:
    """The regex of a glob pattern given as (character, quoted) pairs; None if it has no unquoted
    ``*?[``."""
    out: list[str] = []
    magic = False
    i = 0
    while i < len(chars):
        ch, quoted = chars[i]
        if quoted:
            out.append(re.escape(ch))
        elif ch == "*":
            out.append(".*")
            magic = True
        elif ch == "?":
            out.append(".")
            magic = True
        elif ch == "[":
            found = _bracket(chars, i)
            if found is not None:
                out.append(found[0])
                i = found[1]
                magic = True
                continue
            out.append(re.escape(ch))
        elif ch == "\\" and i + 1 < len(chars):
            out.append(re.escape(chars[i + 1][0]))
            i += 2
            continue
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out) if magic else None


def _chars(segments: list[tuple[str, int]]) -> list[tuple[str, bool]]:
    return [(ch, bool(flags & _QUOTED)) for text, flags in segments for ch in text]


# --------------------------------------------------------------------------------------------------
# the shell


class Shell:
    """One shell session: variables, cwd, options and ``$?``, over the machine's guest
    filesystem."""

    OPTIONS = "efux"
    """``set`` options: -e exit on a failing command, -f no globbing, -u unset variables are errors,
    -x trace."""

    def __init__(
        self,
        machine: GuestMachine,
        *,
        interrupted: Callable[[], bool] = lambda: False,
        args: list[str] | None = None,
        login: bool = True,
    ) -> None:
        self.machine = machine
        self.fs = machine.fs
        self.interrupted = interrupted
        self.cwd = USER_HOME
        self.status = 0
        self.args = args or []  # positional parameters ($1...) of a script
        self.argv0 = "-sh" if login else "sh"
        self.pid = next(_pids)
        self.vars: dict[str, str] = {
            "HOME": USER_HOME, "PATH": PATH, "SHELL": "/bin/sh", "USER": USER, "LOGNAME": USER,
            "TERM": "vt102", "PWD": USER_HOME, "PS1": DEFAULT_PS1, "PS2": "> ", "PS4": "+ ",
            "IFS": " \t\n", "HOSTNAME": machine.hostname,
        }
        self.exported: set[str] = {"HOME", "PATH", "SHELL", "USER", "LOGNAME", "TERM", "PWD"}
        self.login = login
        self.options: set[str] = set()
        self._sub_status: int | None = None
        self._compound_depth = 0  # compound commands being run (a closed pipe then ends them all)
        self.children = ChildUsage()  # ru_maxrss of the processes it waited for (``time`` reads it)

    def subshell(self) -> Shell:
        """A copy of this shell for a pipeline stage, a command substitution or ``xargs``: changes
        to its cwd and variables do not come back."""
        sub = Shell(self.machine, interrupted=self.interrupted, args=list(self.args), login=False)
        sub.cwd, sub.status, sub.argv0, sub.pid = self.cwd, self.status, self.argv0, self.pid
        sub.vars = dict(self.vars)
        sub.exported = set(self.exported)
        sub.options = set(self.options)
        sub.children = self.children  # a fork's children are waited for within the same command
        return sub

    def _stopping(self) -> bool:
        return bool(self.interrupted() or self.machine.stopping.is_set() or
                    self.machine.halted.is_set())

    # -- prompts -----------------------------------------------------------------------------------

    def prompt(self) -> str:
        """``PS1`` as ash shows it (``root@corstone1000-fvp:~# `` by default)."""
        return self.render_prompt(self.vars.get("PS1", ""))

    def prompt2(self) -> str:
        """``PS2``, shown while a command needs more lines (open quote, here-document, trailing
        ``|``)."""
        return self.render_prompt(self.vars.get("PS2", ""))

    def render_prompt(self, ps: str) -> str:
        """Expand a prompt string as ash does: ``$`` expansions first, then the line editor's
        escapes."""
        quiet = IO(_discard, _discard, BytesStdin(), None, None)
        try:
            text = self._expand_string(parse_prompt(ps), quiet)
        except (_ExpandError, ShellSyntaxError, Incomplete):
            text = ps
        return self._prompt_escapes(text)

    def _prompt_escapes(self, text: str) -> str:
        simple = {"a": "\a", "b": "\b", "e": "\x1b", "f": "\f", "n": "\n", "r": "\r", "v": "\v",
                  "\\": "\\"}
        out: list[str] = []
        i, n = 0, len(text)
        while i < n:
            c = text[i]
            i += 1
            if c != "\\":
                out.append(c)
                continue
            if i >= n:
                break  # a lone backslash at the end shows nothing
            d = text[i]
            if d in "01234567":
                m = re.match(r"[0-7]{1,3}", text[i:])
                assert m is not None
                value = int(m.group(0), 8) & 0xFF
                if value:
                    out.append(chr(value))
                i += m.end()
                continue
            i += 1
            if d in simple:
                out.append(simple[d])
            elif d == "u":
                out.append(USER)
            elif d in "hH":
                host = self.machine.hostname
                out.append(host.split(".")[0] if d == "h" else host)
            elif d == "$":
                out.append("#")  # root
            elif d in "tTA@":
                out.append(time.strftime("%H:%M"))
            elif d in "wW":
                where = self.cwd
                if where == USER_HOME or where.startswith(USER_HOME + "/"):
                    where = "~" + where[len(USER_HOME):]
                out.append(where if d == "w" else where[where.rfind("/") + 1:])
            elif d in "xX":
                m = re.match(r"[0-9a-fA-F]{1,2}", text[i:])
                digits = m.group(0) if m else ""
                out.append(chr(int(digits, 16)) if digits and int(digits, 16) else "?")
                i += len(digits)
            elif d in "[]":
                pass  # non-printing sequence markers
            else:
                out.append(d)
        return "".join(out)

    # -- running -----------------------------------------------------------------------------------

    def run_line(self, line: str, io: IO) -> int:
        """Parse and run shell input (one or more lines); returns (and records in ``$?``) the last
        status.

        The input is complete (the console asked ``parse`` first); what is still open is a syntax
        error. Raises ExitShell.
        """
        # every command line costs the guest a little simulated time (a fork and exec on a slow
        # model)
        self.machine.clock.advance(COMMAND_SIM_SECONDS, pace=False)
        error: ShellSyntaxError | None = None
        try:
            lists = parse(line, final=True)
        except ShellSyntaxError as exc:
            lists, error = exc.done, exc
        for andor in lists:
            try:
                self._run_andor(andor, io)
            except LoopControl:  # break/continue outside a loop: nothing to leave
                self.status = 0
            except _ExpandError as exc:  # ash abandons the rest of the input line
                io.complain(f"{self.argv0}: {exc}\n")
                self.status = 2
                return self.status
            if self.machine.halted.is_set() or self.machine.stopping.is_set():
                return self.status
        if error is not None:
            io.complain(f"{self.argv0}: {error}\n")
            self.status = 2
        return self.status

    def _run_andor(self, andor: AndOr, io: IO) -> None:
        for k, (connector, pipeline) in enumerate(andor.items):
            if connector == "&&" and self.status != 0:
                continue
            if connector == "||" and self.status == 0:
                continue
            self.status = self._run_pipeline(pipeline, io)
            if self.machine.halted.is_set() or self.machine.stopping.is_set():
                return
            if ("e" in self.options and self.status and k == len(andor.items) - 1 and
                not pipeline.negate):
                raise ExitShell(self.status)

    def _run_pipeline(self, pipeline: Pipeline, io: IO) -> int:
        if len(pipeline.commands) == 1:
            status = self._run_command(pipeline.commands[0], io)
        else:
            status = self._run_stages(pipeline.commands, io)
        if pipeline.negate:
            status = 0 if status else 1
        return status

    def _run_stages(self, commands: list[Command | Compound], io: IO) -> int:
        """A pipeline: every stage in a subshell, all but the last in threads, joined by pipes."""
        n = len(commands)
        pipes = [Pipe(self._stopping, programs.ProgramInterrupted) for _ in range(n - 1)]
        statuses = [0] * n

        def stage(k: int) -> None:
            stdin: Stdin = io.stdin if k == 0 else pipes[k - 1]
            out = io.out if k == n - 1 else pipes[k].write
            sio = IO(out, io.err, stdin, io.tty if k == n - 1 else None,
                     io.term if k == 0 else None)
            try:
                statuses[k] = self.subshell()._run_command(commands[k], sio)
            except ExitShell as exc:
                statuses[k] = exc.status
            except LoopControl:
                statuses[k] = 0
            except _ExpandError as exc:
                sio.complain(f"{self.argv0}: {exc}\n")
                statuses[k] = 2
            except PipeClosed:
                statuses[k] = 141
            except programs.ProgramInterrupted:
                statuses[k] = 130
            except Exception:
                if self._stopping():
                    statuses[k] = 130
                else:
                    sys.stderr.write(f"fvp-sim: pipeline stage failed:\n{traceback.format_exc()}")
                    statuses[k] = 1
            finally:
                if k < n - 1:
                    pipes[k].close_write()
                if k > 0:
                    pipes[k - 1].close_read()

        threads = [threading.Thread(target=stage, args=(k,), name=f"sh-pipe-{k}", daemon=True)
                   for k in range(n - 1)]
        for thread in threads:
            thread.start()
        stage(n - 1)
        for thread in threads:
            while thread.is_alive():
                thread.join(0.2)
        if self.interrupted():
            return 130  # Ctrl-C reaches every process of the pipeline
        return statuses[-1]

    def _run_list(self, body: list[AndOr], io: IO) -> int:
        """A compound command's list, in this shell; returns the last status."""
        self.status = 0
        for andor in body:
            self._run_andor(andor, io)
            if self._stopping():
                break
        return self.status

    def _run_compound(self, node: Compound, io: IO) -> int:
        """``( )`` in a copy of this shell (its exit ends only it), the rest in this one;
        redirections apply to the whole command; loops end at Ctrl-C."""
        opened: list = []
        self._compound_depth += 1
        try:
            try:
                cio = self._redirect(node.redirs, io, opened)
            except _RedirError as exc:
                io.complain(f"{self.argv0}: {exc}\n")
                return 1
            if node.kind == "subshell":
                sub = self.subshell()
                try:
                    return sub._run_list(node.parts[0], cio)
                except ExitShell as exc:
                    return exc.status
            if node.kind == "group":
                return self._run_list(node.parts[0], cio)
            if node.kind == "if":
                return self._run_if(node, cio)
            return self._run_loop(node, cio)
        finally:
            self._compound_depth -= 1
            for fh in opened:
                try:
                    fh.close()
                except OSError:
                    pass

    def _run_if(self, node: Compound, io: IO) -> int:
        pairs = node.parts[:-1] if node.has_else else node.parts
        for k in range(0, len(pairs), 2):
            if self._run_list(pairs[k], io) == 0:
                return self._run_list(pairs[k + 1], io)
        return self._run_list(node.parts[-1], io) if node.has_else else 0

    def _run_loop(self, node: Compound, io: IO) -> int:
        """while, until and for; ``break N``/``continue N`` reach through N loops."""
        if node.kind == "for":
            values = (self.expand_words(node.items, io) if node.items is not None
                      else list(self.args))
            rounds: Iterator[str | None] = iter(values)
        else:
            rounds = itertools.repeat(None)
        status = 0
        for value in rounds:
            if self._stopping():
                return 130
            try:
                if node.kind == "for":
                    self.vars[node.name or ""] = value or ""
                elif (self._run_list(node.parts[0], io) == 0) != (node.kind == "while"):
                    break
                status = self._run_list(node.parts[-1], io)
            except LoopControl as exc:
                if exc.count > 1:
                    raise LoopControl(exc.kind, exc.count - 1) from None
                status = 0
                if exc.kind == "break":
                    break
        self.status = status
        return status

    def _run_command(self, cmd: Command | Compound, io: IO) -> int:
        if isinstance(cmd, Compound):
            return self._run_compound(cmd, io)
        self._sub_status = None
        argv = self.expand_words(cmd.words, io)
        assigns = [(name, self._expand_assignment(value, io)) for name, value in cmd.assigns]
        opened: list = []
        try:
            try:
                cio = self._redirect(cmd.redirs, io, opened)
            except _RedirError as exc:
                io.complain(f"{self.argv0}: {exc}\n")
                return 1
            if not argv:
                for name, value in assigns:
                    self.vars[name] = value
                return self._sub_status or 0
            if "x" in self.options:
                io.complain("+ " + " ".join([f"{n}={v}" for n, v in assigns] + argv) + "\n")
            env = self.environment()
            env.update(assigns)
            return self.execute(argv, env, cio)
        finally:
            for fh in opened:
                try:
                    fh.close()
                except OSError:
                    pass

    def environment(self) -> dict[str, str]:
        """The exported variables, as a program started now gets them."""
        env = {k: v for k, v in self.vars.items() if k in self.exported}
        env["PWD"] = self.cwd
        return env

    # -- expansion ---------------------------------------------------------------------------------

    def expand_words(self, words: list[Word], io: IO) -> list[str]:
        """Words to fields: expansions, field splitting of unquoted expansions, globbing, quote
        removal."""
        out: list[str] = []
        for word in words:
            for fieldsegs in self._split(self._segments(word, io)):
                text = "".join(t for t, _ in fieldsegs)
                if "f" not in self.options and any(
                        not flags & _QUOTED and any(c in t for c in "*?[")
                        for t, flags in fieldsegs):
                    matches = self._glob(_chars(fieldsegs))
                    if matches:
                        out.extend(matches)
                        continue
                out.append(text)
        return out

    def _expand_string(self, word: Word, io: IO) -> str:
        """A word expanded to one string: no splitting, no globbing (assignments, redirection
        targets, here-documents, prompts)."""
        return "".join(seg[0] for seg in self._segments(word, io) if seg is not None)

    def _expand_assignment(self, word: Word, io: IO) -> str:
        return self._expand_string(word, io)

    def _segments(self, word: Word, io: IO) -> list[_Segment]:
        segs: list[_Segment] = []
        for k, part in enumerate(word):
            if part.kind == "lit":
                text = part.text
                if k == 0 and not part.quoted and text.startswith("~"):
                    text = self._tilde(text, more=len(word) > 1)
                segs.append((text, _QUOTED if part.quoted else 0))
            elif part.kind == "cmdsub":
                segs.append((self._command_substitution(part.text, io),
                             _QUOTED if part.quoted else _SPLIT))
            elif part.kind == "arith":
                segs.append((self._arithmetic(part.text, io), _QUOTED if part.quoted else _SPLIT))
            elif part.text == "@" and part.quoted and not part.op:
                for index, arg in enumerate(self.args):
                    if index:
                        segs.append(None)
                    segs.append((arg, _QUOTED))
            else:
                segs.append((self._parameter(part, io), _QUOTED if part.quoted else _SPLIT))
        return segs

    def _tilde(self, text: str, more: bool) -> str:
        prefix, slash, rest = text.partition("/")
        if not slash and more:
            return text  # ~$USER and the like: not a tilde prefix
        if prefix == "~":
            home = self.vars.get("HOME", USER_HOME)
        elif prefix == "~" + USER:
            home = USER_HOME
        else:
            return text
        return home + slash + rest

    def _split(self, segs: list[_Segment]) -> list[list[tuple[str, int]]]:
        """Field splitting: unquoted expansions break at IFS characters (whitespace runs count
        once)."""
        ifs = self.vars.get("IFS", " \t\n") if "IFS" in self.vars else " \t\n"
        white = "".join(c for c in ifs if c in " \t\n")
        fields: list[list[tuple[str, int]]] = []
        cur: list[tuple[str, int]] = []
        started = False  # the current field exists (has text or a quoted part)
        after_white = False  # the last delimiter was IFS whitespace that ended a field
        for seg in segs:
            if seg is None:
                fields.append(cur)
                cur, started = [], True
                continue
            text, flags = seg
            if not flags & _SPLIT or not ifs:
                if text or flags & _QUOTED:
                    started = True
                    after_white = False
                if text:
                    cur.append((text, flags))
                continue
            buf: list[str] = []
            for ch in text:
                if ch not in ifs:
                    buf.append(ch)
                    after_white = False
                    continue
                if buf:
                    cur.append(("".join(buf), flags))
                    buf, started = [], True
                if ch in white:
                    if started:
                        fields.append(cur)
                        cur, started, after_white = [], False, True
                else:
                    if started or not after_white:
                        fields.append(cur)
                        cur, started = [], False
                    after_white = False
            if buf:
                cur.append(("".join(buf), flags))
                started = True
        if started:
            fields.append(cur)
        return fields

    def _lookup(self, name: str, quoted: bool = False) -> str | None:
        """A parameter's value; None when unset."""
        if name == "?":
            return str(self.status)
        if name == "$":
            return str(self.pid)
        if name == "#":
            return str(len(self.args))
        if name in ("@", "*"):
            ifs = self.vars.get("IFS", " ")
            return (ifs[:1] if quoted and name == "*" else " ").join(self.args)
        if name == "0":
            return self.argv0
        if name == "!":
            return None
        if name == "-":
            return "" if not self.login else "i"
        if name.isdigit():
            index = int(name)
            return self.args[index - 1] if index <= len(self.args) else None
        return self.vars.get(name)

    def _parameter(self, part: Part, io: IO) -> str:
        name, op = part.text, part.op
        value = self._lookup(name, part.quoted)
        if (value is None and "u" in self.options and op in ("", "len", "#", "##", "%", "%%") and
            name not in "@*"):
            raise _ExpandError(f"{name}: parameter not set")
        if op == "":
            return value or ""
        if op == "len":
            return str(len(value or ""))
        arg = part.arg or []
        if op in ("-", ":-"):
            missing = value is None or (op == ":-" and value == "")
            return self._expand_string(arg, io) if missing else value or ""
        if op in ("=", ":="):
            if value is None or (op == ":=" and value == ""):
                if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                    raise _ExpandError(f"{name}: bad variable name")
                value = self._expand_string(arg, io)
                self.vars[name] = value
            return value
        if op in ("+", ":+"):
            present = value is not None and (op == "+" or value != "")
            return self._expand_string(arg, io) if present else ""
        if op in ("?", ":?"):
            if value is None or (op == ":?" and value == ""):
                message = self._expand_string(arg, io)
                if not message:
                    message = "parameter not set" + (" or null" if op == ":?" else "")
                raise _ExpandError(f"{name}: {message}")
            return value
        # pattern removal: # ## % %%
        text = value or ""
        chars = _chars([seg for seg in self._segments(arg, io) if seg is not None])
        rx = re.compile(glob_regex(chars) or re.escape("".join(c for c, _ in chars)), re.DOTALL)
        cuts = range(len(text) + 1)
        if op == "#":
            return next((text[k:] for k in cuts if rx.fullmatch(text[:k])), text)
        if op == "##":
            return next((text[k:] for k in reversed(cuts) if rx.fullmatch(text[:k])), text)
        if op == "%":
            return next((text[:k] for k in reversed(cuts) if rx.fullmatch(text[k:])), text)
        return next((text[:k] for k in cuts if rx.fullmatch(text[k:])), text)

    def _arithmetic(self, text: str, io: IO) -> str:
        expression = self._expand_string(parse_heredoc_body(text), io)

        def assign(name: str, value: str) -> None:
            self.vars[name] = value

        try:
            return str(arith.evaluate(expression, self.vars.get, assign))
        except arith.ArithError as exc:
            raise _ExpandError(str(exc)) from None

    def _command_substitution(self, text: str, io: IO) -> str:
        """``$(...)``: the command's output, trailing newlines removed (its status becomes ``$?`` of
        a bare assignment)."""
        sub = self.subshell()
        buf = bytearray()
        try:
            status = sub.run_line(text, IO(buf.extend, io.err, io.stdin, None, io.term))
        except ExitShell as exc:
            status = exc.status
        self._sub_status = status
        return buf.decode("utf-8", "surrogateescape").rstrip("\n")

    # -- globbing ----------------------------------------------------------------------------------

    def _glob(self, chars: list[tuple[str, bool]]) -> list[str]:
        """Pathname expansion over the guest filesystem; [] when nothing matches."""
        absolute = bool(chars) and chars[0][0] == "/"
        components: list[list[tuple[str, bool]]] = [[]]
        for ch in chars:
            if ch[0] == "/":
                components.append([])
            else:
                components[-1].append(ch)
        dirs_only = len(components) > 1 and not components[-1]
        components = [c for c in components if c]
        results = ["/" if absolute else ""]
        last_literal = True
        for comp in components:
            regex = glob_regex(comp)
            literal = "".join(c for c, _ in comp)
            last_literal = regex is None
            found: list[str] = []
            for base in results:
                if regex is None:
                    found.append(self._join(base, literal))
                    continue
                rx = re.compile(regex, re.DOTALL)
                dot_ok = comp[0][0] == "."
                for name in self._listdir(base):
                    if name.startswith(".") and not dot_ok:
                        continue
                    if rx.fullmatch(name):
                        found.append(self._join(base, name))
            results = found
            if not results:
                return []
        if last_literal or dirs_only:
            results = [r for r in results if self._exists(r, dirs_only)]
        if dirs_only:
            results = [r + "/" for r in results]
        return sorted(results)

    @staticmethod
    def _join(base: str, name: str) -> str:
        if not base:
            return name
        return base + name if base.endswith("/") else f"{base}/{name}"

    def _listdir(self, base: str) -> list[str]:
        try:
            host = self.fs.host_path(base or ".", self.cwd)
            if not host.is_dir():
                return []
            return [".", "..", *os.listdir(host)]
        except OSError:
            return []

    def _exists(self, path: str, directory: bool = False) -> bool:
        try:
            host = self.fs.host_path(path, self.cwd)
            return host.is_dir() if directory else os.path.lexists(host)
        except OSError:
            return False

    # -- redirections ------------------------------------------------------------------------------

    def _redirect(self, redirs: list[Redir], io: IO, opened: list) -> IO:
        if not redirs:
            return io
        fds: dict[int, _Fd] = {
            0: _Fd(read=io.stdin, write=io.out if io.term is not None else None, term=io.term,
                   tty=io.tty if io.term is not None else None),
            1: _Fd(write=io.out, tty=io.tty),
            2: _Fd(write=io.err),
        }
        for r in redirs:
            if r.heredoc is not None:
                doc = r.heredoc
                body = (self._expand_string(parse_heredoc_body(doc.body), io) if doc.expand
                        else doc.body)
                fds[r.fd] = _Fd(read=BytesStdin(body.encode("utf-8", "surrogateescape")))
                continue
            try:
                target = self._expand_string(r.target, io)
            except _ExpandError as exc:
                raise _RedirError(str(exc)) from None
            if r.op in (">&", "<&"):
                if target == "-":
                    fds.pop(r.fd, None)
                    continue
                if not target.isdigit():
                    if r.op == ">&" and r.fd == 1:  # bash's >&file: both streams to the file
                        fds[1] = fds[2] = _Fd(write=self._open_write(target, False, opened))
                        continue
                    raise _RedirError("syntax error: bad fd number")
                source = fds.get(int(target))
                if source is None:
                    raise _RedirError(f"{target}: Bad file descriptor")
                fds[r.fd] = source
                continue
            if r.op in ("<", "<>"):
                fds[r.fd] = _Fd(read=BytesStdin(self._read_input(target, create=r.op == "<>")))
                continue
            writer = self._open_write(target, r.op == ">>", opened)
            if r.op == "&>":
                fds[1] = fds[2] = _Fd(write=writer)
            else:
                fds[r.fd] = _Fd(write=writer)
        f0, f1, f2 = fds.get(0), fds.get(1), fds.get(2)
        return IO(
            f1.write if f1 is not None and f1.write is not None else _discard,
            f2.write if f2 is not None and f2.write is not None else _discard,
            f0.read if f0 is not None and f0.read is not None else BytesStdin(),
            f1.tty if f1 is not None else None,
            f0.term if f0 is not None else None,
        )

    def _read_input(self, target: str, create: bool = False) -> bytes:
        if target == "/dev/null":
            return b""
        try:
            if create and not self._exists(target):
                self.fs.write(target, b"", self.cwd)
            return self.fs.read(target, self.cwd)
        except (FileNotFoundError, NotADirectoryError):
            raise _RedirError(f"can't open {target}: no such file") from None
        except IsADirectoryError:
            return b""  # opening a directory works; reading it fails later
        except OSError as exc:
            raise _RedirError(f"can't open {target}: {exc.strerror}") from None

    def _open_write(self, target: str, append: bool, opened: list) -> Callable[[bytes], None]:
        if target == "/dev/null":
            return _discard
        try:
            fh = self.fs.open_write(target, self.cwd, append=append)
        except (FileNotFoundError, NotADirectoryError):
            raise _RedirError(f"can't create {target}: nonexistent directory") from None
        except OSError as exc:
            raise _RedirError(f"can't create {target}: {exc.strerror}") from None
        opened.append(fh)

        def write(data: bytes) -> None:
            fh.write(data)

        return write

    # -- command lookup and execution --------------------------------------------------------------

    def find_command(self, name: str, env: dict[str, str] | None = None) -> Builtin | str | None:
        """A builtin, the guest path of an executable found on ``$PATH`` (or the name itself if it
        has a ``/``), or None."""
        if "/" in name:
            return name
        builtin = BUILTINS.get(name)
        if builtin is not None:
            return builtin
        path = (env or self.vars).get("PATH", PATH)
        for d in path.split(":"):
            candidate = posixpath.join(d or ".", name)
            try:
                if self.fs.host_path(candidate, self.cwd).is_file():
                    return candidate
            except OSError:
                continue
        return None

    def execute(self, argv: list[str], env: dict[str, str], io: IO) -> int:
        """Run one command: a builtin, or a guest file (by path or $PATH)."""
        found = self.find_command(argv[0], env)
        if found is None:
            io.complain(f"{self.argv0}: {argv[0]}: not found\n")
            return 127
        if isinstance(found, str):
            return self.run_file(found, argv, env, io)
        try:
            return int(found(self, argv, io))
        except programs.ProgramInterrupted:
            return 130
        except PipeClosed:
            # SIGPIPE ends the whole subshell, not just this command of its loop
            if self._compound_depth:
                raise
            return 141
        except (ExitShell, Incomplete, LoopControl):
            raise
        except Exception:
            if self._stopping():
                raise
            # a bug in the simulator's command: show it where a developer will look (the model's
            # stderr)
            sys.stderr.write(f"fvp-sim: command {argv[0]} crashed:\n{traceback.format_exc()}")
            sys.stderr.flush()
            io.complain("Segmentation fault\n")
            return 139

    def run_file(self, path: str, argv: list[str], env: dict[str, str], io: IO) -> int:
        """Execute a guest file as Linux and ash would."""
        shown = argv[0]
        try:
            host = self.fs.host_path(path, self.cwd)
            mode = os.stat(host).st_mode
        except (FileNotFoundError, NotADirectoryError):
            io.complain(f"{self.argv0}: {shown}: not found\n")
            return 127
        except OSError:
            io.complain(f"{self.argv0}: {shown}: Permission denied\n")
            return 126
        if not stat.S_ISREG(mode) or not mode & 0o111:
            io.complain(f"{self.argv0}: {shown}: Permission denied\n")
            return 126
        with open(host, "rb") as fh:
            head = fh.read(64)
        program = _find_program(head)
        if program is not None:
            interpreter = programs.find_interpreter(head)
            if interpreter is not None and not self._exists(interpreter):
                # execve(2) fails with ENOENT for a missing PT_INTERP; ash reports the file itself
                # not found
                io.complain(f"sh: {shown}: not found\n")
                return 127
            return self._run_program(program, path, argv, env, io)
        if head.startswith(b"#!"):
            interp = head[2:].split(b"\n", 1)[0].strip().split(b" ")[0].decode("latin-1")
            if posixpath.basename(interp) not in ("sh", "ash", "busybox"):
                io.complain(f"{self.argv0}: {shown}: not found\n")
                return 127
            return self.run_script(host.read_bytes(), argv, env, io)
        if b"\0" in head or head.startswith(b"\x7fELF"):
            io.complain(f"{self.argv0}: {shown}: Exec format error\n")
            return 126
        # ash runs a text file without #! as a script
        return self.run_script(host.read_bytes(), argv, env, io)

    def _run_program(self, program: programs.GuestProgram, path: str, argv: list[str],
                     env: dict[str, str], io: IO) -> int:
        # late: context imports this module's IO
        from fvp_harness.sim.guest.context import SimGuestContext

        resolved = self.fs.normalize(path, self.cwd) if path.startswith("/") else path
        ctx = SimGuestContext(self, [resolved, *argv[1:]], env, io)
        try:
            status = program(ctx)
        except programs.ProgramInterrupted:
            return 130
        except PipeClosed:
            return 141
        except Exception:
            # a bug in a guest program: show it where a developer will look (the model's stderr),
            # and fail the command as a crashed process would
            sys.stderr.write(f"fvp-sim: guest program {argv[0]} crashed:\n{traceback.format_exc()}")
            sys.stderr.flush()
            io.complain("Segmentation fault\n")
            return 139
        finally:
            self.children.reaped(ctx.peak_rss_kib)  # however it ended, the shell waited for it
        return int(status) & 0xFF if status is not None else 0

    def run_script(self, text: bytes, argv: list[str], env: dict[str, str], io: IO) -> int:
        """A new shell runs ``text`` (a script file, ``sh -c``); its exit ends only it."""
        child = Shell(self.machine, interrupted=self.interrupted, args=argv[1:], login=False)
        child.cwd = self.cwd
        child.argv0 = argv[0]
        child.vars.update(env)
        child.exported |= set(env)
        try:
            return child.source(text.decode("utf-8", "replace"), io)
        except ExitShell as exc:
            return exc.status
        finally:  # a new busybox process: its own pages, and the largest child it waited for
            self.children.reaped(max(SHELL_RSS_KIB, child.children.maxrss_kib))

    def source(self, text: str, io: IO) -> int:
        """Run a script's text in this shell, one complete command at a time (as ash reads a file).
        Raises ExitShell."""
        buffer = ""
        status = 0
        for line in text.splitlines():
            buffer += line + "\n"
            try:
                parse(buffer)
            except Incomplete:
                continue
            except ShellSyntaxError:
                # runs what came before the error, reports it; the script ends
                return self.run_line(buffer, io)
            status = self.run_line(buffer, io)
            buffer = ""
            if self.interrupted():
                return 130
        if buffer.strip():
            status = self.run_line(buffer, io)  # reports what is left open
        return status


_warned_programs = False


def _find_program(head: bytes) -> programs.GuestProgram | None:
    """``programs.find_program``, tolerant of a workload module that fails to import (it is
    developed separately; a broken one must not take the shell down)."""
    global _warned_programs
    try:
        return programs.find_program(head)
    except Exception:
        if not _warned_programs:
            _warned_programs = True
            sys.stderr.write(f"fvp-sim: guest programs unavailable:\n{traceback.format_exc()}")
            sys.stderr.flush()
        return None
