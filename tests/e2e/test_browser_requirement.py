"""The browser lane's rule (tests/e2e/browser.py): without chromium a browser test skips naming the
command that installs it, and under ``CI=true`` it fails instead, so CI cannot go green by
skipping."""

from __future__ import annotations

import pytest

from tests.e2e import browser


@pytest.fixture
def no_chromium(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(browser, "CHROMIUM", "/nonexistent/chromium")
    monkeypatch.setattr(browser.shutil, "which", lambda name: None)


def test_without_chromium_a_browser_test_skips_with_the_enabling_command(no_chromium, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception,
                       match="apt-get install -y --no-install-recommends chromium"):
        browser.require_chromium()


def test_without_chromium_a_browser_test_fails_under_ci(no_chromium, monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match=r"Debian's chromium missing: .*CI=true"):
        browser.require_chromium()
