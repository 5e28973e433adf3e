"""``ReportContext``: where a report's numbers come from (scenario, platform, FVP or host, builds,
date, deploy method, what measured them, the machine record, the Vela estimates), read from the
manifest so that no clock reaches a report."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fvp_harness.report.rendering import machine as machine_record
from fvp_harness.report.rendering.vela_estimates import VelaInputs, load_vela_inputs

__all__ = ["ReportContext"]


@dataclass(frozen=True)
class ReportContext:
    """Where the numbers come from, for the line under the title. Build it with
    ``from_manifest``."""

    scenario: str | None = None
    platform: str | None = None
    fvp: str | None = None
    builds: dict[str, str] = field(default_factory=dict)
    """Build name -> what identifies it (id text, runner sha256)."""
    date: str | None = None
    host: str | None = None
    """For a run on this host (``target: host``), the machine it ran on; then no platform and no FVP
    are claimed."""
    vela: VelaInputs | None = None
    """The Vela estimates the scenario's ``models.<name>.vela`` name, read
    (``vela_estimates.py``)."""
    deploy: str | None = None
    """``deploy.method: auto``: how each instance got the artifacts (``s0 ssh``), from the
    manifest's instances."""
    simulated: bool = False
    """Some unit ran on the embedded simulator: every output that can travel alone says so
    (``machine.py``)."""
    measured_on: str | None = None
    """What measured the numbers, in one phrase: the simulator's release, the FVP build (version,
    sha256), or the host; the table's caption line, the CSV column, the PNG titles say it."""
    sources: dict[str, str] = field(default_factory=dict)
    """Build name -> ``repository@commit`` of its declared ``builds.X.source`` (shown in the table's
    header)."""
    machine: dict[str, Any] | None = None
    """The manifest's machine record (host, harness, model, builds' sources): ``report.json`` and
    the footer."""
    model_label: str = "FVP"
    """What ``fvp`` is, by name: ``FVP`` or ``QEMU`` (``machine.model_label``)."""

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any] | None) -> ReportContext:
        """Read the fields documented in ``docs/results-format.md``; anything missing is simply not
        shown."""
        if not manifest:
            return cls()
        scenario = manifest.get("scenario")
        name = scenario.get("name") if isinstance(scenario, Mapping) else scenario
        fvp = manifest.get("fvp")
        fvp_text = None
        if isinstance(fvp, Mapping):
            parts = [str(fvp[k]) for k in ("binary", "version") if fvp.get(k)]
            fvp_text = " ".join(parts) or None
        elif fvp:
            fvp_text = str(fvp)
        builds: dict[str, str] = {}
        raw_builds = manifest.get("builds")
        if isinstance(raw_builds, Mapping):
            for build, info in raw_builds.items():
                if isinstance(info, Mapping):
                    bits = []
                    if info.get("id"):
                        bits.append(f"id `{info['id']}`")
                    if info.get("sha256"):
                        bits.append(f"runner sha256 `{str(info['sha256'])[:12]}`")
                    builds[str(build)] = ", ".join(bits)
                else:
                    builds[str(build)] = str(info)
        when = manifest.get("finished") or manifest.get("started")
        resolved = scenario.get("resolved") if isinstance(scenario, Mapping) else None
        host_text = None
        # no model ran: name the machine
        if isinstance(resolved, Mapping) and resolved.get("target") == "host":
            host = manifest.get("host")
            bits = ([str(host[k]) for k in ("hostname", "machine") if host.get(k)]
                    if isinstance(host, Mapping) else [])
            host_text = ((f"{bits[0]} ({bits[1]})" if len(bits) == 2 else " ".join(bits)) or
                         "this host")
        return cls(
            scenario=str(name) if name else None,
            platform=str(manifest["platform"]) if manifest.get("platform") and
            host_text is None else None, fvp=fvp_text if host_text is None else None,
            builds=builds,
            date=str(when)[:10] if when else None,
            host=host_text,
            vela=load_vela_inputs(manifest),
            deploy=_deploy_text(manifest.get("instances")),
            simulated=machine_record.is_simulated(manifest),
            measured_on=machine_record.measured_on(manifest),
            sources=machine_record.declared_sources(manifest),
            machine=machine_record.machine_record(manifest),
            model_label=machine_record.model_label(manifest),
        )


def _deploy_text(instances: object) -> str | None:
    """``s0 ssh, s0.2 console (...)``: the ``deploy`` of each instance that recorded one (``auto``
    only)."""
    if not isinstance(instances, Mapping):
        return None
    shown = [f"{name} {entry['deploy']}" for name, entry in instances.items()
             if isinstance(entry, Mapping) and entry.get("deploy")]
    return ", ".join(shown) or None
