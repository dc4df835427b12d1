"""Helpers for the browser tests (the `browser` fixture itself is in the root conftest)."""

from __future__ import annotations

from playwright.sync_api import Browser, Page, expect

# ENVIRONMENT.md: what headless Chromium needs on these machines.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def admin_log_in(
    browser: Browser, base_url: str, username: str, *, password: str = "", landmark: str = "", timeout_ms: int = 30_000
) -> Page:
    """A new page logged into the admin as `username` (a persona's password unless
    given), once `landmark` (a selector of the index) is visible."""
    page = browser.new_context(base_url=base_url).new_page()
    page.set_default_timeout(timeout_ms)
    page.goto("/admin/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password or f"pw-{username}")
    page.click("input[type=submit]")
    if landmark:
        expect(page.locator(landmark)).to_be_visible()
    return page
