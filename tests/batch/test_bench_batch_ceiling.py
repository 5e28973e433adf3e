"""The batch benchmark's ceiling: the best deal of measured work over lanes, which the closing
figures compare with."""

from __future__ import annotations

import importlib.util
import itertools
import random
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_batch.py"
_SPEC = importlib.util.spec_from_file_location("bench_batch", _PATH)
assert _SPEC is not None and _SPEC.loader is not None
bench_batch = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(bench_batch)


def _brute_force(pieces: list[float], lanes: int) -> float:
    best = float("inf")
    for deal in itertools.product(range(lanes), repeat=len(pieces)):
        loads = [0.0] * lanes
        for piece, lane in zip(pieces, deal, strict=True):
            loads[lane] += piece
        best = min(best, max(loads))
    return best


@pytest.mark.parametrize("seed", range(12))
def test_the_best_deal_is_the_exhaustive_one(seed: int) -> None:
    rng = random.Random(seed)
    pieces = sorted((round(rng.uniform(0.1, 3.0), 2) for _ in range(rng.randint(1, 8))),
                    reverse=True)
    lanes = rng.randint(1, 3)
    assert (bench_batch.best_longest_lane(pieces, lanes)
            == pytest.approx(_brute_force(pieces, lanes)))


def test_whole_sessions_of_unequal_length_bound_the_ratio() -> None:
    # four sessions as the paced benchmark measures them: no deal of whole sessions beats 3.89 s on
    # two lanes
    sessions = [2.44, 1.81, 1.45, 1.45]
    assert bench_batch.best_longest_lane(sessions, 2) == pytest.approx(3.89)
    assert bench_batch.ceiling(9.30, sessions, 2) == pytest.approx(9.30 / (9.30 - 7.15 + 3.89))
    assert bench_batch.ceiling(10.0, [5.0, 5.0], 2) == pytest.approx(2.0)
