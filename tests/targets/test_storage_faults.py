"""A full disk, a read-only folder or an I/O error is the host's storage failing: ``StorageError``
at once, naming the file and the error, never a dead drain thread nobody notices nor a partial
record line (issue 23 item 3)."""

from __future__ import annotations

import errno
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fvp_harness.errors import StorageError, storage_error
from fvp_harness.profiles import load_profile
from fvp_harness.store.folder import ResultStore
from fvp_harness.store.records import Record
from fvp_harness.targets.console import BootWatch, Console
from fvp_harness.targets.deadline import Deadline
from fvp_harness.targets.host import HostTarget
from fvp_harness.targets.terminal import Terminal
from tests.helpers import mounted_tmpfs


class _FullDisk:
    """A text log whose writes fail with ENOSPC after ``room`` characters."""

    def __init__(self, room: int) -> None:
        self.room = room

    def write(self, text: str) -> int:
        if len(text) > self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= len(text)
        return len(text)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


def _record(index: int) -> Record:
    return Record(scenario="s", key=f"k{index}", unit_id=f"r{index}-a-m", instance="s0", build="a",
                  model="m",
                  repetition=index, status="ok", samples={"cpu_time": [1.0] * 50},
                  started="2026-01-01T00:00:00Z", duration_s=1.0)


@pytest.fixture
def server() -> Iterator[socket.socket]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    yield sock
    sock.close()


def test_a_console_log_that_cannot_be_written_ends_the_wait_at_once(
    tmp_path: Path, server: socket.socket
) -> None:
    def serve() -> None:
        conn, _ = server.accept()
        for _ in range(200):  # boot text without end, never a login prompt
            try:
                conn.sendall(b"[    0.1] booting, still booting\r\n")
            except OSError:
                break
            time.sleep(0.01)
        conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    profile = load_profile("corstone1000-a320")
    terminal = Terminal("host_terminal_0", server.getsockname()[1],
                        log_path=tmp_path / "host_terminal_0.log")
    terminal.connect(Deadline.after(5, "boot"))
    with terminal._log_lock:
        assert terminal._log_file is not None
        terminal._log_file.close()
        terminal._log_file = _FullDisk(300)  # type: ignore[assignment]
    began = time.monotonic()
    try:
        with pytest.raises(StorageError) as caught:
            Console(terminal, profile,
                    BootWatch(profile)).wait_for_login_prompt(Deadline.after(300, "boot"))
    finally:
        terminal.close()
        thread.join(timeout=5)
    assert time.monotonic() - began < 5, "not at the boot deadline"
    assert str(caught.value).startswith(f"cannot write {tmp_path / 'host_terminal_0.log'}: No "
                                        "space left on device")
    assert "ENOSPC" in str(caught.value) and terminal.closed


def test_a_record_that_does_not_fit_leaves_no_partial_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = ResultStore(tmp_path / "out")
    store.append(_record(0))
    before = store.records_path.read_bytes()
    real_write = os.write

    def half_then_full(fd: int, data: Any) -> int:
        if len(data) > 10:
            return real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(StorageError, match=r"records\.jsonl: No space left on device \(ENOSPC\)"):
        store.append(_record(1))
    monkeypatch.undo()
    assert store.records_path.read_bytes() == before
    assert [r.unit_id for r in store.records()] == ["r0-a-m"]


def test_the_host_targets_log_on_a_full_disk_is_a_storage_error(tmp_path: Path) -> None:
    with HostTarget(log_dir=tmp_path / "logs") as target:
        assert target._log is not None
        target._log.close()
        target._log = _FullDisk(20)  # type: ignore[assignment]
        with pytest.raises(StorageError, match=r"host\.log: No space left on device"):
            target.run("echo a line longer than twenty characters", timeout=10)


def test_storage_error_names_the_path_the_harness_used() -> None:
    error = storage_error(Path("/x/records.jsonl"),
                          OSError(errno.EROFS, os.strerror(errno.EROFS), "/other"))
    assert str(error) == "cannot write /x/records.jsonl: Read-only file system (EROFS)"
    assert error.exit_code == 3 and error.errno == errno.EROFS


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 256 KiB tmpfs, unmounted afterwards."""
    with mounted_tmpfs(tmp_path / "disk", "size=256k") as folder:
        yield folder


def test_records_on_a_real_full_disk_stay_whole(tiny_disk: Path) -> None:
    store = ResultStore(tiny_disk / "out")
    (tiny_disk / "filler").write_bytes(b"\0" * (256 * 1024 - 16 * 1024))
    written = 0
    with pytest.raises(StorageError, match="No space left on device"):
        for index in range(10_000):
            store.append(_record(index))
            written += 1
    assert written > 0
    assert [r.unit_id for r in store.records()] == [f"r{i}-a-m" for i in range(written)]
    assert store.records_path.read_bytes().endswith(b"\n")
