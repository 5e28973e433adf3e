"""``FvpProcess.stop``'s signal sequence per profile, on a stand-in that never exits (no process is
started).

meta-arm stops a model with SIGTERM, waits 10 s, then kills it (meta-arm/lib/fvp/runner.py:112-121);
the shipped profiles send SIGINT first (the model prints --stat, kept in the manifest), then
SIGTERM, then SIGKILL.
"""

from __future__ import annotations

import signal

import pytest

from fvp_harness.profiles import load_profile
from fvp_harness.targets.fvp import FvpProcess


class _Stubborn(FvpProcess):
    """An FvpProcess whose model ignores every signal but SIGKILL; records what was sent and how
    long was waited."""

    # no launch: only what stop() reads
    def __init__(self, profile_overrides: dict[str, object]) -> None:
        self.profile = load_profile("corstone1000-a320").model_copy(update=profile_overrides)
        self._child = type("Child", (), {"pid": 4_000_000})()  # type: ignore[assignment]  (never signalled)
        self.stopped = False
        self.sent: list[tuple[str, float | None]] = []

    def alive(self) -> bool:
        return True

    def _signal_group(self, signum: int) -> None:
        self.sent.append((signal.Signals(signum).name, None))

    def _wait_exit(self, timeout: float) -> bool:
        self.sent[-1] = (self.sent[-1][0], timeout)
        return False

    def kill_group(self) -> None:
        self.sent.append(("SIGKILL", None))
        self.stopped = True

    def stat(self) -> dict[str, str]:
        return {}


@pytest.mark.parametrize(("overrides", "sequence"), [
    ({}, [("SIGINT", 10.0), ("SIGTERM", 5.0), ("SIGKILL", None)]),  # the shipped profile
    # meta-arm's runner.py:112-121
    ({"stop_signal": "SIGTERM"}, [("SIGTERM", 10.0), ("SIGKILL", None)]),
    ({"stop_signal": "SIGTERM", "stop_timeout": 3.0}, [("SIGTERM", 3.0), ("SIGKILL", None)]),
])  # fmt: skip
def test_the_stop_sequence_follows_the_profile(overrides: dict[str, object],
                                               sequence: list) -> None:
    model = _Stubborn(overrides)
    model.stop()
    assert model.sent == sequence
