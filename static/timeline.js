// The timeline of one tape, read at speed: kinds hidden or shown and a compact mode (remembered
// in localStorage, applied as classes on <html> so that hiding is CSS only), the live end of the
// last page (polled by htmx, held by app.js while the tab is hidden, kept at the bottom for a
// reader who is there), keys (j/k, n/p, e, and `?` through base's help event), and "copy link"
// on entries.
// Loaded in <head> without `defer`: the remembered classes are on <html> before the page is drawn.
(function () {
  "use strict";

  const KINDS = ["message", "tool", "event", "system", "anchor"];
  const HIDDEN_KEY = "tapeview.timeline.hidden";
  const COMPACT_KEY = "tapeview.timeline.compact";
  const CHOSEN_KEY = "tapeview.timeline.chosen"; // the entry `e` opened on another page, in this tab
  const NAVIGABLE = "#entries .entry, #entries .anchor, #entries details.fold > summary";
  const root = document.documentElement;

  function load(key) {
    try {
      return window.localStorage.getItem(key);
    } catch (err) {
      return null; // storage refused (private mode, a policy): nothing is remembered
    }
  }

  function save(key, value) {
    try {
      window.localStorage.setItem(key, value);
    } catch (err) {
      /* as above */
    }
  }

  function hiddenKinds() {
    let kinds;
    try {
      kinds = JSON.parse(load(HIDDEN_KEY) || "[]");
    } catch (err) {
      kinds = [];
    }
    return Array.isArray(kinds) ? kinds.filter((k) => KINDS.includes(k)) : [];
  }

  function applyView() {
    const hidden = hiddenKinds();
    KINDS.forEach((k) => root.classList.toggle("tv-hide-" + k, hidden.includes(k)));
    root.classList.toggle("tv-compact", load(COMPACT_KEY) === "1");
  }

  applyView();

  // Controls

  function setUpControls() {
    const controls = document.getElementById("timeline-controls");
    if (!controls) return;
    const hidden = hiddenKinds();
    controls.querySelectorAll("input[data-kind]").forEach((box) => {
      box.checked = !hidden.includes(box.dataset.kind);
      box.addEventListener("change", () => {
        const shown = Array.from(controls.querySelectorAll("input[data-kind]"));
        save(HIDDEN_KEY, JSON.stringify(shown.filter((b) => !b.checked).map((b) => b.dataset.kind)));
        applyView();
      });
    });
    const compact = document.getElementById("compact");
    compact.checked = load(COMPACT_KEY) === "1";
    compact.addEventListener("change", () => {
      save(COMPACT_KEY, compact.checked ? "1" : "0");
      applyView();
    });
    controls.hidden = false;
  }

  let statusTimer = null;

  function say(text) {
    const status = document.getElementById("timeline-status");
    if (!status) return;
    status.textContent = text;
    clearTimeout(statusTimer);
    statusTimer = setTimeout(() => (status.textContent = ""), 3000);
  }

  // One jump at a time: typing a position clears the time, and the other way round.
  function setUpJump() {
    const form = document.querySelector("form.jump");
    if (!form) return;
    const at = form.elements.namedItem("at");
    const time = form.elements.namedItem("time");
    if (!at || !time) return;
    at.addEventListener("input", () => (time.value = ""));
    time.addEventListener("input", () => (at.value = ""));
  }

  // Moving through the entries

  let current = null;

  function shown(el) {
    // Not hidden by a kind, nor inside a closed fold (whose content still has boxes in Chrome).
    const inside = el.matches("summary") ? el.parentElement.parentElement : el;
    if (inside && inside.closest("details:not([open])")) return false;
    return el.getClientRects().length > 0;
  }

  function stops() {
    return Array.from(document.querySelectorAll(NAVIGABLE)).filter(shown);
  }

  function placeOf(list, dir) {
    // Where the reader is: the entry chosen last, else the first one below the top of the window.
    const i = current ? list.indexOf(current) : -1;
    if (i >= 0) return i;
    const below = list.findIndex((el) => el.getBoundingClientRect().top >= 0);
    if (below < 0) return list.length;
    return dir > 0 ? below - 1 : below;
  }

  function choose(el) {
    if (current) current.classList.remove("kb-current");
    current = el;
    el.classList.add("kb-current");
    if (!el.hasAttribute("tabindex") && !el.matches("summary")) el.setAttribute("tabindex", "-1");
    el.focus({ preventScroll: true });
    const tall = el.getBoundingClientRect().height > window.innerHeight * 0.8;
    el.scrollIntoView({ block: tall ? "start" : "nearest" });
  }

  function step(dir, match, none) {
    const list = stops();
    let i = placeOf(list, dir) + dir;
    while (i >= 0 && i < list.length && match && !list[i].matches(match)) i += dir;
    if (i >= 0 && i < list.length) {
      choose(list[i]);
      return true;
    }
    if (none) say(none);
    return false;
  }

  function nextError() {
    if (step(1, ".entry.error")) return;
    // None later on this page: the tape's next error, which the server names on the page.
    const pos = document.getElementById("entries")?.dataset.nextError;
    if (pos) {
      say("Opening the next error…");
      try {
        window.sessionStorage.setItem(CHOSEN_KEY, "e" + pos);
      } catch (err) {
        /* storage refused: the error is still shown, without the focus */
      }
      const url = new URL(window.location.href);
      url.search = "?at=" + pos;
      url.hash = "#e" + pos;
      window.location.assign(url.href);
    } else {
      say("No later error");
    }
  }

  const NOT_TYPED = ["checkbox", "radio", "button", "submit", "reset", "range", "color", "file"];

  function typing(target) {
    if (!(target instanceof Element)) return false;
    if (target.isContentEditable || target.closest("textarea, select, [contenteditable]")) return true;
    return target instanceof HTMLInputElement && !NOT_TYPED.includes(target.type);
  }

  function onKey(event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target)) return;
    if (event.key === "Escape" && !help().hidden) {
      toggleHelp(false);
    } else if (event.key === "j") {
      step(1, null, "The last entry of this page");
    } else if (event.key === "k") {
      step(-1, null, "The first entry of this page");
    } else if (event.key === "n") {
      step(1, ".anchor", "No later anchor on this page");
    } else if (event.key === "p") {
      step(-1, ".anchor", "No earlier anchor on this page");
    } else if (event.key === "e") {
      nextError();
    } else {
      return;
    }
    event.preventDefault();
  }

  // The help: base's `?` asks whether a page has its own (the event), and shows its global help if not.

  function help() {
    return document.getElementById("timeline-help") || { hidden: true };
  }

  function toggleHelp(open) {
    const box = document.getElementById("timeline-help");
    if (!box) return;
    box.hidden = open === undefined ? !box.hidden : !open;
    if (!box.hidden) document.getElementById("timeline-help-close").focus();
    else if (current) current.focus({ preventScroll: true });
  }

  function onHelp(event) {
    if (!document.getElementById("timeline-help")) return;
    event.preventDefault();
    toggleHelp();
  }

  // Copy link

  function copy(text) {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
    return new Promise((resolve, reject) => {
      const area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.style.position = "fixed";
      area.style.opacity = "0";
      document.body.appendChild(area);
      area.select();
      const done = document.execCommand("copy");
      area.remove();
      if (done) resolve();
      else reject(new Error("copy refused"));
    });
  }

  function onClick(event) {
    const picked = event.target.closest("#entries .entry, #entries .anchor");
    if (picked) {
      // The entry clicked is where j/k go on from.
      if (current) current.classList.remove("kb-current");
      current = picked;
      picked.classList.add("kb-current");
    }
    if (event.target.id === "timeline-help-close") {
      toggleHelp(false);
      return;
    }
    const link = event.target.closest("a.copy-link");
    if (!link || event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    const url = new URL(link.getAttribute("href"), window.location.href).href;
    const label = link.dataset.label || link.textContent;
    link.dataset.label = label;
    copy(url).then(
      () => {
        link.textContent = "copied ✓";
        link.classList.add("copied");
        say("Link copied: " + url);
      },
      () => {
        link.textContent = "copy failed";
        say("Copy this link by hand: " + url);
      },
    );
    setTimeout(() => {
      link.textContent = label;
      link.classList.remove("copied");
    }, 2500);
  }

  // The entry a link names: its fold opened, in view, chosen for j/k.

  function reveal(el) {
    const fold = el.closest("details.fold");
    if (fold && !fold.open) fold.open = true;
    el.scrollIntoView({ block: "center" });
    if (current) current.classList.remove("kb-current");
    current = el;
  }

  // The error `e` opened on another page is chosen there as it is on the page itself: focused, so
  // that the next key starts from it. An entry a link names is only shown.
  function takeChosen() {
    try {
      const id = window.sessionStorage.getItem(CHOSEN_KEY);
      window.sessionStorage.removeItem(CHOSEN_KEY);
      return id;
    } catch (err) {
      return null;
    }
  }

  function revealHash() {
    const id = decodeURIComponent(window.location.hash.slice(1));
    const el = id ? document.getElementById(id) : null;
    const chosen = takeChosen();
    if (!el || !el.closest("#entries")) return;
    reveal(el);
    if (chosen === id) choose(el);
  }

  // The live end

  let pinned = false; // the reader was at the bottom when new entries came: keep them there

  function atBottom() {
    return window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 48;
  }

  function isEdge(el) {
    return el instanceof Element && el.classList.contains("live-edge");
  }

  function onBeforeSwap(event) {
    // A 204 (the file unchanged) swaps nothing.
    if (isEdge(event.detail.target)) pinned = event.detail.shouldSwap && atBottom();
  }

  function onAfterSwap(event) {
    if (pinned) {
      pinned = false;
      window.scrollTo(0, document.documentElement.scrollHeight);
    }
    if (event.detail.target && event.detail.target.id === "entries") {
      // A page brought by htmx (pager, jump form): show the entry jumped to.
      // The page names the entry jumped to: a card drawn before for another reader may not carry
      // the `target` class, as on a jump within the page already shown.
      current = null;
      const entries = document.getElementById("entries");
      const jumped = entries && entries.dataset.jump ? document.getElementById(`e${entries.dataset.jump}`) : null;
      const target = jumped || document.querySelector("#entries .target");
      if (target) {
        target.classList.add("target");
        reveal(target);
      }
    }
  }

  document.addEventListener("keydown", onKey);
  document.addEventListener("tapeview:help", onHelp);
  document.addEventListener("click", onClick);
  document.addEventListener("htmx:beforeSwap", onBeforeSwap);
  document.addEventListener("htmx:afterSwap", onAfterSwap);
  window.addEventListener("hashchange", revealHash);
  document.addEventListener("DOMContentLoaded", () => {
    setUpControls();
    setUpJump();
    revealHash();
  });
})();
