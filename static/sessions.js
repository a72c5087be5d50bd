// The session index's live rows (templates/tapes/tape_list.html). #rows polls itself through htmx
// (hx-trigger "every 2s"), held while the tab is hidden by app.js ([data-live]); this file holds a poll
// back while the filter box holds text the rows do not show yet (the filter's own request is on its
// way, and a poll of the old filter must not put the old rows back).
(function () {
  "use strict";

  document.addEventListener("htmx:confirm", function (event) {
    var rows = event.detail.elt;
    if (!rows || rows.id !== "rows") return; // a sort, a page or the filter: always sent
    var filter = document.querySelector("form.filters input[name=q]");
    if (filter && filter.value !== (rows.getAttribute("data-q") || "")) event.preventDefault();
  });
})();
