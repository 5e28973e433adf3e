"""A written report as HTML: the page shell of every page the harness writes, ``report.md`` rendered
into it, and ``compare --html DIR``'s page, one file that holds its charts."""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from fvp_harness.files import atomic_write
from fvp_harness.store.folder import REPORT_FILES
from fvp_harness.version import __version__

__all__ = ["CSP", "PAGE_FILE", "STYLE", "Rendered", "local_image", "markdown_html", "page",
           "report_page", "write_report_page"]

PAGE_FILE = "index.html"
"""The page ``compare --html DIR`` writes into DIR (as ``history --html DIR`` writes its site's
entry page)."""
CSP = "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'"
"""Nothing is fetched but the page's own images: no script, no font, no network (a reader's check
and ours)."""
STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 1100px; \
padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: .8em 0; font-size: 13px; display: block; \
overflow-x: auto; }
th, td { border: 1px solid #ccc; padding: .25em .55em; text-align: right; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
figure.chart { margin: 1em 0; } figure.chart svg { max-width: 100%; height: auto; }
.regression { color: #c0392b; font-weight: 600; } .improvement { color: #2e7d4f; font-weight: 600; }
.note { color: #666; } code { background: #f4f4f4; padding: 0 .2em; }
img { max-width: 100%; }
""".strip()

_LOCAL_IMAGE = re.compile(r"[A-Za-z0-9_.+-]+\.(?:png|svg)")
"""An image a report links beside itself (``report.png``, ``report-<model>.png``): the only ones a
page takes."""
_MIME = {".png": "image/png", ".svg": "image/svg+xml"}


def page(title: str, body: str, written_by: str) -> str:
    """A whole HTML page around ``body`` (HTML the caller escaped), saying which command wrote
    it."""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<link rel=\"icon\" href=\"data:,\">\n"
        f"<title>{html.escape(title)}</title>\n<style>\n{STYLE}\n</style>\n</head>\n<body>\n{body}\n"
        f"<p class=\"note\">Written by fvp-harness {html.escape(__version__)} from the stored runs "
        f"(<code>{html.escape(written_by)}</code>).</p>\n</body>\n</html>\n"
    )


@dataclass(frozen=True)
class Rendered:
    """A report's markdown as HTML, with the images it shows and the files it links, in order."""

    html: str
    images: tuple[str, ...]
    links: tuple[str, ...]


def markdown_html(text: str, image_src: Callable[[str], str | None] | None = None,
                  link_href: Callable[[str], str | None] | None = None) -> Rendered:
    """``text`` (a report's markdown) as HTML, raw HTML off, tables on. ``image_src`` maps an
    image's ``src`` and ``link_href`` a link's ``href`` to what the page uses (None, or a function's
    None: as written)."""
    # late: markdown-it (rich's own dependency) loads only when a page is written
    from markdown_it import MarkdownIt

    renderer = MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = renderer.parse(text)
    images: list[str] = []
    links: list[str] = []
    for token in tokens:
        for child in token.children or ():
            attribute, seen, mapping = {
                "image": ("src", images, image_src),
                "link_open": ("href", links, link_href),
            }.get(child.type, (None, [], None))
            if attribute is None:
                continue
            value = str(child.attrGet(attribute) or "")
            seen.append(value)
            shown = mapping(value) if mapping is not None else None
            if shown is not None:
                child.attrSet(attribute, shown)
    return Rendered(renderer.renderer.render(tokens, renderer.options, {}), tuple(images),
                    tuple(links))


def local_image(folder: Path, name: str) -> Path | None:
    """``folder/name`` when ``name`` is a plain image file name (no path, no URL) of a file
    there."""
    if _LOCAL_IMAGE.fullmatch(name) and (folder / name).is_file():
        return folder / name
    return None


def _data_uri(folder: Path, name: str) -> str | None:
    path = local_image(folder, name)
    if path is None:
        return None
    return f"data:{_MIME[path.suffix]};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


def _anchor(name: str) -> str:
    return "chart-" + re.sub(r"[^A-Za-z0-9_-]", "-", name)


def report_page(report_dir: Path, title: str, written_by: str, intro: Sequence[str] = ()) -> str:
    """The page of the ``report.md`` in ``report_dir`` with its images inlined: those it shows, and
    the charts it links (``report.png``, ``report.samples.png``) as figures after it, each link then
    leading to its figure. A file that is not in the folder stays a plain link (and the page's CSP
    loads nothing from elsewhere). ``intro``: lines of plain text (escaped here) put first, one
    paragraph each."""
    report_dir = Path(report_dir)
    text = (report_dir / REPORT_FILES["markdown"]).read_text(encoding="utf-8")
    rendered = markdown_html(text, lambda name: _data_uri(report_dir, name),
                             lambda name: f"#{_anchor(name)}" if local_image(report_dir, name)
                             else None)
    charts = [name for name in dict.fromkeys(rendered.links) if local_image(report_dir, name)]
    figures = "".join(f"\n<figure class=\"chart\" id=\"{_anchor(name)}\"><img "
                      f"src=\"{_data_uri(report_dir, name)}\" "
                      f"alt=\"{html.escape(name)}\"><figcaption>{html.escape(name)}</figcaption></figure>"
                      for name in charts)
    head = "".join(f"<p class=\"intro\">{html.escape(line)}</p>\n" for line in intro)
    body = rendered.html
    # under the report's title
    end = body.find("</h1>\n") + len("</h1>\n") if body.startswith("<h1>") else 0
    return page(title, body[:end] + head + body[end:] + figures, written_by)


def write_report_page(report_dir: Path, out_dir: Path, title: str, written_by: str,
                      intro: Sequence[str] = ()) -> Path:
    """``report_page`` written to ``out_dir/index.html`` (the folder created); returns its path. A
    ``report_dir`` without ``report.md`` is a FileNotFoundError naming it."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return atomic_write(out_dir / PAGE_FILE, report_page(report_dir, title, written_by, intro))
