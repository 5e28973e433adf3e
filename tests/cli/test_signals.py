"""SIGTERM and SIGHUP as CI sends them, and Ctrl-C at start-up (issue 23 items 2 and 8)."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from fvp_harness.cli import main as cli_main
from fvp_harness.cli import scenario_args
from fvp_harness.errors import EXIT_INTERRUPTED, EXIT_TERMINATED


@pytest.fixture(autouse=True)
def _restore_handlers():
    saved = {signum: signal.getsignal(signum)
             for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    scenario_args._received.clear()
    yield
    scenario_args._received.clear()
    for signum, handler in saved.items():
        signal.signal(signum, handler)


def test_sigterm_is_the_first_ctrl_c_then_the_second_after_the_grace(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scenario_args, "TERM_GRACE_S", 0.5)
    notices: list[str] = []
    stop = threading.Event()
    began = time.monotonic()
    with pytest.raises(KeyboardInterrupt), \
            scenario_args.stop_on_first_interrupt(stop, lambda: notices.append("stopping")):
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.wait(2), "the first stage sets stop"
        while time.monotonic() - began < 5:  # a unit that does not finish: the second stage comes
            time.sleep(0.01)
    assert 0.4 < time.monotonic() - began < 4
    assert scenario_args.termination_signal() == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is not None


def test_a_second_sighup_stops_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scenario_args, "TERM_GRACE_S", 60)
    stop = threading.Event()
    with pytest.raises(KeyboardInterrupt), scenario_args.stop_on_first_interrupt(stop,
                                                                                 lambda: None):
        os.kill(os.getpid(), signal.SIGHUP)
        assert stop.wait(2)
        os.kill(os.getpid(), signal.SIGHUP)
        time.sleep(2)
    assert scenario_args.termination_signal() == signal.SIGHUP


def test_main_sets_the_handlers_before_any_verb_and_exits_143(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def dispatch(argv: object) -> int:  # before the verbs are even imported
        assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(2)
        return 0

    monkeypatch.setattr(cli_main, "_dispatch", dispatch)
    assert cli_main.main(["profiles"]) == EXIT_TERMINATED
    err = capsys.readouterr().err
    assert err.strip() == "fvp-harness: stopped by SIGTERM; everything measured so far is kept"


def test_ctrl_c_during_start_up_is_a_clean_130(monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    def interrupted():  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt  # while the verbs are imported

    monkeypatch.setattr(cli_main, "build_parser", interrupted)
    assert cli_main.main(["run", "x.yaml"]) == EXIT_INTERRUPTED
    err = capsys.readouterr().err
    assert ("Traceback" not in err and
            err.strip() == "fvp-harness: interrupted; everything measured so far is kept")
