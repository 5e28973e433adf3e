"""``FakeTarget``: an in-memory ``Target`` for unit tests of code that drives targets (deploy,
execute, a user's own scripts), so logic can be tested in milliseconds without booting anything.

Why it is shaped so: docs/architecture.md, "Inside `targets/`"."""

from __future__ import annotations

import base64
import binascii
import fnmatch
import hashlib
import posixpath
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from fvp_harness.targets.base import CommandResult

__all__ = ["FakeCall", "FakeTarget", "ProgramHandler"]


@dataclass
class FakeCall:
    """One program invocation on a ``FakeTarget``: what a handler gets."""

    target: FakeTarget
    argv: list[str]
    env: dict[str, str]
    cwd: str
    timeout: float | None
    phase: str

    def path(self, name: str) -> str:
        """``name`` as an absolute guest path (relative to the command's working folder)."""
        return self.target.resolve(name, self.cwd)

    def write(self, name: str, data: bytes | str) -> None:
        """Create or replace a guest file, as a program writing its outputs would."""
        self.target.write(self.path(name), data)


ProgramHandler = Callable[[FakeCall], "CommandResult | str | int | None"]
"""What a program does: return its output (str), its exit status (int), nothing (exit 0), or a whole
result."""


class FakeTarget:
    """An in-memory ``Target`` (also ``NamesPhases``): see the module docstring.

    ``commands`` lists every command line run, ``phases`` the phase each ran in, ``files`` maps
    absolute guest paths to bytes, ``modes`` the ``chmod`` of each, ``dirs`` the folders ``mkdir``
    made (a folder holding a file exists anyway). ``opened``/``closed`` say where its life is;
    ``run`` on a target that is not open raises ``AssertionError`` (a test bug, not a platform
    failure).
    """

    def __init__(self, name: str = "fake", *, log_dir: Path | str = "fake-logs",
                 metadata: Mapping[str, object] | None = None,
                 files: Mapping[str, bytes] | None = None, auto_open: bool = True) -> None:
        self.name = name
        self.log_dir = Path(log_dir)
        self.metadata: dict[str, object] = dict(metadata or {"argv": ["fake"], "version": "fake 1"})
        self.files: dict[str, bytes] = {self.resolve(path): bytes(data)
                                        for path, data in (files or {}).items()}
        self.modes: dict[str, int] = {}
        self.dirs: set[str] = set()
        self.transfers: list[tuple[str, str]] = []
        """(``put`` or ``get``, guest path) in call order: what crossed between host and guest
        outside commands."""
        self.commands: list[str] = []
        self.phases: list[str] = []
        self.programs: dict[str, ProgramHandler] = {}
        self.opened = auto_open
        self.closed = False

    # -- life --------------------------------------------------------------------------------------

    def open(self) -> None:
        self.opened, self.closed = True, False

    def close(self) -> None:
        self.closed = True

    def __enter__(self) -> FakeTarget:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- scripting ---------------------------------------------------------------------------------

    def program(self, pattern: str, handler: ProgramHandler) -> None:
        """Answer commands whose first word matches ``pattern`` (an ``fnmatch`` glob on the word as
        typed, e.g. ``/guest/*/executor_runner``); later registrations win over earlier ones."""
        self.programs[pattern] = handler

    def resolve(self, name: str, cwd: str = "/") -> str:
        """An absolute, normalised guest path."""
        return posixpath.normpath(posixpath.join(cwd, name))

    def write(self, path: str, data: bytes | str) -> None:
        """Create or replace a guest file (parents are implied: the fake has no separate folder
        entries)."""
        self.files[self.resolve(path)] = (data.encode("utf-8") if isinstance(data, str)
                                          else bytes(data))

    def exists(self, path: str) -> bool:
        """A file, or a folder holding at least one file (or made by ``mkdir``)."""
        resolved = self.resolve(path)
        return resolved in self.files or self._is_dir(resolved)

    # -- Target ------------------------------------------------------------------------------------

    def run(self, command: str, timeout: float | None = None) -> CommandResult:
        """Run one command line on the fake guest."""
        return self.run_in_phase(command, timeout, "command")

    def run_in_phase(self, command: str, timeout: float | None, phase: str) -> CommandResult:
        """``run``, remembering the phase the caller named (``NamesPhases``)."""
        assert self.opened and not self.closed, f"command on a target that is not open: {command!r}"
        self.commands.append(command)
        self.phases.append(phase)
        result = self._line(command, timeout, phase)
        if isinstance(result, CommandResult):
            return result
        return CommandResult(command, result.status, "".join(result.output))

    def put(self, local: Path, remote: str) -> None:
        self.transfers.append(("put", self.resolve(remote)))
        self.write(remote, Path(local).read_bytes())

    def get(self, remote: str) -> bytes:
        path = self.resolve(remote)
        self.transfers.append(("get", path))
        if path not in self.files:
            raise FileNotFoundError(f"{remote}: no such file in the fake guest")
        return self.files[path]

    # -- the command language ----------------------------------------------------------------------

    def _line(self, command: str, timeout: float | None, phase: str) -> CommandResult:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|<>")
        lexer.whitespace_split = True
        tokens = [*lexer, ";"]
        results: list[CommandResult] = []
        status, cwd, skip, words = 0, "/", False, []
        for token in tokens:
            if token not in (";", "&&", "||"):
                words.append(token)
                continue
            if words and not skip:
                words = [str(status) if word == "$?" else word for word in words]
                result, cwd = self._simple(words, cwd, timeout, phase)
                results.append(result)
                status = result.exit_status
            words = []
            skip = (status != 0) if token == "&&" else (status == 0) if token == "||" else False
        if len(results) == 1:  # one simple command: keep its result (a program's duration) as it is
            only = results[0]
            return CommandResult(command, only.exit_status, only.output, only.duration_s,
                                 only.log_path)
        return CommandResult(command, status, "".join(result.output for result in results),
                             sum(result.duration_s for result in results))

    def _simple(self, words: list[str], cwd: str, timeout: float | None,
                phase: str) -> tuple[CommandResult, str]:
        """Run one simple command; returns its result and the working folder after it (``cd``
        changes it)."""
        words, redirect = _redirection(words)
        words = words[:1] + [match for word in words[1:] for match in self._glob(word, cwd)]
        env: dict[str, str] = {}
        while words and "=" in words[0] and words[0].split("=", 1)[0].isidentifier():
            name, value = words.pop(0).split("=", 1)
            env[name] = value
        if not words:
            return CommandResult("", 0, ""), cwd
        name, args = words[0], words[1:]
        if name == "cd":
            folder = self.resolve(args[0] if args else "/", cwd)
            if not self._is_dir(folder):
                return CommandResult("cd", 2,
                                     f"sh: cd: can't cd to {args[0] if args else '/'}\n"), cwd
            return CommandResult("cd", 0, ""), folder
        builtin = getattr(self, f"_cmd_{name}", None)
        if builtin is not None:
            status, data = builtin(args, cwd)
            result = CommandResult(" ".join(words), status, "")
        else:
            result = self._program(words, env, cwd, timeout, phase)
            data = result.output.encode("utf-8")
        if redirect is not None:
            mode, path = redirect
            resolved = self.resolve(path, cwd)
            self.files[resolved] = (self.files.get(resolved, b"") if mode == ">>" else b"") + data
            data = b""
        output = data.decode("utf-8", errors="replace")
        return CommandResult(result.command, result.exit_status, output, result.duration_s,
                             result.log_path), cwd

    def _program(self, words: list[str], env: dict[str, str], cwd: str, timeout: float | None,
                 phase: str) -> CommandResult:
        for pattern in reversed(list(self.programs)):
            if fnmatch.fnmatchcase(words[0], pattern):
                answer = self.programs[pattern](
                    FakeCall(self, list(words), env, cwd, timeout, phase)
                )
                if isinstance(answer, CommandResult):
                    return answer
                if isinstance(answer, int):
                    return CommandResult(" ".join(words), answer, "")
                return CommandResult(" ".join(words), 0, answer or "")
        return CommandResult(" ".join(words), 127, f"sh: {words[0]}: not found\n")

    def _glob(self, word: str, cwd: str) -> list[str]:
        """``word`` expanded like sh's ``*`` in the working folder (sorted names), or as written."""
        if "*" not in word or "/" in word:
            return [word]
        prefix = cwd.rstrip("/") + "/"
        names = {key[len(prefix):].split("/", 1)[0]
                 for key in [*self.files, *self.dirs] if key.startswith(prefix)}
        matches = sorted(name for name in names if fnmatch.fnmatchcase(name, word) and
                         not name.startswith("."))
        return matches or [word]

    def _is_dir(self, path: str) -> bool:
        prefix = path.rstrip("/") + "/"
        return (path == "/" or path in self.dirs or
                any(name.startswith(prefix) for name in [*self.files, *self.dirs]))

    # -- builtins: (args, cwd) -> (exit status, bytes written to stdout) ---------------------------

    def _cmd_true(self, args: list[str], cwd: str) -> tuple[int, bytes]:
        return 0, b""

    def _cmd_false(self, args: list[str], cwd: str) -> tuple[int, bytes]:
        return 1, b""

    def _cmd_export(self, args: list[str], cwd: str) -> tuple[int, bytes]:
        return 0, b""

    def _cmd_echo(self, args: list[str], cwd: str) -> tuple[int, bytes]:
        return 0, (" ".join(args) + "\n").encode()

    def _cmd_printf(self, args: list[str], cwd: str) -> tuple[int, bytes]:
        if not args:
            return 1, b"printf: missing format\n"
        fmt, values = args[0].replace("\\n", "\n"), list(args[1:])
        slots = fmt.count("%s")
        if not slots:
            return 0, fmt.replace("%%", "%").encode()
        out = []
        while True:  # like printf(1): the format is reused until every argument is consumed
            group, values = values[:slots], values[slots:]
            text = fmt
            for value in group + [""] * (slots - len(group)):
                text = text.replace("%s", value.replace("%", "\0"), 1)
            out.append(text.replace("%%", "%").replace("\0", "%"))
            if not values:
                return 0, "".join(out).encode()

    def _cmd_mkdir(self, args: list[str], cwd: str) -> tuple[int, bytes]:
        for name in (arg for arg in args if not arg.startswith("-")):
            self.dirs.add(self.resolve(name, cwd))
        return 0, b""

    def _cmd_rm(self, args: list[str], cwd: str) -> tuple[int, bytes]:
        for name in (arg for arg in args if not arg.startswith("-")):
            path = self.resolve(name, cwd)
            prefix = path.rstrip("/") + "/"
            for table in (self.files, self.modes):
                for known in [key for key in table if key == path or key.startswith(prefix)]:
                    del table[known]
            self.dirs -= {key for key in self.dirs if key == path or key.startswith(prefix)}
        return 0, b""

    def _cmd_chmod(self, args: list[str], cwd: str) -> tuple[int, bytes]:
        if len(args) < 2 or self.resolve(args[1], cwd) not in self.files:
            return 1, f"chmod: {args[-1] if args else ''}: No such file or directory\n".encode()
        self.modes[self.resolve(args[1], cwd)] = int(args[0], 8)
        return 0, b""

    def _cmd_ls(self, args: list[str], cwd: str) -> tuple[int, bytes]:
        folder = self.resolve(args[0] if args else ".", cwd)
        if folder in self.files:
            return 0, (posixpath.basename(folder) + "\n").encode()
        if not self._is_dir(folder):
            return 1, f"ls: {args[0] if args else '.'}: No such file or directory\n".encode()
        prefix = folder.rstrip("/") + "/"
        names = {key[len(prefix):].split("/", 1)[0]
                 for key in [*self.files, *self.dirs] if key.startswith(prefix)}
        return 0, "".join(f"{name}\n" for name in sorted(names)).encode()

    def _cmd_cat(self, args: list[str], cwd: str) -> tuple[int, bytes]:
        out = []
        for name in args:
            path = self.resolve(name, cwd)
            if path not in self.files:
                return 1, f"cat: can't open '{name}': No such file or directory\n".encode()
            out.append(self.files[path])
        return 0, b"".join(out)

    def _cmd_sha256sum(self, args: list[str], cwd: str) -> tuple[int, bytes]:
        lines, status = [], 0
        for name in args:
            path = self.resolve(name, cwd)
            if path not in self.files:
                lines.append(f"sha256sum: {name}: No such file or directory\n")
                status = 1
                continue
            lines.append(f"{hashlib.sha256(self.files[path]).hexdigest()}  {name}\n")
        return status, "".join(lines).encode()

    def _cmd_base64(self, args: list[str], cwd: str) -> tuple[int, bytes]:
        names = [arg for arg in args if not arg.startswith("-")]
        if "-d" not in args or len(names) != 1 or self.resolve(names[0], cwd) not in self.files:
            return 1, b"base64: the fake decodes one file: base64 -d FILE\n"
        try:
            return 0, base64.b64decode(self.files[self.resolve(names[0], cwd)], validate=False)
        except (binascii.Error, ValueError):
            return 1, b"base64: invalid input\n"


def _redirection(words: list[str]) -> tuple[list[str], tuple[str, str] | None]:
    """Split ``> file`` / ``>> file`` off a simple command."""
    for index, word in enumerate(words):
        if word in (">", ">>") and index + 1 < len(words):
            return words[:index] + words[index + 2:], (word, words[index + 1])
    return words, None
