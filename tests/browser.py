"""Helpers for the browser tests (Playwright on the live server): opening a path, and a page
watched for Content-Security-Policy violations, logged in as admin."""

from __future__ import annotations

from django.urls import reverse

ALICE = "alice@example.com"
RECORD_VIOLATIONS = """
window.cspViolations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.cspViolations.push(`${event.violatedDirective} refused ${event.blockedURI || "inline code"}`);
});
"""


def open_page(page, path: str) -> None:
    page.goto(page.live_server_url + path)


class Watched:
    """A browser page that records every CSP violation, with the page it happened on."""

    def __init__(self, page, base_url: str):
        self.page = page
        self.base_url = base_url
        self.violations: list[str] = []
        page.add_init_script(RECORD_VIOLATIONS)
        page.on("console", self._console)

    def _console(self, message) -> None:
        if "Content Security Policy" in message.text or "Content-Security-Policy" in message.text:
            self.violations.append(f"{self.page.url}: console: {message.text}")

    def check(self) -> None:
        for violation in self.page.evaluate("window.cspViolations || []"):
            self.violations.append(f"{self.page.url}: {violation}")

    def open(self, path: str) -> None:
        self.page.goto(self.base_url + path)
        self.page.wait_for_load_state("load")
        self.check()


def log_in(watched: Watched) -> None:
    watched.open(reverse("login"))
    watched.page.fill("input[name=username]", "admin")
    watched.page.fill("input[name=password]", "admin-password")
    watched.page.click("button[type=submit]")
    watched.page.wait_for_selector("h1:has-text('Sessions')")
    watched.check()
