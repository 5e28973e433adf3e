"""The stored row: one ``Record`` per unit (one runner invocation), holding every sample it
produced.

Why it is shaped so: docs/architecture.md, "Inside `store/`"."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["RECORD_SCHEMA_VERSION", "Record", "upgrade_row"]

RECORD_SCHEMA_VERSION = 3

_RENAMED_IN_2 = {"unit": "unit_id", "session": "instance", "units": "metric_units"}


def upgrade_row(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A stored row of any schema this version reads, in the current schema's field names."""
    row = dict(raw)
    version = int(row.get("schema_version", 1))
    if version < 2:
        for old, new in _RENAMED_IN_2.items():
            if old in row:
                row[new] = row.pop(old)
    if version < RECORD_SCHEMA_VERSION:  # 3 only added a field with a default
        row["schema_version"] = RECORD_SCHEMA_VERSION
    return row


class Record(BaseModel):
    """One unit's outcome: identity (scenario, key, build, model, repetition), status, and its
    samples.

    ``samples`` maps a metric name to its values in execution order, warmup already dropped (metrics
    measured once per run hold one value); ``partitions`` keeps, for a model split into several
    Ethos-U partitions, each inference's per-call values of a metric whose sample is their sum.
    ``outputs`` maps an output file name to its sha256, so analysis can prove that two builds
    produced byte-identical outputs without keeping the bytes.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: int = RECORD_SCHEMA_VERSION
    scenario: str
    key: str = Field(description="The unit's content key: a hash of every input that can change "
                                 "its result.")
    unit_id: str = Field(description="Readable unit id, e.g. r1-after-resnet8.")
    instance: str = Field(description="Which booted instance ran it, e.g. s0 (or s0.2 after a "
                                      "retry).")
    build: str
    model: str
    repetition: int
    attempt: int = 1
    status: Literal["ok", "failed"]
    failure_class: Literal["infrastructure", "test", "configuration", "interrupted"] | None = None
    failure: str | None = None
    log: str | None = Field(None,
                            description="Path of the unit's console log, relative to the results "
                                        "folder.")
    samples: dict[str, list[float]] = Field(default_factory=dict)
    partitions: dict[str, list[list[float]]] = Field(
        default_factory=dict,
        description="Metric printed once per delegate call (npu_cycles, cpu_time) -> for each "
                    "value of "
        "samples[metric], in the same order, the value of each call of that inference: one per "
        "Ethos-U partition, in call order. Only for metrics some inference printed more than once "
        "(a partly delegated model); samples holds their sums.",
    )
    metric_units: dict[str, str] = Field(default_factory=dict,
                                         description="Metric name -> unit of its values.")
    outputs: dict[str, str] = Field(default_factory=dict,
                                    description="Output file name -> sha256 hex.")
    build_id_seen: str | None = None
    started: str = Field(description="UTC ISO-8601 start time.")
    duration_s: float = 0.0
    extra: dict[str, str | float | int | bool | None] = Field(default_factory=dict)
