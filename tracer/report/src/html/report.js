// dcg's HTML report: the call trees (built lazily: a folded call's children are made
// when it is opened), the views, and the search. No network, no libraries.
(function () {
  "use strict";
  var errors = [];
  window.addEventListener("error", function (e) {
    errors.push(String(e.message));
    document.body.dataset.errors = errors.join(" | ");
  });
  // The flame graph's script rewrites the URL of its state; a file:// page may refuse.
  var replace = history.replaceState.bind(history);
  history.replaceState = function () {
    try { replace.apply(null, arguments); } catch (e) { /* a file:// page */ }
  };

  var OPEN_DEPTH = 2;   // calls this deep start open...
  var OPEN_BUDGET = 3000; // ...while the rows built at the start stay below this
  var ROOTS_AT_ONCE = 500;
  var CTX = ["", "hardirq", "softirq", "nmi"];
  var D, kids, roots, origins, made = {};

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function us(ns) { return (ns / 1000).toFixed(3) + " us"; }

  // One call: [func, parent, args, ret, duration ns, error, origin, ctx, inlined in,
  // calls lost]
  function row(i) {
    var c = D.calls[i];
    var node = el("div", "call");
    node.dataset.i = i;
    var r = el("div", "row");
    var tog = el("span", "tog", kids[i].length ? "\u25b8" : "");
    r.appendChild(tog);
    r.appendChild(el("span", "fn", D.names[c[0]]));
    r.appendChild(el("span", "args", "(" + c[2] + ")"));
    if (c[8]) r.appendChild(el("span", "mark inline", "inlined in " + c[8]));
    if (c[3] !== null) r.appendChild(el("span", "ret" + (c[5] ? " err" : ""), " = " + c[3]));
    if (c[4] !== null) r.appendChild(el("span", "dur", us(c[4])));
    if (c[6] >= 0 && c[6] !== i) {
      r.appendChild(el("span", "mark origin", "error from " + D.names[D.calls[c[6]][0]]));
    }
    if (origins[i] && c[1] >= 0) r.appendChild(el("span", "mark origin", "error origin"));
    if (c[9]) r.appendChild(el("span", "mark lost", c[9] + (c[9] === 1 ? " call" : " calls") + " lost"));
    var parentCtx = c[1] >= 0 ? D.calls[c[1]][7] : 0;
    if (c[7] && c[7] !== parentCtx) {
      node.className += " irq";
      r.appendChild(el("span", "mark irq", "==> " + CTX[c[7]] + " (interrupt)"));
    }
    node.appendChild(r);
    if (kids[i].length) tog.onclick = function () { toggle(node, i); };
    made[i] = node;
    return node;
  }

  function open(node, i) {
    if (node.dataset.open === "1" || !kids[i].length) return;
    var box = el("div", "kids");
    kids[i].forEach(function (k) { box.appendChild(row(k)); });
    node.appendChild(box);
    node.dataset.open = "1";
    node.firstChild.firstChild.textContent = "\u25be";
  }

  function toggle(node, i) {
    if (node.dataset.open === "1") {
      node.removeChild(node.lastChild);
      node.dataset.open = "0";
      node.firstChild.firstChild.textContent = "\u25b8";
      kids[i].forEach(function forget(k) { delete made[k]; kids[k].forEach(forget); });
    } else {
      open(node, i);
    }
  }

  function openTo(node, i, depth) {
    if (depth >= OPEN_DEPTH || kids[i].length > budget) return;
    budget -= kids[i].length;
    open(node, i);
    kids[i].forEach(function (k) { if (made[k]) openTo(made[k], k, depth + 1); });
  }

  var shownRoots = 0;
  var budget = OPEN_BUDGET;
  function moreRoots(upTo) {
    var tree = document.getElementById("tree");
    var old = document.getElementById("more-roots");
    if (old) old.remove();
    var end = Math.min(roots.length, Math.max(upTo || 0, shownRoots + ROOTS_AT_ONCE));
    for (; shownRoots < end; shownRoots++) {
      var i = roots[shownRoots];
      var n = row(i);
      tree.appendChild(n);
      openTo(n, i, 0);
    }
    if (shownRoots < roots.length) {
      var m = el("div", "more", "\u2026 " + (roots.length - shownRoots) + " more top-level calls (show)");
      m.id = "more-roots";
      m.onclick = function () { moreRoots(); };
      tree.appendChild(m);
    }
  }

  // Find the first call of a function whose name contains `q`: open its path, mark it.
  function search(q) {
    if (!q) return;
    var prev = document.querySelector(".call.found");
    if (prev) prev.classList.remove("found");
    for (var i = 0; i < D.calls.length; i++) {
      if (D.names[D.calls[i][0]].indexOf(q) < 0) continue;
      var path = [];
      for (var p = i; p >= 0; p = D.calls[p][1]) path.unshift(p);
      var r = roots.indexOf(path[0]);
      if (r >= shownRoots) moreRoots(r + 1);
      for (var k = 0; k < path.length - 1; k++) open(made[path[k]], path[k]);
      var n = made[i];
      n.classList.add("found");
      show("tree");
      n.scrollIntoView({ block: "center" });
      document.body.dataset.found = i;
      document.body.dataset.foundDepth = path.length - 1;
      return;
    }
    document.body.dataset.found = "none";
  }

  function show(view) {
    ["tree", "flame", "graph", "tables"].forEach(function (v) {
      document.getElementById("view-" + v).classList.toggle("on", v === view);
      document.getElementById("tab-" + v).classList.toggle("on", v === view);
    });
    // The flame graph lays its labels out for its width, which it has only when shown.
    if (view === "flame") window.dispatchEvent(new Event("resize"));
  }

  function start() {
    D = JSON.parse(document.getElementById("dcg-data").textContent);
    kids = D.calls.map(function () { return []; });
    roots = [];
    origins = {};
    D.calls.forEach(function (c, i) {
      if (c[1] >= 0) kids[c[1]].push(i); else roots.push(i);
      if (c[6] >= 0) origins[c[6]] = true;
    });
    ["tree", "flame", "graph", "tables"].forEach(function (v) {
      document.getElementById("tab-" + v).onclick = function () { show(v); };
    });
    var box = document.getElementById("dcg-search");
    box.onkeydown = function (e) { if (e.key === "Enter") search(box.value); };
    moreRoots();
    if (typeof window.init === "function" && document.getElementById("frames")) window.init();
    // `#view=flame&search=name`: what to show first.
    var params = {};
    location.hash.slice(1).split("&").forEach(function (kv) {
      var p = kv.split("=");
      if (p[0]) params[p[0]] = decodeURIComponent(p[1] || "");
    });
    show(params.view || "tree");
    if (params.search) { box.value = params.search; search(params.search); }
    if (params.view) show(params.view);
    document.body.dataset.calls = D.calls.length;
    document.body.dataset.ready = "1";
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
