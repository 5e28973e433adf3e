"""The regressions in effect as an Atom feed, ``regressions.xml`` beside the site's regressions
page.

Why a feed (asv publishes one too): a maintainer subscribed to the nightly history's site hears of a
new regression in the feed reader they read anyway, without opening the site every morning to find
nothing. One entry per regression in effect, its id stable across nightly rewrites (scenario, model
and the run the step starts at), so a reader shows each regression once; dates are the runs' own (no
clock: the same runs give the same bytes). Links are relative to the feed, as the site's are.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["FEED", "FeedEntry", "atom_feed"]

FEED = "regressions.xml"
"""The feed's file name, at the top of the site."""
_ATOM = "http://www.w3.org/2005/Atom"
_EPOCH = "1970-01-01T00:00:00Z"


@dataclass(frozen=True)
class FeedEntry:
    """One regression in effect: a stable ``id`` (a URN), its title and summary in plain text, when
    the run it starts at began (``updated``, ISO 8601) and a link relative to the feed."""

    id: str
    title: str
    summary: str
    updated: str | None
    link: str


def _stamp(text: str | None) -> str:
    """An RFC 3339 time: the run's start as recorded, in UTC when it names no zone."""
    if not text:
        return _EPOCH
    return text if text.endswith("Z") or "+" in text[10:] or text[10:].count("-") else text + "Z"


def atom_feed(title: str, entries: Sequence[FeedEntry], updated: str | None, link: str) -> str:
    """The Atom document of ``entries`` (``updated``: the newest run's start; ``link``: the page the
    feed stands for, relative to it)."""
    ET.register_namespace("", _ATOM)
    feed = ET.Element(f"{{{_ATOM}}}feed")
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", title).strip("-")
    ET.SubElement(feed, f"{{{_ATOM}}}id").text = f"urn:fvp-harness:history:{name}"
    ET.SubElement(feed, f"{{{_ATOM}}}title").text = title
    ET.SubElement(feed, f"{{{_ATOM}}}updated").text = _stamp(updated)
    ET.SubElement(feed, f"{{{_ATOM}}}link", {"rel": "alternate", "href": link})
    ET.SubElement(ET.SubElement(feed, f"{{{_ATOM}}}author"),
                  f"{{{_ATOM}}}name").text = "fvp-harness"
    for entry in entries:
        node = ET.SubElement(feed, f"{{{_ATOM}}}entry")
        ET.SubElement(node, f"{{{_ATOM}}}id").text = entry.id
        ET.SubElement(node, f"{{{_ATOM}}}title").text = entry.title
        ET.SubElement(node, f"{{{_ATOM}}}updated").text = _stamp(entry.updated)
        ET.SubElement(node, f"{{{_ATOM}}}link", {"rel": "alternate", "href": entry.link})
        ET.SubElement(node, f"{{{_ATOM}}}summary").text = entry.summary
    ET.indent(feed)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(feed, encoding="unicode") + "\n"
