"""The guest shell's parser: busybox ash's command language, as far as an interactive user and the
harness need it.

Grammar (``guest/shell.py`` runs what this builds)::

    program   := { and_or ( ';' | NEWLINE ) }
    and_or    := pipeline { ( '&&' | '||' ) linebreak pipeline }
    pipeline  := [ '!' ] command { '|' linebreak command }
    command   := compound { redirection } | { NAME=value | word | redirection }
    compound  := '(' list ')' | '{' list '}'
               | if list then list { elif list then list } [ else list ] fi
               | ( while | until ) list do list done
               | for NAME [ in { word } ] ( ';' | NEWLINE ) do list done

Words keep their quoting (``Part.quoted``) so that expansion knows what is split and globbed.
Redirections are ``[n]>`` ``>>`` ``>|`` ``<`` ``<>`` ``>&`` ``<&`` (with ``-`` to close), bash's
``&>``, and here-documents ``<<`` and ``<<-`` whose bodies are read from the lines after the
command's line, as ash does.

``parse(text)`` raises ``Incomplete`` when more input could complete the text (an open quote, a
here-document without its end line, a line ending in ``|``, ``&&``, ``||`` or a backslash): the
console then shows ``PS2`` and reads on. With ``final=True`` (a script, ``ssh host cmd``) the end of
the text is the end of input, and those are syntax errors (a here-document simply ends there).
``ShellSyntaxError`` carries the lists of the lines before the one in error, which ash would already
have run.

Not parsed (a syntax error naming the construct, status 2): ``&`` (background jobs), ``case`` and
functions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fvp_harness.sim.guest.io import VARIABLE_NAME

__all__ = [
    "AndOr",
    "Command",
    "Compound",
    "HereDoc",
    "Incomplete",
    "Part",
    "Pipeline",
    "Redir",
    "ShellSyntaxError",
    "Word",
    "parse",
    "parse_heredoc_body",
    "parse_prompt",
]


class ShellSyntaxError(Exception):
    """A line the shell refuses (status 2); the message is what busybox prints after ``sh: ``.

    ``done`` holds the command lists of the complete lines before the failing one (ash runs those).
    """

    def __init__(self, message: str, done: list[AndOr] | None = None) -> None:
        super().__init__(message)
        self.done: list[AndOr] = done or []


class Incomplete(Exception):
    """The text needs more input (open quote, here-document, trailing
    ``|``/``&&``/``||``/backslash): show ``PS2`` and read on."""


@dataclass
class Part:
    """A piece of a word.

    ``kind`` is ``lit`` (text), ``param`` (``$NAME``, ``${NAME...}``: ``text`` is the name, ``op``
    the operator, ``arg`` its word), ``cmdsub`` (``$(...)`` or backquotes: ``text`` is the command)
    or ``arith`` (``$((...))``: ``text`` is the expression). ``quoted`` pieces are neither
    field-split nor globbed.
    """

    kind: str
    text: str
    quoted: bool = False
    op: str = ""
    arg: list[Part] | None = None


Word = list[Part]


@dataclass
class HereDoc:
    """A here-document: its end line, whether its body is expanded (unquoted end word), ``<<-`` tab
    stripping, and the body once read."""

    delimiter: str
    expand: bool
    strip_tabs: bool
    body: str = ""


@dataclass
class Redir:
    """``fd op target``; for here-documents ``heredoc`` holds the body."""

    fd: int
    op: str
    target: Word
    heredoc: HereDoc | None = None


@dataclass
class Command:
    """One simple command: assignments, words, redirections."""

    assigns: list[tuple[str, Word]] = field(default_factory=list)
    words: list[Word] = field(default_factory=list)
    redirs: list[Redir] = field(default_factory=list)

    def empty(self) -> bool:
        return not (self.assigns or self.words or self.redirs)


@dataclass
class Compound:
    """A compound command: ``kind`` is ``subshell`` (``( list )``), ``group`` (``{ list; }``),
    ``if``, ``while``, ``until`` or ``for``. ``parts`` are its lists in order: if: condition, body,
    [condition, body]..., [else body] (``has_else``); while/until: condition, body; subshell, group,
    for: the body. A for loop's variable is ``name`` and its words ``items`` (None: ``"$@"``).
    ``redirs`` apply to the whole command."""

    kind: str
    parts: list[list[AndOr]]
    redirs: list[Redir] = field(default_factory=list)
    name: str = ""
    items: list[Word] | None = None
    has_else: bool = False


@dataclass
class Pipeline:
    """Commands joined by ``|``; ``negate`` for a leading ``!``."""

    commands: list[Command | Compound]
    negate: bool = False


@dataclass
class AndOr:
    """Pipelines joined by ``&&`` / ``||``: ``[(None, first), ("&&", second), ...]``."""

    items: list[tuple[str | None, Pipeline]]


# --------------------------------------------------------------------------------------------------
# lexing

_OPERATORS = ("<<-", "&&", "||", ";;", "<<", ">>", "<&", ">&", "<>", ">|", "&>", ";", "&", "|", "<",
              ">", "(", ")")
_REDIRECTIONS = {"<<-", "<<", ">>", "<&", ">&", "<>", ">|", "&>", "<", ">"}
_META = frozenset(" \t\n;&|<>()")
_SPECIAL_PARAMS = frozenset("?$#@*!-0123456789")
_PLAIN_WORD = re.compile(r"[^\s;&|<>()\\'\"$`]+")
_PLAIN_BRACE = re.compile(r"[^}\\'\"$`]+")
_BRACE_OPS = (":-", ":=", ":+", ":?", "##", "%%", "-", "=", "+", "?", "#", "%")
_RESERVED = frozenset({"if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done",
                       "case", "esac", "{", "}", "function"})
_NOT_SUPPORTED = "not supported by the simulator's shell"


@dataclass
class _Token:
    kind: str  # word, ionum, op, newline, eof
    value: str = ""  # operator text, or the word's source text
    parts: Word = field(default_factory=list)
    quoted: bool = False  # the word used quotes or backslashes somewhere


def _add_lit(parts: Word, text: str, quoted: bool) -> None:
    """Append literal text, merging with a literal of the same quoting before it."""
    if parts and parts[-1].kind == "lit" and parts[-1].quoted == quoted:
        parts[-1].text += text
    else:
        parts.append(Part("lit", text, quoted))


class _Lexer:
    def __init__(self, text: str, final: bool) -> None:
        self.s = text
        self.i = 0
        self.n = len(text)
        self.final = final
        self.heredocs: list[HereDoc] = []  # waiting for their bodies (read at the next newline)
        self._peeked: _Token | None = None

    # -- tokens ------------------------------------------------------------------------------------

    def peek(self) -> _Token:
        if self._peeked is None:
            self._peeked = self._lex()
        return self._peeked

    def next(self) -> _Token:
        tok = self.peek()
        self._peeked = None
        return tok

    def _more(self, message: str) -> ShellSyntaxError | Incomplete:
        """What running out of text means: more input (interactive) or a syntax error (final)."""
        return ShellSyntaxError(f"syntax error: {message}") if self.final else Incomplete()

    def _lex(self) -> _Token:
        s = self.s
        while True:
            if self.i >= self.n:
                if self.heredocs:
                    if not self.final:
                        raise Incomplete
                    self.heredocs.clear()  # at the end of input a here-document just ends
                return _Token("eof")
            c = s[self.i]
            if c in " \t":
                self.i += 1
                continue
            if c == "\\" and s.startswith("\n", self.i + 1):
                if self.i + 2 >= self.n and not self.final:
                    raise Incomplete  # a line ending in a backslash continues on the next one
                self.i += 2
                continue
            if c == "\\" and self.i + 1 >= self.n and not self.final:
                raise Incomplete
            if c == "#":
                end = s.find("\n", self.i)
                self.i = self.n if end < 0 else end
                continue
            if c == "\n":
                self.i += 1
                self._read_heredocs()
                return _Token("newline", "\n")
            if c in ";&|<>()":
                for op in _OPERATORS:
                    if s.startswith(op, self.i):
                        self.i += len(op)
                        return _Token("op", op)
            return self._word()

    def _read_heredocs(self) -> None:
        for doc in self.heredocs:
            lines: list[str] = []
            while True:
                if self.i >= self.n:
                    if not self.final:
                        raise Incomplete
                    break
                end = self.s.find("\n", self.i)
                if end < 0:
                    if not self.final:
                        raise Incomplete
                    end = self.n
                line = self.s[self.i:end]
                self.i = min(end + 1, self.n)
                if doc.strip_tabs:
                    line = line.lstrip("\t")
                if line == doc.delimiter:
                    break
                lines.append(line + "\n")
            doc.body = "".join(lines)
        self.heredocs.clear()

    # -- words -------------------------------------------------------------------------------------

    def _word(self) -> _Token:
        start = self.i
        parts: Word = []
        quoted = self._parts(parts, stop=_META, dq=False)
        value = self.s[start:self.i]
        if value.isdigit() and self.i < self.n and self.s[self.i] in "<>":
            return _Token("ionum", value)
        return _Token("word", value, parts, quoted)

    def _parts(self, parts: Word, stop: frozenset[str] | str, dq: bool) -> bool:
        """Scan word pieces until an unquoted ``stop`` character (left unread). ``dq``: inside
        ``"${...}"``, plain text is quoted. Returns whether any quoting was used."""
        s = self.s
        quoted_any = False
        while self.i < self.n:
            c = s[self.i]
            if c in stop:
                break
            if c == "\\":
                if self.i + 1 >= self.n:
                    if not self.final:
                        raise Incomplete
                    _add_lit(parts, "\\", dq)
                    self.i += 1
                    continue
                nxt = s[self.i + 1]
                self.i += 2
                if nxt == "\n":
                    if self.i >= self.n and not self.final:
                        raise Incomplete
                    continue
                _add_lit(parts, nxt, True)
                quoted_any = True
            elif c == "'":
                end = s.find("'", self.i + 1)
                if end < 0:
                    raise self._more("unterminated quoted string")
                _add_lit(parts, s[self.i + 1:end], True)
                self.i = end + 1
                quoted_any = True
            elif c == '"':
                self._double_quoted(parts)
                quoted_any = True
            elif c == "$":
                self._dollar(parts, dq)
            elif c == "`":
                self._backquote(parts, dq)
            else:
                run = (_PLAIN_WORD if stop is _META else _PLAIN_BRACE).match(s, self.i)
                end = run.end() if run else self.i + 1
                _add_lit(parts, s[self.i:end], dq)
                self.i = end
        return quoted_any

    def _double_quoted(self, parts: Word) -> None:
        s = self.s
        self.i += 1
        before = len(parts)
        while True:
            if self.i >= self.n:
                raise self._more("unterminated quoted string")
            d = s[self.i]
            if d == '"':
                self.i += 1
                break
            if d == "\\":
                if self.i + 1 >= self.n:
                    raise self._more("unterminated quoted string")
                e = s[self.i + 1]
                if e == "\n":
                    self.i += 2
                elif e in '$`"\\':
                    _add_lit(parts, e, True)
                    self.i += 2
                else:
                    _add_lit(parts, "\\", True)
                    self.i += 1
            elif d == "$":
                self._dollar(parts, True)
            elif d == "`":
                self._backquote(parts, True)
            else:
                _add_lit(parts, d, True)
                self.i += 1
        if len(parts) == before:
            parts.append(Part("lit", "", True))  # "" is an empty word, not no word

    def _dollar(self, parts: Word, quoted: bool) -> None:
        s = self.s
        j = self.i + 1
        if j >= self.n:
            _add_lit(parts, "$", quoted)
            self.i = j
            return
        c = s[j]
        if c == "{":
            self._brace(parts, quoted)
        elif c == "(":
            if s.startswith("((", j):
                end = _arith_end(s, j + 2)
                if end < 0:
                    raise self._more("missing '))'")
                parts.append(Part("arith", s[j + 2:end], quoted))
                self.i = end + 2
                return
            end = _matching_paren(s, j + 1)
            if end < 0:
                raise self._more("unterminated quoted string")
            parts.append(Part("cmdsub", s[j + 1:end], quoted))
            self.i = end + 1
        elif c in _SPECIAL_PARAMS:
            parts.append(Part("param", c, quoted))
            self.i = j + 1
        else:
            m = VARIABLE_NAME.match(s, j)
            if m:
                parts.append(Part("param", m.group(0), quoted))
                self.i = m.end()
            else:
                _add_lit(parts, "$", quoted)
                self.i = j

    def _brace(self, parts: Word, quoted: bool) -> None:
        s = self.s
        j = self.i + 2
        length = False
        if s.startswith("#", j) and j + 1 < self.n and s[j + 1] != "}":
            length = True
            j += 1
        m = VARIABLE_NAME.match(s, j)
        if m:
            name, j = m.group(0), m.end()
        elif j < self.n and s[j].isdigit():
            k = j
            while k < self.n and s[k].isdigit():
                k += 1
            name, j = s[j:k], k
        elif j < self.n and s[j] in _SPECIAL_PARAMS:
            name, j = s[j], j + 1
        else:
            if s.find("}", j) < 0:
                raise self._more("missing '}'")
            raise ShellSyntaxError("syntax error: bad substitution")
        if j >= self.n:
            raise self._more("missing '}'")
        if s[j] == "}":
            parts.append(Part("param", name, quoted, "len" if length else ""))
            self.i = j + 1
            return
        if length:
            raise ShellSyntaxError("syntax error: bad substitution")
        op = next((o for o in _BRACE_OPS if s.startswith(o, j)), None)
        if op is None:
            raise ShellSyntaxError("syntax error: bad substitution")
        self.i = j + len(op)
        arg: Word = []
        self._parts(arg, stop="}", dq=quoted)
        if self.i >= self.n:
            raise self._more("missing '}'")
        self.i += 1
        parts.append(Part("param", name, quoted, op, arg))

    def _backquote(self, parts: Word, quoted: bool) -> None:
        s = self.s
        j = self.i + 1
        text: list[str] = []
        while True:
            if j >= self.n:
                raise self._more("EOF in backquote substitution")
            c = s[j]
            if c == "`":
                break
            if c == "\\" and j + 1 < self.n and s[j + 1] in "\\`$":
                text.append(s[j + 1])
                j += 2
                continue
            text.append(c)
            j += 1
        parts.append(Part("cmdsub", "".join(text), quoted))
        self.i = j + 1


def _matching_paren(s: str, i: int) -> int:
    """Index of the ``)`` closing a ``$(`` whose text starts at ``i`` (quotes, escapes and nesting
    respected); -1 if the text ends first."""
    depth = 1
    n = len(s)
    while i < n:
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if c == "'":
            end = s.find("'", i + 1)
            if end < 0:
                return -1
            i = end + 1
            continue
        if c == '"':
            i += 1
            while i < n and s[i] != '"':
                i += 2 if s[i] == "\\" else 1
            i += 1
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def _arith_end(s: str, i: int) -> int:
    """Index of the ``))`` closing a ``$((`` whose text starts at ``i``; -1 if the text ends
    first."""
    depth = 0
    while i < len(s):
        c = s[i]
        if c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                return i if s.startswith("))", i) else -1
            depth -= 1
        i += 1
    return -1


def _unquote(raw: str) -> str:
    """Quote removal without expansion (a here-document's end word)."""
    out: list[str] = []
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        if c == "\\" and i + 1 < n:
            out.append(raw[i + 1])
            i += 2
        elif c == "'":
            end = raw.find("'", i + 1)
            end = n if end < 0 else end
            out.append(raw[i + 1:end])
            i = end + 1
        elif c == '"':
            i += 1
            while i < n and raw[i] != '"':
                if raw[i] == "\\" and i + 1 < n and raw[i + 1] in '$`"\\':
                    i += 1
                out.append(raw[i])
                i += 1
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


# --------------------------------------------------------------------------------------------------
# parsing


def _describe(tok: _Token) -> str:
    """A token as ash's syntax errors name it."""
    if tok.kind == "eof":
        return "end of file"
    if tok.kind == "newline":
        return "newline"
    if tok.kind == "word" and not tok.quoted and tok.value in _RESERVED:
        return f'"{tok.value}"'  # a reserved word out of place is named
    if tok.kind in ("word", "ionum"):
        return "word"
    return f'"{tok.value}"'


class _Parser:
    def __init__(self, text: str, final: bool) -> None:
        self.lex = _Lexer(text, final)
        self.final = final

    def program(self) -> list[AndOr]:
        done: list[AndOr] = []
        line: list[AndOr] = []
        try:
            while True:
                tok = self.lex.peek()
                if tok.kind == "eof":
                    break
                if tok.kind == "newline":
                    self.lex.next()
                    done += line
                    line = []
                    continue
                line.append(self.and_or())
                tok = self.lex.peek()
                if tok.kind == "op" and tok.value == ";":
                    self.lex.next()
                elif tok.kind in ("newline", "eof"):
                    continue
                elif tok.kind == "op" and tok.value == "&":
                    raise ShellSyntaxError(f"background jobs ('&') are {_NOT_SUPPORTED}")
                else:
                    raise self.unexpected(tok)
        except ShellSyntaxError as exc:
            exc.done = done
            raise
        return done + line

    def unexpected(self, tok: _Token) -> ShellSyntaxError | Incomplete:
        if tok.kind == "eof" and not self.final:
            return Incomplete()
        if tok.kind == "op" and tok.value in ("(", ")"):
            return ShellSyntaxError(f"subshells ('{tok.value}') are {_NOT_SUPPORTED}")
        if tok.kind == "op" and tok.value == "&":
            return ShellSyntaxError(f"background jobs ('&') are {_NOT_SUPPORTED}")
        return ShellSyntaxError(f"syntax error: unexpected {_describe(tok)}")

    def linebreak(self) -> None:
        """Newlines allowed after ``|``, ``&&``, ``||``; the end of the text asks for more."""
        while self.lex.peek().kind == "newline":
            self.lex.next()
        if self.lex.peek().kind == "eof":
            raise self.unexpected(self.lex.peek())

    def and_or(self) -> AndOr:
        items: list[tuple[str | None, Pipeline]] = [(None, self.pipeline())]
        while True:
            tok = self.lex.peek()
            if tok.kind != "op" or tok.value not in ("&&", "||"):
                return AndOr(items)
            self.lex.next()
            self.linebreak()
            items.append((tok.value, self.pipeline()))

    def pipeline(self) -> Pipeline:
        negate = False
        tok = self.lex.peek()
        if tok.kind == "word" and tok.value == "!" and not tok.quoted:
            self.lex.next()
            negate = True
        commands: list[Command | Compound] = [self.compound() or self.command()]
        while True:
            tok = self.lex.peek()
            if tok.kind != "op" or tok.value != "|":
                return Pipeline(commands, negate)
            self.lex.next()
            self.linebreak()
            commands.append(self.compound() or self.command())

    # -- compound commands -------------------------------------------------------------------------

    def _reserved(self, tok: _Token, words: frozenset[str] | set[str] | tuple[str, ...]) -> bool:
        return tok.kind == "word" and not tok.quoted and tok.value in words

    def _skip_newlines(self) -> None:
        while self.lex.peek().kind == "newline":
            self.lex.next()

    def compound_list(self, ends: frozenset[str], paren: bool = False) -> tuple[list[AndOr], str]:
        """The lists up to one of the reserved words ``ends`` (or ``)`` for a subshell), which is
        consumed and returned; an empty list is a syntax error, the end of the text asks for more
        (PS2)."""
        body: list[AndOr] = []
        while True:
            tok = self.lex.peek()
            if tok.kind == "newline":
                self.lex.next()
                continue
            if self._reserved(tok, ends) or (paren and tok.kind == "op" and tok.value == ")"):
                if not body:
                    raise self.unexpected(tok)
                self.lex.next()
                return body, tok.value
            if tok.kind == "eof":
                raise self.unexpected(tok)
            body.append(self.and_or())
            tok = self.lex.peek()
            if tok.kind == "newline" or (tok.kind == "op" and tok.value == ";"):
                self.lex.next()
            elif paren and tok.kind == "op" and tok.value == ")":
                continue
            else:
                raise self.unexpected(tok)

    def compound(self) -> Compound | None:
        """A compound command starting here, or None (a simple command)."""
        tok = self.lex.peek()
        if tok.kind == "op" and tok.value == "(":
            self.lex.next()
            body, _ = self.compound_list(frozenset(), paren=True)
            node = Compound("subshell", [body])
        elif self._reserved(tok, ("{", "if", "while", "until", "for")):
            self.lex.next()
            node = self._keyword_compound(tok.value)
        else:
            return None
        holder = Command()
        while True:
            tok = self.lex.peek()
            if tok.kind == "ionum" or (tok.kind == "op" and tok.value in _REDIRECTIONS):
                self.lex.next()
                self._redirection(holder, tok)
            else:
                break
        node.redirs = holder.redirs
        return node

    def _keyword_compound(self, keyword: str) -> Compound:
        if keyword == "{":
            body, _ = self.compound_list(frozenset({"}"}))
            return Compound("group", [body])
        if keyword == "if":
            parts: list[list[AndOr]] = []
            while True:
                condition, _ = self.compound_list(frozenset({"then"}))
                body, end = self.compound_list(frozenset({"elif", "else", "fi"}))
                parts += [condition, body]
                if end == "elif":
                    continue
                if end == "else":
                    other, _ = self.compound_list(frozenset({"fi"}))
                    return Compound("if", [*parts, other], has_else=True)
                return Compound("if", parts)
        if keyword in ("while", "until"):
            condition, _ = self.compound_list(frozenset({"do"}))
            body, _ = self.compound_list(frozenset({"done"}))
            return Compound(keyword, [condition, body])
        name = self.lex.next()
        if name.kind == "eof":
            raise self.unexpected(name)
        if name.kind != "word" or name.quoted or not VARIABLE_NAME.fullmatch(name.value):
            raise ShellSyntaxError("syntax error: bad for loop variable")
        self._skip_newlines()
        items: list[Word] | None = None
        tok = self.lex.peek()
        if self._reserved(tok, ("in",)):
            self.lex.next()
            items = []
            while True:
                tok = self.lex.next()
                if tok.kind == "word":
                    items.append(tok.parts)
                elif tok.kind == "newline" or (tok.kind == "op" and tok.value == ";"):
                    break
                else:
                    raise self.unexpected(tok)
        elif tok.kind == "op" and tok.value == ";":
            self.lex.next()
        self._skip_newlines()
        tok = self.lex.next()
        if not self._reserved(tok, ("do",)):
            raise self.unexpected(tok)
        body, _ = self.compound_list(frozenset({"done"}))
        return Compound("for", [body], name=name.value, items=items)

    def command(self) -> Command:
        cmd = Command()
        while True:
            tok = self.lex.peek()
            if tok.kind == "word":
                self.lex.next()
                self._word(cmd, tok)
            elif tok.kind == "ionum" or (tok.kind == "op" and tok.value in _REDIRECTIONS):
                self.lex.next()
                self._redirection(cmd, tok)
            else:
                break
        if cmd.empty():
            raise self.unexpected(self.lex.peek())
        return cmd

    def _word(self, cmd: Command, tok: _Token) -> None:
        if not cmd.words:
            first = tok.parts[0]
            eq = first.text.find("=") if first.kind == "lit" and not first.quoted else -1
            if eq > 0 and VARIABLE_NAME.fullmatch(first.text[:eq]):
                rest = first.text[eq + 1:]
                value = ([Part("lit", rest)] if rest else []) + tok.parts[1:]
                cmd.assigns.append((first.text[:eq], value))
                return
            if not tok.quoted and tok.value in ("case", "esac", "function"):
                raise ShellSyntaxError(f"'{tok.value}' (control flow) is {_NOT_SUPPORTED}")
            if not tok.quoted and tok.value in _RESERVED:  # a closing word with nothing open
                raise ShellSyntaxError(f'syntax error: unexpected "{tok.value}"')
        cmd.words.append(tok.parts)

    def _redirection(self, cmd: Command, tok: _Token) -> None:
        fd: int | None = None
        if tok.kind == "ionum":
            fd = int(tok.value)
            tok = self.lex.next()
            if tok.kind != "op" or tok.value not in _REDIRECTIONS:
                raise self.unexpected(tok)
        op = tok.value
        target = self.lex.next()
        if target.kind != "word":
            raise self.unexpected(target)
        if fd is None:
            fd = 0 if op in ("<", "<&", "<>", "<<", "<<-") else 1
        redir = Redir(fd, op, target.parts)
        if op in ("<<", "<<-"):
            redir.heredoc = HereDoc(_unquote(target.value), not target.quoted, op == "<<-")
            self.lex.heredocs.append(redir.heredoc)
        cmd.redirs.append(redir)


def parse(text: str, final: bool = False) -> list[AndOr]:
    """Parse shell input into command lists.

    Raises Incomplete when more input could complete it (never with ``final``) and ShellSyntaxError
    for what the shell refuses.
    """
    return _Parser(text, final).program()


def parse_heredoc_body(body: str) -> Word:
    """An unquoted here-document's body as a word: ``$`` expansions and backquotes, and backslash
    quoting only before ``$`` `` ` `` ``\\`` and newline; everything else literal (never split or
    globbed)."""
    lexer = _Lexer(body, final=True)
    parts: Word = []
    s = body
    while lexer.i < lexer.n:
        c = s[lexer.i]
        if c == "\\" and lexer.i + 1 < lexer.n and s[lexer.i + 1] in "$`\\\n":
            if s[lexer.i + 1] != "\n":
                _add_lit(parts, s[lexer.i + 1], True)
            lexer.i += 2
        elif c in "$`":
            try:  # an expansion that does not parse leaves its $ or ` a literal character
                if c == "$":
                    lexer._dollar(parts, True)
                else:
                    lexer._backquote(parts, True)
            except ShellSyntaxError:
                _add_lit(parts, c, True)
                lexer.i += 1
        else:
            _add_lit(parts, c, True)
            lexer.i += 1
    return parts


def parse_prompt(ps: str) -> Word:
    """A prompt string as ash expands it before showing it (as inside double quotes): ``$``
    expansions; a backslash is kept before anything but ``\\`` `` ` `` and newline, so the prompt
    escapes (``\\u``, ``\\w``, ``\\$``...) survive for the second pass. Text that does not parse is
    shown as it is."""
    lexer = _Lexer(ps, final=True)
    parts: Word = []
    s = ps
    while lexer.i < lexer.n:
        c = s[lexer.i]
        if c == "\\":
            nxt = s[lexer.i + 1:lexer.i + 2]
            if nxt in ("\\", "`"):
                _add_lit(parts, nxt, True)
                lexer.i += 2
            elif nxt == "\n":
                lexer.i += 2
            else:
                _add_lit(parts, "\\" + nxt, True)
                lexer.i += 1 + len(nxt)
        elif c in "$`":
            start = lexer.i
            try:
                if c == "$":
                    lexer._dollar(parts, True)
                else:
                    lexer._backquote(parts, True)
            except (ShellSyntaxError, Incomplete):
                _add_lit(parts, s[start:], True)
                lexer.i = lexer.n
        else:
            _add_lit(parts, c, True)
            lexer.i += 1
    return parts
