"""The guest shell's language and commands, run in-process (no boot): each test gets a fresh machine
and shell.

What busybox ash does is the reference for every expectation here: prompts, quoting, expansions,
pipes, redirections, here-documents, messages and exit statuses.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fvp_harness.sim.clock import SimClock
from fvp_harness.sim.corstone1000.machine import Machine
from fvp_harness.sim.guest.fs import GuestFS
from fvp_harness.sim.guest.parse import Incomplete, ShellSyntaxError, parse
from fvp_harness.sim.guest.shell import IO, BytesStdin, ExitShell, Shell, Tty
from fvp_harness.sim.knobs import parse_knobs
from fvp_harness.sim.workloads.programs import register as register_workloads


class Guest:
    """A shell on a fresh guest: ``run`` returns (stdout, stderr, status) of one input line."""

    def __init__(self, machine: Machine) -> None:
        self.machine = machine
        self.shell = Shell(machine)
        self.tty = Tty()

    def run(self, line: str, stdin: bytes = b"", console: bool = False) -> tuple[str, str, int]:
        out, err = bytearray(), bytearray()
        tty = self.tty if console else None
        try:
            status = self.shell.run_line(line + "\n",
                                         IO(out.extend, err.extend, BytesStdin(stdin), tty, tty))
        except ExitShell as exc:
            status = exc.status
        return out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), status

    def out(self, line: str, stdin: bytes = b"") -> str:
        """Only stdout, and the command must succeed."""
        out, err, status = self.run(line, stdin)
        assert (err, status) == ("", 0), (line, out, err, status)
        return out


@pytest.fixture
def guest() -> Iterator[Guest]:
    fs = GuestFS()
    machine = Machine(fs, SimClock(), {}, parse_knobs({}))
    register_workloads()  # as the platform does: the guest executes the emulated runners
    for message in ("Booting Linux on physical CPU 0x0", "random: crng init done",
                    "Run /sbin/init as init process"):
        machine.printk(message)
    try:
        yield Guest(machine)
    finally:
        fs.cleanup()


def _state(text: str) -> str:
    try:
        parse(text)
    except Incomplete:
        return "more"
    except ShellSyntaxError as exc:
        return f"error: {exc}"
    return "complete"


# -- prompts ---------------------------------------------------------------------------------------


def test_default_prompt_is_the_one_the_login_shows(guest: Guest) -> None:
    assert guest.shell.prompt() == "root@corstone1000-fvp:~# "
    assert guest.shell.prompt2() == "> "
    guest.run("cd /tmp")
    assert guest.shell.prompt() == "root@corstone1000-fvp:/tmp# "
    guest.run("mkdir -p /root/work/deep; cd /root/work/deep")
    assert guest.shell.prompt() == "root@corstone1000-fvp:~/work/deep# "


@pytest.mark.parametrize(
    ("ps1", "cwd", "shown"),
    [
        ("\\u@\\h:\\w\\$ ", "/root", "root@corstone1000-fvp:~# "),
        ("\\H \\W> ", "/tmp", "corstone1000-fvp tmp> "),
        ("\\W> ", "/", "> "),  # busybox: the basename of / is empty
        ("\\W> ", "/root", "~> "),
        ("x> ", "/", "x> "),
        ("$USER ${HOME} $? \\$ ", "/", "root /root 0 # "),
        ("line1\\nline2$ ", "/", "line1\nline2$ "),
        ("\\[\\e[1m\\]bold\\[\\e[0m\\] ", "/", "\x1b[1mbold\x1b[0m "),
        ("\\101\\x42 ", "/", "AB "),
        # ash halves backslashes first (as in double quotes), then \\ is one
        ("a\\\\\\\\b ", "/", "a\\b "),
        ("'q' \"d\" ", "/", "'q' \"d\" "),
        ("$(echo sub)> ", "/", "sub> "),
        ("fh-''abc# ", "/", "fh-''abc# "),  # quotes are literal in a prompt
    ],
)
def test_ps1_escapes_and_expansions(guest: Guest, ps1: str, cwd: str, shown: str) -> None:
    guest.shell.vars["PS1"] = ps1
    guest.run(f"cd {cwd}")
    assert guest.shell.prompt() == shown


def test_prompt_set_the_way_the_harness_sets_it(guest: Guest) -> None:
    assert guest.out("export PS1='fh-''1234abcd# ' PS2='fh-''1234abcd> '") == ""
    assert guest.shell.prompt() == "fh-1234abcd# "
    assert guest.shell.prompt2() == "fh-1234abcd> "
    guest.run("false")
    guest.shell.vars["PS1"] = "[$?] "
    assert guest.shell.prompt() == "[1] "
    guest.run("unset PS1")
    assert guest.shell.prompt() == ""


# -- parsing: when more input is needed ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "state"),
    [
        ("echo 'open\n", "more"),
        ('echo "open\n', "more"),
        ("echo a |\n", "more"),
        ("echo a &&\n", "more"),
        ("echo a ||\n", "more"),
        ("echo a \\\n", "more"),
        ("cat <<EOF\nbody\n", "more"),
        ("cat <<EOF\nbody\nEOF\n", "complete"),
        ("cat <<-EOF\n\tbody\n\tEOF\n", "complete"),
        ("echo $(echo\n", "more"),
        ("echo a # 'comment\n", "complete"),
        ("\n", "complete"),
        ("echo a; ;\n", 'error: syntax error: unexpected ";"'),
        ("| x\n", 'error: syntax error: unexpected "|"'),
        ("echo >\n", "error: syntax error: unexpected newline"),
        ("echo a;;\n", 'error: syntax error: unexpected ";;"'),
        ("echo a &\n", "error: background jobs ('&') are not supported by the simulator's shell"),
        ("if true; then :; fi\n", "complete"),
        ("if true; then\n", "more"),
        ("for i in a b\n", "more"),
        ("while true; do echo\n", "more"),
        ("( echo a\n", "more"),
        ("{ echo a; } > /tmp/x\n", "complete"),
        ("fi\n", 'error: syntax error: unexpected "fi"'),
        ("if then fi\n", 'error: syntax error: unexpected "then"'),
        ("for 1 in a; do :; done\n", "error: syntax error: bad for loop variable"),
        ("case a in a) :;; esac\n",
         "error: 'case' (control flow) is not supported by the simulator's shell"),
    ],
)
def test_incomplete_and_refused_input(text: str, state: str) -> None:
    assert _state(text) == state


def test_syntax_errors_run_the_lines_before_them(guest: Guest) -> None:
    out, err, status = guest.run("echo before\necho a; ;")
    assert (out, err, status) == ("before\n", '-sh: syntax error: unexpected ";"\n', 2)
    assert (guest.run("echo 'unterminated")
            == ("", "-sh: syntax error: unterminated quoted string\n", 2))
    assert guest.out("echo $?") == "2\n"


# -- lists, status, quoting, expansions ------------------------------------------------------------


def test_lists_and_status(guest: Guest) -> None:
    assert (guest.out("false; echo $?; true && echo yes || echo no; false && echo yes || echo no")
            == "1\nyes\nno\n")
    assert guest.out("! false; echo $?; ! true; echo $?") == "0\n1\n"
    assert guest.run("nosuch; echo $?") == ("127\n", "-sh: nosuch: not found\n", 0)
    assert guest.run("nosuch") == ("", "-sh: nosuch: not found\n", 127)
    assert guest.out("true # a comment; echo not run") == ""


def test_quoting(guest: Guest) -> None:
    assert guest.out("echo 'a  b' \"c  $HOME\" d\\ e '$HOME' \"\\$HOME\" \"a\\b\"") == (
        "a  b c  /root d e $HOME $HOME a\\b\n")
    assert guest.out("printf '[%s]' '' \"\" x; echo") == "[][][x]\n"
    assert guest.out("echo a\\\nb") == "ab\n"


def test_variables_field_splitting_and_parameter_operators(guest: Guest) -> None:
    assert guest.out('x="a   b"; printf "[%s]" $x "$x"; echo') == "[a][b][a   b]\n"
    assert guest.out("e=; printf '[%s]' $e \"$e\"; echo") == "[]\n"
    assert guest.out("IFS=:; x=a:b::c; printf '[%s]' $x; echo") == "[a][b][][c]\n"
    assert guest.out('set -- "a b" c; printf "[%s]" "$@"; echo $#') == "[a b][c]2\n"
    assert guest.out('set --; printf "[%s]" "$@"; echo') == "[]\n"
    assert guest.out("v=archive.tar.gz; echo ${v%.*} ${v%%.*} ${v#*.} ${v##*.} ${#v}") == (
        "archive.tar archive tar.gz gz 14\n")
    assert (guest.out("echo ${U:-dflt} ${U-x} [${U+set}] ${U:=now} $U ${HOME:+home}")
            == "dflt x [] now now home\n")
    assert guest.run("echo ${NOPE?missing}; echo not run") == ("", "-sh: NOPE: missing\n", 2)
    assert guest.out("echo ~ ~/x \"~\" ~root") == "/root /root/x ~ /root\n"
    assert (guest.out("echo $(echo sub) `echo back` \"$(printf 'a\\n\\n')\" end")
            == "sub back a end\n")
    assert guest.out("echo $((1 + 2 * 3)) $((7 / -2)) $((2 ** 10)) $((0x10)); i=1; : $((i += 4)); "
                     "echo $i") == (
        "7 -3 1024 16\n5\n")
    assert guest.run("echo $((1 / 0))") == ("", "-sh: divide by zero\n", 2)


def test_export_unset_and_prefix_assignments(guest: Guest) -> None:
    guest.out("printf '#!/bin/sh\\necho \"[$FOO][$BAR][$1]\"\\n' > /tmp/show.sh && chmod +x "
              "/tmp/show.sh")
    assert guest.out("FOO=one /tmp/show.sh arg") == "[one][][arg]\n"
    assert guest.out("BAR=two; /tmp/show.sh") == "[][][]\n"
    assert guest.out("export BAR; /tmp/show.sh") == "[][two][]\n"
    assert guest.out("unset BAR; /tmp/show.sh; echo \"[$BAR]\"") == "[][][]\n[]\n"
    assert guest.run("export 1x=2") == ("", "-sh: export: 1x: bad variable name\n", 2)
    assert guest.out("export | grep -c PATH=") == "1\n"


def test_cd_pwd_and_set_options(guest: Guest) -> None:
    assert guest.out("cd /tmp; pwd; cd ..; pwd; cd; pwd; cd -; pwd") == "/tmp\n/\n/root\n/\n"
    assert guest.run("cd /nope") == ("", "-sh: cd: can't cd to /nope: No such file or directory\n",
                                     2)
    assert guest.run("set -x; echo hi") == ("hi\n", "+ echo hi\n", 0)
    guest.run("set +x -f")
    assert guest.out("echo /e*") == "/e*\n"
    guest.run("set +f -u")
    assert (guest.run("echo $UNSET_VAR; echo not run")
            == ("", "-sh: UNSET_VAR: parameter not set\n", 2))


# -- globbing --------------------------------------------------------------------------------------


def test_globbing_over_the_guest_filesystem(guest: Guest) -> None:
    guest.out("mkdir -p /tmp/g/sub; cd /tmp/g; touch a1 a2 b1 .hidden; echo x > sub/in")
    assert guest.out("echo *") == "a1 a2 b1 sub\n"
    assert guest.out("echo a? [ab]1 [!a]* *[0-9]") == "a1 a2 a1 b1 b1 sub a1 a2 b1\n"
    assert guest.out("echo .* | wc -w") == "3\n"  # . .. .hidden
    assert guest.out("echo */in /tmp/g/s*/i? */") == "sub/in /tmp/g/sub/in sub/\n"
    # no match: left as typed; quoted: literal
    assert guest.out("echo z* '*' \"a*\" a\\*") == "z* * a* a*\n"
    assert guest.out('x="a*"; echo $x "$x"') == "a1 a2 a*\n"  # unquoted expansions are globbed too


# -- pipes -----------------------------------------------------------------------------------------


def test_pipes_stream_bytes_and_report_the_last_status(guest: Guest) -> None:
    assert guest.out("echo hello | tr a-z A-Z") == "HELLO\n"
    assert guest.out("false | true; echo $?; true | false; echo $?") == "0\n1\n"
    assert guest.out("seq 1000000 | head -n 2") == "1\n2\n"  # head ends the writer early
    assert guest.out("dmesg | tail -n 2 | wc -l") == "2\n"
    assert guest.out("dmesg | grep -c crng") == "1\n"
    # every stage runs in a subshell
    assert (guest.out("cd /tmp | true; pwd; X=1 | true; echo \"[$X]\"; exit 3 | true; echo $?")
            == "/root\n[]\n0\n")
    assert guest.run("nosuch | wc -l") == ("0\n", "-sh: nosuch: not found\n", 0)
    assert guest.out("ls /nope 2>&1 | wc -l") == "1\n"
    assert guest.out("printf 'x\\0y' | wc -c") == "3\n"


# -- redirections and here-documents ---------------------------------------------------------------


def test_redirections(guest: Guest) -> None:
    assert (guest.out("echo one > /tmp/f; echo two >> /tmp/f; cat /tmp/f; cat < /tmp/f | wc -l")
            == "one\ntwo\n2\n")
    assert guest.run("ls /nope 2>/dev/null; echo $?") == ("1\n", "", 0)
    assert guest.run("echo gone >/dev/null; ls /nope 2>&1 >/dev/null") == (
        "ls: /nope: No such file or directory\n", "", 1)
    assert (guest.run("ls /nope > /tmp/both 2>&1; cat /tmp/both")
            == ("ls: /nope: No such file or directory\n", "", 0))
    assert guest.run("echo err >&2") == ("", "err\n", 0)
    assert guest.run("echo x > /nonexistent/dir/f") == (
        "", "-sh: can't create /nonexistent/dir/f: nonexistent directory\n", 1)
    assert guest.run("cat < /nope") == ("", "-sh: can't open /nope: no such file\n", 1)
    assert guest.run("echo x >&7") == ("", "-sh: 7: Bad file descriptor\n", 1)
    assert (guest.run("ls /nope &> /tmp/all; cat /tmp/all")
            == ("ls: /nope: No such file or directory\n", "", 0))


def test_here_documents(guest: Guest) -> None:
    assert guest.out("cat <<EOF\nhome=$HOME \\$HOME `echo bq`\n'quoted' \"too\"\nEOF") == (
        "home=/root $HOME bq\n'quoted' \"too\"\n")
    assert guest.out("cat <<'EOF'\nhome=$HOME `echo bq`\nEOF") == "home=$HOME `echo bq`\n"
    assert guest.out('cat <<"E"\n$HOME\nE') == "$HOME\n"
    assert guest.out("cat <<-EOF\n\t\tindented $USER\n\tEOF") == "indented root\n"
    assert guest.out("cat <<A; cat <<B\none\nA\ntwo\nB") == "one\ntwo\n"
    assert guest.out("tr a-z A-Z <<EOF | sort -r\nb\na\nEOF\necho after") == "B\nA\nafter\n"
    assert guest.out("cat <<EOF") == ""  # the end of the input ends the body


@pytest.mark.parametrize(("body", "shown"), [
    ("x `echo hi` $(echo b) ${HOME} $((2*3))", "x hi b /root 6\n"),
    ("\\$HOME \\` \\\\ \\q", "$HOME ` \\ \\q\n"),  # a backslash quotes only $ ` \ and newline
    ("a $ b $", "a $ b $\n"),
    ("unterminated `echo", "unterminated `echo\n"),
    ("unterminated $(echo", "unterminated $(echo\n"),
    ("brace ${x", "brace ${x\n"),
    ("arith $((1+", "arith $((1+\n"),
    ("`echo a`b`", "ab`\n"),
    ("x=$( `", "x=$( `\n"),
])
def test_here_document_expansions_that_do_not_parse_stay_literal(
    guest: Guest, body: str, shown: str
) -> None:
    assert guest.out(f"cat <<EOF\n{body}\nEOF") == shown


# -- the guest contract commands -------------------------------------------------------------------


def test_contract_commands_still_work(guest: Guest) -> None:
    assert (guest.out("mkdir -p /tmp/c/a/b && cd /tmp/c && printf 'hi' > a/f && ls && ls -1 a")
            == "a\nb\nf\n")
    assert guest.out("chmod 755 a/f; ls -l a/f").startswith("-rwxr-xr-x")
    assert guest.out("printf '%s' aGVsbG8= | base64 -d; echo") == "hello\n"
    assert guest.out("printf abc > /tmp/abc; sha256sum /tmp/abc") == (
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  /tmp/abc\n")
    assert guest.out("rm -rf /tmp/c; ls /tmp") == "abc\n"
    assert guest.out("uname -a").startswith("Linux corstone1000-fvp 6.")
    assert guest.out("sync; dmesg -n 1; echo $?") == "0\n"
    assert guest.machine.console_loglevel == 1
    assert guest.run("stty -echo") == ("", "stty: standard input: Not a tty\n", 1)
    assert guest.run("stty -echo", console=True) == ("", "", 0) and not guest.tty.echo
    assert guest.run("stty size < /dev/null", console=True)[2] == 1  # stty works on its stdin
    assert guest.run("stty size | cat", console=True) == ("24 80\n", "", 0)


def test_exit_ends_the_shell_with_its_status(guest: Guest) -> None:
    assert guest.run("exit 3") == ("", "", 3)
    assert guest.run("false; exit") == ("", "", 1)


# -- applets ---------------------------------------------------------------------------------------


def test_head_and_tail(guest: Guest) -> None:
    guest.out("printf 'a\\nb\\nc\\nd\\n' > /tmp/l")
    assert guest.out(
        "head -n 2 /tmp/l; head -1 /tmp/l; head -n -3 /tmp/l; head -c 3 /tmp/l; echo") == (
        "a\nb\na\na\na\nb\n")
    assert (guest.out("tail -n 1 /tmp/l; tail -2 /tmp/l; tail -n +3 /tmp/l; tail -c 2 /tmp/l")
            == "d\nc\nd\nc\nd\nd\n")
    assert guest.out("head -n 1 /tmp/l /tmp/l") == "==> /tmp/l <==\na\n\n==> /tmp/l <==\na\n"
    assert (guest.run("head /nope")
            == ("", "head: can't open '/nope': No such file or directory\n", 1))
    out, err, status = guest.run("head -x /tmp/l")
    assert (out, status) == ("",
                             1) and err.startswith("head: invalid option -- 'x'\nBusyBox v1.36.1")
    assert guest.run("tail -n abc /tmp/l") == ("", "tail: invalid number 'abc'\n", 1)


def test_grep(guest: Guest) -> None:
    guest.out("printf 'alpha\\nBeta\\ngamma\\ndelta\\n' > /tmp/w")
    assert (guest.out("grep a /tmp/w | wc -l; grep -c a /tmp/w; grep -v l /tmp/w")
            == "4\n4\nBeta\ngamma\n")
    assert guest.out("grep -i b /tmp/w; grep -n 'ta$' /tmp/w") == "Beta\n2:Beta\n4:delta\n"
    assert (guest.out("grep 'l\\(ph\\|t\\)a' /tmp/w; grep -E '^(g|d)' /tmp/w")
            == "alpha\ndelta\ngamma\ndelta\n")
    assert guest.out("grep -F 'a.' /tmp/w; echo $?") == "1\n"
    assert (guest.out("grep -o 'm\\+' /tmp/w; grep -x Beta /tmp/w; grep -w alp /tmp/w; echo $?")
            == "mm\nBeta\n1\n")
    assert guest.out("echo 'a+b{2}' | grep 'a+b{2}'; echo aab | grep -E 'a+b'; echo '*x' | grep "
                     "'*x'") == (
        "a+b{2}\naab\n*x\n")
    assert guest.out("echo 'x9' | grep '[[:digit:]]'; grep -A1 Beta /tmp/w; grep -C1 -n gamma "
                     "/tmp/w") == (
        "x9\nBeta\ngamma\n2-Beta\n3:gamma\n4-delta\n")
    assert (guest.out("grep -l a /tmp/w /tmp/w; grep -H -c Beta /tmp/w")
            == "/tmp/w\n/tmp/w\n/tmp/w:1\n")
    assert guest.run("grep -q alpha /tmp/w /nope") == ("", "", 0)
    assert guest.run("grep z /tmp/w /nope") == ("", "grep: /nope: No such file or directory\n", 2)
    assert guest.run("grep 'a[' /tmp/w")[2] == 2
    assert guest.run("grep")[2] == 2


def test_wc_sort_uniq(guest: Guest) -> None:
    guest.out("printf 'one two\\nthree\\n' > /tmp/t")
    assert guest.out("wc /tmp/t; wc -l /tmp/t; wc -w < /tmp/t; echo a b | wc") == (
        "        2         3        14 /tmp/t\n2 /tmp/t\n3\n        1         2         4\n")
    assert (guest.out("wc -c /tmp/t /tmp/t")
            == "       14 /tmp/t\n       14 /tmp/t\n       28 total\n")
    assert (guest.out("printf '10\\n9\\n100\\n9\\n' | sort -n | tr '\\n' ' '; echo")
            == "9 9 10 100 \n")
    assert guest.out("printf '10\\n9\\n100\\n' | sort | tr '\\n' ' '; echo") == "10 100 9 \n"
    assert (guest.out("printf 'b\\na\\nb\\n' | sort -u; printf 'b\\na\\nb\\n' | sort -r")
            == "a\nb\nb\nb\na\n")
    assert (guest.out("printf 'x 2\\ny 1\\n' | sort -k 2n; printf 'a:2\\nb:1\\n' | sort -t : -k 2")
            == (
        "y 1\nx 2\nb:1\na:2\n"))
    assert (guest.out("printf 'a\\na\\nb\\n' | uniq; printf 'a\\na\\nb\\n' | uniq -c")
            == "a\nb\n      2 a\n      1 b\n")


def test_tr_tee_xargs(guest: Guest) -> None:
    assert (guest.out("echo hello | tr -d l; echo hello | tr -s l; echo hello | tr a-y b-z")
            == "heo\nhelo\nifmmp\n")
    assert guest.out("echo 'a b' | tr ' ' '\\n'; echo abc | tr '[:lower:]' '[:upper:]'; echo abc | "
                     "tr -c a x") == (
        "a\nb\nABC\naxxx")
    assert guest.out("echo hi | tee /tmp/t1 /tmp/t2 | tr h H; cat /tmp/t1; echo more | tee -a "
                     "/tmp/t1 >/dev/null; cat /tmp/t1 /tmp/t2") == "Hi\nhi\nhi\nmore\nhi\n"
    assert (guest.out("printf 'a b\\nc\\n' | xargs echo X; echo 1 2 3 | xargs -n 2")
            == "X a b c\n1 2\n3\n")
    assert guest.out("echo \"'a b' c\" | xargs -n 1") == "a b\nc\n"
    assert guest.out("printf '' | xargs echo none; printf '' | xargs -r echo none") == "none\n"
    assert (guest.run("echo x | xargs nosuch")
            == ("", "xargs: nosuch: No such file or directory\n", 127))
    assert guest.run("echo x | xargs false") == ("", "", 123)
    assert guest.run("echo x | xargs -n 0") == ("", "xargs: invalid number '0'\n", 1)


def test_small_applets(guest: Guest) -> None:
    assert (guest.out("seq 3; seq 2 4 | tr '\\n' ,; echo; seq -s ' ' 1 2 5")
            == "1\n2\n3\n2,3,4,\n1 3 5\n")
    assert guest.out("basename /a/b/c.txt .txt; dirname /a/b/c.txt; dirname c") == "c\n/a/b\n.\n"
    assert guest.out("hostname; whoami; env | grep -c ^HOME=") == "corstone1000-fvp\nroot\n1\n"
    assert guest.out("[ -d /tmp ] && test -e /etc/hostname && [ abc != x ] && [ 3 -lt 10 ] && echo "
                     "ok") == "ok\n"
    assert guest.run("[ 1 -eq 2 ]")[2] == 1
    assert guest.run("[ 1 -eq x ]") == ("", "-sh: [: x: bad number\n", 2)
    assert guest.out("sleep 0.01; echo slept") == "slept\n"
    guest.out("printf 'echo sourced $1\\nV=set\\n' > /tmp/s.sh")
    assert guest.out(". /tmp/s.sh arg; echo $V") == "sourced arg\nset\n"


def test_a_deployed_program_in_a_pipeline_and_with_redirections(guest: Guest) -> None:
    """The emulated executor_runner (a registered guest program) as the harness and a person run
    it."""
    from fvp_harness.sim.networks import architectures, modelfile

    arch = architectures.get_architecture(next(iter(architectures.ARCHITECTURES)))
    fs = guest.machine.fs
    fs.write("/tmp/model.pte", modelfile.encode_model(modelfile.compile_model(arch, num_macs=256)))
    fs.write("/tmp/executor_runner",
             modelfile.encode_runner(modelfile.RunnerArtifact("reuse", "build-x")))
    guest.out("chmod +x /tmp/executor_runner")
    run = "/tmp/executor_runner --model_path /tmp/model.pte --num_executions 2"
    assert guest.out(f"{run} 2>&1 | grep -c 'executed successfully 2 time'") == "1\n"
    assert guest.out(
        "cd /tmp && ./executor_runner --model_path model.pte > out.txt 2>&1; echo $?") == "0\n"
    assert guest.out("grep -c 'build id: build-x' /tmp/out.txt") == "1\n"
