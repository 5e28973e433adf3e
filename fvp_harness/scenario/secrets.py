"""Secret environment values: which ones a scenario marks, and the one way results and logs hide
them.

A value of ``run.env`` or ``builds.<name>.env`` is secret when

- it is written ``NAME: {value: TEXT, secret: true}``,
- or its name is listed in the same section's ``secret_env`` (for a value an ``extends`` base or a
  ``--set`` gives),
- or its name matches one of ``run.secret_patterns`` (shell-style, case-insensitive; default
  ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ``*KEY*``) and the value has at least
  ``MIN_SECRET_LENGTH`` characters (so ``NUM_KEYS: 3`` stays a plain setting).

The runner receives the real value. Everything the harness writes shows ``MASK`` instead:
``manifest.json`` (``redact_data`` over the whole manifest, ``redact_scenario`` for the resolved
scenario), unit logs, failure texts and records (``run.execute``), and the terminal and host logs of
the targets (their ``redact`` argument, given by ``run.instances``). Masking is by value, so a
secret is hidden wherever it shows up (echoed by the guest shell, printed by the runner, inside a
``vars`` entry); hence an explicitly marked secret must have at least ``MIN_SECRET_LENGTH``
characters (validation says so), and ``secret_values`` also lists the forms a value takes when it is
shell-quoted or ``repr``-ed. A value with line breaks (a certificate) is also masked line by line,
and with its line ends as a terminal echoes them (CRLF), because logs are written, and consoles
echo, a line at a time: the whole value never appears in one piece there. Validation messages are
masked too (``redact_problems``): a message may quote the value it refuses. The scenario has no
``fvp.env``: the model's own environment (``fvp.sim`` knobs) is not secret.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol


class _EnvSection(Protocol):
    @property
    def env(self) -> Mapping[str, str]: ...

    @property
    def secret_env(self) -> Sequence[str]: ...


class _ScenarioShape(Protocol):
    """What this module reads of a ``scenario.model.Scenario``: ``model.py`` imports this module, so
    it is typed by shape rather than importing the model back."""

    @property
    def run(self) -> _EnvSection: ...

    @property
    def builds(self) -> Mapping[str, _EnvSection]: ...

    def model_dump(self, *, mode: str = "python", include: Any = None) -> dict[str, Any]: ...


if TYPE_CHECKING:
    Scenario = _ScenarioShape

__all__ = [
    "DEFAULT_SECRET_PATTERNS",
    "MASK",
    "MIN_SECRET_LENGTH",
    "is_secret_name",
    "redact_data",
    "redact_manifest",
    "redact_problems",
    "redact_scenario",
    "redact_text",
    "secret_names",
    "secret_problems",
    "secret_values",
]

MASK = "***"
"""What a secret value is replaced with."""

MIN_SECRET_LENGTH = 6
"""A shorter value cannot be hidden by value without hiding ordinary text (every ``3`` in a log)."""

DEFAULT_SECRET_PATTERNS: tuple[str, ...] = ("*TOKEN*", "*SECRET*", "*PASSWORD*", "*KEY*")
"""Environment names treated as secret unless ``run.secret_patterns`` says otherwise."""

_DIGEST = re.compile(r"[0-9a-f]{16}|[0-9a-f]{40}|[0-9a-f]{64}")
"""Content keys, key parts, commit ids and sha256 digests: masked only when they are a secret whole
(a short hex secret must not corrupt a digest that happens to contain it)."""


def is_secret_name(name: str, patterns: Iterable[str]) -> bool:
    """Does ``name`` match one of the shell-style ``patterns`` (case-insensitive)?"""
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, pattern.upper()) for pattern in patterns)


_Section = tuple[tuple[str, ...], Mapping[str, str], Sequence[str]]


def _plain_sections(data: Mapping[str, Any]) -> tuple[list[_Section], Sequence[str]]:
    """(path, env, secret_env) of ``run`` and every build, and the secret name patterns, read from a
    scenario's JSON data (a ``model_dump``, or the ``resolved`` scenario a manifest keeps); anything
    malformed is skipped."""

    def section(value: Any) -> tuple[Mapping[str, str], Sequence[str]]:
        if not isinstance(value, Mapping):
            return {}, []
        env = value.get("env")
        listed = value.get("secret_env")
        return ({str(k): v for k, v in env.items() if isinstance(v, str)}
                if isinstance(env, Mapping) else {},
                [item for item in listed if isinstance(item, str)] if isinstance(listed, list)
                else [])

    run = data.get("run")
    found: list[_Section] = [(("run",), *section(run))]
    builds = data.get("builds")
    for name, build in (builds.items() if isinstance(builds, Mapping) else ()):
        found.append((("builds", str(name)), *section(build)))
    patterns = run.get("secret_patterns") if isinstance(run, Mapping) else None
    if not isinstance(patterns, list):
        patterns = list(DEFAULT_SECRET_PATTERNS)
    return found, [item for item in patterns if isinstance(item, str)]


def _data(scenario: Scenario | Mapping[str, Any]) -> Mapping[str, Any]:
    return scenario if isinstance(scenario,
                                  Mapping) else scenario.model_dump(include={"run", "builds"})


def secret_names(scenario: Scenario | Mapping[str, Any]) -> set[str]:
    """Every environment name whose value is secret, in ``run.env`` or any build's ``env`` (of a
    ``Scenario`` or its JSON data)."""
    sections, patterns = _plain_sections(_data(scenario))
    names: set[str] = set()
    for _path, env, listed in sections:
        for name, value in env.items():
            if (name in listed or
                (is_secret_name(name, patterns) and len(value) >= MIN_SECRET_LENGTH)):
                names.add(name)
    return names


def secret_values(scenario: Scenario | Mapping[str, Any]) -> tuple[str, ...]:
    """The texts to hide: every secret value, also as ``shlex.quote`` and ``repr`` show it, longest
    first (so a value that contains another is masked whole). Values shorter than
    ``MIN_SECRET_LENGTH`` are left out."""
    data = _data(scenario)
    names = secret_names(data)
    sections, _patterns = _plain_sections(data)
    forms: set[str] = set()
    for _path, env, _listed in sections:
        for name, value in env.items():
            if name in names and len(value) >= MIN_SECRET_LENGTH and value != MASK:
                forms.update(_forms(value))
    return _longest_first(forms)


def _longest_first(forms: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted({form for form in forms if len(form) >= MIN_SECRET_LENGTH},
                        key=lambda f: (-len(f), f)))


def _forms(value: str) -> set[str]:
    """Every text ``value`` may show up as: itself, shell-quoted, ``repr``-ed, and for a multi-line
    value the value with LF, CRLF and CR line ends (a terminal echoes CRLF) and each of its lines,
    with the quoting of the first and last line (``'-----BEGIN`` ... ``END-----'``). Lines shorter
    than ``MIN_SECRET_LENGTH`` are left out by the caller: they cannot be masked without masking
    ordinary text."""
    forms = {value, shlex.quote(value), repr(value)[1:-1]}
    if "\n" in value or "\r" in value:
        lines = value.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        for end in ("\n", "\r\n", "\r"):
            joined = end.join(lines)
            forms.update({joined, shlex.quote(joined), repr(joined)[1:-1]})
        quoted = shlex.quote(value).replace("\r\n", "\n").replace("\r", "\n").split("\n")
        forms.update(line.strip() for line in (*lines, *quoted) if line.strip())
    return forms


def redact_problems(problems: Sequence[str], data: Mapping[str, Any]) -> list[str]:
    """Validation messages with every secret of the scenario data they are about masked: a message
    may quote the value it refuses (``got {...}``, a ``--set`` text). ``data`` is the scenario as
    written (before validation), so an entry counts as secret when it looks like one in any way:
    ``{value: ..., secret: ...}`` whatever else is wrong with it, a name in its section's
    ``secret_env`` or matching the patterns (``secret_values``)."""
    def leaves(value: Any) -> Iterable[str]:
        if isinstance(value, Mapping):
            for item in value.values():
                yield from leaves(item)
        elif isinstance(value, list):
            for item in value:
                yield from leaves(item)
        elif value is not None:
            yield str(value)

    forms: set[str] = set(secret_values(data))
    run = data.get("run")
    patterns = run.get("secret_patterns") if isinstance(run, Mapping) else None
    patterns = ([p for p in patterns if isinstance(p, str)] if isinstance(patterns, list)
                else DEFAULT_SECRET_PATTERNS)
    sections = [run]
    builds = data.get("builds")
    sections += list(builds.values()) if isinstance(builds, Mapping) else []
    for section in sections:
        env = section.get("env") if isinstance(section, Mapping) else None
        listed = section.get("secret_env") if isinstance(section, Mapping) else None
        listed = listed if isinstance(listed, list) else []
        for name, entry in env.items() if isinstance(env, Mapping) else ():
            if isinstance(entry, Mapping) and "value" in entry:
                entry = entry["value"]
            elif not (name in listed or is_secret_name(str(name), patterns)) or isinstance(entry,
                                                                                           str):
                continue  # a plain setting, or text that secret_values already judged
            for text in leaves(entry):
                forms.update(_forms(text))
    secrets = _longest_first(forms)
    return [redact_text(problem, secrets) for problem in problems]


def redact_text(text: str, secrets: Sequence[str]) -> str:
    """``text`` with every occurrence of each secret replaced by ``MASK`` (``secrets`` as
    ``secret_values`` gives them: longest first)."""
    if not secrets or not text:
        return text
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def redact_data(data: Any, secrets: Sequence[str], names: Iterable[str] = ()) -> Any:
    """JSON-like ``data`` with secrets masked in every text (keys included), and the value of every
    mapping entry named in ``names`` (secret environment names) replaced by ``MASK`` whatever it is.
    Digest-shaped texts are masked only when they equal a secret."""
    hidden = frozenset(names)

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            if _DIGEST.fullmatch(value):
                return MASK if value in secrets else value
            return redact_text(value, secrets)
        if isinstance(value, Mapping):
            return {walk(key): (MASK if key in hidden and isinstance(item, str) else walk(item))
                    for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [walk(item) for item in value]
        return value

    if not secrets and not hidden:
        return data
    return walk(data)


def redact_manifest(data: Mapping[str, Any]) -> dict[str, Any]:
    """A manifest's JSON data with the secrets of the scenario it holds (``scenario.resolved``)
    masked everywhere: the resolved scenario, ``builds`` env, ``overrides``, build commands,
    instance errors."""
    scenario = data.get("scenario")
    resolved = scenario.get("resolved") if isinstance(scenario, Mapping) else None
    if not isinstance(resolved, Mapping):
        return dict(data)
    redacted: dict[str, Any] = redact_data(data, secret_values(resolved), secret_names(resolved))
    return redacted


def redact_scenario(scenario: Scenario) -> dict[str, Any]:
    """The scenario as JSON data (``model_dump(mode="json")``) with every secret masked: what
    ``manifest.json`` keeps. It still validates as a ``Scenario`` (``report DIR`` reads it back)."""
    data: dict[str, Any] = scenario.model_dump(mode="json")
    redacted: dict[str, Any] = redact_data(data, secret_values(scenario), secret_names(scenario))
    return redacted


def secret_problems(scenario: Scenario) -> list[tuple[tuple[str | int, ...], str, bool]]:
    """Cross-field problems of the secret settings (``cross_field_problems`` adds them): a
    ``secret_env`` name that is no entry of its ``env``, and an explicitly secret value too short to
    hide. A line break is fine: such a value is masked line by line (``secret_values``)."""
    problems: list[tuple[tuple[str | int, ...], str, bool]] = []
    sections: list[_Section] = [(("run",), scenario.run.env, scenario.run.secret_env)]
    sections += [(("builds", name), build.env, build.secret_env)
                 for name, build in scenario.builds.items()]
    for path, env, listed in sections:
        where = ".".join(path)
        for index, name in enumerate(listed):
            if name not in env:
                known = ", ".join(env) or "none"
                problems.append(((*path, "secret_env", index),
                                 f"{name!r} is not set in {where}.env (its names: {known})", False))
                continue
            value = env[name]
            if value == MASK:  # a manifest's scenario, already masked
                continue
            if len(value) < MIN_SECRET_LENGTH:
                problems.append(((*path, "env", name),
                                 f"a secret value must have at least {MIN_SECRET_LENGTH} "
                                 "characters to be hidden in logs and results (this one has "
                                 f"{len(value)})", False))
    return problems
