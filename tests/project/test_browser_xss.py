"""No script hidden in an agent's files runs on any page: a real Chromium walks every page over
hostile tapes and memory of every family (tests/project/hostile.py) and finds every payload shown
as text, none run, none turned into markup.

The browser context bypasses the Content-Security-Policy on purpose: the policy forbids inline
scripts anyway (tests/project/test_headers.py), so with it on a payload that got into the page as
markup would stay silent. Without it, escaping alone has to hold, and any payload that became
markup sets `window.__xss` or shows up in the DOM check.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import pytest
from playwright.sync_api import Locator, Page, expect, sync_playwright

from memory_admin.models import MemoryStore
from tapeview.tapes import discovery
from tapeview.tapes import rows as index_rows
from tapeview.tapes.models import Tape
from tests.browser import ARTIFACTS, CHROMIUM, FLAGS
from tests.project import hostile
from tests.project.hostile import BUNDLE, MARKDOWN, NAME_IMG, NAME_QUOTES, SCRIPT, TEMPLATE

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

# Markup a payload would have become: a script of the page's own, an event handler, an unsafe URL,
# an element that runs or loads something. Escaped text never matches.
DOM_CHECK = """() => {
  const bad = [];
  const own = (u) => { try { const x = new URL(u, location.href);
    return x.origin === location.origin && x.pathname.startsWith('/static/'); } catch (e) { return false; } };
  for (const el of document.querySelectorAll('*')) {
    const tag = el.tagName.toLowerCase();
    const html = el.outerHTML.slice(0, 160);
    if (tag === 'script' && !(el.getAttribute('src') && own(el.src))) bad.push('script element: ' + html);
    // The one SVG allowed is the server's own pictures (class "pic"), drawn without foreign content.
    const picture = tag === 'svg' && el.classList.contains('pic');
    if (['iframe', 'frame', 'object', 'embed', 'svg', 'img', 'base', 'math', 'foreignobject'].includes(tag) && !picture) bad.push(tag + ' element: ' + html);
    for (const a of el.attributes) {
      const n = a.name.toLowerCase();
      if (/[<>"'{}]|xss/.test(n)) bad.push('attribute named ' + n + ': ' + html);
      if ((n.startsWith('on') || n.includes('hx-on')) && /xss/.test(a.value)) bad.push('handler ' + n + ': ' + html);
      if (/^(href|src|action|formaction|hx-get|hx-post|xlink:href|data|poster|background)$/.test(n)
          && /^[\\s\\u0000-\\u001f]*(javascript|vbscript|data:text)/i.test(a.value)) bad.push('unsafe ' + n + ': ' + html);
    }
  }
  return bad;
}"""
# Where each field of a hostile tape shows on the first page of its timeline, and what it shows.
BUB_FIELDS = {
    "session label (from the channel)": ("h1", hostile.BUB_SESSION),
    "phase anchor names": ("aside.phases", SCRIPT),
    "anchor state": (".anchor .state", SCRIPT),
    "message": (".k-message .bubble", SCRIPT),
    "template syntax": (".k-message .bubble", "{{7*7}}"),
    "message role": (".k-message header .name", NAME_IMG),
    "system prompt": (".k-system pre.text", SCRIPT),
    "tool name": ("code.tool", NAME_IMG),
    "tool call id": (".call-head .sub", hostile.SVG),
    "tool arguments": ("pre.args", SCRIPT),
    "tool result": (".result pre", SCRIPT),
    "event name": (".k-event header .name", NAME_IMG),
    "event data": (".k-event pre.raw", SCRIPT),
    "event prompt (loop.start)": (".n-loopstart pre.raw", NAME_IMG),
    "model of a run": ("p.usage", SCRIPT),
    "kind no agent writes": ("header .kind", NAME_IMG),
    "unreadable line": (".problem + pre.raw", BUNDLE[:40]),
    "clipped entry": (".bubble a.more", "show all"),
}
NANOBOT_FIELDS = {
    "session key": ("h1", SCRIPT),
    "message": (".k-message .bubble", SCRIPT),
    "tool name": ("code.tool", NAME_IMG),
    "tool arguments": ("pre.args", SCRIPT),
    "tool result": (".result pre", SCRIPT),
    "media path": ("ul.media", SCRIPT),
    "reasoning": ("details.reasoning pre", SCRIPT),
}
YACHIYO_FIELDS = {
    "title and id": ("h1", f"{hostile.YACHIYO_TITLE} · {hostile.YACHIYO_ID}"),
    "message": (".k-message .bubble", SCRIPT),
    "run input (anchor)": (".anchor .anchor-name", SCRIPT),
    "tool name": ("code.tool", NAME_IMG),
    "tool arguments": ("pre.args", SCRIPT),
    "tool result": (".result pre", SCRIPT),
    "event name": (".k-event header .name", NAME_IMG),
    "event data": (".k-event pre", SCRIPT),
}
ARALIYA_FIELDS = {
    "session id and agent": ("h1", f"{NAME_QUOTES} ({SCRIPT})"),
    "transcript text": (".k-message .bubble", SCRIPT),
    "transcript role": (".k-message header .name", NAME_IMG),
}
SETTLED = "() => !document.querySelector('.htmx-request, .htmx-settling, .htmx-swapping, .htmx-added')"


@dataclass
class Walk:
    """Goes to pages and checks each; collects every problem so one run reports them all."""

    page: Page
    problems: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    visited: int = 0

    def __post_init__(self) -> None:
        self.page.on("dialog", self._dialog)
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda exc: self.errors.append(f"uncaught: {exc}"))

    def _dialog(self, dialog) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def _console(self, msg) -> None:
        if msg.location.get("url", "").endswith("/favicon.ico"):
            return  # the site has no icon; Chromium asks for one all the same
        if msg.type == "error" or "xss" in msg.text:
            self.errors.append(f"console {msg.type}: {msg.text}")

    def go(self, path: str, status: int = 200) -> None:
        response = self.page.goto(path)
        got = response.status if response else None
        if got != status:
            self.problems.append(f"{path}: status {got}, expected {status}")
        elif status != 200:  # the browser logs the expected status as an error
            self.errors[:] = [e for e in self.errors if f"status of {status}" not in e]
        self.check(path)

    def htmx(self, locator: Locator, what: str) -> None:
        """Click a control that swaps a fragment in, and check the page once it has settled."""
        with self.page.expect_response(lambda r: r.request.headers.get("hx-request") == "true") as info:
            locator.click()
        if info.value.status != 200:
            self.problems.append(f"{what}: fragment {info.value.url} answered {info.value.status}")
        self.page.wait_for_function(SETTLED)
        self.check(f"{what} (htmx, now at {self.page.url})")

    def follow(self, locator: Locator, what: str) -> None:
        """Click a link or button that loads a new page, and check that page."""
        with self.page.expect_navigation():
            locator.click()
        self.check(f"{what} ({self.page.url})")

    def check(self, where: str) -> None:
        self.visited += 1
        page = self.page
        if page.evaluate("window.__xss") is not None:
            self.problems.append(f"{where}: a payload ran (window.__xss is set)")
            page.evaluate("delete window.__xss")
        self.problems += [f"{where}: {b}" for b in page.evaluate(DOM_CHECK)]
        if page.locator("h1", has_text="Server Error").count():
            self.problems.append(f"{where}: the page broke (server error)")
        for kind, found in (("dialog", self.dialogs), ("error", self.errors)):
            self.problems += [f"{where}: {kind} {item}" for item in found]
            found.clear()

    def shows(self, text: str, where: str, scope: Locator | None = None) -> None:
        """The payload is on the page as visible text: escaped, not stripped."""
        found = (scope or self.page.locator("body")).get_by_text(text, exact=False).filter(visible=True)
        if not found.count():
            self.problems.append(f"{where}: {text!r} is not shown as text")


@pytest.fixture
def hostile_site(live_server, settings, tmp_path, user_factory) -> tuple[str, dict]:
    built = hostile.build(tmp_path)
    settings.TAPEVIEW_SOURCES = built["sources"]
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    settings.TAPEVIEW_QUIET_SECONDS = 0
    settings.ALLOWED_HOSTS = ["localhost", "127.0.0.1"]
    discovery.sync()
    user_factory("root", "admin")
    return live_server.url, built


@pytest.fixture
def walk(hostile_site):
    site, _ = hostile_site
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        context = browser.new_context(
            bypass_csp=True, base_url=site, viewport={"width": 1400, "height": 1000}
        )
        page = context.new_page()
        walk = Walk(page)  # listens for dialogs and console errors from the first page on
        walk.go("/login/")
        page.fill("input[name=username]", "root")
        page.fill("input[name=password]", "a long test password")
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("heading", name="Sessions")).to_be_visible()
        yield walk
        browser.close()


def _report(walk: Walk, started: float) -> None:
    print(f"\n{walk.visited} page states checked in {time.monotonic() - started:.1f}s")
    assert not walk.problems, "\n".join(walk.problems)


def test_no_payload_runs_on_the_tape_pages(walk: Walk, hostile_site) -> None:
    started = time.monotonic()
    page = walk.page
    names = hostile_site[1]["names"]

    # The session index, as it comes, filtered by a payload, sorted and filtered through htmx.
    walk.go("/")
    rows = page.locator("table.sessions")
    for label in (
        hostile.BUB_SESSION,
        names["nanobot"]["key"],
        names["nanobot"]["legacy_key"],
        names["yachiyo"]["id"],
        names["yachiyo"]["title"],
        NAME_QUOTES,
    ):
        walk.shows(label, "session index", rows)
    walk.go(f"/?q={quote(SCRIPT)}")
    if page.locator("input[name=q]").input_value() != SCRIPT:
        walk.problems.append("session index: the filter box does not hold the payload as typed")
    walk.go("/")
    for column in ("Session", "Last anchor", "Source"):
        walk.htmx(page.locator("table.sessions thead").get_by_role("link", name=column), f"sort by {column}")
    with page.expect_response(lambda r: r.request.headers.get("hx-request") == "true"):
        page.get_by_placeholder("Filter by label").fill(NAME_IMG)
    page.wait_for_function(SETTLED)
    walk.check("index filtered live by a payload")
    walk.go("/sources/")
    walk.shows(NAME_IMG, "sources page", page.locator("table.sources"))
    # A session id that is no safe name is refused there, named as it is, never run.
    walk.shows(names["araliya"]["unsafe_id"], "sources page", page.locator("table.sources"))

    # Every tape's timeline and context preview; on the hostile ones, each field shows its payload.
    tapes = list(Tape.objects.order_by("source", "rel"))
    by_label = {t.label: t for t in tapes}
    fields = {  # label: {field: (where on the first page of the timeline, the text it must show)}
        hostile.BUB_SESSION: BUB_FIELDS,
        NAME_QUOTES: {"file name": ("h1", NAME_QUOTES), "message": (".bubble", SCRIPT)},
        names["nanobot"]["key"]: NANOBOT_FIELDS,
        names["nanobot"]["legacy_key"]: {"file name": ("dl.stats", NAME_IMG), "message": (".bubble", SCRIPT)},
        f"{names['yachiyo']['title']} · {names['yachiyo']['id']}": YACHIYO_FIELDS,
        f"{names['araliya']['id']} ({SCRIPT})": ARALIYA_FIELDS,
    }
    assert set(fields) <= set(by_label), sorted(by_label)
    for tape in tapes:
        # A session araliya lists under an id that is no folder name has no file: its page is a 404.
        status = 200 if Path(tape.path).exists() else 404
        walk.go(f"/tapes/{tape.key}/", status)
        if tape.label in fields:
            page.evaluate("document.querySelectorAll('#entries details').forEach(d => d.open = true)")
            for name, (where, text) in fields[tape.label].items():
                walk.shows(text, f"timeline of {tape.label!r}, {name}", page.locator(f"main {where}"))
            if not page.title().startswith(tape.label):
                walk.problems.append(f"timeline of {tape.label!r}: the title is {page.title()!r}")
        walk.go(f"/tapes/{tape.key}/context", status)
        if tape.label in fields and tape.kind != "araliya":
            walk.shows(SCRIPT, f"context preview of {tape.label!r}", page.locator("ol.context"))

    # The hostile Bub tape: every control of its timeline.
    bub = by_label[hostile.BUB_SESSION]
    walk.go(f"/tapes/{bub.key}/")
    page.screenshot(path=str(ARTIFACTS / "13-hostile-timeline.png"))
    timeline = page.locator("#entries")
    for details in timeline.locator("details").all()[:6]:
        details.locator("summary").click()  # opened by hand too: still text
    walk.check("bub timeline with details opened")
    walk.htmx(timeline.locator("nav.pager").first.get_by_role("link", name="newer →"), "timeline: newer")
    walk.shows(SCRIPT, "bub timeline, second page", page.locator("#entries .bubble"))
    walk.htmx(page.locator("#entries nav.pager").first.get_by_role("link", name="end ⇥"), "timeline: end")
    walk.shows(SCRIPT, "bub timeline, last page: error", page.locator("#entries .k-error .problem"))
    walk.htmx(page.locator("#entries nav.pager").first.get_by_role("link", name="⇤ start"), "timeline: start")
    walk.htmx(
        page.locator("aside.phases table").get_by_role("link", name=SCRIPT).first, "timeline: phase link"
    )
    walk.shows(
        SCRIPT, "bub timeline at a phase: anchor name", page.locator("#entries .anchor.target .anchor-name")
    )
    page.fill("aside.phases input[name=at]", "20")
    walk.htmx(page.locator("aside.phases").get_by_role("button", name="Go"), "timeline: jump")

    walk.go(f"/tapes/{bub.key}/")
    walk.follow(page.locator("#entries a.more").first, "show all: the entry page")
    walk.shows(SCRIPT, "entry page", page.locator("main"))
    walk.follow(page.get_by_role("link", name="Raw line"), "raw line")
    if SCRIPT not in page.locator("body").inner_text():
        walk.problems.append(f"raw line {page.url}: the payload is not shown as text")
    first = index_rows.of(bub).where(kinds=("message",)).first_pos()
    walk.go(f"/tapes/{bub.key}/entries/{first}/")  # the first user message: a hostile channel prefix
    walk.shows(hostile.BUB_SESSION.split(":")[0], "entry page of the first message", page.locator("main"))
    walk.go(f"/tapes/{bub.key}/entries/{first}/raw")

    walk.go(f"/tapes/{bub.key}/context")
    page.locator("select[name=anchor]").select_option(index=1)
    walk.follow(page.get_by_role("button", name="Show"), "context after an anchor")

    # The handoff page, and a handoff whose name and summary are payloads (the message it flashes).
    walk.go(f"/tapes/{bub.key}/handoff")
    page.fill("input[name=name]", f"phase/{NAME_IMG}")
    page.fill("textarea[name=summary]", BUNDLE)
    walk.follow(page.get_by_role("button", name="Write handoff"), "after a hostile handoff")
    walk.shows(f"phase/{NAME_IMG}", "after a hostile handoff", page.locator(".messages, .problem"))
    walk.shows(f"phase/{NAME_IMG}", "after a hostile handoff", page.locator("aside.phases"))

    # As a user's browser gets them, with the site's policy enforced: no violation is reported.
    strict = page.context.browser.new_context(
        base_url=hostile_site[0], storage_state=page.context.storage_state()
    )
    enforced = Walk(strict.new_page())
    for path in (f"/tapes/{bub.key}/", f"/tapes/{bub.key}/context", f"/?q={quote(SCRIPT)}"):
        enforced.go(path)
    walk.problems += [f"with the CSP on: {problem}" for problem in enforced.problems]
    strict.close()
    _report(walk, started)


def test_no_payload_runs_on_the_memory_search_and_admin_pages(walk: Walk, hostile_site) -> None:
    started = time.monotonic()
    page = walk.page
    walk.go("/memory/")
    walk.shows(NAME_IMG, "memory index", page.locator("table.stores"))
    bub = Tape.objects.get(label=hostile.BUB_SESSION)
    walk.go(f"/memory/tapes/{bub.key}/")  # the timeline's "Memory zone" link
    walk.shows(SCRIPT, "bub memory zone from its tape", page.locator("#long-term"))
    stores = list(MemoryStore.objects.order_by("source", "rel"))
    kinds = {s.kind for s in stores}
    assert {"bub.zone", "nanobot.memory", "nanobot.file", "yachiyo.memory", "araliya.kv"} <= kinds, kinds
    shown = {  # what each kind's page must show as text
        "bub.zone": SCRIPT,
        "nanobot.memory": SCRIPT,
        "nanobot.file": SCRIPT,
        "nanobot.history": SCRIPT,
        "yachiyo.memory": SCRIPT,
    }
    for store in stores:
        walk.go(f"/memory/{store.key}/")
        if store.kind in shown and "AGENTS" not in store.rel and "HEARTBEAT" not in store.rel:
            walk.shows(shown[store.kind], f"memory store {store.kind} {store.rel!r}", page.locator("main"))
        walk.go(f"/memory/{store.key}/diff")
        if store.kind == "nanobot.history":
            walk.go(f"/memory/{store.key}/?q={quote(SCRIPT)}")
            walk.shows(SCRIPT, "nanobot history searched", page.locator("ol.history"))
        if store.editable and store.kind.startswith("nanobot"):
            walk.go(f"/memory/{store.key}/edit")
            text = page.locator("textarea[name=text]").input_value()
            if MARKDOWN.strip() not in text and "AGENTS" not in store.rel and "HEARTBEAT" not in store.rel:
                walk.problems.append(
                    f"edit page of {store.rel!r}: the textarea does not hold the file as it is"
                )
    zone = next(s for s in stores if s.kind == "bub.zone")
    walk.go(f"/memory/{zone.key}/?days=0")  # the prune preview lists the notes' (hostile) dates
    walk.shows(NAME_IMG, "bub zone daily note dates", page.locator("article.daily h3"))
    walk.shows(NAME_IMG, "bub zone prune preview", page.locator("#prune-preview"))
    if hostile.CLOSE not in page.locator("textarea[name=text]").first.input_value():
        walk.problems.append("bub zone: the long-term textarea does not hold the text as it is")
    yachiyo = next(s for s in stores if s.kind == "yachiyo.memory")
    walk.go(f"/memory/{yachiyo.key}/")
    walk.shows(NAME_IMG, "yachiyo memory keywords", page.locator("table.entries .badge"))
    walk.shows(SCRIPT, "yachiyo memory content", page.locator("table.entries pre"))
    kv = next(s for s in stores if s.kind == "araliya.kv" and NAME_QUOTES in s.rel)
    walk.go(f"/memory/{kv.key}/")
    walk.shows(SCRIPT, "araliya kv", page.locator("table.kv"))
    walk.shows(NAME_QUOTES, "araliya kv", page.locator("table.kv"))

    # Markdown: raw HTML and javascript: links are text, the live preview (htmx) too; then a save.
    memory = next(s for s in stores if s.kind == "nanobot.memory")
    walk.go(f"/memory/{memory.key}/")
    walk.shows(SCRIPT, "MEMORY.md rendered", page.locator("#content"))
    walk.shows("[click me](javascript:window.__xss=1)", "MEMORY.md rendered", page.locator("#content"))
    walk.go(f"/memory/{memory.key}/edit")
    editor = page.locator("textarea[name=text]")
    with page.expect_response(lambda r: r.request.headers.get("hx-request") == "true"):
        editor.fill(editor.input_value() + f"\n\n## added {TEMPLATE}\n\n{BUNDLE}\n")
    page.wait_for_function(SETTLED)
    walk.check("MEMORY.md live preview")
    walk.shows("added {{7", "MEMORY.md live preview", page.locator("#preview"))
    walk.shows(SCRIPT, "MEMORY.md live preview", page.locator("#preview"))
    walk.follow(page.get_by_role("button", name="Save", exact=True), "MEMORY.md saved")
    walk.go(f"/memory/{memory.key}/diff")
    walk.shows(SCRIPT, "MEMORY.md diff", page.locator("table.diff"))

    # Search: a payload as the query, on both tabs, typed live, and a snippet followed.
    walk.go(f"/search/?q={quote(SCRIPT)}")
    walk.shows(SCRIPT, "search (tapes)", page.locator("#results"))
    walk.htmx(page.get_by_role("link", name="Memory", exact=True).last, "search: memory tab")
    walk.go(f"/search/?q={quote(SCRIPT)}&tab=memory")
    walk.shows(SCRIPT, "search (memory)", page.locator("#results"))
    walk.go(f"/search/?q={quote(NAME_QUOTES)}&tab=memory")
    walk.go("/search/")
    with page.expect_response(lambda r: r.request.headers.get("hx-request") == "true"):
        page.get_by_role("searchbox", name="Search").fill("onerror")
    page.wait_for_function(SETTLED)
    walk.check("search typed live")
    if page.locator("#results a.snippet").count():
        walk.follow(page.locator("#results a.snippet").first, "search hit followed")

    # The admin's pages: the audit log holds the hostile save, with its diff.
    walk.go("/audit/")
    page.locator("table.audit details summary").first.click()
    walk.shows(SCRIPT, "audit log diff", page.locator("table.audit"))
    walk.go(f"/audit/?q={quote(SCRIPT)}")
    walk.go("/users/")
    walk.go("/tokens/")
    _report(walk, started)
