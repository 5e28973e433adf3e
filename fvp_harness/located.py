"""YAML that remembers where every value came from, so configuration errors can say
``file:line:col``.

PyYAML's ``safe_load`` returns plain dicts and forgets positions. Here a file is *composed* into
YAML nodes (which carry marks) and turned into a small tree of :class:`LNode` objects: each holds
its plain value plus the :class:`Location` of the value and of its key. The tree can be merged
(``extends``), patched (``--set``) and then flattened to plain data for pydantic; when pydantic
rejects something, :func:`validation_problems` maps the error's ``loc`` back to the node, so the
message names the file the value was written in, even through ``extends``.

Only the safe loaders are used (``yaml.CSafeLoader``, libyaml's, when PyYAML has it, else
``yaml.SafeLoader``; the pure-Python one also words every error, see ``USE_LIBYAML``): arbitrary
object tags are rejected as errors, never constructed. Hostile input is refused with a located
message, never a traceback: bytes that are not UTF-8, control characters, files over
``MAX_FILE_BYTES``, values nested deeper than ``MAX_DEPTH``, recursive aliases, and documents whose
aliases would expand to more than ``MAX_VALUES`` values (a "billion laughs" document is refused
before anything is expanded).
"""

from __future__ import annotations

import difflib
import os
import re
import types
import typing
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union, cast

import yaml
from pydantic import BaseModel, ValidationError

__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_VALUES",
    "LNode",
    "Location",
    "YamlProblem",
    "check_plain_size",
    "closest",
    "compose_bytes",
    "compose_file",
    "data_problems",
    "did_you_mean",
    "display_path",
    "format_path",
    "merge",
    "read_limited",
    "reading_settings",
    "schema_step",
    "shorten_text",
    "shorten_values",
    "validation_problems",
]

PathTuple = tuple[str | int, ...]


@dataclass(frozen=True)
class Location:
    """Where a value was written: a file with 1-based line and column, or a command-line option (no
    line)."""

    file: str
    line: int | None = None
    col: int | None = None
    base_dir: Path | None = None  # relative paths written here are relative to this folder

    def __str__(self) -> str:
        if self.line is None:
            return self.file
        return f"{self.file}:{self.line}:{self.col}"

    @classmethod
    def from_mark(cls, file: str, mark: yaml.Mark | None, base_dir: Path | None) -> Location:
        if mark is None:
            return cls(file, 1, 1, base_dir)
        return cls(file, mark.line + 1, mark.column + 1, base_dir)


@dataclass
class LNode:
    """One value of a located tree. ``value`` is a ``dict[str, LNode]``, a ``list[LNode]`` or a
    plain scalar."""

    value: Any
    loc: Location
    key_loc: Location | None = None

    def plain(self) -> Any:
        """The value as plain Python data (what pydantic validates)."""
        if isinstance(self.value, dict):
            return {key: child.plain() for key, child in self.value.items()}
        if isinstance(self.value, list):
            return [child.plain() for child in self.value]
        return self.value

    def walk(self, prefix: PathTuple = ()) -> Iterator[tuple[PathTuple, LNode]]:
        """Every node with its path, parents before children."""
        yield prefix, self
        if isinstance(self.value, dict):
            for key, child in self.value.items():
                yield from child.walk((*prefix, key))
        elif isinstance(self.value, list):
            for index, child in enumerate(self.value):
                yield from child.walk((*prefix, index))

    def get(self, path: PathTuple) -> LNode | None:
        node: LNode | None = self
        for part in path:
            if node is None:
                return None
            if isinstance(node.value, dict) and isinstance(part, str):
                node = node.value.get(part)
            elif isinstance(node.value, list) and isinstance(part,
                                                             int) and 0 <= part < len(node.value):
                node = node.value[part]
            else:
                return None
        return node


class YamlProblem(Exception):
    """A located problem found while reading YAML (syntax, duplicate key, unsafe tag)."""

    def __init__(self, loc: Location, message: str) -> None:
        super().__init__(f"{loc}: {message}")
        self.loc = loc
        self.message = message


def display_path(path: Path) -> str:
    """A path as users want to read it: relative to the working folder when it lies below it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return str(path)
    return str(path) if rel.startswith("..") else rel


MAX_FILE_BYTES = 4 * 1024 * 1024
"""A scenario (or base) file larger than this is refused unread: scenarios are a few kilobytes."""

MAX_VALUES = 10_000
"""At most this many values (mapping entries, list items, scalars) in one document, counted after
alias expansion: a real scenario has a few hundred; a "billion laughs" document would have
billions."""

MAX_DEPTH = 64
"""At most this many levels of nested mappings and lists (a scenario needs about six)."""


def _location_at(text: str, index: int, shown: str, base_dir: Path | None) -> Location:
    """The 1-based line and column of character ``index`` of ``text``."""
    index = max(0, min(index, len(text)))
    line_start = text.rfind("\n", 0, index) + 1
    return Location(shown, text.count("\n", 0, index) + 1, index - line_start + 1, base_dir)


def _decode(data: bytes, shown: str, base_dir: Path) -> str:
    """UTF-8 text, or a ``YamlProblem`` at the first byte that is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        col = len(data[line_start : exc.start].decode("utf-8", "replace")) + 1
        loc = Location(shown, data.count(b"\n", 0, exc.start) + 1, col, base_dir)
        raise YamlProblem(
            loc,
            f"not UTF-8 text: byte 0x{data[exc.start]:02x} ({exc.reason}); save the file as UTF-8"
        ) from exc


_Parser = Union[yaml.SafeLoader, "yaml.CSafeLoader"]

_CSafeLoader: type[yaml.CSafeLoader] | None = getattr(yaml, "CSafeLoader", None)

USE_LIBYAML: bool = _CSafeLoader is not None
"""Compose with libyaml (PyYAML's C parser) when PyYAML was built with it: the same SafeLoader
resolver and constructor, about ten times faster than the pure-Python scanner. Whatever libyaml
refuses (or anything that goes wrong on that path) is read again by the pure-Python path, so every
error message is the one it always gave. False (tests, or PyYAML without libyaml): the pure-Python
path only."""


def _refuse_deep_nesting(text: str, shown: str, base_dir: Path | None) -> None:
    """Refuse nesting far deeper than ``MAX_DEPTH`` before PyYAML's composer, which recurses once
    per level, sees it.

    PyYAML's parser is a state machine (no recursion), so its event stream can be walked at any
    depth; without this a document of thousands of ``[`` depended on a ``RecursionError`` raised
    wherever the stack happened to end, which under a deep caller (a test runner's worker) could be
    inside the error handling itself. The exact limit and its message stay with ``_check_graph``;
    this only stops what would otherwise blow the stack."""
    scanner = yaml.SafeLoader(text)
    try:
        depth = 0
        while not scanner.check_event(yaml.StreamEndEvent):
            event = scanner.get_event()
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > 2 * MAX_DEPTH:
                    loc = Location.from_mark(shown, cast("yaml.Mark | None", event.start_mark),
                                             base_dir)
                    raise YamlProblem(loc, f"values nested too deeply (at most {MAX_DEPTH} levels)")
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    finally:
        scanner.dispose()


def _reader_problem(text: str, exc: yaml.reader.ReaderError, shown: str,
                    base_dir: Path) -> YamlProblem:
    character = exc.character if isinstance(exc.character,
                                            int) else ord(str(exc.character)[:1] or "\0")
    return YamlProblem(
        _location_at(text, exc.position, shown, base_dir),
        f"control character U+{character:04X} is not allowed in YAML; remove it (inside a "
        "double-quoted " f'string it can be written as an escape, e.g. "\\x{character:02x}")',
    )


def read_limited(path: Path) -> bytes:
    """The bytes of a YAML file, refused unread past ``MAX_FILE_BYTES``. Raises ``YamlProblem`` or
    ``OSError``."""
    with path.open("rb") as stream:
        data = stream.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise YamlProblem(
            Location(display_path(path), 1, 1, path.parent),
            f"the file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB; a scenario is a few "
            "kilobytes (is this the right file?)",
        )
    return data


def compose_file(path: Path) -> LNode:
    """Read one YAML file into a located tree. Raises ``YamlProblem`` (syntax, duplicates, tags,
    encoding, control characters, size, nesting, alias expansion) or ``OSError``."""
    return compose_bytes(read_limited(path), path)


def compose_bytes(data: bytes, path: Path) -> LNode:
    """The located tree of ``data``, read from ``path`` (named in locations; relative paths are
    relative to its folder). Raises ``YamlProblem`` as ``compose_file``."""
    shown = display_path(path)
    base_dir = path.parent
    key = (data, shown, base_dir, *reading_settings())
    known = _COMPOSED.get(key)
    if known is not None:
        return _copy(known)
    text = _decode(data, shown, base_dir)
    tree: LNode | None = None
    if (USE_LIBYAML and _CSafeLoader is not None and
        not yaml.reader.Reader.NON_PRINTABLE.search(text)):
        try:
            tree = _compose_libyaml(text, shown, base_dir, _CSafeLoader)
        except _FALLBACK:
            # read again below: the pure-Python path gives the located message users have always had
            pass
    if tree is None:
        tree = _compose_pure(text, shown, base_dir)
    if len(data) <= _COMPOSED_LARGEST:
        # list(): safe under threads
        for oldest in list(_COMPOSED)[: max(0, len(_COMPOSED) + 1 - _COMPOSED_KEPT)]:
            _COMPOSED.pop(oldest, None)
        # a copy of its own: callers change their trees (extends, --set, ${...})
        _COMPOSED[key] = _copy(tree)
    return tree


def reading_settings() -> tuple[bool, int, int]:
    """What, besides a document's bytes, decides whether it is accepted and what it reads as: the
    parser taken and the limits. A cache of anything made from a document keys on these too (tests
    change them)."""
    return USE_LIBYAML, MAX_DEPTH, MAX_VALUES


_COMPOSED: dict[tuple[bytes, str, Path, bool, int, int], LNode] = {}
"""Trees composed in this process, by the file's bytes and how it is named: a scenario and its bases
are read again by every load (tests, the batch planner, validate then run); a copy is cheaper than
composing. Only good documents."""

_COMPOSED_KEPT = 64
_COMPOSED_LARGEST = 256 * 1024
"""Larger files (up to ``MAX_FILE_BYTES``) are not kept: scenarios are a few kilobytes."""


def _copy(node: LNode) -> LNode:
    """A tree of new nodes (the values below them are immutable scalars and ``Location``s,
    shared)."""
    value = node.value
    if isinstance(value, dict):
        value = {key: _copy(child) for key, child in value.items()}
    elif isinstance(value, list):
        value = [_copy(child) for child in value]
    return LNode(value, node.loc, node.key_loc)


class _PureOnly(Exception):
    """The document uses something libyaml reads differently from the pure-Python parser (or is
    nested too deep for libyaml's composer): only the pure-Python path may read it."""


_START_TOKENS = (yaml.BlockMappingStartToken, yaml.BlockSequenceStartToken,
                 yaml.FlowMappingStartToken, yaml.FlowSequenceStartToken)
_END_TOKENS = (yaml.BlockEndToken, yaml.FlowMappingEndToken, yaml.FlowSequenceEndToken)
_FLOW_START = (yaml.FlowMappingStartToken, yaml.FlowSequenceStartToken)
_FLOW_END = (yaml.FlowMappingEndToken, yaml.FlowSequenceEndToken)
_BLOCK_HEADER = re.compile(r"[|>](?:[-+][1-9]?|[1-9][-+]?)?(?:[ \r\n\x85\u2028\u2029]|\Z)")
"""A block scalar header as the pure-Python scanner takes it (libyaml also takes ``|#comment``)."""


def _check_libyaml_tokens(text: str, parser: type[yaml.CSafeLoader]) -> None:
    """Raise ``_PureOnly`` unless libyaml reads ``text`` as the pure-Python parser would (found by
    comparing the two on mutated scenarios and profiles): libyaml 0.2 also takes tabs as separating
    white space, ``?`` inside a plain value in a flow collection (``{a: b?c}``) and a comment right
    after a block scalar's ``|``; the pure-Python parser refuses them. Also refuses nesting deeper
    than ``_refuse_deep_nesting`` lets through, before libyaml's composer (recursion in C) sees it;
    the pure-Python path then words the refusal."""
    if "\t" in text:
        raise _PureOnly("a tab")
    scanner = parser(text)
    try:
        depth = flow = 0
        while True:
            token = scanner.get_token()
            if isinstance(token, _START_TOKENS):
                depth += 1
                flow += isinstance(token, _FLOW_START)
                if depth > 2 * MAX_DEPTH:
                    raise _PureOnly("nested too deeply")
            elif isinstance(token, _END_TOKENS):
                depth -= 1
                flow -= isinstance(token, _FLOW_END)
            elif isinstance(token, yaml.ScalarToken):
                if token.plain:
                    if flow and "?" in token.value:
                        raise _PureOnly("? in a plain value in a flow collection")
                elif token.style in ("|", ">") and not _BLOCK_HEADER.match(text,
                                                                           token.start_mark.index):
                    raise _PureOnly("a block scalar header")
            elif isinstance(token, yaml.StreamEndToken):
                return
    finally:
        scanner.dispose()


_FALLBACK = (yaml.YAMLError, YamlProblem, RecursionError, ValueError, TypeError, _PureOnly)
"""What the libyaml path may raise for a document the pure-Python path then reads (and says what is
wrong with)."""


def _compose_libyaml(text: str, shown: str, base_dir: Path,
                     parser: type[yaml.CSafeLoader]) -> LNode:
    """The located tree by libyaml, no error mapping: the fast path, whose every failure falls back
    to ``_compose_pure``."""
    _check_libyaml_tokens(text, parser)
    loader = parser(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return LNode({}, Location(shown, 1, 1, base_dir))
        _check_graph(node, shown, base_dir)
        _check_empty_values(node, text)
        return _convert(loader, node, shown, base_dir)
    finally:
        loader.dispose()


def _check_empty_values(root: yaml.Node, text: str) -> None:
    """Raise ``_PureOnly`` when an empty value (``key:`` with nothing after it: null) has a place
    libyaml marks differently from the pure-Python parser, which names it in messages (``name: got
    None``): inside a flow collection (``{a: }``: libyaml marks the ``}``), the whole document
    (``---``), and the end of a file without a final line break. Everywhere else (block mappings and
    lists) both mark the end of the ``:``, ``-`` or ``?``. Runs after ``_check_graph``, so the graph
    has no cycles and a bounded size."""
    if isinstance(root, yaml.ScalarNode) and root.value == "":
        raise _PureOnly("an empty document")
    ends_open = not text.endswith("\n")
    seen: set[int] = set()
    stack: list[yaml.Node] = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen or isinstance(node, yaml.ScalarNode):
            continue
        seen.add(id(node))
        children = ([item for pair in node.value for item in pair]
                    if isinstance(node, yaml.MappingNode) else node.value)
        for child in children:
            if isinstance(child, yaml.ScalarNode):
                if (child.value == "" and not child.style and
                    child.start_mark.index == child.end_mark.index and (
                        getattr(node, "flow_style", False) or
                        (ends_open and child.start_mark.index >= len(text)))):
                    raise _PureOnly("an empty value libyaml marks elsewhere")
            else:
                stack.append(child)


def _compose_pure(text: str, shown: str, base_dir: Path) -> LNode:
    """The located tree by PyYAML's pure-Python parser, each of its errors mapped to a located
    message."""
    try:
        loader = yaml.SafeLoader(text)  # checks every character up front
    except yaml.reader.ReaderError as exc:
        raise _reader_problem(text, exc, shown, base_dir) from exc
    try:
        try:
            _refuse_deep_nesting(text, shown, base_dir)
            node = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            loc = Location.from_mark(shown, exc.problem_mark or exc.context_mark, base_dir)
            raise YamlProblem(loc, f"YAML syntax error: {exc.problem or exc.context}") from exc
        except yaml.reader.ReaderError as exc:
            raise _reader_problem(text, exc, shown, base_dir) from exc
        except RecursionError as exc:
            loc = Location.from_mark(shown, loader.get_mark(), base_dir)
            raise YamlProblem(loc,
                              f"values nested too deeply (at most {MAX_DEPTH} levels)") from exc
        except yaml.YAMLError as exc:  # anything else PyYAML may raise, without a mark of its own
            loc = Location.from_mark(shown, loader.get_mark(), base_dir)
            raise YamlProblem(loc, f"YAML error: {exc}") from exc
        if node is None:
            return LNode({}, Location(shown, 1, 1, base_dir))
        _check_graph(node, shown, base_dir)
        return _convert(loader, node, shown, base_dir)
    finally:
        loader.dispose()


def _check_graph(root: yaml.Node, shown: str, base_dir: Path) -> None:
    """Refuse documents that are too deep, hold a recursive alias (``&a [*a]``), or whose aliases
    would expand to more than ``MAX_VALUES`` values. Counts the expansion without performing it: one
    pass over the composed nodes, each aliased node counted once and its size reused (merge keys
    ``<<`` are children like any other)."""
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def size(node: yaml.Node, depth: int) -> int:
        key = id(node)
        known = sizes.get(key)
        if known is not None:
            return known
        where = Location.from_mark(shown, node.start_mark, base_dir)
        if key in active:
            raise YamlProblem(where,
                              "recursive alias: this value contains itself through an alias "
                              "(*name)")
        if depth > MAX_DEPTH:
            raise YamlProblem(where, f"values nested too deeply (at most {MAX_DEPTH} levels)")
        children: list[yaml.Node] = []
        if isinstance(node, yaml.MappingNode):
            children = [item for pair in node.value for item in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        active.add(key)
        total = 1
        for child in children:
            total += size(child, depth + 1)
            if total > MAX_VALUES:
                raise YamlProblem(
                    where,
                    f"this value expands to more than {MAX_VALUES} values through aliases (*name) "
                    "or merge keys (<<); write the values out or use fewer aliases",
                )
        active.discard(key)
        sizes[key] = total
        return total

    size(root, 0)


def check_plain_size(value: Any, limit: int = MAX_VALUES) -> str | None:
    """For plain data that may share or contain itself (``yaml.safe_load`` of a ``--set`` value):
    why it is too big to expand (more than ``limit`` values, nested deeper than ``MAX_DEPTH``, or
    containing itself), else None."""
    sizes: dict[int, int] = {}
    active: set[int] = set()

    class _TooBig(Exception):
        pass

    def size(item: Any, depth: int) -> int:
        if not isinstance(item, dict | list):
            return 1
        key = id(item)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise _TooBig("it contains itself (a recursive alias)")
        if depth > MAX_DEPTH:
            raise _TooBig(f"it is nested more than {MAX_DEPTH} levels deep")
        active.add(key)
        children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
        total = 1
        for child in children:
            total += size(child, depth + 1)
            if total > limit:
                raise _TooBig(f"it expands to more than {limit} values")
        active.discard(key)
        sizes[key] = total
        return total

    try:
        size(value, 0)
    except _TooBig as exc:
        return str(exc)
    return None


_PLAIN_COLLECTIONS: dict[type[yaml.Node], str] = {
    yaml.MappingNode: "tag:yaml.org,2002:map",
    yaml.SequenceNode: "tag:yaml.org,2002:seq",
}


def _convert(loader: _Parser, node: yaml.Node, shown: str, base_dir: Path) -> LNode:
    loc = Location.from_mark(shown, node.start_mark, base_dir)
    plain_tag = _PLAIN_COLLECTIONS.get(type(node))
    if plain_tag is not None and node.tag != plain_tag:
        # collections are built here, not by the constructor, so refuse tags (!!python/..., !!set)
        # explicitly
        raise YamlProblem(loc, f"unsupported YAML tag {node.tag} (only plain YAML is accepted)")
    if isinstance(node, yaml.MappingNode):
        explicit: dict[str, Location] = {}
        for key_node, _value in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key_loc = Location.from_mark(shown, key_node.start_mark, base_dir)
            key = _construct(loader, key_node, key_loc)
            if not isinstance(key, str | int | float | bool):
                raise YamlProblem(key_loc,
                                  f"mapping keys must be plain text, got {type(key).__name__}")
            if str(key) in explicit:
                raise YamlProblem(key_loc,
                                  f"duplicate key {key!r} (first written at {explicit[str(key)]})")
            explicit[str(key)] = key_loc
        # resolves YAML merge keys (<<); explicit keys come last and win
        loader.flatten_mapping(node)
        children: dict[str, LNode] = {}
        for key_node, value_node in node.value:
            key_loc = Location.from_mark(shown, key_node.start_mark, base_dir)
            child = _convert(loader, value_node, shown, base_dir)
            child.key_loc = key_loc
            children[str(_construct(loader, key_node, key_loc))] = child
        return LNode(children, loc)
    if isinstance(node, yaml.SequenceNode):
        return LNode([_convert(loader, item, shown, base_dir) for item in node.value], loc)
    return LNode(_construct(loader, node, loc), loc)


def _construct(loader: _Parser, node: yaml.Node, loc: Location) -> Any:
    try:
        return loader.construct_object(node, deep=True)
    except yaml.constructor.ConstructorError as exc:
        raise YamlProblem(
            loc, f"unsupported YAML value: {exc.problem} (only plain YAML is accepted)"
        ) from exc
    except (ValueError, TypeError, OverflowError) as exc:  # e.g. 2001-02-30 read as a date, !!int x
        shown = node.value if isinstance(node.value, str) else "this value"
        kind = node.tag.rsplit(":", 1)[-1]
        raise YamlProblem(
            loc,
            f"cannot read {_short(shown)} as YAML {kind} ({exc}); put it in quotes to keep it as "
            "text"
        ) from exc


def merge(base: LNode, over: LNode) -> LNode:
    """Deep merge for ``extends``: mappings merge key by key, anything else (lists, scalars) is
    replaced by ``over``."""
    if isinstance(base.value, dict) and isinstance(over.value, dict):
        merged = dict(base.value)
        for key, child in over.value.items():
            merged[key] = merge(base.value[key], child) if key in base.value else child
        return LNode(merged, over.loc, over.key_loc or base.key_loc)
    return over


def format_path(path: PathTuple) -> str:
    """``('models', 'ds_cnn', 'inputs', 0, 'file')`` -> ``models.ds_cnn.inputs[0].file``."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text or "(top level)"


def did_you_mean(word: str, choices: typing.Iterable[str]) -> str:
    """`` did you mean 'x'?`` when something close exists, else an empty string."""
    close = closest(word, choices)
    return f"; did you mean {close!r}?" if close is not None else ""


def closest(word: str, choices: typing.Iterable[str]) -> str | None:
    """The choice ``did_you_mean`` suggests for ``word``, or None."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return close[0] if close else None


# --- walking the pydantic models by path (for unknown keys and --set) -----------------------------


def _unwrap_optional(annotation: Any) -> Any:
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        args = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        models = [arg for arg in args if isinstance(arg, type) and issubclass(arg, BaseModel)]
        if models:
            return models[0]
        if len(args) == 1:
            return args[0]
    return annotation


def schema_step(annotation: Any, part: str) -> tuple[str, Any, bool]:
    """One step of a dotted path through a pydantic annotation.

    Returns ``(kind, next_annotation, takes_rest)``: ``kind`` is ``field``, ``key`` or ``index``;
    ``takes_rest`` says the rest of the dotted path is one dictionary key
    (``fvp.params.host.ethosu.num_macs``: parameter names contain dots). Raises ``KeyError`` with a
    did-you-mean message when ``part`` is no field of a model.
    """
    annotation = _unwrap_optional(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        fields = annotation.model_fields
        if part not in fields:
            raise KeyError(
                f"unknown field {part!r}{did_you_mean(part, fields)} (expected one of: "
                f"{', '.join(fields)})"
            )
        return "field", fields[part].annotation, False
    origin = typing.get_origin(annotation)
    if origin is dict:
        value_type = _unwrap_optional(typing.get_args(annotation)[1])
        is_model = isinstance(value_type, type) and issubclass(value_type, BaseModel)
        return "key", value_type, not is_model
    if origin is list:
        if not part.lstrip("-").isdigit():
            raise KeyError(
                f"{part!r} is not a list index (lists take 0, 1, ... or a whole value like [a, b])"
            )
        return "index", typing.get_args(annotation)[0], False
    raise KeyError(f"cannot go below a {getattr(annotation, '__name__', annotation)} value into "
                   f"{part!r}")


def _fields_at(model: type[BaseModel], path: PathTuple) -> list[str] | None:
    annotation: Any = model
    for part in path:
        try:
            _, annotation, _ = schema_step(annotation, str(part))
        except KeyError:
            return None
    annotation = _unwrap_optional(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return list(annotation.model_fields)
    return None


def _description_at(model: type[BaseModel], path: PathTuple) -> str:
    annotation: Any = model
    for part in path[:-1]:
        try:
            _, annotation, _ = schema_step(annotation, str(part))
        except KeyError:
            return ""
    annotation = _unwrap_optional(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel) and path:
        info = annotation.model_fields.get(str(path[-1]))
        if info is not None and info.description:
            return info.description
    return ""


# --- pydantic errors -> located messages ----------------------------------------------------------


def _existing_prefix(root: LNode, loc: PathTuple) -> PathTuple:
    prefix: PathTuple = ()
    for part in loc:
        if root.get((*prefix, part)) is None:
            break
        prefix = (*prefix, part)
    return prefix


SHOWN_VALUE_CHARS = 80
"""How much of a value a message echoes when the value is long: a 1 MB value must not make 2 MB of
messages."""
LONG_VALUE_CHARS = 120
"""Values up to this many characters are echoed whole (a long host path stays readable)."""


def shorten_text(text: str) -> str:
    """``text`` itself when short, else its first ``SHOWN_VALUE_CHARS`` characters, an ellipsis and
    its length."""
    if len(text) <= LONG_VALUE_CHARS:
        return text
    return f"{text[:SHOWN_VALUE_CHARS]}… ({len(text):,} characters)"


def _short_repr(text: str) -> str:
    """A long string as a message quotes it: ``'xxxx…' (1,000,000 characters)``."""
    quoted = repr(text[:SHOWN_VALUE_CHARS])
    return f"{quoted[:-1]}…{quoted[-1]} ({len(text):,} characters)"


def _short(value: Any) -> str:
    if isinstance(value, str) and len(value) > LONG_VALUE_CHARS:
        return _short_repr(value)
    text = repr(value)
    return (text if len(text) <= 60 else shorten_text(text) if len(text) > LONG_VALUE_CHARS
            else text[:57] + "...")


def _long_strings(value: Any, depth: int = 0) -> Iterator[str]:
    """The long strings a value holds (its own text, keys and items): what a message may echo in
    full."""
    if isinstance(value, str):
        if len(value) > LONG_VALUE_CHARS:
            yield value
    elif depth < 8 and isinstance(value, dict):
        for key, item in value.items():
            yield from _long_strings(key, depth + 1)
            yield from _long_strings(item, depth + 1)
    elif depth < 8 and isinstance(value, (list, tuple)):
        for item in value:
            yield from _long_strings(item, depth + 1)


def shorten_values(message: str, values: Iterable[Any]) -> str:
    """``message`` with every long string of ``values`` it echoes (quoted or plain; a validator's
    own words may quote a value twice) cut to ``shorten_text``'s form. Every located message passes
    here, so no value, however long, is echoed whole."""
    for text in sorted(set(_long_strings(list(values))), key=len, reverse=True):
        if text in message:
            short = shorten_text(text)
            message = message.replace(repr(text), _short_repr(text)).replace(text, short)
    return message


@dataclass
class _Grouped:
    path: PathTuple
    where: Location
    kind: str
    messages: list[str] = field(default_factory=list)
    errors: list[Any] = field(default_factory=list)
    value: Any = None


def validation_problems(
    exc: ValidationError, root: LNode, model: type[BaseModel]
) -> list[tuple[Location, str]]:
    """Turn a pydantic ``ValidationError`` into ``(location, "field.path: message")`` pairs, one per
    problem.

    Union types make pydantic report one error per alternative at the same place; those are folded
    into one message.
    """
    groups: dict[PathTuple, _Grouped] = {}
    for error in exc.errors():
        loc = tuple(error["loc"])
        kind = error["type"]
        prefix = _existing_prefix(root, loc)
        node = root.get(prefix) or root
        if kind == "missing" and len(loc) > len(prefix):
            path = (*prefix, loc[len(prefix)])
            where = node.key_loc or node.loc
            fields = _description_at(model, path)
            message = "required field is missing" + (
                f"; expected {fields[0].lower()}{fields[1:].rstrip('.')}" if fields else ""
            )
        elif kind == "extra_forbidden":
            path = prefix
            where = node.key_loc or node.loc
            name = str(path[-1])
            allowed = _fields_at(model, path[:-1]) or []
            message = f"unknown key {name!r}{did_you_mean(name, allowed)}"
            if allowed:
                message += f" (expected one of: {', '.join(allowed)})"
        else:
            path = prefix
            where = node.loc
            message = _type_message(error)
        group = groups.setdefault(path, _Grouped(path, where, kind, value=error.get("input")))
        group.errors.append(error)
        if message not in group.messages:
            group.messages.append(message)
    problems = []
    for group in groups.values():
        if len(group.messages) > 1 and group.kind not in ("missing", "extra_forbidden"):
            forms = [_expected(str(error["msg"])).removeprefix("expected ")
                     for error in group.errors]
            text = f"got {_short(group.value)}; expected one of: " + ", or ".join(
                dict.fromkeys(forms))
        else:
            text = "; ".join(group.messages)
        text = shorten_values(text, [error.get("input") for error in group.errors])
        problems.append((group.where, f"{format_path(group.path)}: {text}"))
    return problems


def data_problems(exc: ValidationError) -> list[str]:
    """``field.path: message`` per problem of a ``ValidationError`` over data that has no YAML
    locations (a stored record, a JSON file): the words of ``validation_problems`` (``got 'two';
    expected a valid integer``), never pydantic's multi-line text with its links; the alternatives
    of a union folded into one message; long values shortened."""
    grouped: dict[PathTuple, list[Any]] = {}
    for error in exc.errors():
        grouped.setdefault(tuple(error["loc"]), []).append(error)
    problems = []
    for path, errors in grouped.items():
        if errors[0]["type"] == "missing":
            text = "required field is missing"
        elif errors[0]["type"] == "extra_forbidden":
            text = "unknown field"
        elif len(errors) > 1:
            forms = [_expected(str(error["msg"])).removeprefix("expected ") for error in errors]
            text = f"got {_short(errors[0].get('input'))}; expected one of: " + ", or ".join(
                dict.fromkeys(forms))
        else:
            text = _type_message(errors[0])
        text = shorten_values(text, [error.get("input") for error in errors])
        problems.append(f"{format_path(path) or '(top level)'}: {text}")
    return problems


def _type_message(error: Any) -> str:
    """What was expected, from pydantic's message ("Input should be X" -> "expected X")."""
    message = str(error["msg"])
    for prefix in ("Value error, ", "Assertion failed, "):
        if message.startswith(prefix):
            return message[len(prefix) :]
    value = error.get("input")
    if error["type"] == "literal_error" and isinstance(value, str):
        expected = str(error.get("ctx", {}).get("expected", ""))
        choices = [part.strip(" '")
                   for part in expected.replace(" or ", ",").split(",") if part.strip(" '")]
        return f"got {_short(value)}{did_you_mean(value, choices)}; expected {expected}"
    return f"got {_short(value)}; {_expected(message)}"


def _expected(message: str) -> str:
    if message.startswith("Input should be "):
        return "expected " + message[len("Input should be ") :]
    return message[0].lower() + message[1:]
