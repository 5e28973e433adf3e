"""A page in a real browser for the tests marked ``browser``: Debian's ``chromium``, headless,
driven by playwright.

Never a browser of playwright's own (``playwright install`` downloads one; CI reaches only package
registries): ``.ci/run`` installs Debian's ``chromium`` and the test extra installs playwright.
Without either the tests skip and name the command that enables them; under ``CI=true`` they fail
instead, so CI can never go green by skipping.

Every page records what would make a reader distrust it: console errors, uncaught exceptions, failed
requests and any request that leaves the machine (``Browser.problems``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.helpers import skip_or_fail_in_ci

__all__ = ["CHROMIUM_FLAGS", "Browser", "chromium", "require_chromium", "small_png"]

CHROMIUM = "/usr/bin/chromium"
ENABLE = "apt-get install -y --no-install-recommends chromium && pip install -e '.[test]'"
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync")
"""No sandbox (root in a container), no GPU, and nothing Chromium would fetch on its own (updates,
sync, QUIC)."""
TIMEOUT_MS = 20_000
"""The deadline of every playwright action and navigation."""


def require_chromium() -> str:
    """The chromium binary, or a skip naming the command that installs it (a failure under
    ``CI=true``)."""
    binary = CHROMIUM if os.access(CHROMIUM, os.X_OK) else shutil.which("chromium")
    missing = []
    if binary is None:
        missing.append("Debian's chromium")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("playwright (the test extra)")
    if missing:
        message = f"{' and '.join(missing)} missing: {ENABLE}"
        skip_or_fail_in_ci(message, message + " (CI=true: .ci/run should have installed it)")
    assert binary is not None
    return binary


@dataclass
class Browser:
    """An open page and what went wrong on it so far."""

    page: Any
    problems: list[str] = field(default_factory=list)


@contextmanager
def chromium(*, width: int = 1000, height: int = 1250) -> Iterator[Browser]:
    """A fresh headless Chromium (its own ``--user-data-dir``, removed afterwards) with one page of
    ``width`` x ``height`` CSS pixels."""
    binary = require_chromium()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(
            prefix="chromium-profile-") as profile, sync_playwright() as driver:
        context = driver.chromium.launch_persistent_context(
            profile, executable_path=binary, headless=True, args=list(CHROMIUM_FLAGS),
            viewport={"width": width, "height": height}, timeout=TIMEOUT_MS)
        try:
            page = context.pages[0] if context.pages else context.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            page.set_default_navigation_timeout(TIMEOUT_MS)
            browser = Browser(page)
            page.on("console",
                    lambda msg: browser.problems.append(f"console {msg.type}: {msg.text}")
                    if msg.type in ("error", "warning") else None)
            page.on("pageerror", lambda exc: browser.problems.append(f"uncaught: {exc}"))
            page.on("requestfailed",
                    lambda req: browser.problems.append(f"request failed: {req.url}"))
            page.on("request", lambda req: None if req.url.startswith(("file:", "data:"))
                    else browser.problems.append(f"network request: {req.url}"))
            yield browser
        finally:
            context.close()


def small_png(raw: bytes, path: Path, colours: int = 64) -> Path:
    """``raw`` (a screenshot) written to ``path`` as a palette PNG: a chart page needs few colours,
    and docs/ stays small."""
    import io

    from PIL import Image

    image = (
        Image.open(io.BytesIO(raw))
        .convert("RGB")
        .quantize(colors=colours, method=Image.Quantize.MEDIANCUT)
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, format="PNG", optimize=True)
    return path
