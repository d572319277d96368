"""One sweep over every page type, at 390 px and wide, in light and dark: no page scrolls
sideways, axe-core finds no WCAG 2 A/AA violation, and nothing breaks the Content-Security-Policy.

axe-core comes from the npm registry, pinned in package.json; `make install-dev` (and so
`make test` and .ci/run) installs it into node_modules/, which git ignores.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from sessionviewer import readers
from sessionviewer.index import index_roots
from sessionviewer.memory_findings import finding_histories
from sessionviewer.models import Revision, Session
from sessionviewer.roots import RootSpec, parse_root

from .browser import ALICE, Watched, log_in
from .demo_index import DEMO, DEMO_SPECS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AXE = Path(__file__).resolve().parents[1] / "node_modules" / "axe-core" / "axe.min.js"
AXE_RUN = (
    "axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa']}, resultTypes: ['violations']})"
)
# The Claude Code demo session with Edit calls (diffs), code and command output.
EDITS = "81cc43d5-819f-4982-8225-aa6c71c37bf0"


def other_demo_roots() -> list[RootSpec]:
    """The demo roots the settings name that the shared demo index (DEMO_SPECS) leaves out:
    pi's own folder, and each format added since, swept as every other one is."""
    # The settings name the demo's copy in the data folder; the tests read the repository's.
    named = [parse_root(root) for root in settings.DEMO_ROOTS]
    named = [RootSpec(DEMO / spec.path.relative_to(settings.DEMO_DIR), spec.format) for spec in named]
    return [spec for spec in named if spec not in DEMO_SPECS]


@pytest.fixture(scope="module")
def axe_source() -> str:
    assert AXE.is_file(), f"{AXE} is missing: `make install-dev` installs it (npm ci)"
    return AXE.read_text()


def transcripts() -> list[str]:
    """A transcript of each format (the biggest), and the Claude Code one with edits."""
    paths = [reverse("session-detail", args=[Session.objects.get(path__contains=EDITS).id])]
    for fmt in readers.FORMATS:
        session = (
            Session.objects.filter(format=fmt).exclude(path__contains=EDITS).order_by("-entry_count").first()
        )
        paths.append(reverse("session-detail", args=[session.id]))
    return paths


def memory_history(memory: Path) -> dict[str, str]:
    """Index the memory tree twice around an agent write that leaks a key into a JID's memory
    and the global instructions. Returns the key's fingerprint in each (jid, "" for global)."""
    index_roots([RootSpec(memory, "fluux_xmpp")], memory=[memory])
    later = time.time() + 60
    for path in (memory / ALICE / "memory.md", memory / "instructions.md"):
        path.write_text(path.read_text() + "- Shop API key: sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv\n")
        os.utime(path, (later, later))
    index_roots([RootSpec(memory, "fluux_xmpp")], memory=[memory])
    return {
        history.jid: history.fp
        for history in finding_histories(str(memory.resolve()), machine=settings.SESSIONVIEWER_MACHINE)
    }


# Every highlighted search hit (<mark>) on the page whose text is below 4.5:1 against what is
# behind it (its own background, or the first one below it, translucent layers blended), with
# where it landed: axe-core samples some text, this checks every hit, folded ones included.
HIT_CONTRAST = """() => {
    const rgba = (value) => {
        const numbers = value.match(/[\\d.]+/g).map(Number);
        if (value.startsWith("color(")) return [numbers[0] * 255, numbers[1] * 255, numbers[2] * 255, numbers[3] ?? 1];
        return [numbers[0], numbers[1], numbers[2], numbers[3] ?? 1];
    };
    const over = (top, below) => top.slice(0, 3).map((c, i) => c * top[3] + below[i] * (1 - top[3])).concat(1);
    const background = (element) => {
        const layers = [];
        for (let e = element; e; e = e.parentElement) {
            const color = rgba(getComputedStyle(e).backgroundColor);
            if (color[3] > 0) layers.push(color);
            if (color[3] >= 1) break;
        }
        return layers.reverse().reduce((below, top) => over(top, below), [255, 255, 255, 1]);
    };
    const luminance = (color) => {
        const [r, g, b] = color.slice(0, 3).map((c) => {
            c /= 255;
            return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
        });
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    return [...document.querySelectorAll("mark")].flatMap((mark) => {
        const behind = background(mark);
        const [a, b] = [luminance(over(rgba(getComputedStyle(mark).color), behind)), luminance(behind)];
        const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
        if (ratio >= 4.5) return [];
        const place = mark.closest("pre, code, details, li, p");
        return [`${ratio.toFixed(2)}:1 "${mark.textContent}" in ${place ? place.tagName + "." + place.className : "?"}`];
    });
}"""


def problems(watched: Watched, axe_source: str, where: str) -> list[str]:
    page = watched.page
    found = [f"{where}: search hit below 4.5:1: {hit}" for hit in page.evaluate(HIT_CONTRAST)]
    width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    if width[0] > width[1]:
        found.append(f"{where}: scrolls sideways ({width[0]} px wide in {width[1]})")
    page.evaluate(axe_source)
    for violation in page.evaluate(AXE_RUN)["violations"]:
        for node in violation["nodes"]:
            found.append(f"{where}: {violation['id']} at {node['target']}: {node['html'][:300]}")
    return found


@pytest.mark.usefixtures("site")
@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [390, 1280])
def test_every_page_type_fits_the_width_passes_axe_and_keeps_the_policy(
    chromium, live_server, axe_source, width, scheme, memory, tmp_path
):
    # The memory tree the workspace pages show, indexed: the JID page then has its usage panel,
    # and the memory pages a history with a finding in a JID's files and in the global ones.
    fingerprints = memory_history(memory)
    index_roots(other_demo_roots())
    edits = Session.objects.get(path__contains=EDITS).id
    context = chromium.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    page.set_default_timeout(10_000)
    watched = Watched(page, live_server.url)
    found = []
    watched.open(reverse("login"))
    found += problems(watched, axe_source, f"login [{width} {scheme}]")
    log_in(watched)
    for path in [
        reverse("session-list"),
        reverse("session-list") + "?q=the",
        reverse("activity"),
        reverse("activity") + "?_range=7",
        reverse("project-detail", args=[Session.objects.exclude(project="").order_by("-id").first().project]),
        reverse("project-detail", args=["~/projects/webshop"]),
        *transcripts(),
        # Hits marked in a terminal, a diff, code and thinking, and in the list's snippets.
        reverse("session-detail", args=[edits]) + "?q=cart",
        reverse("session-cost", args=[Session.objects.exclude(cost=None).order_by("-cost").first().id]),
        reverse("workspace-list"),
        reverse("workspace-jid", args=[0, ALICE]),
        reverse("workspace-prompt", args=[0, ALICE]),
        reverse("workspace-edit", args=[0, ALICE, "memory.md"]),
        reverse("workspace-source", args=[0, ALICE, "memory.md"]),
        reverse("workspace-session-source", args=[0, ALICE, "20250601-143022.jsonl"]),
        reverse("workspace-global-source", args=[0, "instructions.md"]),
        reverse("workspace-search") + "?q=tea",
        reverse("workspace-new", args=[0, ALICE]),
        reverse("workspace-forget", args=[0, ALICE]),
        reverse("workspace-remove", args=[0, ALICE, "memory.md"]),
        reverse("workspace-revision", args=[Revision.objects.get().id]),
        reverse("workspace-secrets"),
        reverse("session-secrets"),
        reverse("workspace-audit-log"),
        reverse("workspace-memory-timeline", args=[0, ALICE]),
        reverse("workspace-memory-changes"),
        reverse("workspace-memory-as-of", args=[0, ALICE]),
        reverse("workspace-memory-as-of", args=[0, ALICE]) + "?at=2000-01-01",
        reverse("workspace-memory-findings"),
        reverse("workspace-purge", args=[0, ALICE, fingerprints[ALICE]]),
        reverse("workspace-global-purge", args=[0, fingerprints[""]]),
    ]:
        watched.open(path)
        found += problems(watched, axe_source, f"{path} [{width} {scheme}]")
    # The HTML export is a download, read from disk with its own styles.
    export = tmp_path / "export.html"
    export.write_bytes(
        page.request.get(live_server.url + reverse("session-export-html", args=[edits])).body()
    )
    page.goto(export.as_uri())
    found += problems(watched, axe_source, f"export.html from disk [{width} {scheme}]")
    context.close()
    assert not found, "\n".join(found)
    assert watched.violations == []


def test_the_header_folds_into_a_menu_at_390_px(chromium, live_server, admin_user):
    context = chromium.new_context(viewport={"width": 390, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    log_in(Watched(page, live_server.url))
    assert not page.locator("header.site nav").is_visible()
    page.get_by_role("button", name="Menu").click()
    assert page.get_by_role("link", name="Activity").is_visible()
    assert page.get_by_role("button", name="Menu").get_attribute("aria-expanded") == "true"
    context.close()


@pytest.mark.usefixtures("demo", "admin_user")
@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [390, 1280])
def test_the_changes_page_with_every_file_open_fits_and_passes_axe(
    chromium, live_server, axe_source, width, scheme
):
    # The demo session with edits: files with a known start (one diff) and one without (in order).
    edits = Session.objects.get(path__contains=EDITS).id
    context = chromium.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    page.set_default_timeout(10_000)
    watched = Watched(page, live_server.url)
    log_in(watched)
    watched.open(reverse("session-changes", args=[edits]))
    assert page.locator("details.changed-file").count() == 4
    found = problems(watched, axe_source, f"changes, closed [{width} {scheme}]")
    page.evaluate("document.querySelectorAll('details.changed-file').forEach((d) => { d.open = true; })")
    found += problems(watched, axe_source, f"changes, open [{width} {scheme}]")
    context.close()
    assert not found, "\n".join(found)
    assert watched.violations == []


@pytest.mark.usefixtures("site")
@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [390, 1280])
def test_the_redaction_review_and_a_shared_page_fit_pass_axe_and_keep_the_policy(
    chromium, live_server, axe_source, width, scheme
):
    edits = Session.objects.get(path__contains=EDITS).id
    viewport = {"width": width, "height": 900}
    context = chromium.new_context(viewport=viewport, color_scheme=scheme)
    page = context.new_page()
    page.set_default_timeout(10_000)
    watched = Watched(page, live_server.url)
    log_in(watched)
    watched.open(reverse("session-redact", args=[edits]))
    found = problems(watched, axe_source, f"redaction review [{width} {scheme}]")
    page.get_by_role("button", name="Make a share link").click()
    page.wait_for_selector("#share-made")
    watched.check()
    found += problems(watched, axe_source, f"review with a new link [{width} {scheme}]")
    link = page.input_value(".share-link")
    # Opened by someone without an account, in a browser of their own.
    stranger = chromium.new_context(viewport=viewport, color_scheme=scheme)
    shared = Watched(stranger.new_page(), "")
    shared.open(link)
    assert shared.page.locator("#redaction-summary").is_visible()
    found += problems(shared, axe_source, f"shared page [{width} {scheme}]")
    # A subagent's: its parent named in plain text, no link into the app.
    watched.open(
        reverse("session-redact", args=[Session.objects.get(kind="subagent", format="claude_code").id])
    )
    page.get_by_role("button", name="Make a share link").click()
    page.wait_for_selector("#share-made")
    shared.open(page.input_value(".share-link"))
    assert shared.page.locator("p.parent a").count() == 0
    found += problems(shared, axe_source, f"shared subagent [{width} {scheme}]")
    stranger.close()
    context.close()
    assert not found, "\n".join(found)
    assert watched.violations == [] and shared.violations == []
