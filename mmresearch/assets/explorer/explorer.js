/* The mmresearch explorer: every sample of a run, or of a sweep's runs, from static files opened as file://.
   Written by mmresearch.explorer (nbs/21a_explorer.ipynb), which puts this file inline in explorer.html and allows it
   by its hash in the page's Content-Security-Policy. The data come in pieces: script files beside the page that call
   MMR.chunk (items) and MMR.pairs (a sweep's paired items). Every text from the data goes into the page as a text
   node (textContent), never as HTML; links are either "#..." filter links or image paths checked against IMAGE.
   The filter state lives in location.hash, so a view can be bookmarked and shared. */
"use strict";
(function () {
  const cfg = JSON.parse(document.getElementById("mmr-config").textContent);
  const PAGE = cfg.page_items;
  const IMAGE = /^images\/[0-9a-f]+\.(png|jpg|gif|webp)$/;
  // Every object keyed by data (run names, groups, readers) or by the URL has no prototype: a key such as
  // "__proto__" or "constructor" from a file or a link is only ever a missing or an own entry.
  const lookup = (entries = []) => Object.assign(Object.create(null), Object.fromEntries(entries));
  const NONE = Object.freeze(lookup());
  const sources = cfg.sources;
  const source = lookup(sources.map(s => [s.id, s]));
  const store = lookup(sources.map(s => [s.id, []]));
  const read = lookup(sources.map(s => [s.id, 0]));
  const pairRows = lookup();
  const scripts = lookup();
  const errors = [];

  // One data file: items start .. start + n - 1, column by column (see mmresearch.explorer.column_chunk); each item is
  // rebuilt as an object with the fields it has.
  function rebuild(c) {
    const cols = Object.entries(c.cols);
    const slots = ["f", "x", "m"].map(slot => [slot, Object.entries(c[slot] || {})]).filter(([, e]) => e.length);
    const readers = Object.entries(c.rd || {}).map(([family, rs]) => [family, Object.entries(rs)]);
    const judges = Object.entries(c.j || {});
    const items = new Array(c.n);
    for (let r = 0; r < c.n; r++) {
      const it = { i: c.start + r };
      for (const [key, col] of cols) if (col[r] !== null) it[key] = col[r];
      for (const [slot, entries] of slots) {
        for (const [name, col] of entries) if (col[r] !== null) (it[slot] = it[slot] || lookup())[name] = col[r];
      }
      if (readers.length) {
        it.rd = lookup();
        for (const [family, rs] of readers) { const got = it.rd[family] = lookup(); for (const [name, col] of rs) got[name] = col[r]; }
      }
      if (judges.length) {
        it.j = lookup();
        for (const [name, three] of judges) it.j[name] = [three[0][r], three[1][r], three[2][r]];
      }
      items[r] = it;
    }
    return items;
  }

  window.MMR = Object.freeze({
    chunk(src, k, columns) {
      const arr = store[src];
      if (!arr) return;
      const items = rebuild(columns);
      for (const it of items) arr[it.i] = it;
      read[src] += items.length;
    },
    pairs(k, rows) { pairRows[k] = rows; },
  });

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") e.className = v;
      else e.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children) {
      if (c === null || c === undefined || c === false) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  // Appends the children that are not null or undefined (DOM append would write them as text).
  const add = (parent, ...children) => { parent.append(...children.filter(c => c !== null && c !== undefined)); return parent; };

  function loadScript(url) {
    if (!scripts[url]) {
      scripts[url] = new Promise((resolve) => {
        const s = document.createElement("script");
        s.src = url;
        s.onload = () => resolve(true);
        s.onerror = () => { errors.push("could not read " + url); resolve(false); };
        document.head.append(s);
      });
    }
    return scripts[url];
  }
  const chunkUrl = (s, k) => s.prefix + "items-" + String(k).padStart(5, "0") + ".js";

  // Starts reading every chunk of the given sources not asked for yet, the first of each before the rest; each piece
  // that arrives redraws the list once.
  function loadSources(ids) {
    for (const id of ids) {
      const s = source[id];
      if (!s || !s.chunks || scripts[chunkUrl(s, 0)]) continue;
      loadScript(chunkUrl(s, 0)).then(() => {
        schedule();
        for (let k = 1; k < s.chunks; k++) loadScript(chunkUrl(s, k)).then(schedule);
      });
    }
  }
  const complete = ids => ids.every(id => read[id] >= source[id].n);

  let pending = false;
  function schedule() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; render(false); });
  }

  // ---- state: the hash holds the filters --------------------------------------------------------------------
  const state = () => new URLSearchParams(location.hash.slice(1));
  function hashWith(changes, keepPage) {
    const p = state();
    for (const [k, v] of Object.entries(changes)) {
      if (v === null || v === undefined || v === "") p.delete(k); else p.set(k, v);
    }
    if (!keepPage) p.delete("page");
    return "#" + p.toString();
  }
  const go = (changes, keepPage) => { location.hash = hashWith(changes, keepPage); };

  function text(it) {
    if (it._text === undefined) {
      const parts = [it.n, it.p, it.o, it.e];
      for (const pt of it.pt || []) parts.push(pt.l, pt.p, pt.o, pt.x);
      for (const j of Object.values(it.j || {})) parts.push(j[1], j[2]);
      Object.defineProperty(it, "_text", { value: parts.filter(x => x).join("\n").toLowerCase() });
    }
    return it._text;
  }

  // A test of one item against the state's item-level filters.
  function itemTest(p) {
    const tests = [];
    const outcome = p.get("outcome");
    if (outcome) tests.push(it => (it.v || "unscored") === outcome);
    for (const [k, v] of p) {
      if (k.startsWith("g.")) {
        const f = k.slice(2);
        tests.push(it => { const x = (it.f || NONE)[f]; return Array.isArray(x) ? x.includes(v) : x === v; });
      } else if (k.startsWith("j.")) {
        const name = k.slice(2);
        tests.push(it => { const j = (it.j || NONE)[name]; return ((j && j[0]) || "none") === v; });
      }
    }
    const cluster = p.get("cluster");
    if (cluster) tests.push(it => it.c === cluster);
    const item = p.get("item");
    if (item) tests.push(it => it.k === item);
    const cmp = p.get("cmp"), cell = p.get("cell");
    if (cmp && cell !== null) {
      const c = (cfg.comparisons || []).find(x => x.id === cmp);
      const differ = c ? new Set(c.cells.map((x, i) => [x, i]).filter(([x]) => x[0] !== x[1]).map(([, i]) => i)) : new Set();
      tests.push(it => { const m = (it.m || NONE)[cmp]; return m !== undefined && (cell === "differ" ? differ.has(m) : m === Number(cell)); });
    }
    const q = (p.get("q") || "").trim().toLowerCase();
    if (q) tests.push(it => text(it).includes(q));
    return it => tests.every(t => t(it));
  }

  // ---- the shell: header, filter bar, list -------------------------------------------------------------------
  const $ = id => document.getElementById(id);
  const controls = lookup();

  function select(name, label, options) {
    const s = el("select", { id: "f-" + name, name: name, "aria-label": label });
    s.append(el("option", { value: "" }, "any " + label));
    for (const [v, n] of options) s.append(el("option", { value: v }, n === undefined ? v : v + " (" + n + ")"));
    s.addEventListener("change", () => go({ [name]: s.value }));
    controls[name] = s;
    return el("label", {}, label + " ", s);
  }

  function shell() {
    const bar = el("form", { class: "filters", id: "filters" });
    bar.addEventListener("submit", e => { e.preventDefault(); go({ q: controls.q.value }); });
    if (cfg.mode === "sweep") bar.append(select("run", "condition", sources.map(s => [s.id, s.n])));
    for (const f of cfg.facets) bar.append(select("g." + f.name, f.name, f.values));
    bar.append(select("outcome", "outcome", cfg.outcomes));
    for (const j of cfg.judges) bar.append(select("j." + j.name, "verdict of " + j.name, j.values));
    const q = el("input", { type: "search", id: "f-q", name: "q", placeholder: "search prompts and outputs", "aria-label": "search" });
    controls.q = q;
    q.addEventListener("change", () => go({ q: q.value }));
    bar.append(el("label", {}, "text ", q), el("button", { type: "submit" }, "search"), el("a", { href: "#", id: "clear" }, "clear filters"));
    $("mmr-samples").append(bar, el("div", { id: "chips" }), el("p", { id: "status", role: "status" }),
      el("nav", { class: "pager", id: "pager-top" }), el("div", { id: "list" }), el("nav", { class: "pager", id: "pager-bottom" }));
  }

  function syncControls(p) {
    for (const [name, c] of Object.entries(controls)) c.value = p.get(name) || "";
    const chips = $("chips");
    chips.replaceChildren();
    const names = { cmp: "comparison", pair: "paired comparison", cell: "cell", cluster: "cluster", item: "item" };
    for (const k of ["pair", "cmp", "cell", "cluster", "item"]) {
      const v = p.get(k);
      if (v === null) continue;
      let shown = v;
      if (k === "pair") shown = ((cfg.pairs || [])[Number(v)] || {}).title || v;
      if (k === "cmp") shown = ((cfg.comparisons || []).find(c => c.id === v) || {}).title || v;
      if (k === "cell") shown = cellLabel(p, v);
      chips.append(el("span", { class: "chip" }, names[k] + ": " + shown + " ",
        el("a", { href: hashWith(k === "pair" || k === "cmp" ? { [k]: null, cell: null } : { [k]: null }), title: "remove this filter" }, "×")));
    }
  }

  function cellLabel(p, v) {
    if (v === "differ") return "the two disagree";
    if (p.get("pair") !== null) return (((cfg.pairs || [])[Number(p.get("pair"))] || {}).cells || [])[Number(v)]?.label || v;
    const c = (cfg.comparisons || []).find(x => x.id === p.get("cmp"));
    const cell = c && c.cells[Number(v)];
    return cell ? c.a + " " + cell[0] + ", " + c.b + " " + cell[1] : v;
  }

  // ---- one sample ---------------------------------------------------------------------------------------------
  function field(label, value, cls) {
    if (value === undefined || value === null || value === "") return null;
    return el("div", { class: "field " + (cls || "") }, el("span", { class: "label" }, label), el("pre", {}, String(value)));
  }

  function card(src, it, label) {
    const s = source[src];
    const a = el("article", { class: "card o-" + (it.v || "unscored"), "data-item": it.k, "data-run": src });
    if (it.img && IMAGE.test(it.img)) {
      const url = s.base + it.img;
      a.append(el("a", { class: "thumb", href: url, title: "open the image at full size" },
        el("img", { src: url, loading: "lazy", decoding: "async", alt: "image of " + (it.smp || it.n || it.k) })));
    } else a.append(el("div", { class: "thumb none" }, "no image"));
    const body = el("div", { class: "body" });
    const head = el("h3", {}, el("span", { class: "badge o-" + (it.v || "unscored") }, it.v || "unscored"), " ", it.n || it.k, " ",
      el("a", { href: "#" + new URLSearchParams(cfg.mode === "sweep" ? { run: src, item: it.k } : { item: it.k }).toString(), class: "permalink", title: "a link to this sample alone" }, "link"));
    add(body, head);
    if (label) body.append(el("p", { class: "run" }, label));
    const facts = el("p", { class: "facts" });
    for (const [f, v] of Object.entries(it.f || {})) {
      for (const x of Array.isArray(v) ? v : [v]) facts.append(el("a", { class: "facet", href: hashWith({ ["g." + f]: x }) }, f + ": " + x), " ");
    }
    if (it.c !== undefined) facts.append(el("a", { class: "facet", href: hashWith({ cluster: it.c }), title: "every sample of this cluster" }, "cluster: " + it.c));
    body.append(facts);
    add(body, field("prompt", it.p), field("output", it.o), field("error", it.e, "error"));
    const verdict = [];
    if (it.g !== undefined) verdict.push("gold " + it.g);
    if (it.r !== undefined) verdict.push("read " + it.r);
    if (it.s !== undefined) verdict.push("score " + it.s);
    if (verdict.length) body.append(el("p", { class: "verdict" }, verdict.join(" · ")));
    const reads = Object.entries(it.rd || {});
    if (reads.length) {
      const t = el("table", { class: "reads" }, el("caption", {}, "what each reader read"));
      for (const [family, names] of reads) for (const [name, v] of Object.entries(names)) {
        t.append(el("tr", {}, el("th", {}, family + " " + name), el("td", {}, v === null ? "nothing (unread)" : v)));
      }
      body.append(t);
    }
    for (const [name, j] of Object.entries(it.j || {})) {
      body.append(el("div", { class: "judge" }, el("span", { class: "label" }, "judge " + name + ": " + (j[0] || "no verdict")),
        j[1] ? el("pre", {}, j[1]) : null, j[2] ? el("pre", { class: "why" }, j[2]) : null));
    }
    if ((it.pt || []).length) {
      const cols = [["l", ""], ["p", "prompt"], ["o", "output"], ["r", "read"], ["g", "gold"], ["v", "outcome"], ["x", "note"]]
        .filter(([k]) => it.pt.some(pt => pt[k] !== undefined));   // the columns some part fills
      const t = el("table", { class: "parts" }, el("tr", {}, ...cols.map(([, h]) => el("th", {}, h))));
      for (const pt of it.pt) {
        t.append(el("tr", { class: "o-" + (pt.v || "unscored") }, ...cols.map(([k]) => el("td", {}, pt[k] === undefined ? "" : el("pre", {}, String(pt[k]))))));
      }
      body.append(t);
    }
    const details = Object.entries(it.x || {});
    if (details.length) {
      const dl = el("dl", {});
      for (const [k, v] of details) dl.append(el("dt", {}, k), el("dd", {}, typeof v === "string" ? v : JSON.stringify(v)));
      body.append(el("details", {}, el("summary", {}, "more fields"), dl));
    }
    a.append(body);
    return a;
  }

  // ---- the list -----------------------------------------------------------------------------------------------
  let shown = "";
  // Draws the list for the state in the hash; `fromHash`: the hash changed, so the filter controls follow it too
  // (a redraw because data arrived leaves them alone, and whatever the reader is typing).
  function render(fromHash) {
    const p = state();
    if (fromHash) syncControls(p);
    const pairK = p.get("pair");
    const page = Math.max(1, Number(p.get("page")) || 1);
    let entries, total, needed, view;
    if (pairK !== null && cfg.pairs && cfg.pairs[Number(pairK)]) {
      const pair = cfg.pairs[Number(pairK)];
      needed = [pair.a, pair.b];
      if (!pairRows[pairK]) {
        if (!scripts[pair.file]) loadScript(pair.file).then(schedule);
        setStatus("reading the paired items…");
        return;
      }
      const test = itemTest(p), cell = p.get("cell");
      const rows = pairRows[pairK].filter(r => cell === null || r[0] === Number(cell));
      entries = [];
      for (const r of rows) {
        const A = r[1] >= 0 ? store[pair.a][r[1]] : null, B = r[2] >= 0 ? store[pair.b][r[2]] : null;
        if ((r[1] >= 0 && !A) || (r[2] >= 0 && !B)) continue;   // not read yet
        if (test(A || B) || (A && B && test(B))) entries.push([pair, r, A, B]);
      }
      total = rows.length;
      view = "pairs";
    } else {
      const run = p.get("run");
      needed = run && source[run] ? [run] : sources.map(s => s.id);
      const test = itemTest(p);
      entries = [];
      for (const id of needed) for (const it of store[id]) if (it && test(it)) entries.push([id, it]);
      total = needed.reduce((n, id) => n + source[id].n, 0);
      view = "samples";
    }
    loadSources(needed);
    const pages = Math.max(1, Math.ceil(entries.length / PAGE));
    const at = Math.min(page, pages);
    const slice = entries.slice((at - 1) * PAGE, at * PAGE);
    const done = complete(needed);
    const readNow = needed.reduce((n, id) => n + Math.min(read[id], source[id].n), 0);
    const many = entries.length === 1 ? ["", "es"] : ["s", ""];
    setStatus(entries.length + (view === "pairs" ? " paired item" : " sample") + many[0] + " match" + many[1] + " (of " + total + ")" +
      (done ? "" : "; read so far: " + readNow + " of " + needed.reduce((n, id) => n + source[id].n, 0) + " samples") +
      (errors.length ? "; " + errors.join("; ") : "") + (entries.length ? "; showing " + ((at - 1) * PAGE + 1) + "–" + ((at - 1) * PAGE + slice.length) : ""));
    for (const id of ["pager-top", "pager-bottom"]) pager($(id), at, pages);
    const signature = view + "|" + location.hash + "|" + slice.map(e => view === "pairs" ? e[1].join(",") : e[0] + "/" + e[1].i).join(";");
    if (signature !== shown) {
      shown = signature;
      const list = $("list");
      list.replaceChildren(...slice.map(e => view === "pairs" ? pairView(e) : card(e[0], e[1], cfg.mode === "sweep" ? source[e[0]].name : null)));
    }
    const ms = String(Math.round(performance.now()));   // since navigation start: when the page first showed samples, and read them all
    if (slice.length && !document.body.dataset.shownMs) document.body.dataset.shownMs = ms;
    if (done && !document.body.dataset.readyMs) document.body.dataset.readyMs = ms;
    document.body.dataset.ready = done ? "1" : "0";   // every sample the view needs has been read
  }

  function pairView([pair, r, A, B]) {
    const it = A || B;
    const cellName = pair.cells[r[0]].label;
    const side = (src, x) => x ? card(src, x, source[src].name) : el("div", { class: "card missing" }, source[src].name + ": not asked in this run");
    return el("section", { class: "pair", "data-item": it.k }, el("h3", {}, (it.n || it.k) + " — " + cellName + (r[3] ? " · " + r[3] : "")),
      el("div", { class: "sides" }, side(pair.a, A), side(pair.b, B)));
  }

  function setStatus(t) { $("status").textContent = t; }

  function pager(nav, at, pages) {
    nav.replaceChildren();
    if (pages <= 1) return;
    nav.append(at > 1 ? el("a", { href: hashWith({ page: at - 1 }, true) }, "« previous") : "« previous",
      " · page " + at + " of " + pages + " · ", at < pages ? el("a", { href: hashWith({ page: at + 1 }, true) }, "next »") : "next »");
  }

  shell();
  $("clear").addEventListener("click", e => { e.preventDefault(); location.hash = ""; });
  window.addEventListener("hashchange", () => render(true));
  render(true);
})();
