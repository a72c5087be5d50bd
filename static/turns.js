// The turns of a tape as a tree: keys as the timeline's (j/k or the arrows move, Enter shows the
// node in the detail pane, ←/→ fold and unfold a turn, e the next error, `?` this page's help), and
// the tree's selection kept in step with the pane that htmx loads (the URL is pushed: a reload
// shows the same node).
(function () {
  "use strict";

  const NODES = "#turn-tree a.node";
  const STOPS = NODES + ", #turn-tree details.turn-node > summary"; // a folded turn is a stop too

  function shown(el) {
    const fold = el.closest("details.turn-node");
    if (fold && !fold.open && !el.matches("summary")) return false;
    return el.getClientRects().length > 0;
  }

  function nodes() {
    return Array.from(document.querySelectorAll(STOPS)).filter(shown);
  }

  function here(list) {
    const focused = list.indexOf(document.activeElement);
    if (focused >= 0) return focused;
    return list.findIndex((a) => a.hasAttribute("aria-current"));
  }

  function move(dir, match) {
    const list = nodes();
    let i = here(list);
    i = i < 0 ? (dir > 0 ? 0 : list.length - 1) : i + dir;
    while (match && i >= 0 && i < list.length && !list[i].matches(match)) i += dir;
    if (i >= 0 && i < list.length) {
      list[i].focus();
      list[i].scrollIntoView({ block: "nearest" });
    }
  }

  function fold(open) {
    const el = document.activeElement;
    if (!(el instanceof Element) || !el.matches(STOPS)) return;
    const turn = el.closest("details.turn-node");
    if (!turn) return;
    turn.open = open;
    if (!open) turn.querySelector("summary").focus();
  }

  function typing(target) {
    return target instanceof Element && !!target.closest("input, textarea, select, [contenteditable]");
  }

  function help(open) {
    const box = document.getElementById("turns-help");
    if (!box) return;
    box.hidden = open === undefined ? !box.hidden : !open;
    if (!box.hidden) document.getElementById("turns-help-close").focus();
  }

  function onKey(event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    const box = document.getElementById("turns-help");
    if (event.key === "Escape" && box && !box.hidden) help(false);
    else if (event.key === "j" || event.key === "ArrowDown") move(1);
    else if (event.key === "k" || event.key === "ArrowUp") move(-1);
    else if (event.key === "ArrowLeft") fold(false);
    else if (event.key === "ArrowRight") fold(true);
    else if (event.key === "e") move(1, ".error");
    else if (event.key === "Enter" && document.activeElement && document.activeElement.matches(NODES)) {
      return; // the link's own click: htmx loads the pane
    } else return;
    event.preventDefault();
  }

  // The tree marks the node whose detail the pane shows.
  function mark() {
    const pane = document.getElementById("node-detail");
    const chosen = new URL(window.location.href).searchParams.get("node");
    document.querySelectorAll(NODES).forEach((a) => {
      if (a.dataset.node === chosen && pane) a.setAttribute("aria-current", "true");
      else a.removeAttribute("aria-current");
    });
  }

  document.addEventListener("keydown", onKey);
  document.addEventListener("tapeview:help", (event) => {
    if (!document.getElementById("turns-help")) return;
    event.preventDefault();
    help();
  });
  document.addEventListener("click", (event) => {
    if (event.target.id === "turns-help-close") help(false);
  });
  document.addEventListener("htmx:afterSettle", mark);
  document.addEventListener("DOMContentLoaded", () => {
    const chosen = document.querySelector(NODES + "[aria-current]");
    if (chosen) {
      chosen.focus({ preventScroll: true });
      chosen.scrollIntoView({ block: "nearest" });
    }
  });
})();
