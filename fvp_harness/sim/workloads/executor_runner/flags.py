"""The executor_runner's gflags: its ``DEFINE_*`` flags per log generation, gflags' parsing and
messages, and the usage error that ends a run before it starts.

Part of the emulated ``executor_runner`` (``run.py``); the VGF build adds its own flags
(``extra_specs``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = [
    "EXIT_ABORT",
    "EXIT_SEGV",
    "EXIT_USAGE",
    "GENERATIONS",
    "FlagSpec",
    "RunnerFlags",
    "UsageError",
    "parse_flags",
    "stock_flags",
]

EXIT_USAGE, EXIT_ABORT, EXIT_SEGV = 1, 134, 139
GENERATIONS = ("current", "old")


class UsageError(ValueError):
    """The program ends before running anything: bad command line, bad knob, bad fault spec,
    ``--help``.

    ``str(self)`` goes to stderr, ``stdout`` to stdout, and ``status`` is the exit status (1 unless
    said)."""

    def __init__(self, message: str, status: int = EXIT_USAGE, stdout: str = "") -> None:
        super().__init__(message)
        self.status, self.stdout = status, stdout


# --- gflags ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FlagSpec:
    """One ``DEFINE_<type>(name, default, help)``: ``kind`` is gflags' type name."""

    name: str
    kind: str  # "string" | "bool" | "int32" | "uint32"
    default: str | bool | int
    help: str


_FLAGS_FILE = "examples/portable/executor_runner/executor_runner.cpp"
_MODEL_PATH = FlagSpec("model_path", "string", "model.pte",
                       "Model serialized in flatbuffer format.")
_DATA_PATH = FlagSpec("data_path", "string", "", "Path to data file (.ptd).")
_INPUTS = FlagSpec("inputs", "string", "", "Comma-separated list of input files")
_OUTPUT_FILE = FlagSpec(
    "output_file", "string", "",
    "Base name of output file. If not empty output will be written to the file(s)."
)
_NUM_EXECUTIONS = FlagSpec("num_executions", "uint32", 1, "Number of times to run the model.")
_CPU_THREADS = FlagSpec(
    "cpu_threads",
    "int32",
    -1,
    "Number of CPU threads for inference. Defaults to -1, which implies we'll use a heuristic to "
    "derive the # of performant cores for a specific device.",
)
_STOCK_FLAGS: dict[str, tuple[FlagSpec, ...]] = {
    # DEFINE_* of executor_runner.cpp in a build without ET_EVENT_TRACER_ENABLED, bundled IO or VGF
    # input dumps
    "current": (
        _MODEL_PATH,
        _DATA_PATH,
        _INPUTS,
        _OUTPUT_FILE,
        FlagSpec(
            "server_mode",
            "bool",
            False,
            "Run continuously, executing one inference per line read from stdin. In server mode, "
            "input files specified by --inputs are re-read before each execution and outputs are "
            "overwritten under --output_file.",
        ),
        FlagSpec(
            "print_output",
            "string",
            "summary",
            "Output printing mode: 'none' to suppress, 'summary' for first/last 100 elements, "
            "'all' for everything.",
        ),
        _NUM_EXECUTIONS,
        FlagSpec(
            "method_name",
            "string",
            "",
            "Name of the method to run. If empty, uses the first method in the program.",
        ),
        _CPU_THREADS,
    ),
    "old": (
        _MODEL_PATH,
        _DATA_PATH,
        _INPUTS,
        _OUTPUT_FILE,
        FlagSpec(
            "print_all_output",
            "bool",
            False,
            "Prints all output. By default only first and last 100 elements are printed.",
        ),
        _NUM_EXECUTIONS,
        _CPU_THREADS,
    ),
}

# gflags' own flags (src/gflags.cc, gflags_reporting.cc, gflags_completions.cc)
_GFLAGS_OWN = {
    **{name: FlagSpec(name, "string", "", "")
       for name in ("flagfile", "fromenv", "tryfromenv", "undefok")},
    **{name: FlagSpec(name, "string", "", "")
       for name in ("helpon", "helpmatch", "tab_completion_word")},
    **{name: FlagSpec(name, "bool", False, "")
       for name in ("help", "helpfull", "helpshort", "helppackage")},
    **{name: FlagSpec(name, "bool", False, "") for name in ("helpxml", "version")},
    "tab_completion_columns": FlagSpec("tab_completion_columns", "int32", 80, ""),
}
_TRUE, _FALSE = ("1", "t", "true", "y", "yes"), ("0", "f", "false", "n", "no")
_INT_TEXT = {10: re.compile(r"\s*[+-]?[0-9]+"), 16: re.compile(r"\s*[+-]?(?:0[xX])?[0-9a-fA-F]+")}


def stock_flags(generation: str = "current") -> tuple[FlagSpec, ...]:
    """The flags an executor_runner of ``generation`` defines."""
    return _STOCK_FLAGS[generation]


def _parse_value(spec: FlagSpec, text: str) -> str | bool | int | None:
    """FlagValue::ParseFrom: the value, or None when gflags calls it illegal."""
    if spec.kind == "string":
        return text
    if spec.kind == "bool":
        word = text.lower()
        return True if word in _TRUE else False if word in _FALSE else None
    if not text:
        return None
    base = 16 if text.startswith(("0x", "0X")) else 10  # decided before uint32 skips leading spaces
    if spec.kind == "uint32":
        text = text.lstrip(" ")
        if text.startswith("-"):
            return None
    if not _INT_TEXT[base].fullmatch(text):
        return None
    number = int(text.strip(), base)  # int() takes the sign and the 0x prefix as strtoll does
    low, high = (0, 2**32 - 1) if spec.kind == "uint32" else (-(2**31), 2**31 - 1)
    return number if low <= number <= high else None


def _describe_flag(spec: FlagSpec, width: int = 80) -> str:
    """gflags' DescribeOneFlag: ``    -name (help) type: T default: V``, wrapped before column
    80."""
    text, out, column = f"    -{spec.name} ({spec.help})", "", 0
    while True:
        if column + len(text) < width:
            out, column = out + text, column + len(text)
            break
        cut = width - column - 1
        while cut > 0 and not text[cut].isspace():
            cut -= 1
        if cut <= 0:
            out, column = out + text, width
            break
        out, column = out + text[:cut], column + cut
        text = text[cut:].lstrip()
        if not text:
            break
        out, column = out + "\n      ", 6
    default = spec.default
    shown = (f'"{default}"' if spec.kind == "string" else str(default).lower()
             if spec.kind == "bool" else str(default))
    for part in (f"type: {spec.kind}", f"default: {shown}"):
        if column + 1 + len(part) >= width:
            out, column = out + "\n      ", 6
        else:
            out, column = out + " ", column + 1
        out, column = out + part, column + len(part)
    return out + "\n"


def _usage(argv0: str, specs: Sequence[FlagSpec]) -> str:
    """What ``--help`` prints (stdout): the program's own flags; gflags' flags are left out
    (documented)."""
    text = (f"{os.path.basename(argv0)}: Warning: SetUsageMessage() never called\n\n  Flags from "
            f"{_FLAGS_FILE}:\n")
    return text + "".join(_describe_flag(spec) for spec in sorted(specs, key=lambda s: s.name))


@dataclass
class _Parsed:
    values: dict[str, str | bool | int]
    explicit: set[str]
    extras: list[str]


def _parse_gflags(argv0: str, args: Sequence[str], specs: Sequence[FlagSpec]) -> _Parsed:
    """``gflags::ParseCommandLineFlags(&argc, &argv, true)`` as gflags 2.2 does it (src/gflags.cc:
    ParseNewCommandLineFlags, SplitArgumentLocked, TryParseLocked, ReportErrors;
    gflags_reporting.cc: HandleCommandLineHelpFlags); written from its documented behaviour and its
    messages."""
    table = {**_GFLAGS_OWN, **{spec.name: spec for spec in specs}}

    def find(name: str) -> FlagSpec | None:
        return table.get(name) or table.get(name.replace("-", "_"))

    values: dict[str, str | bool | int] = {}
    errors: dict[str, str] = {}
    undefined: set[str] = set()
    positional: list[str] = []
    after_dashes: list[str] = []
    items = list(args)
    i = 0
    while i < len(items):
        arg = items[i]
        i += 1
        if not arg.startswith("-") or arg == "-":
            positional.append(arg)  # permuted to the end: left for the program
            continue
        body = arg[2:] if arg.startswith("--") else arg[1:]
        if not body:  # "--": the rest are arguments
            after_dashes = items[i:]
            break
        key, eq, text = body.partition("=")
        value: str | None = text if eq else None
        spec = find(key)
        if spec is None:
            plain = find(key[2:]) if key.startswith("no") else None
            if plain is None:
                errors[key] = f"ERROR: unknown command line flag '{key}'\n"
                undefined.add(key)
                continue
            if plain.kind != "bool":
                errors[key] = (f"ERROR: boolean value ({key}) specified for {plain.kind} command "
                               "line flag\n")
                undefined.add(key)
                continue
            spec, value = plain, "0"
        if value is None:
            if spec.kind == "bool":
                value = "1"
            elif i >= len(items):
                errors[key] = (f"ERROR: flag '{arg}' is missing its argument; flag description: "
                               f"{spec.help}\n")
                break
            else:
                value = items[i]
                i += 1
        parsed = _parse_value(spec, value)
        if parsed is None:
            errors[spec.name] = (f"ERROR: illegal value '{value}' specified for {spec.kind} flag "
                                 f"'{spec.name}'\n")
            continue
        values[spec.name] = parsed
    # reporting flags first (they exit even when there are errors), then --undefok, then the errors
    if any(values.get(name)
           for name in ("help", "helpfull", "helpshort", "helppackage", "helpxml", "helpon",
                                         "helpmatch")):  # fmt: skip
        raise UsageError("", status=1, stdout=_usage(argv0, specs))
    if values.get("version"):
        raise UsageError("", status=0, stdout=f"{os.path.basename(argv0)}\n")
    for name in str(values.get("undefok", "")).split(","):
        for key in (name, f"no{name}"):
            if name and key in undefined:
                errors.pop(key, None)
    if errors:
        raise UsageError("".join(errors[key] for key in sorted(errors)))
    for name in ("flagfile", "fromenv", "tryfromenv"):
        if values.get(name):
            raise UsageError(f"fvp-sim: --{name} is not emulated by the simulator; give the flags "
                             "on the command line")
    explicit = {name for name in values if name not in _GFLAGS_OWN}
    return _Parsed(values, explicit, after_dashes + positional)


@dataclass
class RunnerFlags:
    """The executor_runner's flags after gflags parsing (``extras``: what gflags left in argv)."""

    model_path: str = "model.pte"
    num_executions: int = 1
    inputs: list[str] = field(default_factory=list)
    inputs_text: str = ""
    output_file: str = ""
    print_output: str = "summary"
    method_name: str = ""
    data_path: str = ""
    server_mode: bool = False
    cpu_threads: int = -1
    extras: list[str] = field(default_factory=list)
    explicit: set[str] = field(default_factory=set)
    other: dict[str, str | bool | int] = field(default_factory=dict)


def _split_inputs(text: str) -> list[str]:
    """``std::getline(stream, path, ',')`` over ``--inputs``: a trailing comma adds no empty
    path."""
    parts = text.split(",")
    return parts[:-1] if parts and parts[-1] == "" else parts


def parse_flags(
    args: Sequence[str],
    generation: str = "current",
    extra_specs: Sequence[FlagSpec] = (),
    argv0: str = "executor_runner",
) -> RunnerFlags:
    """gflags parsing of the arguments after argv[0] for a runner of ``generation``; ``extra_specs``
    are flags a special build adds. UsageError (with gflags' wording and status) on mistakes and
    reporting flags."""
    parsed = _parse_gflags(argv0, args, (*stock_flags(generation), *extra_specs))
    v = parsed.values
    flags = RunnerFlags(extras=parsed.extras, explicit=parsed.explicit)
    flags.model_path = str(v.get("model_path", flags.model_path))
    flags.num_executions = int(v.get("num_executions", 1))
    flags.inputs_text = str(v.get("inputs", ""))
    flags.inputs = _split_inputs(flags.inputs_text) if flags.inputs_text else []
    flags.output_file = str(v.get("output_file", ""))
    flags.data_path = str(v.get("data_path", ""))
    flags.cpu_threads = int(v.get("cpu_threads", -1))
    if generation == "old":
        flags.print_output = "all" if v.get("print_all_output") else "summary"
    else:
        flags.print_output = str(v.get("print_output", "summary"))
        flags.method_name = str(v.get("method_name", ""))
        flags.server_mode = bool(v.get("server_mode", False))
    known = {spec.name for spec in stock_flags(generation)} | set(_GFLAGS_OWN)
    flags.other = {name: value for name, value in v.items() if name not in known}
    return flags


