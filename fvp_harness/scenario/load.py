"""Reading a scenario file: extends -> --set -> ${variables} -> paths -> pydantic -> cross checks ->
files.

Every stage works on a located tree (``located.LNode``), so each problem is reported where its value
was written: the scenario file, a base file brought in by ``extends``, or the ``--set``/``--fvp``
option that supplied it. All problems found are reported together in one ``ScenarioError``; the
stages that make further checks meaningless (YAML syntax, a missing or circular ``extends``) stop
early.

One round: structural problems (types, unknown keys) and cross-field problems (compare naming a
build, a metric listed twice, missing files) are reported together. When the whole scenario does not
validate, the cross-field checks run over the parts that did (``model.ScenarioParts``), and skip
what they would have to guess. One message per place: a value that already has a problem (an
undefined ``${vars.nope}``, a type error) gets no consequential one from a later stage (no "file not
found: .../${vars.nope}/x"), and uses of a ``vars`` entry that failed are not reported again (the
entry's own message is).

Path rules: relative paths are relative to the file the value is written in (a base file's paths
stay next to the base), and to the working folder for command-line overrides. The loaded
``Scenario`` holds absolute paths, so nothing downstream resolves paths again.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from fvp_harness.errors import ConfigurationError, ScenarioError
from fvp_harness.located import (
    LNode,
    Location,
    YamlProblem,
    check_plain_size,
    compose_file,
    did_you_mean,
    display_path,
    format_path,
    merge,
    schema_step,
    shorten_values,
    validation_problems,
)
from fvp_harness.profiles import Profile, ProfileNotFound, load_profile
from fvp_harness.scenario.baremetal import cmd_line_problem, semihosting_unit
from fvp_harness.scenario.executable import host_exec_problem
from fvp_harness.scenario.model import (
    LOADER_CONTEXT,
    Compare,
    FvpConfig,
    MetricSpec,
    Scenario,
    ScenarioParts,
    cross_field_problems,
)
from fvp_harness.scenario.secrets import redact_problems
from fvp_harness.scenario.sim_knobs import sim_knob_problems

__all__ = ["LoadedScenario", "file_problem", "load_scenario", "path_fields", "path_problem"]

log = logging.getLogger(__name__)

PathTuple = tuple[str | int, ...]


@dataclass(frozen=True)
class LoadedScenario:
    """A validated scenario with where it came from.

    ``path`` is the scenario file (absolute); ``files`` every file read (the scenario and its
    ``extends`` bases, for staleness checks); ``overrides`` the ``--set`` options applied;
    ``profile`` the resolved platform profile.
    """

    scenario: Scenario
    path: Path
    profile: Profile
    files: tuple[Path, ...] = ()
    overrides: tuple[str, ...] = ()

    @property
    def stem(self) -> str:
        """The scenario file's stem: results go to ``results/<stem>/``."""
        return self.path.stem

    @property
    def directory(self) -> Path:
        """The folder of the scenario file (what ``${scenario_dir}`` expands to)."""
        return self.path.parent


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _printable(text: str) -> str:
    """A message safe to print: control characters from hostile values (NUL, ESC sequences) shown as
    escapes (line breaks stay: some messages quote a multi-line reason)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


class _Stop(Exception):
    """Raised inside the loader when problems so far make further checks meaningless."""


class _Problems:
    def __init__(self) -> None:
        self.located: list[tuple[Location, str]] = []
        self.spoiled: set[str] = set()

    @property
    def where(self) -> set[str]:
        """Places that already have a problem (or hold a value spoiled by one reported elsewhere):
        later stages say nothing more there."""
        return {str(loc) for loc, _ in self.located} | self.spoiled

    def spoil(self, loc: Location) -> None:
        """The value at ``loc`` is unusable because of a problem reported at another place."""
        self.spoiled.add(str(loc))

    def add(self, loc: Location, path: PathTuple | str, message: str) -> None:
        field = path if isinstance(path, str) else format_path(path)
        self.located.append((loc, f"{field}: {message}"))

    def sorted(self) -> list[str]:
        """Command-line options first, then by file, line and column: the order a reader fixes them
        in."""
        order = sorted(  # stable: command-line options keep the order they were given in
            self.located,
            key=lambda item: (
                item[0].line is not None,
                item[0].file if item[0].line is not None else "",
                item[0].line or 0,
                item[0].col or 0,
            ),
        )
        return [_printable(f"{loc}: {text}") for loc, text in order]

    def stop(self, loc: Location, path: PathTuple | str, message: str) -> _Stop:
        self.add(loc, path, message)
        return _Stop()


def load_scenario(
    path: Path | str,
    overrides: Sequence[str] = (),
    *,
    fvp_binary: str | None = None,
    check_files: bool = True,
    env: Mapping[str, str] | None = None,
) -> LoadedScenario:
    """Load one scenario file into a ``LoadedScenario``; raise ``ScenarioError`` listing every
    problem found.

    ``overrides`` are ``--set`` texts (``run.iterations=50``; the value is parsed as YAML).
    ``fvp_binary`` is ``--fvp``: it replaces ``fvp.binary`` (a relative path is relative to the
    working folder). ``check_files`` off skips the file-system checks (missing artifacts without a
    build command, firmware, the FVP binary), for tools that only need the structure. ``env``
    replaces ``os.environ`` for ``${env:NAME}`` (tests).
    """
    scenario_path = Path(os.path.abspath(Path(path).expanduser()))
    problems = _Problems()
    environment = os.environ if env is None else env
    root: LNode | None = None
    try:
        root, files = _read_with_extends(scenario_path, (), None, problems)
        for text in overrides:
            _apply_override(root, text, problems)
        if fvp_binary is not None:
            where = Location(f"--fvp {fvp_binary}", base_dir=Path.cwd())
            _set_path(root, ("fvp", "binary"), LNode(fvp_binary, where, where))
        _substitute(root, scenario_path.parent, environment, problems)
        _absolutise_paths(root, problems)
        scenario = _validate(root, problems)
        view = scenario if scenario is not None else _parts(root)
        profile = _cross_checks_and_profile(root, view, problems)
        if scenario is not None and profile is not None:
            _check_platform_kind(root, scenario, profile, problems)
            for knob, message in sim_knob_problems(scenario.fvp, baremetal=profile.baremetal):
                if str(_node_at(root, knob)) not in problems.where:
                    problems.add(_node_at(root, knob), knob, message)
        if scenario is not None:
            _check_input_separators(root, scenario, problems)
        if check_files:
            _check_artifacts(root, problems)
            _check_host_runners(root, problems)
            fvp, target = (scenario.fvp,
                           scenario.target) if scenario is not None else _fvp_part(root)
            if profile is not None and fvp is not None and target == "fvp" and not fvp.is_sim:
                _check_real_model(root, fvp, profile, problems)
    except _Stop:
        scenario, profile = None, None
    if problems.located or scenario is None or profile is None:
        raise ScenarioError(_without_secrets(problems.sorted(), root))
    log.debug("loaded scenario %s (%d files, %d overrides)", scenario_path, len(files),
              len(overrides))
    return LoadedScenario(scenario, scenario_path, profile, tuple(files), tuple(overrides))


def _without_secrets(problems: list[str], root: LNode | None) -> list[str]:
    """The messages with the scenario's secret values masked (a message may quote the value it
    refuses) and its long values shortened (``located.shorten_values``: a check that quotes a 1 MB
    value echoes 80 characters)."""
    if root is None:
        return problems
    data = root.plain()
    if not isinstance(data, dict):
        return problems
    return [shorten_values(problem, [data]) for problem in redact_problems(problems, data)]


# --- host paths -----------------------------------------------------------------------------------

NAME_MAX = 255
"""Bytes in one name of a path (Linux, macOS): a longer one fails every file-system call with
ENAMETOOLONG."""
PATH_MAX = 4096
"""Bytes in a whole path, its terminating NUL included."""


def path_problem(text: str) -> str | None:
    """Why ``text`` cannot be a host path at all (too long for the file system, a NUL byte), or
    None. Checked before any file-system call, so such a path is a located validation message rather
    than an ``OSError`` traceback."""
    try:
        raw = os.fsencode(text)
    except UnicodeError:
        return "the path cannot be encoded for this file system"
    if b"\0" in raw:
        return f"the path {text!r} contains a NUL byte"
    if len(raw) >= PATH_MAX:
        return f"the path is {len(raw)} bytes long; a file system takes at most {PATH_MAX - 1}"
    longest = max(len(part) for part in raw.split(b"/"))
    if longest > NAME_MAX:
        return f"a name in the path is {longest} bytes long; a file system takes at most {NAME_MAX}"
    return None


def file_problem(path: str) -> tuple[bool, str | None]:
    """(exists, why it cannot be an artifact) for a runner, model or input file: what ``run`` needs
    of it, checked by ``validate`` too: a regular file that can be read (not a folder, device, named
    pipe or socket, and not a file whose first read fails, like ``/proc/self/mem``). Opening is
    non-blocking, so a FIFO cannot hang it."""
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False, None
    except OSError as exc:
        return True, f"cannot be read: {exc.strerror or exc}"
    if not stat.S_ISREG(info.st_mode):
        kind = ("a folder" if stat.S_ISDIR(info.st_mode) else "a named pipe"
                if stat.S_ISFIFO(info.st_mode) else "a socket" if stat.S_ISSOCK(info.st_mode)
                else "a device" if stat.S_ISCHR(info.st_mode) or
                stat.S_ISBLK(info.st_mode) else "not a file")
        return True, f"is {kind}; expected a regular file"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        try:
            os.read(fd, 1)
        finally:
            os.close(fd)
    except OSError as exc:
        return True, f"cannot be read: {exc.strerror or exc}"
    return True, None


# --- extends --------------------------------------------------------------------------------------


def _read_with_extends(
    path: Path, chain: tuple[Path, ...], via: LNode | None, problems: _Problems
) -> tuple[LNode, list[Path]]:
    if path in chain:
        cycle = " -> ".join(display_path(item) for item in (*chain[chain.index(path) :], path))
        assert via is not None
        raise problems.stop(
            via.loc, "extends", f"circular extends: {cycle}; expected a chain of bases that ends"
        )
    problem = path_problem(str(path))
    if problem is not None:
        if via is None:
            raise problems.stop(Location(display_path(path)), "(file)",
                                f"cannot be a scenario file: {problem}")
        raise problems.stop(via.loc, "extends", f"cannot be a base file: {problem}")
    try:
        is_file = path.is_file()
    except OSError as exc:
        raise problems.stop(via.loc if via is not None else Location(display_path(path)),
                            "extends" if via is not None else "(file)",
                            f"cannot read: {exc.strerror or exc}") from exc
    if not is_file:
        if via is None:
            raise problems.stop(Location(display_path(path)), "(file)", "scenario file not found")
        raise problems.stop(
            via.loc,
            "extends",
            f"base file not found: {display_path(path)} (paths in extends are "
            "relative to the file that names them)",
        )
    try:
        root = compose_file(path)
    except YamlProblem as exc:
        raise problems.stop(exc.loc, "(yaml)", exc.message) from exc
    except (OSError, ValueError) as exc:
        raise problems.stop(Location(display_path(path)), "(file)", f"cannot read: {exc}") from exc
    if not isinstance(root.value, dict):
        raise problems.stop(
            root.loc,
            "(top level)",
            f"a scenario is a mapping of keys (name:, builds:, models:, ...), "
            f"got {type(root.value).__name__}",
        )
    files = [path]
    extends = root.value.pop("extends", None)
    if extends is None or extends.value is None:
        return root, files
    items = extends.value if isinstance(extends.value, list) else [extends]
    merged: LNode | None = None
    for item in items:
        if not isinstance(item.value, str) or not item.value.strip():
            raise problems.stop(
                item.loc, "extends", f"got {item.value!r}; expected a file path or a list of paths"
            )
        base_path = Path(os.path.normpath(path.parent / Path(item.value).expanduser()))
        base, base_files = _read_with_extends(base_path, (*chain, path), item, problems)
        merged = base if merged is None else merge(merged, base)
        files += base_files
    assert merged is not None
    return merge(merged, root), files


# --- --set ----------------------------------------------------------------------------------------


def _to_node(value: Any, loc: Location) -> LNode:
    if isinstance(value, dict):
        return LNode({str(key): _to_node(item, loc) for key, item in value.items()}, loc, loc)
    if isinstance(value, list):
        return LNode([_to_node(item, loc) for item in value], loc, loc)
    return LNode(value, loc, loc)


def _set_path(root: LNode, path: PathTuple, node: LNode) -> None:
    current = root
    for part in path[:-1]:
        child = current.get((part,))
        if child is None or not isinstance(child.value, dict | list):
            child = LNode({}, node.loc, node.loc)
            current.value[part] = child
        current = child
    last = path[-1]
    if isinstance(current.value, list):
        current.value[int(last)] = node
    else:
        current.value[last] = node


def _override_value(raw: str) -> Any:
    """A ``--set`` value: a YAML scalar or flow collection (``50``, ``true``, ``[a, b]``, ``{a:
    1}``); text that is not valid YAML, or that YAML would read as a mapping without braces (``A
    title: with colon``), stays text."""
    if not raw.strip():
        return ""
    try:
        value = yaml.safe_load(raw)
    # ValueError: 2001-02-30
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError):
        return raw
    if isinstance(value, dict) and not raw.lstrip().startswith("{"):
        return raw
    # aliases that would expand beyond reason: keep the text
    if check_plain_size(value) is not None:
        return raw
    return value


def _apply_override(root: LNode, text: str, problems: _Problems) -> None:
    where = Location(f"--set {text}", base_dir=Path.cwd())
    if "=" not in text:
        problems.add(where, "--set", "expected PATH=VALUE, e.g. --set run.iterations=50")
        return
    dotted, raw = text.split("=", 1)
    parts = dotted.strip().split(".")
    if not all(parts):
        problems.add(where, dotted,
                     "empty part in the path; expected dotted field names like run.iterations")
        return
    value = _override_value(raw)
    annotation: Any = Scenario
    path: list[str | int] = []
    index = 0
    while index < len(parts):
        part = parts[index]
        try:
            kind, annotation, takes_rest = schema_step(annotation, part)
        except KeyError as exc:
            problems.add(where, format_path((*path, part)), str(exc.args[0]))
            return
        if kind == "key" and takes_rest:
            path.append(".".join(parts[index:]))
            break
        if kind == "index":
            parent = root.get(tuple(path))
            size = len(parent.value) if parent is not None and isinstance(parent.value, list) else 0
            position = int(part)
            if not 0 <= position < size:
                problems.add(
                    where,
                    format_path((*path, position)),
                    f"index out of range (the list has {size} "
                    "items); set the whole list instead, e.g. key=[a, b]",
                )
                return
            path.append(position)
        else:
            path.append(part)
        index += 1
    item = root.get(tuple(path[:2])) if path[:1] == ["metrics"] and len(path) > 2 else None
    # `- cpu_time` is short for `- {name: cpu_time}`
    if item is not None and isinstance(item.value, str):
        item.value = {"name": LNode(item.value, item.loc, item.loc)}
    _set_path(root, tuple(path), _to_node(value, where))


# --- ${variables} ---------------------------------------------------------------------------------

_REFERENCE = re.compile(r"\$\$\{|\$\{([^{}]*)\}|\$\{")
_ENV = re.compile(r"^env:([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?$", re.DOTALL)
_FORMS = "${env:NAME}, ${env:NAME:-default}, ${scenario_dir}, ${file_dir} or ${vars.NAME}"


class _VarError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.entry: str | None = None
        """The innermost ``vars`` entry whose value holds the problem (None: not inside a ``vars``
        entry)."""


class _Consequential(_VarError):
    """A use of a ``vars`` entry whose own problem is already reported at the entry."""


class _Variables:
    """Resolves ``${...}`` references; ``vars`` entries are resolved on demand (they may use each
    other)."""

    def __init__(self, root: LNode, scenario_dir: Path, env: Mapping[str, str]) -> None:
        vars_node = root.get(("vars",))
        self.vars: dict[str, LNode] = (
            vars_node.value if vars_node and isinstance(vars_node.value, dict) else {}
        )
        self.scenario_dir = scenario_dir
        self.env = env
        self.done: dict[str, Any] = {}
        self.active: list[str] = []
        self.failed: set[str] = set()

    def var(self, name: str) -> Any:
        if name in self.done:
            return self.done[name]
        if name.partition(".")[0] in self.failed:
            raise _Consequential(f"${{vars.{name}}} has a problem of its own")
        head, _, rest = name.partition(".")
        if name not in self.vars and head in self.vars and rest:
            value = self.var(head)
            for part in rest.split("."):
                if not isinstance(value, dict) or part not in value:
                    raise _VarError(f"undefined variable ${{vars.{name}}} (vars.{head} has no "
                                    f"{part!r})")
                value = value[part]
            return value
        if name not in self.vars:
            hint = did_you_mean(name, self.vars)
            defined = ", ".join(self.vars) or "none"
            raise _VarError(f"undefined variable ${{vars.{name}}}{hint} (defined in vars: "
                            f"{defined})")
        if name in self.active:
            cycle = " -> ".join([*self.active[self.active.index(name) :], name])
            circle = _VarError(f"variables refer to each other in a circle: {cycle}")
            circle.entry = name  # reported once, at the entry where the circle starts
            raise circle
        self.active.append(name)
        try:
            value = self.resolve_node(self.vars[name])
        except _VarError as exc:
            if exc.entry is None and not isinstance(exc, _Consequential):
                # the problem is written in this entry (not in the entries that use it)
                exc.entry = name
            self.failed.add(name)  # uses of it say no more
            raise
        finally:
            self.active.pop()
        self.done[name] = value
        return value

    def resolve_node(self, node: LNode) -> Any:
        if isinstance(node.value, dict):
            return {key: self.resolve_node(child) for key, child in node.value.items()}
        if isinstance(node.value, list):
            return [self.resolve_node(child) for child in node.value]
        if isinstance(node.value, str):
            return self.expand(node.value, node.loc)
        return node.value

    def expand(self, text: str, loc: Location) -> Any:
        matches = list(_REFERENCE.finditer(text))
        if not matches:
            return text
        if len(matches) == 1 and matches[0].group(0) == text and text.startswith("${vars."):
            return self.var(
                text[len("${vars.") : -1]
            )  # a whole-value reference keeps its type (int, list, ...)
        pieces: list[str] = []
        last = 0
        for match in matches:
            pieces.append(text[last : match.start()])
            last = match.end()
            if match.group(0) == "$${":
                pieces.append("${")
            elif match.group(1) is None:
                raise _VarError(
                    f"unclosed ${{ in {text!r}; expected one of {_FORMS} (write $${{ for a literal "
                    "${)"
                )
            else:
                pieces.append(str(self.reference(match.group(1).strip(), loc)))
        pieces.append(text[last:])
        return "".join(pieces)

    def reference(self, inner: str, loc: Location) -> Any:
        if inner == "scenario_dir":
            return str(self.scenario_dir)
        if inner == "file_dir":
            return str(loc.base_dir or self.scenario_dir)
        if inner.startswith("vars."):
            value = self.var(inner[len("vars.") :])
            if isinstance(value, dict | list):
                raise _VarError(f"${{{inner}}} is a {type(value).__name__}; only a whole value can "
                                "be one")
            return value
        env_match = _ENV.match(inner)
        if env_match:
            name, default = env_match.groups()
            if name in self.env:
                return self.env[name]
            if default is not None:
                return default
            raise _VarError(
                f"environment variable {name} is not set (write ${{env:{name}:-default}} to give a "
                "default)"
            )
        raise _VarError(
            f"unknown variable ${{{inner}}}{did_you_mean(inner, ['scenario_dir', 'file_dir'])}; "
            f"expected one of {_FORMS}"
        )


def _substitute(root: LNode, scenario_dir: Path, env: Mapping[str, str],
                problems: _Problems) -> None:
    variables = _Variables(root, scenario_dir, env)
    for name, node in list(variables.vars.items()):
        try:
            resolved = variables.var(name)
        except _Consequential:
            problems.spoil(node.loc)
            continue
        except _VarError as exc:
            entry = exc.entry if exc.entry in variables.vars else name
            where = variables.vars[entry].loc
            if str(where) not in problems.where:
                problems.add(where, ("vars", entry), str(exc))
            if entry != name:
                problems.spoil(node.loc)
            variables.failed.add(name)
            continue
        # the vars block itself now holds resolved values
        replacement = _to_node(resolved, node.loc)
        replacement.key_loc = node.key_loc
        variables.vars[name] = replacement
    # a list first: substituted collections must not be walked again
    for path, node in list(root.walk()):
        if path[:1] == ("vars",) or not isinstance(node.value, str):
            continue
        try:
            value = variables.expand(node.value, node.loc)
        except _Consequential:
            problems.spoil(node.loc)
            continue
        except _VarError as exc:
            problems.add(node.loc, path, str(exc))
            continue
        node.value = _to_node(value, node.loc).value if isinstance(value, dict | list) else value


# --- paths ----------------------------------------------------------------------------------------


def path_fields(root: LNode) -> list[tuple[PathTuple, LNode]]:
    """The nodes holding host file paths (runner, model and input files, sources, firmware)."""
    patterns: list[tuple[str | None, ...]] = [
        ("builds", None, "runner"),
        ("builds", None, "sources", None),
        ("builds", None, "models", None, "file"),
        ("builds", None, "models", None, "sources", None),
        ("builds", None, "libraries", None),  # a bare path (the short form)
        ("builds", None, "libraries", None, "file"),
        ("builds", None, "libraries", None, "sources", None),
        ("models", None, "file"),
        ("models", None, "sources", None),
        ("models", None, "inputs", None, "file"),
        ("models", None, "inputs", None, "sources", None),
        ("fvp", "firmware", None),
    ]
    found = []
    for path, node in root.walk():
        for pattern in patterns:
            if len(pattern) == len(path) and all(
                want is None or want == got for want, got in zip(pattern, path, strict=True)
            ):
                found.append((path, node))
    return found


def _absolute(node: LNode) -> None:
    if isinstance(node.value, str) and node.value:
        base = node.loc.base_dir or Path.cwd()
        node.value = os.path.normpath(os.path.join(base, os.path.expanduser(node.value)))


def _absolutise_paths(root: LNode, problems: _Problems) -> None:
    """Make every host path absolute (relative to the file that wrote it), and refuse one no file
    system takes."""
    checked: list[tuple[PathTuple, LNode]] = []
    for path, node in path_fields(root):
        _absolute(node)
        checked.append((path, node))
    binary = root.get(("fvp", "binary"))
    if (
        binary is not None
        and isinstance(binary.value, str)
        and binary.value != "sim"
        and (os.sep in binary.value or "/" in binary.value or binary.value.startswith("~"))
    ):
        _absolute(binary)
        checked.append((("fvp", "binary"), binary))
    platform = root.get(("platform",))
    if (
        platform is not None
        and isinstance(platform.value, str)
        and ("/" in platform.value or platform.value.endswith((".yaml", ".yml")))
    ):
        _absolute(platform)
        checked.append((("platform",), platform))
    already = problems.where
    for path, node in checked:
        problem = path_problem(node.value) if isinstance(node.value, str) else None
        if problem is not None and str(node.loc) not in already:
            problems.add(node.loc, path, problem)


# --- validation and cross checks ------------------------------------------------------------------


def _validate(root: LNode, problems: _Problems) -> Scenario | None:
    run = root.plain().get("run")
    # either, never both
    if isinstance(run, dict) and run.get("until") is not None and "repetitions" in run:
        problems.add(_node_at(root, ("run", "repetitions"), at_key=True), ("run", "repetitions"),
                     "run.until chooses the repetitions (at most until.max_repetitions): remove "
                     "run.repetitions, or set run.until to null (--set run.until=null) for a fixed "
                     "matrix")
    try:
        return Scenario.model_validate(root.plain(), context={LOADER_CONTEXT: True})
    except ValidationError as exc:
        # one message per place: a failed ${...} explains the type error there
        already = problems.where
        for where, message in validation_problems(exc, root, Scenario):
            if str(where) not in already:
                problems.located.append((where, message))
        return None


def _node_at(root: LNode, path: PathTuple, at_key: bool = False) -> Location:
    node = root.get(path)
    while node is None and path:
        path = path[:-1]
        node = root.get(path)
        at_key = True
    assert node is not None
    return (node.key_loc or node.loc) if at_key else node.loc


_MISSING = object()


def _lenient(model: type[Compare], raw: dict[str, Any]) -> tuple[Compare | None, set[str]]:
    """Validate a section without the fields that fail: (the section or None, the fields left
    out)."""
    data = dict(raw)
    left_out: set[str] = set()
    for _round in range(len(raw) + 1):
        try:
            return model.model_validate(data), left_out
        except ValidationError as exc:
            bad = {str(error["loc"][0]) for error in exc.errors() if error["loc"]}
            if not bad or not bad & set(data):
                break  # a problem of the section as a whole: nothing validated
            left_out |= bad
            data = {key: value for key, value in data.items() if key not in bad}
    return None, set(raw)


def _parts(root: LNode) -> ScenarioParts:
    """What the cross-field checks may read of a scenario that did not validate (see
    ``ScenarioParts``)."""
    data = root.plain()
    unknown: set[str] = set()
    sections: dict[str, dict[str, Any]] = {}
    for section in ("builds", "models"):
        value = data.get(section)
        sections[section] = value if isinstance(value, dict) else {}
        if not isinstance(value, dict):
            unknown.add(section)
    metrics: list[MetricSpec] = []
    raw_metrics = data.get("metrics", _MISSING)
    if raw_metrics is _MISSING:
        metrics = list(Scenario.model_fields["metrics"].get_default(call_default_factory=True))
    elif isinstance(raw_metrics, list):
        for item in raw_metrics:
            entry = {"name": item} if isinstance(item, str) else item
            try:
                metrics.append(MetricSpec.model_validate(entry))
                continue
            except ValidationError:
                pass
            name = entry.get("name") if isinstance(entry, dict) else None
            # a stand-in: its name (and whether it has a regex) is what counts
            if isinstance(name, str) and name:
                metrics.append(MetricSpec.model_construct(name=name, regex=entry.get("regex")))
            else:
                unknown.add("metrics")
    else:
        unknown.add("metrics")
    compare = None
    raw_compare = data.get("compare")
    if isinstance(raw_compare, dict):
        compare, left_out = _lenient(Compare, raw_compare)
        unknown |= {f"compare.{name}" for name in left_out}
    return ScenarioParts(sections["builds"], sections["models"], metrics, compare,
                         frozenset(unknown))


def _fvp_part(root: LNode) -> tuple[FvpConfig | None, str | None]:
    """``fvp`` and ``target`` of a scenario that did not validate, when they did on their own."""
    data = root.plain()
    raw = data.get("fvp", {})
    fvp = None
    if isinstance(raw, dict):
        try:
            fvp = FvpConfig.model_validate(raw)
        except ValidationError:
            fvp = None
    target = data.get("target", "fvp")
    return fvp, target if isinstance(target, str) else None


def _cross_checks_and_profile(
    root: LNode, scenario: Scenario | ScenarioParts, problems: _Problems
) -> Profile | None:
    already = problems.where  # one message per place
    for path, message, at_key in cross_field_problems(scenario):
        where = _node_at(root, path, at_key)
        if str(where) not in already and str(_node_at(root, path)) not in already:
            problems.add(where, path, message)
    node = root.get(("platform",))
    platform: Any = scenario.platform if isinstance(scenario, Scenario) else (
        Scenario.model_fields["platform"].default if node is None else node.value)
    where = _node_at(root, ("platform",))
    if not isinstance(platform, str) or (node is not None and str(where) in already):
        return None
    try:
        return load_profile(platform)
    except ProfileNotFound as exc:
        problems.add(where, ("platform",), exc.message)
    except ConfigurationError as exc:
        problems.add(where, ("platform",), f"the profile does not load: {exc.message}")
    return None


def _check_platform_kind(root: LNode, scenario: Scenario, profile: Profile,
                         problems: _Problems) -> None:
    """What the platform's kind allows (``docs/baremetal.md``): bare-metal fields only on bare-metal
    platforms and the Linux-guest ones not there; NPU sizes the NPU has; semihosting command lines
    the model does not truncate."""
    already = problems.where

    def add(path: PathTuple, message: str, at_key: bool = False) -> None:
        where = _node_at(root, path, at_key)
        if str(where) not in already:
            problems.add(where, path, message)

    macs_param = profile.npu_macs_param
    param_sets: list[tuple[PathTuple, Mapping[str, Any]]] = [
        (("fvp", "params"), scenario.fvp.params)
    ]
    param_sets += [(("builds", name, "fvp_params"), build.fvp_params)
                   for name, build in scenario.builds.items()]
    for path, params in param_sets:
        if macs_param and profile.npu_macs and macs_param in params:
            value = params[macs_param]
            if (isinstance(value, bool) or
                str(value).strip("'\"") not in {str(m) for m in profile.npu_macs}):
                add((*path, macs_param),
                    f"{value!r} is not a configuration of the {profile.npu_family or 'NPU'} of "
                    f"{profile.name} (MACs: {', '.join(map(str, profile.npu_macs))})")
    if not profile.baremetal:
        what = f"platform {profile.name} is a Linux guest (one boot serves every build and model)"
        for name, build in scenario.builds.items():
            for field in ("fvp_params", "data_address"):
                if field in build.model_fields_set and getattr(build, field):
                    add(("builds", name, field), f"applies to bare-metal platforms only; {what}",
                        True)
        if "timelimit" in scenario.fvp.model_fields_set:
            add(("fvp", "timelimit"), f"applies to bare-metal platforms only; {what}", True)
        if "cmd_line" in scenario.run.model_fields_set:
            add(("run", "cmd_line"),
                f"applies to bare-metal platforms only (semihosting); {what}: its runner "
                "command is run.command", True)
        return
    if scenario.target == "host":
        add(("target",),
            f"platform {profile.name} is bare metal: its runner runs only inside the model "
            "(target: fvp), not on this host")
        return
    kind = (f"platform {profile.name} is bare metal: every unit is one model launch with the "
            "runner as its application")
    if "command" in scenario.run.model_fields_set:
        add(("run", "command"),
            f"{kind}; the runner's command line is run.cmd_line (semihosting), not a shell "
            "command", True)
    for path, env in [(("run", "env"), scenario.run.env),
                      *((("builds", name, "env"), build.env)
                        for name, build in scenario.builds.items())]:
        if env:
            add(path, f"{kind}; a bare-metal program has no environment", True)
    for name, build in scenario.builds.items():
        if build.libraries:
            add(("builds", name, "libraries"), f"{kind}; a bare-metal program has no dynamic "
                "loader to find shared libraries: link them into the runner (a static build), "
                "and remove libraries", True)
    uart_out = f"{profile.uart}.out_file"
    for path, params in param_sets:
        if uart_out in params and str(params[uart_out]).strip("'\"") != "-":
            add((*path, uart_out),
                "must stay '-': the harness reads the program's UART on the model's stdout")
    for name, build in scenario.builds.items():
        if build.data_address is True and profile.data_address is None:
            add(("builds", name, "data_address"),
                f"true means the platform's data_address, and profile "
                f"{profile.name} has none; give the address (e.g. 0x70000000)")
    if not scenario.run.semihosting:
        no_model = [name for name, build in scenario.builds.items() if not build.data_address]
        for name in no_model:
            add(("builds", name, "data_address"),
                "run.cmd_line is false (no semihosting), so this runner can get "
                "its model only from memory: give data_address (where it was built to read it, "
                "ET_MODEL_PTE_ADDR)", True)
        return
    template_at: PathTuple = (("run",
                              "cmd_line") if "cmd_line" in scenario.run.model_fields_set
                              else ("run",))
    last_rep = scenario.run.planned_repetitions - 1  # the longest unit ids (most digits)
    # one message for the template: its longest line, and how many are too long
    worst: tuple[int, str] | None = None
    over = 0
    for build_name in scenario.builds:
        for model in scenario.models:
            try:
                unit = semihosting_unit(scenario, build_name, model,
                                        f"r{last_rep}-{build_name}-{model}")
            except ValueError as exc:
                add(template_at, f"build {build_name}, model {model}: {exc}",
                    template_at == ("run",))
                return
            line = unit.cmd_line or ""
            problem = cmd_line_problem(line, profile.cmd_line_limit)
            if problem is not None:
                over += 1
                if worst is None or len(line) > worst[0]:
                    worst = (len(line), f"build {build_name}, model {model}: {problem}")
    if worst is not None:
        more = (f" ({over} of {len(scenario.builds) * len(scenario.models)} units are too long)"
                if over > 1 else "")
        add(template_at, worst[1] + more, template_at == ("run",))


def _check_input_separators(root: LNode, scenario: Scenario, problems: _Problems) -> None:
    """``{inputs}`` joins the guest paths of a model's inputs with commas (what ``executor_runner
    --inputs`` takes), so an input whose file name holds a comma would silently become two: refused
    here, where the user can rename it or pass ``{input_args}`` (``-i FILE`` each) instead. The
    guest path is ``<guest_dir>/<hash>/<file name>``; on ``target: host`` it is the host path, so
    there the whole path counts."""
    templates = [scenario.run.command, *scenario.run.fetch]
    if not any("{inputs}" in template.replace("{{", "").replace("}}", "")
               for template in templates):
        return
    already = problems.where
    for name, model in scenario.models.items():
        for index, item in enumerate(model.inputs):
            shown = item.file if scenario.target == "host" else os.path.basename(item.file)
            path: PathTuple = ("models", name, "inputs", index, "file")
            where = _node_at(root, path)
            if "," in shown and str(where) not in already:
                problems.add(where, path,
                             f"{shown!r} holds a comma, and run.command's {{inputs}} separates "
                             "input files with commas (it would pass two files); rename the file, "
                             "or use {input_args}")
    has_inputs = any(model.inputs for model in scenario.models.values())
    if scenario.target != "host" and "," in scenario.deploy.guest_dir and has_inputs:
        problems.add(_node_at(root, ("deploy", "guest_dir")), ("deploy", "guest_dir"),
                     "holds a comma, and run.command's {inputs} separates input files with commas; "
                     "choose another folder, or use {input_args}")


def _check_artifacts(root: LNode, problems: _Problems) -> None:
    """Every runner, model and input file must exist or have a build command; declared sources must
    exist."""
    # a path with a problem of its own (an undefined ${vars.x}) is not looked for
    already = problems.where
    for path, node in path_fields(root):
        field = path[-1] if isinstance(path[-1], str) else path[-2]
        if path[0] == "fvp" or not isinstance(node.value, str) or str(node.loc) in already:
            continue
        shown = display_path(Path(node.value))
        if field == "sources":
            if not os.path.lexists(node.value):
                problems.add(node.loc, path, f"source file not found: {shown}")
            continue
        exists, problem = file_problem(node.value)
        if problem is not None:
            problems.add(node.loc, path, f"{shown} {problem}")
            continue
        if exists:
            continue
        owner = root.get(path[:-1])
        build = (owner.value.get("build") if owner is not None and
                 isinstance(owner.value, dict) else None)
        # `build: null` (a base's command taken away) is no build
        if build is None or build.value is None:
            problems.add(
                node.loc,
                path,
                f"file not found: {shown}, and there is no `build` command to produce it; "
                "expected an existing file or a build: command",
            )


def _check_host_runners(root: LNode, problems: _Problems) -> None:
    """``target: host`` runs each build's runner on this host: one it cannot execute (built for
    another machine, a simulator artifact, a script without its interpreter, no execute bit) is
    refused at its ``runner`` field (``scenario.executable``). A runner that does not exist yet (it
    has a build command) is checked after its build."""
    target = root.get(("target",))
    if target is None or target.value != "host":
        return
    already = problems.where
    for path, node in path_fields(root):
        if (path[0] != "builds" or path[-1] != "runner" or not isinstance(node.value, str) or
            str(node.loc) in already):
            continue
        problem = host_exec_problem(node.value)
        if problem is not None:
            problems.add(node.loc, path,
                         f"{display_path(Path(node.value))} cannot run on this host (target: "
                         f"host): {problem}")


def _check_real_model(root: LNode, fvp: FvpConfig, profile: Profile, problems: _Problems) -> None:
    already = problems.where
    binary = fvp.binary
    binary_loc = _node_at(root, ("fvp", "binary"))
    if str(binary_loc) in already:
        return
    if os.sep in binary or "/" in binary:
        if not os.path.isfile(binary):
            problems.add(
                binary_loc,
                ("fvp", "binary"),
                f"FVP binary not found: {display_path(Path(binary))}; "
                "expected the model executable (or `sim` for the embedded simulator)",
            )
        elif not os.access(binary, os.X_OK):
            problems.add(binary_loc, ("fvp", "binary"),
                         f"{display_path(Path(binary))} is not executable")
    elif shutil.which(binary) is None:
        problems.add(
            binary_loc,
            ("fvp", "binary"),
            f"{binary!r} is not on PATH; expected a path to the model "
            f"(e.g. {profile.executables[0] if profile.executables else 'FVP_...'}) or `sim`",
        )
    given = fvp.firmware
    for name, file in given.items():
        if name in profile.firmware and not os.path.isfile(file):
            problems.add(
                _node_at(root, ("fvp", "firmware", name)),
                ("fvp", "firmware", name),
                f"firmware file not found: {display_path(Path(file))} "
                f"({profile.firmware[name].description})",
            )
        if name not in profile.firmware:
            problems.add(
                _node_at(root, ("fvp", "firmware", name), True),
                ("fvp", "firmware", name),
                f"profile {profile.name} takes no firmware "
                f"{name!r}{did_you_mean(name, profile.firmware)} (it takes: "
                f"{', '.join(profile.firmware)})",
            )
    missing = [name
               for name, spec in profile.firmware.items() if spec.required and name not in given]
    if missing:
        where = (_node_at(root, ("fvp", "firmware"), True) if root.get(("fvp", "firmware"))
                 else binary_loc)
        wanted = "; ".join(f"{name}: {profile.firmware[name].description}" for name in missing)
        problems.add(
            where,
            ("fvp", "firmware"),
            f"a real {profile.name} model needs firmware the scenario does not "
            f"give: {wanted}; add them under fvp.firmware (or use fvp.binary: sim)",
        )
