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
  var D, kids, roots, origins, made = {};

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // One call: [func, parent, args, ret, duration, error, origin, interrupt, inlined in,
  // calls lost, interrupts' time, stack (outermost first), output parameters]; every
  // text as the text printer writes it.
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
    if (c[12]) r.appendChild(el("span", "outs", " " + c[12]));
    if (c[4] !== null) r.appendChild(el("span", "dur", c[4]));
    if (c[6] >= 0 && c[6] !== i) {
      var o = c[6];
      var from = el("span", "mark origin from", "error from " + D.names[D.calls[o][0]]);
      from.title = "show the call where the error began";
      from.onclick = function () { reveal(o); };
      r.appendChild(from);
    }
    if (origins[i] && c[1] >= 0) r.appendChild(el("span", "mark origin", "error origin"));
    if (c[9]) r.appendChild(el("span", "mark lost", c[9]));
    if (c[10]) r.appendChild(el("span", "mark irqs", "irqs " + c[10]));
    if (c[11]) {
      var st = el("span", "mark stack", "stack");
      st.title = "show the stack that led to this call";
      st.onclick = function () { stack(node, c[11]); };
      r.appendChild(st);
    }
    if (c[13]) {
      node.className += " kernel";
      r.appendChild(el("span", "mark kernel", "kernel"));
    }
    if (c[7]) {
      node.className += " irq";
      r.appendChild(el("span", "mark irq", "==> " + c[7] + " (interrupt)"));
    }
    node.appendChild(r);
    if (kids[i].length) tog.onclick = function () { toggle(node, i); };
    made[i] = node;
    return node;
  }

  // A top-level call's stack, below its row: shown or hidden by its mark.
  function stack(node, frames) {
    var old = node.querySelector(":scope > .frames");
    if (old) { node.removeChild(old); return; }
    var box = el("pre", "frames", frames.join("\n"));
    node.insertBefore(box, node.children[1] || null);
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

  // Open the path to call `i` and mark it.
  function reveal(i) {
    var prev = document.querySelector(".call.found");
    if (prev) prev.classList.remove("found");
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
  }

  // The calls of functions whose name contains the query, in entry order; Enter goes to
  // the next one (Shift+Enter: the one before), round.
  var found = { q: null, calls: [], at: -1 };
  function search(q, back) {
    var count = document.getElementById("search-count");
    if (!q) return;
    if (q !== found.q) {
      var hit = D.names.map(function (name) { return name.indexOf(q) >= 0; });
      found = { q: q, calls: [], at: -1 };
      for (var i = 0; i < D.calls.length; i++) if (hit[D.calls[i][0]]) found.calls.push(i);
    }
    var n = found.calls.length;
    document.body.dataset.foundCount = n;
    if (!n) {
      count.textContent = "no call";
      document.body.dataset.found = "none";
      return;
    }
    found.at = back ? (found.at + n - 1) % n : (found.at + 1) % n;
    count.textContent = (found.at + 1) + " of " + n;
    document.body.dataset.foundAt = found.at + 1;
    reveal(found.calls[found.at]);
  }

  function show(view) {
    ["tree", "flame", "graph", "tables"].forEach(function (v) {
      document.getElementById("view-" + v).classList.toggle("on", v === view);
      document.getElementById("tab-" + v).classList.toggle("on", v === view);
    });
    // The flame graph lays its labels out for its width, which it has only when shown.
    if (view === "flame") window.dispatchEvent(new Event("resize"));
  }

  // `#view=flame&zoom=NAME`: zoom the flame graph to the first frame of NAME, as a
  // click on it does.
  function zoomTo(name) {
    var gs = document.querySelectorAll("#frames > g");
    for (var k = 0; k < gs.length; k++) {
      var t = gs[k].querySelector("title");
      if (!t || t.textContent.lastIndexOf(name + " (", 0) !== 0) continue;
      gs[k].querySelector("rect").dispatchEvent(new MouseEvent("click", { bubbles: true }));
      document.body.dataset.zoomed = name;
      return;
    }
    document.body.dataset.zoomed = "none";
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
    box.onkeydown = function (e) { if (e.key === "Enter") search(box.value, e.shiftKey); };
    moreRoots();
    // The call graph fits the page; a click shows it at full size, another fits it again.
    var graph = document.querySelector("#view-graph > svg");
    if (graph) {
      graph.classList.add("fit");
      graph.onclick = function () { graph.classList.toggle("fit"); };
    }
    if (typeof window.init === "function" && document.getElementById("frames")) window.init();
    // `#view=flame&search=name&n=2&call=17&zoom=name`: what to show first.
    var params = {};
    location.hash.slice(1).split("&").forEach(function (kv) {
      var p = kv.split("=");
      if (p[0]) params[p[0]] = decodeURIComponent(p[1] || "");
    });
    show(params.view || "tree");
    if (params.search) {
      // As many Enters in the search box as `n` says (1 by default).
      box.value = params.search;
      for (var k = 0; k < (parseInt(params.n, 10) || 1); k++) {
        box.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
      }
    }
    if (params.call) reveal(parseInt(params.call, 10));
    if (params.stack) {
      // Open the call and its stack, as a click on its `stack` mark does.
      var si = parseInt(params.stack, 10);
      reveal(si);
      var mark = made[si] && made[si].querySelector(".mark.stack");
      if (mark) mark.click();
    }
    if (params.view) show(params.view);
    document.body.dataset.calls = D.calls.length;
    // Ready once the flame graph laid itself out (its script does it after a turn).
    setTimeout(function () {
      if (params.zoom) zoomTo(params.zoom);
      void document.body.offsetHeight;
      document.body.dataset.loadMs = Math.round(performance.now());
      document.body.dataset.ready = "1";
    }, 0);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
