"""User-mode networking: the guest sshd on a forwarded port, with exec, scp and SFTP on the same
guest files."""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import subprocess
import time

import asyncssh
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.sim]

SSH_OPTS = ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o",
            "BatchMode=yes", "-o", "LogLevel=ERROR", "-o", "ConnectTimeout=20"]


def start(sim, free_ports, **knobs):
    port = free_ports(1)
    s = sim("-C", "board.hostbridge.userNetworking=true",
            "-C", f"board.hostbridge.userNetPorts=5555=5555,{port}=22", knobs=knobs)
    return s, port


async def connect(port: int, username: str = "root",
                  deadline: float = 30.0) -> asyncssh.SSHClientConnection:
    """Connect once the guest's sshd answers (it comes up with the guest's init, after the boot)."""
    end = time.monotonic() + deadline
    while True:
        try:
            return await asyncssh.connect("127.0.0.1", port, username=username, password="",
                                          known_hosts=None, connect_timeout=10)
        except (OSError, asyncssh.Error):
            if time.monotonic() > end:
                raise
            await asyncio.sleep(0.1)


def test_exec_status_stdout_stderr_and_same_filesystem_as_console(sim, free_ports) -> None:
    s, port = start(sim, free_ports)
    t = s.login()

    async def go() -> None:
        async with await connect(port) as conn:
            r = await conn.run("echo out; echo err >&2; cd /tmp && pwd; exit 7")
            assert (r.stdout, r.stderr, r.exit_status) == ("out\n/tmp\n", "err\n", 7)
            r = await conn.run("cat > /tmp/from-ssh; sha256sum /tmp/from-ssh", input="payload")
            assert r.stdout.split()[0] == hashlib.sha256(b"payload").hexdigest()
            r = await conn.run("nosuch")
            assert r.exit_status == 127 and r.stderr == "sh: nosuch: not found\n"
            r = await conn.run("stty -echo")
            assert r.exit_status == 1  # no tty on exec

    asyncio.run(go())
    assert t.run("cat /tmp/from-ssh") == "payload"


def test_sftp_put_and_get_1mib(sim, free_ports, tmp_path) -> None:
    s, port = start(sim, free_ports)
    blob = os.urandom(1 << 20)
    local = tmp_path / "blob.bin"
    local.write_bytes(blob)

    async def go() -> None:
        async with await connect(port) as conn, conn.start_sftp_client() as sftp:
            assert await sftp.getcwd() == "/root"
            await sftp.put(str(local), "/tmp/blob.bin")
            await sftp.get("/tmp/blob.bin", str(tmp_path / "back.bin"))
            with pytest.raises(asyncssh.SFTPError):
                await sftp.symlink("/etc", "/tmp/link")
            assert sorted(await sftp.listdir("/../../..")) == sorted(await sftp.listdir("/"))
            r = await conn.run("sha256sum /tmp/blob.bin")
            assert r.stdout.split()[0] == hashlib.sha256(blob).hexdigest()

    asyncio.run(go())
    assert (tmp_path / "back.bin").read_bytes() == blob
    assert s.login().run("ls /tmp") == "blob.bin\n"


@pytest.mark.skipif(shutil.which("scp") is None, reason="no scp client")
@pytest.mark.parametrize("legacy", [True, False], ids=["scp-O", "scp-sftp"])
def test_system_scp_and_ssh(sim, free_ports, tmp_path, legacy: bool) -> None:
    s, port = start(sim, free_ports)
    s.login()  # the guest is up
    blob = os.urandom(1 << 20)
    local = tmp_path / "model.pte"
    local.write_bytes(blob)
    scp = ["scp", *(["-O"] if legacy else []), "-P", str(port), *SSH_OPTS, str(local),
           "root@127.0.0.1:/tmp/"]
    subprocess.run(scp, check=True, timeout=60, capture_output=True)
    out = subprocess.run(["ssh", "-p", str(port), *SSH_OPTS, "root@127.0.0.1",
                          "sha256sum /tmp/model.pte"],
                         check=True, timeout=60, capture_output=True, text=True)
    assert out.stdout == f"{hashlib.sha256(blob).hexdigest()}  /tmp/model.pte\n"


def test_only_root_gets_in(sim, free_ports) -> None:
    s, port = start(sim, free_ports)
    s.login()

    async def go() -> None:
        with pytest.raises(asyncssh.PermissionDenied):
            await asyncssh.connect("127.0.0.1", port, username="admin", password="",
                                   known_hosts=None)

    asyncio.run(go())


def test_no_ssh_without_user_networking(sim, free_ports) -> None:
    port = free_ports(1)
    s = sim("-C", f"board.hostbridge.userNetPorts={port}=22")
    s.login()

    async def go() -> None:
        with pytest.raises(OSError):
            await asyncssh.connect("127.0.0.1", port, username="root", password="",
                                   known_hosts=None)

    asyncio.run(go())


def test_interactive_session_gets_a_prompt(sim, free_ports) -> None:
    s, port = start(sim, free_ports)
    s.login()

    async def go() -> None:
        async with await connect(port) as conn:
            proc = await conn.create_process(term_type="vt100")
            await asyncio.wait_for(proc.stdout.readuntil("# "), 20)
            proc.stdin.write("echo interactive\n")
            text = await asyncio.wait_for(proc.stdout.readuntil("interactive"), 20)
            assert "interactive" in text
            proc.stdin.write("exit 3\n")
            await asyncio.wait_for(proc.wait_closed(), 20)
            assert proc.exit_status == 3

    asyncio.run(go())


async def _refused(port: int) -> None:
    with pytest.raises(OSError):
        await asyncssh.connect("127.0.0.1", port, username="root", password="", known_hosts=None,
                               connect_timeout=10)


def test_ssh_through_virtio_net_only(sim, free_ports) -> None:
    """The SMSC Ethernet switched off, user-mode networking on virtio-net: its forward reaches the
    guest sshd, the other bridge's forward serves nothing."""
    smsc_port = free_ports(2)
    virtio_port = smsc_port + 1
    s = sim("-C", "board.smsc_91c111.enabled=0",
            "-C", "board.hostbridge.userNetworking=true", "-C",
            f"board.hostbridge.userNetPorts={smsc_port}=22",
            "-C", "board.virtio_net.enabled=1", "-C",
            "board.virtio_net.hostbridge.userNetworking=true",
            "-C", f"board.virtio_net.hostbridge.userNetPorts=5555=5555,{virtio_port}=22")
    s.login()

    async def go() -> None:
        async with await connect(virtio_port) as conn:
            assert (await conn.run("uname -n")).stdout == "corstone1000-fvp\n"
        await _refused(smsc_port)

    asyncio.run(go())


def test_each_enabled_device_forwards_its_own_port(sim, free_ports) -> None:
    first = free_ports(3)
    second, off = first + 1, first + 2
    s = sim("-C", "board.hostbridge.userNetworking=true", "-C",
            f"board.hostbridge.userNetPorts={first}=22",
            "-C", "board.virtio_net.enabled=true", "-C",
            "board.virtio_net.hostbridge.userNetworking=true",
            "-C", f"board.virtio_net.hostbridge.userNetPorts={second}=22")
    t = s.login()
    t.run("echo shared > /tmp/mark")

    async def go() -> None:
        for port in (first, second):
            async with await connect(port) as conn:
                assert (await conn.run("cat /tmp/mark")).stdout == "shared\n"

    asyncio.run(go())
    # virtio-net with its bridge's user networking off: no forward
    s2 = sim("-C", "board.virtio_net.enabled=true", "-C",
             f"board.virtio_net.hostbridge.userNetPorts={off}=22")
    s2.login()
    asyncio.run(_refused(off))
