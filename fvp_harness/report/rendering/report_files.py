"""Writing report files: the requested outputs into a folder, all or nothing per file
(``write_report_files``), and a figure as PNG bytes that carry no date or software tag
(``save_png``). The A/B report, the VGF report and the history write through them. matplotlib is not
imported here: a figure arrives made."""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from fvp_harness.files import atomic_write

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["save_png", "write_report_files"]


def save_png(figure: Figure, path: Path, *, layout: bool = True) -> Path:
    """Lay out ``figure`` and write it to ``path`` as PNG with ``files.atomic_write``, without the
    Software tag or a date, so the same figure gives the same bytes.

    The layout is done once: ``tight_layout`` leaves a placeholder layout engine behind, and with
    any engine set ``savefig`` lays the figure out again in a draw of its own before the real one (a
    tenth of the chart's cost, for nothing: the placeholder changes no position). Removing the
    engine after the layout gives the same bytes."""
    if layout:  # a figure laid out by its maker (``layout=False``) is saved as it is
        figure.tight_layout()
        figure.set_layout_engine(None)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    atomic_write(path, buffer.getvalue())
    return path


def write_report_files(
    out_dir: Path,
    outputs: Sequence[str],
    file_names: Mapping[str, str],
    text: Mapping[str, Callable[[], str]],
    png: Callable[[Path], object],
) -> dict[str, Path]:
    """Write the requested ``outputs`` into ``out_dir`` (created): ``file_names`` maps an output
    name to its file, ``text`` an output to a function returning its text (written with
    ``files.atomic_write``), ``png`` writes the ``png`` output to the path given. Unknown names are
    refused before anything is written. Returns output name -> path, in the order asked. The A/B and
    the VGF report both write through it."""
    out_dir = Path(out_dir)
    unknown = [o for o in outputs if o not in file_names]
    if unknown:
        raise ValueError(f"unknown report output(s) {unknown}; choose from {sorted(file_names)}")
    out_dir.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    for name in outputs:
        path = out_dir / file_names[name]
        if name in text:
            atomic_write(path, text[name]())
        else:
            png(path)
        written[name] = path
    return written
