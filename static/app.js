// Keys on every page ("/" search, "?" help), the busy state said to screen readers, and live polling
// held while the tab is hidden.
// Loaded by base.html with defer: the DOM is there when this runs.
(function () {
  "use strict";

  function isTyping(target) {
    if (!(target instanceof Element)) return false;
    return target.closest("input, textarea, select, [contenteditable]:not([contenteditable=false])") !== null;
  }

  function isShown(element) {
    return element.getClientRects().length > 0;
  }

  // The page's own search or filter box: an explicit [data-search], else a search input, else a `q`.
  function searchInput() {
    var selectors = ["[data-search]", "main input[type=search]", "input[type=search]", "input[name=q]"];
    for (var i = 0; i < selectors.length; i++) {
      var found = Array.prototype.filter.call(document.querySelectorAll(selectors[i]), isShown);
      if (found.length) return found[0];
    }
    return null;
  }

  function focusSearch() {
    var input = searchInput();
    if (input) {
      input.focus();
      if (typeof input.select === "function") input.select();
      return true;
    }
    var url = document.body.dataset.searchUrl;
    if (url) {
      window.location.assign(url);
      return true;
    }
    return false;
  }

  function showHelp() {
    // A page with keys of its own (the timeline) shows its own help by cancelling this event.
    var asked = new CustomEvent("tapeview:help", { cancelable: true });
    if (!document.dispatchEvent(asked)) return;
    var help = document.getElementById("help");
    if (help && !help.open) help.showModal();
  }

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === "Escape" && event.target === searchInput()) {
      // Leaving the box gives the keys back ("/" returns to it). The words and their results stay:
      // Chrome's own Escape in a search box would clear them.
      event.preventDefault();
      event.target.blur();
      return;
    }
    if (isTyping(event.target)) return;
    if (event.key === "/") {
      if (focusSearch()) event.preventDefault();
    } else if (event.key === "?") {
      event.preventDefault();
      showHelp();
    }
  });

  // A click on the backdrop (outside the dialog's box) closes the help too.
  var help = document.getElementById("help");
  if (help) {
    help.addEventListener("click", function (event) {
      if (event.target === help) help.close();
    });
  }

  // The spinner in the header is CSS on .htmx-request (base.html's hx-indicator); this says the same
  // to screen readers. A poll (hx-trigger "every 2s") is background work: no spinner, nothing said.
  var busy = document.getElementById("busy");
  var status = document.getElementById("busy-status");
  var asked = 0; // requests a person is waiting for
  function isPoll(detail) {
    var config = detail.requestConfig;
    if (config && config.triggeringEvent) return false;
    var trigger = detail.elt instanceof Element ? detail.elt.getAttribute("hx-trigger") || "" : "";
    return /(^|,)\s*every\s/.test(trigger);
  }
  function say(text) {
    if (status && status.textContent !== text) status.textContent = text;
  }
  document.addEventListener("htmx:beforeSend", function (event) {
    if (isPoll(event.detail)) {
      if (asked === 0 && busy) busy.classList.remove("htmx-request"); // htmx drops its count at the end
      return;
    }
    asked += 1;
    say("Loading…");
  });
  document.addEventListener("htmx:afterRequest", function (event) {
    if (isPoll(event.detail)) return;
    asked = Math.max(0, asked - 1);
    if (asked === 0) say("");
  });

  // Live polling ([data-live]: the session index's rows, the timeline's live end) is held while the tab
  // is hidden: nobody looks. Not htmx's own trigger filter ("every 2s [cond]"): htmx compiles it with
  // Function(), which the CSP (script-src 'self', settings.py) refuses, and the poll would go on.
  // data-live names the poller's badge: it says data-paused-text while hidden, data-live-text again
  // when shown, and counts the polls held in data-skipped. Shown again, the poller is sent
  // "visible-again" (the rows listen to it and update at once).
  function liveBadge(poller) {
    var badge = document.getElementById(poller.dataset.live);
    // A stopped badge (the timeline's file was replaced) says so, and nothing follows any more.
    return badge && !badge.classList.contains("stopped") ? badge : null;
  }
  function showLive(badge, paused) {
    badge.classList.toggle("paused", paused);
    badge.textContent = paused ? badge.dataset.pausedText : badge.dataset.liveText;
  }
  document.addEventListener("htmx:confirm", function (event) {
    var poller = event.detail.elt;
    if (!(poller instanceof Element) || !poller.hasAttribute("data-live")) return;
    if (document.visibilityState !== "hidden") return;
    event.preventDefault();
    var badge = liveBadge(poller);
    if (!badge) return;
    badge.dataset.skipped = String(Number(badge.dataset.skipped || 0) + 1);
    showLive(badge, true);
  });
  document.addEventListener("visibilitychange", function () {
    var hidden = document.visibilityState === "hidden";
    Array.prototype.forEach.call(document.querySelectorAll("[data-live]"), function (poller) {
      var badge = liveBadge(poller);
      if (badge) showLive(badge, hidden);
      if (!hidden) poller.dispatchEvent(new CustomEvent("visible-again"));
    });
  });
})();
