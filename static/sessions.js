// The session index's live rows (templates/tapes/tape_list.html). #rows polls itself through htmx
// (hx-trigger "every 2s"); this file only holds a poll back: while the tab is hidden, and while the
// filter box holds text the rows do not show yet (the filter's own request is on its way, and a poll
// of the old filter must not put the old rows back). When the tab is shown again the rows update at once.
(function () {
  "use strict";

  function live(paused) {
    var badge = document.getElementById("live");
    if (!badge) return;
    badge.classList.toggle("paused", paused);
    badge.textContent = paused ? "paused" : "live";
  }

  document.addEventListener("htmx:confirm", function (event) {
    var rows = event.detail.elt;
    if (!rows || rows.id !== "rows") return; // a sort, a page or the filter: always sent
    if (document.hidden) {
      event.preventDefault();
      live(true);
      return;
    }
    var filter = document.querySelector("form.filters input[name=q]");
    if (filter && filter.value !== (rows.getAttribute("data-q") || "")) event.preventDefault();
  });

  document.addEventListener("visibilitychange", function () {
    if (document.hidden) return;
    live(false);
    var rows = document.getElementById("rows");
    if (rows) rows.dispatchEvent(new CustomEvent("visible-again"));
  });
})();
