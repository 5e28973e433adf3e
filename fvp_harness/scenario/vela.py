"""``models.<name>.vela``: the Ethos-U compiler's estimate a model's measured NPU cycles are
compared with.

Why in the scenario: the estimate belongs to the model file a build runs (Vela writes it when it
compiles the model), and only the scenario knows which file that is. The report then shows, per
model and build, the measured NPU cycles, Vela's estimate and their ratio, and flags a ratio outside
``band`` (``report/rendering/vela_estimates.py``).

Forms::

    # one estimate for every build
    vela: build/vela/ds_cnn_summary_Ethos_U85_SYS_DRAM_Mid.csv

    vela:
      # Vela's per-layer CSV works too
      file: build/vela/ds_cnn_per-layer.csv
      # a build's own estimate
      builds: {u85-128: build/vela128/ds_cnn_summary_Ethos_U85_SYS_DRAM_Mid.csv}
      # measured / estimate outside it is flagged
      band: [0.8, 1.25]

Relative paths are relative to the scenario file (the one run, not an ``extends`` base); the files
are read when the report is written, so a model's ``build:`` may produce them (``fvp-harness sim
model ... --vela-dir DIR``, or ``vela --verbose-performance``).
"""

from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    field_validator,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

__all__ = ["DEFAULT_VELA_BAND", "VelaEstimates"]

DEFAULT_VELA_BAND = (0.8, 1.25)
"""Measured / estimated NPU cycles inside this band pass; Vela aims at estimates within about 20 %
of hardware."""


class VelaEstimates(BaseModel):
    """Where a model's Vela estimates are, per build, and the ratio band that counts as
    agreement."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    file: str | None = Field(
        None,
        description="Vela's summary CSV (<name>_summary_<system config>.csv) or per-layer CSV "
                    "(<name>_per-layer.csv, "
        "from --verbose-performance) for every build of this model.",
    )
    builds: dict[str, str] = Field(
        default_factory=dict,
        description="A build's own estimate file (e.g. compiled for its MAC configuration)."
    )
    band: tuple[float, float] = Field(
        DEFAULT_VELA_BAND,
        description="[low, high]: a measured / estimated ratio outside it is flagged."
    )

    @model_validator(mode="before")
    @classmethod
    def _bare_path(cls, data: Any) -> Any:
        return {"file": data} if isinstance(data, str) else data

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: CoreSchema,
                                     handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        """The schema says what the validator accepts: a bare path is the short form of ``{file:
        PATH}``."""
        schema = handler(core_schema)
        return {"anyOf": [{"type": "string", "description": "Short for {file: PATH}."}, schema]}

    @model_validator(mode="after")
    def _some_file(self) -> VelaEstimates:
        if self.file is None and not self.builds:
            raise ValueError("name an estimate file: `vela: PATH`, or `file:` and/or `builds:`")
        return self

    @field_validator("band")
    @classmethod
    def _ordered(cls, band: tuple[float, float]) -> tuple[float, float]:
        low, high = band
        if not 0 < low <= 1 <= high:
            raise ValueError(f"got [{low}, {high}]; expected [low, high] with 0 < low <= 1 <= high")
        return band

    def file_for(self, build: str) -> str | None:
        """The estimate file of ``build`` (its own, else the model's), or None."""
        return self.builds.get(build, self.file)
