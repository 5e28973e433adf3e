"""Login and the guest contract on the console, typed through a raw socket as the harness does."""

from __future__ import annotations

import base64
import hashlib
import os
import shlex

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.sim]

PROMPT = b"root@corstone1000-fvp:~# "


def test_bad_login_then_good_login(sim) -> None:
    s = sim()
    t = s.term()
    t.expect(b"corstone1000-fvp login: ")
    t.send(b"admin\n")
    t.expect(b"Password: ")
    t.send(b"secret\n")
    t.expect(b"Login incorrect\r\n")
    t.expect(b"corstone1000-fvp login: ")
    t.send(b"root\n")
    t.expect(PROMPT)
    t.send(b"exit\n")  # logout: getty starts over
    t.expect(b"corstone1000-fvp login: ")


def test_status_and_connectors(booted) -> None:
    _, t = booted
    assert t.run("false; echo $?") == "1\n"
    assert t.run("true && echo yes || echo no") == "yes\n"
    assert t.run("false && echo yes || echo no") == "no\n"
    assert t.run("false || false; echo $?") == "1\n"
    assert t.status("nosuchcmd") == ("-sh: nosuchcmd: not found\n", 127)
    assert t.run("exit_is_not_here 2>/dev/null; echo $?") == "127\n"


def test_quoting_like_sh(booted) -> None:
    _, t = booted
    assert t.run("echo 'a  b' \"c  $HOME\" d\\ e '$HOME'") == "a  b c  /root d e $HOME\n"
    assert t.run("echo \"it's\" 'say \"hi\"' a\\'b") == "it's say \"hi\" a'b\n"
    value = "we$ird 'quoted' \"value\" \\ here"
    assert t.run(f"printf '%s\\n' {shlex.quote(value)}") == value + "\n"


def test_variables_export_and_prefix_assignment(booted) -> None:
    _, t = booted
    t.run("mkdir -p /tmp/vars && cd /tmp/vars")
    t.run("printf '#!/bin/sh\\necho \"[$FOO][$BAR][$1]\"\\n' > show.sh && chmod +x show.sh")
    assert t.run("FOO=one ./show.sh arg") == "[one][][arg]\n"
    assert t.run("BAR=two; ./show.sh") == "[][][]\n"  # a shell variable is not exported
    assert t.run("export BAR; ./show.sh") == "[][two][]\n"
    assert t.run("export BAR=three FOO=four && ./show.sh x") == "[four][three][x]\n"
    assert t.run("echo ${BAR}x") == "threex\n"
    t.run("cd")


def test_redirections(booted) -> None:
    _, t = booted
    t.run("mkdir -p /tmp/redir")
    assert (t.run("echo one > /tmp/redir/f; echo two >> /tmp/redir/f; cat /tmp/redir/f")
            == "one\ntwo\n")
    assert t.run("cat /tmp/redir/missing 2> /tmp/redir/err; cat /tmp/redir/err") == (
        "cat: can't open '/tmp/redir/missing': No such file or directory\n")
    assert t.run("cat /tmp/redir/missing > /tmp/redir/both 2>&1; cat /tmp/redir/both").startswith(
        "cat: can't")
    assert (t.run("echo x > /nonexistent/dir/f")
            == "-sh: can't create /nonexistent/dir/f: nonexistent directory\n")
    assert t.run("cat < /tmp/redir/f") == "one\ntwo\n"


def test_files_and_directories(booted) -> None:
    _, t = booted
    assert t.run("mkdir -p /tmp/fs/a/b && cd /tmp/fs/a && pwd") == "/tmp/fs/a\n"
    assert t.run("cd b; pwd; cd ..; pwd") == "/tmp/fs/a/b\n/tmp/fs/a\n"
    t.run("printf hello > f1; echo x > f2")
    assert t.run("ls") == "b  f1  f2\n"
    assert t.run("ls -1 /tmp/fs/a") == "b\nf1\nf2\n"
    long = t.run("ls -l f1")
    assert long.startswith("-rw-r--r--") and " 5 " in long and long.endswith("f1\n")
    assert t.status("mkdir /tmp/fs/a")[1] == 1
    assert t.status("ls /nope") == ("ls: /nope: No such file or directory\n", 1)
    assert t.status("rm b")[0] == "rm: 'b' is a directory\n"
    assert t.status("rm -rf b f1 nothing-here")[1] == 0
    assert t.run("ls") == "f2\n"
    assert t.run("echo *") == "f2\n"
    assert t.status("cd /nope")[1] == 2
    t.run("cd /tmp/fs && rm -rf a && cd")
    assert t.run("ls /tmp/fs") == ""


def test_chmod_and_executing_files(booted) -> None:
    _, t = booted
    t.run("mkdir -p /tmp/exec && cd /tmp/exec")
    t.run("printf 'echo from script $#\\n' > s")
    assert t.status("./s") == ("-sh: ./s: Permission denied\n", 126)
    t.run("chmod +x s")
    assert t.status("./s a b") == ("from script 2\n", 0)
    t.run("chmod 644 s")
    assert t.status("/tmp/exec/s")[1] == 126
    t.run("printf '\\177ELF\\002\\001\\001\\000' > elf && chmod 755 elf")
    assert t.status("./elf --help") == ("-sh: ./elf: Exec format error\n", 126)
    t.run("printf '#!/usr/bin/python3\\nprint(1)\\n' > py && chmod u+x py")
    assert t.status("./py")[1] == 127
    assert t.status("./absent") == ("-sh: ./absent: not found\n", 127)
    assert t.status("/tmp")[1] == 126
    long = t.run("ls -l elf")
    assert long.startswith("-rwxr-xr-x")
    t.run("cd")


def test_base64_round_trip_and_sha256(booted) -> None:
    _, t = booted
    blob = os.urandom(3000) + b"\x00\xff\r\n\x03"
    encoded = base64.b64encode(blob).decode()
    t.run("rm -f /tmp/blob.b64")
    for i in range(0, len(encoded), 1000):  # chunked as a console deploy does
        assert t.run(f"printf '%s' {shlex.quote(encoded[i:i + 1000])} >> /tmp/blob.b64") == ""
    assert t.status("base64 -d /tmp/blob.b64 > /tmp/blob")[1] == 0
    digest = hashlib.sha256(blob).hexdigest()
    assert t.run("sha256sum /tmp/blob") == f"{digest}  /tmp/blob\n"
    assert (t.run("echo -n abc > /tmp/abc; sha256sum /tmp/abc").split()[0]
            == hashlib.sha256(b"abc").hexdigest())
    assert t.status("echo '@@@' > /tmp/bad; base64 -d /tmp/bad") == ("base64: invalid input\n", 1)
    assert t.run("base64 /tmp/abc") == "YWJj\n"


def test_printf_and_echo(booted) -> None:
    _, t = booted
    assert t.run("printf '%s=%d|%5s|%-3s|%x|%%\\n' a 42 r l 255") == "a=42|    r|l  |ff|%\n"
    assert t.run("printf '%s\\n' one two three") == "one\ntwo\nthree\n"
    assert t.run("printf 'no newline'; echo") == "no newline\n"
    assert t.run("echo -n a; echo b") == "ab\n"
    assert t.run("echo -e 'x\\ty'") == "x\ty\n"


def test_system_commands(booted) -> None:
    _, t = booted
    uname = t.run("uname -a")
    assert uname.startswith("Linux corstone1000-fvp 6.") and "aarch64" in uname
    assert t.run("uname -m") == "aarch64\n"
    assert t.status("sync")[1] == 0
    assert t.status("dmesg -n 1")[1] == 0
    assert "Booting Linux on physical CPU" in t.run("dmesg")
    assert t.status("dmesg -n 9")[1] == 1
    assert t.status("stty cols 200")[1] == 0
    assert t.run("stty size") == "24 200\n"
    assert "BAR" in t.run("export -p") or t.run("export -p").startswith("export ")


def test_stty_echo_off_is_honoured(booted) -> None:
    _, t = booted
    t.send(b"stty -echo\n")
    t.expect(PROMPT)
    t.send(b"echo quiet\n")
    assert t.expect(PROMPT) == b"quiet\r\n" + PROMPT  # the command itself is not echoed
    t.send(b"stty echo\n")
    t.expect(PROMPT)
    assert t.run("echo loud") == "loud\n"


def test_path_escapes_stay_in_the_guest(booted, tmp_path) -> None:
    _, t = booted
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host data")
    ups = "../" * 30
    assert "No such file" in t.run(f"cat {ups}{str(secret).lstrip('/')}")
    assert "No such file" in t.run(f"cat {secret}")
    assert t.run(f"cd {ups} && pwd") == "/\n"
    assert t.run("cat /../../etc/hostname") == "corstone1000-fvp\n"
    assert t.run("cd /tmp/../../.. && pwd; cd") == "/\n"
    assert "can't remove" in t.run("rm -rf /")
    # /lib holds the image's loader
    assert t.run("ls /") == "bin  dev  etc  lib  proc  root  sbin  tmp  usr  var\n"


def test_ctrl_c_interrupts_a_running_program(booted) -> None:
    _, t = booted
    t.send(b"cat\n")  # waits for stdin
    t.expect(b"cat\r\n")
    t.send(b"\x03")
    t.expect(PROMPT)
    assert t.run("echo $?") == "130\n"
    t.send(b"partial line\x03")  # Ctrl-C at the prompt drops the line
    t.expect(b"^C\r\n" + PROMPT)


def test_continuation_and_unsupported_syntax(booted) -> None:
    _, t = booted
    t.send(b"echo 'open\n")
    t.expect(b"> ")
    t.send(b"closed'\n")
    assert t.expect(PROMPT).endswith(b"open\r\nclosed\r\n" + PROMPT)
    out, code = t.status("echo a &")
    assert code == 2 and "not supported" in out
    assert t.status("case a in a) echo;; esac")[1] == 2
    assert t.status("(exit 4)")[1] == 4
    assert t.status("if true; then printf x; fi") == ("x", 0)


def test_ps1_and_ps2_change_the_console_prompts(booted) -> None:
    _, t = booted
    t.send(b"PS1='[\\u@\\h \\W]$? \\$ '; cd /tmp\n")
    t.expect(b"[root@corstone1000-fvp tmp]0 # ")
    t.send(b"PS2='more> '\n")
    t.expect(b"[root@corstone1000-fvp tmp]0 # ")
    t.send(b"cat <<EOF | tr a-z A-Z\n")
    t.expect(b"more> ")
    t.send(b"here doc\n")
    t.expect(b"more> ")
    t.send(b"EOF\n")
    assert t.expect(b"[root@corstone1000-fvp tmp]0 # ").endswith(
        b"HERE DOC\r\n[root@corstone1000-fvp tmp]0 # ")
    t.send(b"false\n")
    t.expect(b"[root@corstone1000-fvp tmp]1 # ")
    t.send(b"PS1='\\u@\\h:\\w\\$ ' PS2='> '; cd\n")
    t.expect(PROMPT)
    assert t.run("echo ok") == "ok\n"


def test_pipes_and_everyday_commands_on_the_console(booted) -> None:
    _, t = booted
    lines = t.run("dmesg | tail -n 2").splitlines()
    assert len(lines) == 2 and all(line.startswith("[") for line in lines)
    assert t.run("dmesg | grep -c 'Booting Linux'") == "1\n"
    assert t.run("printf '3\\n1\\n2\\n' | sort -n | head -n 2 | tr '\\n' ' '; echo") == "1 2 \n"
    assert t.run("ls / | wc -l") == "10\n"
    assert t.run("echo a b c | xargs -n 1 | tail -n 1") == "c\n"
    assert t.run("false | true; echo $?; true | false; echo $?") == "0\n1\n"
    assert t.run("echo $((6 * 7)) $(echo sub)") == "42 sub\n"


def test_ctrl_c_interrupts_a_whole_pipeline(booted) -> None:
    _, t = booted
    t.send(b"sleep 30 | cat\n")
    t.expect(b"sleep 30 | cat\r\n")
    t.send(b"\x03")
    t.expect(PROMPT, timeout=10)
    assert t.run("echo $?") == "130\n"
    t.send(b"cat | head -n 1\n")  # head ends after one line; cat ends at its next write
    t.expect(b"head -n 1\r\n")
    t.send(b"first\n")
    t.expect(b"first\r\nfirst\r\n")
    t.send(b"second\n")
    t.expect(PROMPT)
    assert t.run("echo ok") == "ok\n"


@pytest.mark.parametrize("cmd", ["wget", "python3", "awk"])
def test_outside_the_contract_is_not_found(booted, cmd: str) -> None:
    _, t = booted
    assert t.status(f"{cmd} x") == (f"-sh: {cmd}: not found\n", 127)
