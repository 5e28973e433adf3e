"""What measured a report's numbers, read from ``manifest.json``: simulated or not, which FVP build
or simulator release, the machine record (``report.json``'s ``machine``, the markdown's ``##
Machine`` footer) and each build's source.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fvp_harness.report import format as fmt

__all__ = [
    "SIMULATED_MARK",
    "declared_sources",
    "is_simulated",
    "machine_record",
    "machine_section",
    "measured_on",
    "model_label",
    "numbers_note",
    "source_text",
]

SIMULATED_MARK = "simulated by fvp-harness"
"""What the embedded simulator puts in its ``--version`` banner (``Fast Models [11.30.27 (simulated
by ...)]``)."""

_CPU_TIME_METRICS = frozenset({"cpu_time", "iteration_time", "run_time", "load_time",
                               "bm_execute_cycles", "bm_cpu_cycles"})


def _section(manifest: Mapping[str, Any] | None, name: str) -> Mapping[str, Any]:
    value = manifest.get(name) if manifest else None
    return value if isinstance(value, Mapping) else {}


def _host_target(manifest: Mapping[str, Any] | None) -> bool:
    scenario = _section(manifest, "scenario")
    resolved = scenario.get("resolved")
    return isinstance(resolved, Mapping) and resolved.get("target") == "host"


def _is_qemu(manifest: Mapping[str, Any] | None) -> bool:
    """Whether the platform is QEMU (a ``kind: qemu`` profile, or a ``qemu-system-*`` binary in a
    manifest without the profile): an emulator, not an FVP, and the report names it so."""
    if _section(manifest, "profile").get("kind") == "qemu":
        return True
    fvp = _section(manifest, "fvp")
    return _qemu_binary(fvp.get("path") or fvp.get("binary"))


def _qemu_binary(binary: object) -> bool:
    return str(binary or "").rsplit("/", 1)[-1].startswith("qemu-system-")


def model_label(manifest: Mapping[str, Any] | None) -> str:
    """What ran the units, by what it is: ``FVP`` (an Arm FVP or the simulator of one) or ``QEMU``;
    the context line's label and the first word of ``measured_on``."""
    return "QEMU" if _is_qemu(manifest) else "FVP"


def is_simulated(manifest: Mapping[str, Any] | None) -> bool:
    """Whether any unit ran on the embedded simulator: the model is ``sim``, or the model or any
    booted instance answered with the simulator's banner (a real binary path that is the simulator
    in disguise counts too)."""
    if not manifest or _host_target(manifest):
        return False
    fvp = _section(manifest, "fvp")
    if fvp.get("binary") == "sim":
        return True
    texts = [str(fvp.get("version") or ""), str(fvp.get("banner") or "")]
    texts += [str(entry.get("version") or "") for entry in _section(manifest, "instances").values()
              if isinstance(entry, Mapping)]
    return any(SIMULATED_MARK in text for text in texts)


def measured_on(manifest: Mapping[str, Any] | None) -> str | None:
    """One phrase for what measured the numbers: ``fvp-harness 0.1.0 simulator of FVP 11.30.27``,
    ``FVP 11.31.cs1000_a320_2 (FVP_Corstone-1000-A320, sha256 1a2b3c4d5e6f)``, ``QEMU 7.2.22
    (qemu-system-aarch64, sha256 7148d1e6c858)``, ``host vm (x86_64)``; None when the manifest does
    not say."""
    if not manifest:
        return None
    if _host_target(manifest):
        host = _section(manifest, "host")
        name = host.get("hostname") or "this host"
        return f"host {name}" + (f" ({host['machine']})" if host.get("machine") else "")
    fvp = _section(manifest, "fvp")
    version = str(fvp.get("version") or "").replace(" (simulated by fvp-harness sim)", "")
    if is_simulated(manifest):
        release = (fvp.get("simulator") or
                   f"fvp-harness {manifest.get('harness_version') or ''}".strip())
        return f"{release} simulator" + (f" of FVP {version}" if version else "")
    binary = str(fvp.get("path") or fvp.get("binary") or "")
    name = binary.rsplit("/", 1)[-1]
    bits = [name] if name else []
    if fvp.get("sha256"):
        bits.append(f"sha256 {str(fvp['sha256'])[:12]}")
    if not version and not bits:
        return None
    label = model_label(manifest)
    return f"{label} {version or '(version unknown)'}" + (f" ({', '.join(bits)})" if bits else "")


def source_text(source: object) -> str | None:
    """A build's source as the report shows it: ``pytorch/executorch@1a2b3c4d5e6f`` (declared),
    ``checkout v1.2-3-gabc1234-dirty`` (the runner's git checkout); None when unknown."""
    if not isinstance(source, Mapping):
        return None
    commit = str(source.get("commit") or "")[:12]
    if source.get("origin") == "scenario" or source.get("repository"):
        return f"{source.get('repository')}@{commit}" if commit else None
    describe = source.get("describe") or commit
    return f"checkout {describe}" if describe else None


def declared_sources(manifest: Mapping[str, Any] | None) -> dict[str, str]:
    """Build -> ``repository@commit`` for the builds whose scenario declares ``source:`` (the table
    shows them)."""
    shown: dict[str, str] = {}
    for name, info in _section(manifest, "builds").items():
        if isinstance(info, Mapping):
            source = info.get("source")
            if isinstance(source, Mapping) and source.get("origin") == "scenario":
                text = source_text(source)
                if text:
                    shown[str(name)] = text
    return shown


def machine_record(manifest: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``report.json``'s ``machine``: the host, the harness, the model (FVP identity or simulator
    release, no banner or argv: those stay in the manifest) and per build its runner sha256 and
    source."""
    if not manifest:
        return None
    fvp = _section(manifest, "fvp")
    harness = dict(_section(manifest, "harness")) or {"version": manifest.get("harness_version")}
    return {
        "host": dict(_section(manifest, "host")) or None,
        "harness": harness,
        "fvp": {key: fvp.get(key) for key in ("binary", "version", "path", "sha256", "simulator")}
        if fvp else None, "simulated": is_simulated(manifest),
        "builds": {str(name): {"sha256": info.get("sha256"), "source": info.get("source")}
                   for name, info in _section(manifest, "builds").items()
                   if isinstance(info, Mapping)},
        "run": dict(_section(manifest, "run")) or None,
    }


def numbers_note(metric: str, simulated: bool, host: bool, qemu: bool = False) -> str:
    """The "what these numbers are" note under a comparison table."""
    if qemu:
        return ("What these numbers are: times of the runner in a QEMU guest (TCG: QEMU translates "
                "the guest's instructions, it models no cycles and no NPU), so they compare builds "
                "on the same emulator and host; they are not a time on an FVP or on silicon.")
    if host:
        return ("What these numbers are: times of the runner on this host's own CPU (`target: "
                "host`); no FVP ran, so they say nothing of an Arm platform.")
    if simulated:
        return ("What these numbers are: **simulated**. The embedded simulator charges CPU time "
                "from a model of the work each build does (driver objects created, bytes copied "
                "and zeroed), fitted once to a published FVP measurement, and counts NPU cycles "
                "with its own per-layer model of the Ethos-U; neither is a measurement of an FVP "
                "or of silicon. Run the scenario with `--fvp PATH` for real numbers.")
    cpu = ("CPU time on an FVP is instruction-accurate, not cycle-accurate: it compares builds on "
           "the same model, it is not a time on silicon. " if metric in _CPU_TIME_METRICS else "")
    return (f"What these numbers are: {cpu}NPU cycles come from the Ethos-U model's own cycle "
            "counter (the delegate reads it once per inference): they depend on the command stream "
            "and the NPU configuration, not on the CPU-side code.")


def _load(values: object) -> str:
    if isinstance(values, Sequence) and not isinstance(values, str) and values:
        return " / ".join(f"{float(v):.2f}" for v in values)
    return fmt.MISSING


def machine_section(machine: Mapping[str, Any] | None, builds: Sequence[str]) -> list[str]:
    """``## Machine``, the report's footer: one bullet per fact of the machine record (none: no
    section)."""
    if not machine:
        return []
    host = machine.get("host") or {}
    lines = ["## Machine", ""]
    if host:
        memory = host.get("memory_bytes")
        parts = [str(host.get("hostname") or "?"),
                 str(host.get("cpu_model") or host.get("machine") or "?"),
                 f"{host['cpus']} cores" if host.get("cpus") else "cores n/a",
                 f"{memory / 2**30:.1f} GiB" if isinstance(memory, (int, float)) else "memory n/a",
                 str(host.get("os") or host.get("platform") or "?"),
                 f"Python {host.get('python') or '?'}"]
        lines.append("- Host: " + " · ".join(parts))
        if host.get("load_before") is not None or host.get("load_after") is not None:
            lines.append("- Load average (1 / 5 / 15 min): before "
                         f"{_load(host.get('load_before'))}, after {_load(host.get('load_after'))}")
    harness = machine.get("harness") or {}
    if harness:
        text = f"- Harness: fvp-harness {harness.get('version') or '?'}"
        if harness.get("describe") or harness.get("commit"):
            text += f" (checkout {harness.get('describe') or str(harness.get('commit'))[:12]})"
        lines.append(text)
    fvp = machine.get("fvp") or {}
    if machine.get("simulated"):
        lines.append(f"- Model: embedded simulator, {fvp.get('simulator') or 'fvp-harness sim'} "
                     f"(its `--version`: {fvp.get('version') or '?'}); not an Arm FVP")
    elif fvp.get("version") or fvp.get("path"):
        bits = [f"`--version` {fvp.get('version') or '?'}"]
        if fvp.get("path"):
            bits.append(f"`{fvp['path']}`")
        if fvp.get("sha256"):
            bits.append(f"sha256 `{fvp['sha256']}`")
        label = "QEMU" if _qemu_binary(fvp.get("path") or fvp.get("binary")) else "FVP"
        lines.append(f"- {label}: " + ", ".join(bits))
    info = machine.get("builds") or {}
    order = [b for b in builds if b in info] + [b for b in info if b not in builds]
    for name in order:
        entry = info[name] or {}
        bits = [f"runner sha256 `{str(entry.get('sha256'))[:12]}`"] if entry.get("sha256") else []
        source = source_text(entry.get("source"))
        bits.append(f"source {source}" if source else "source not recorded")
        lines.append(f"- Build **{name}**: " + ", ".join(bits))
    return [*lines, ""] if len(lines) > 2 else []
