"""Compact mode of the timeline in a real Chromium, wide and on a phone: the parts of each one-line
entry and anchor row neither run over one another nor past the right edge."""

from __future__ import annotations

import os

import pytest
from playwright.sync_api import Browser, expect

from tapeview.tapes.models import Tape
from tests.project.conftest import browser, demo_site  # noqa: F401 (fixtures)
from tests.project.demo_site import DemoSite, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

# Each row's parts that run over one another or past the row's or the window's right edge. A part
# that clips its text (overflow hidden: an ellipsis) is its box; any other, its box and its text.
CLASHES = """(rows) => {
  const extent = (el) => {
    const box = el.getBoundingClientRect();
    if (getComputedStyle(el).overflowX !== "visible") return box;
    const r = document.createRange(); r.selectNodeContents(el);
    const text = r.getBoundingClientRect();
    return {left: Math.min(box.left, text.left), right: Math.max(box.right, text.right),
            top: Math.min(box.top, text.top), bottom: Math.max(box.bottom, text.bottom)};
  };
  const out = [];
  for (const row of rows) {
    if (!row.getClientRects().length) continue;
    const edge = Math.min(row.getBoundingClientRect().right, document.documentElement.clientWidth);
    const parts = [...row.children].filter((el) => el.getClientRects().length && el.getBoundingClientRect().width > 0)
      .map((el) => [el, extent(el)]);
    const name = (el) => `${row.closest("[id]") ? row.closest("[id]").id : "?"} ${el.className || el.tagName}`;
    for (const [el, box] of parts) if (box.right > edge + 1) out.push(`${name(el)} past the right edge`);
    for (let i = 0; i < parts.length; i++) for (let j = i + 1; j < parts.length; j++) {
      const [a, x] = parts[i], [b, y] = parts[j];
      const across = Math.min(x.right, y.right) - Math.max(x.left, y.left);
      const down = Math.min(x.bottom, y.bottom) - Math.max(x.top, y.top);
      if (across > 1 && down > 1) out.push(`${name(a)} over ${name(b)}`);
    }
  }
  return out;
}"""


@pytest.mark.parametrize("width", [1280, 390])
def test_compact_rows_keep_their_parts_apart_and_inside(
    browser: Browser,  # noqa: F811
    demo_site: DemoSite,  # noqa: F811
    width: int,
) -> None:
    page = browser.new_context(viewport={"width": width, "height": 900}).new_page()
    sign_in(page, demo_site.url)
    tapes = Tape.objects.filter(role="tape").order_by("-anchors")
    paths = [demo_site.pages["timeline"], *(f"/tapes/{t.key}/" for t in tapes[:6])]
    clashes = {}
    for n, path in enumerate(dict.fromkeys(paths)):
        page.goto(demo_site.url + path)
        if n == 0:
            box = page.locator("#timeline-controls").get_by_label("compact")
            box.check()
            expect(page.locator("html.tv-compact")).to_have_count(1)
        found = page.locator("#entries .entry header, #entries .anchor").evaluate_all(CLASHES)
        if found:
            clashes[path] = found[:5]
    assert clashes == {}
