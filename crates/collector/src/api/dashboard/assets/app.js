// The collector's dashboard: polls the REST API every few seconds and renders it. Charts are
// SVG drawn by the collector (/dashboard/charts/...); this script only fetches and lays out.
"use strict";

const POLL_MS = 3000;
const PATHS_SHOWN = 50;
const EVENTS_SHOWN = 15;
const REJECTED_SHOWN = 8;
const MEASUREMENTS = ["latency_ns", "utilisation_kbps", "queue_len", "energy_nj", "co2_pg"];
// Display units per measurement: [threshold, divisor, unit], largest first.
const UNITS = {
  latency_ns: [[1e6, 1e6, "ms"], [1e3, 1e3, "µs"], [0, 1, "ns"]],
  utilisation_kbps: [[1e6, 1e6, "Gbit/s"], [1e3, 1e3, "Mbit/s"], [0, 1, "kbit/s"]],
  queue_len: [[0, 1, "pkts"]],
  energy_nj: [[1e6, 1e6, "mJ"], [1e3, 1e3, "µJ"], [0, 1, "nJ"]],
  co2_pg: [[1e6, 1e6, "µg"], [1e3, 1e3, "ng"], [0, 1, "pg"]],
};
// What ranking objective sorts by which measurement.
const OBJECTIVE_MEASUREMENT = {
  latency: "latency_ns", utilisation: "utilisation_kbps", queue: "queue_len",
  energy: "energy_nj", carbon: "co2_pg",
};

const state = { selected: null, polls: 0 };

// An element with attributes and children (text children are set as text, never as HTML).
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : String(c));
  return e;
}

function fmt(measurement, value) {
  if (value === null || value === undefined) return "–";
  const [, div, unit] = UNITS[measurement].find(([min]) => Math.abs(value) >= min);
  const v = value / div;
  const digits = Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2;
  return `${Number(v.toFixed(digits))} ${unit}`;
}

function clock(ns) {
  return new Date(ns / 1e6).toLocaleTimeString([], { hour12: false });
}

async function getJson(url) {
  const r = await fetch(url, { cache: "no-store" });
  if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
  return r.json();
}

function fill(tbody, rows, columns) {
  tbody.replaceChildren(...(rows.length ? rows
    : [el("tr", {}, el("td", { class: "empty", colspan: String(columns) }, "nothing yet"))]));
}

function tiles(s) {
  const items = [
    ["reports", s.reports], ["accepted", s.accepted],
    ["rejected", s.rejected_total, s.rejected_total > 0], ["malformed batches", s.malformed, s.malformed > 0],
    ["ASes", s.ases], ["inter-AS links", s.links], ["paths", s.paths],
    ["unmapped paths", s.unknown_paths], ["metric keys", s.metric_keys], ["points stored", s.points_written],
  ];
  document.getElementById("tiles").replaceChildren(...items.map(([k, v, bad]) =>
    el("div", { class: bad ? "tile bad" : "tile" }, el("div", { class: "v" }, v), el("div", { class: "k" }, k))));
  document.getElementById("local-ia").textContent = s.local_ia;
}

// The path-wide values of a path body, by measurement.
function pathValues(path) {
  const out = {};
  for (const t of path.telemetry) if (t.scope === "path") out[t.measurement] = t.value;
  return out;
}

function route(hops) {
  return hops.map((h) => h.ia).join(" → ");
}

function pathsTable(list) {
  document.getElementById("paths-total").textContent =
    list.total > list.paths.length ? `(${list.paths.length} of ${list.total})` : `(${list.total})`;
  const rows = list.paths.map((p) => {
    const v = pathValues(p);
    const tr = el("tr", { "data-path": p.id, class: p.id === state.selected ? "selected" : "" },
      el("td", {}, el("code", {}, p.id)), el("td", {}, `${p.src} → ${p.dst}`), el("td", { class: "num" }, p.hops.length),
      ...MEASUREMENTS.map((m) => el("td", { class: "num" }, fmt(m, v[m]))), el("td", {}, p.origin));
    tr.addEventListener("click", () => { state.selected = p.id; poll(); });
    return tr;
  });
  fill(document.querySelector("#paths tbody"), rows, 9);
}

// Shows a chart once it has loaded: a new image replaces `img` then, so the page never shows
// a half-loaded or broken chart; a refresh is skipped while the previous one still loads.
function refreshImage(img, src) {
  if (img.dataset.loading) return;
  img.dataset.loading = "1";
  const next = new Image();
  next.alt = img.alt;
  next.id = img.id;
  next.onload = () => img.replaceWith(next);
  next.onerror = () => {
    delete img.dataset.loading;
    window.recordDashboardError(`failed to load ${src}`);
  };
  next.src = src;
}

async function pathDetail(path) {
  const detail = document.getElementById("path-detail");
  detail.hidden = !path;
  if (!path) return;
  document.getElementById("path-id").textContent = path.id;
  document.getElementById("path-route").textContent = route(path.hops);
  const values = await getJson(`dashboard/hops?path=${path.id}`);
  const rows = values.hops.map((h, i) => el("tr", {},
    el("td", {}, i), el("td", {}, h.ia), el("td", {}, `${h.ingress} → ${h.egress}`),
    ...MEASUREMENTS.map((m) => el("td", { class: "num" }, fmt(m, h[m])))));
  fill(document.querySelector("#hops tbody"), rows, 8);
  const stamp = Date.now();
  const q = (m) => `path=${path.id}&measurement=${m}&t=${stamp}`;
  const charts = [`dashboard/charts/history.svg?${q("latency_ns")}`,
    ...MEASUREMENTS.map((m) => `dashboard/charts/hops.svg?${q(m)}`)];
  const box = document.getElementById("charts");
  if (box.children.length !== charts.length) {
    box.replaceChildren(...charts.map((_, i) => el("img", { alt: "chart", id: `chart-${i}` })));
  }
  charts.forEach((src, i) => refreshImage(document.getElementById(`chart-${i}`), src));
}

async function ranking(path) {
  const tbody = document.querySelector("#ranking tbody");
  if (!path) { fill(tbody, [], 4); return; }
  const objective = document.getElementById("objective").value;
  const r = await getJson(`api/v1/paths/rank?src=${path.src}&dst=${path.dst}&objective=${objective}`);
  document.getElementById("rank-pair").textContent = `${r.src} → ${r.dst}`;
  const m = OBJECTIVE_MEASUREMENT[objective];
  fill(tbody, r.paths.map((p) => el("tr", { class: p.path === state.selected ? "selected" : "" },
    el("td", { class: "num" }, p.rank), el("td", {}, el("code", {}, p.path)), el("td", {}, route(p.hops)),
    el("td", { class: "num" }, fmt(m, p.value)))), 4);
}

function rejected(q) {
  const counts = Object.entries(q.rejected).filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1]);
  const total = counts.reduce((s, [, n]) => s + n, 0);
  document.getElementById("rejected-total").textContent = `(${total})`;
  const max = counts.length ? counts[0][1] : 1;
  document.getElementById("reasons").replaceChildren(...(counts.length
    ? counts.map(([reason, n]) => el("div", { class: "bar" }, el("span", {}, reason),
      el("div", { class: "fill", style: `width:${(100 * n) / max}%` }), el("span", { class: "n" }, n)))
    : [el("p", { class: "empty" }, "no report rejected")]));
  fill(document.querySelector("#quarantine tbody"), q.reports.map((r) => el("tr", {},
    el("td", {}, clock(r.time_ns)), el("td", {}, r.reason), el("td", {}, r.src_ia), el("td", {}, r.detail))), 4);
}

function describe(e) {
  const t = e.tags;
  switch (e.scope) {
    case "hop": return `path ${t.path} hop ${t.hop}`;
    case "path": return `path ${t.path}`;
    case "router": return `router ${t.ia} #${t.node}`;
    case "link": return `link ${t.ia} if ${t.ifid}`;
    case "queue": return `queue ${t.ia} #${t.node} if ${t.ifid}`;
    default: return e.scope;
  }
}

function events(list) {
  fill(document.querySelector("#events tbody"), list.events.map((e) => el("tr", {},
    el("td", {}, clock(e.time_ns)), el("td", {}, e.kind), el("td", {}, describe(e)), el("td", {}, e.measurement),
    el("td", { class: "num" }, e.previous === null ? fmt(e.measurement, e.value)
      : `${fmt(e.measurement, e.previous)} → ${fmt(e.measurement, e.value)}`))), 5);
}

function setStatus(ok, text) {
  const s = document.getElementById("status");
  s.className = ok ? "status ok" : "status error";
  s.textContent = text;
  document.body.dataset.state = ok ? "ok" : "error";
}

let timer = null;

async function poll() {
  clearTimeout(timer);
  try {
    const [summary, paths, quarantine, recent] = await Promise.all([
      getJson("dashboard/summary"), getJson(`api/v1/paths?limit=${PATHS_SHOWN}`),
      getJson(`api/v1/quarantine?limit=${REJECTED_SHOWN}`), getJson(`dashboard/events?limit=${EVENTS_SHOWN}`),
    ]);
    if (!paths.paths.some((p) => p.id === state.selected)) state.selected = paths.paths.length ? paths.paths[0].id : null;
    const path = paths.paths.find((p) => p.id === state.selected) || null;
    tiles(summary);
    pathsTable(paths);
    await pathDetail(path);
    rejected(quarantine);
    events(recent);
    await ranking(path);
    refreshImage(document.getElementById("topology"),
      `dashboard/topology.svg?${path ? `path=${path.id}&` : ""}t=${Date.now()}`);
    document.getElementById("updated").textContent = clock(summary.now_ns);
    setStatus(summary.workers_ready === summary.workers, summary.workers_ready === summary.workers ? "ready" : "workers down");
    state.polls += 1;
    document.body.dataset.polls = String(state.polls);
  } catch (err) {
    setStatus(false, `collector unreachable: ${err.message}`);
  }
  timer = setTimeout(poll, POLL_MS);
}

document.getElementById("objective").addEventListener("change", poll);
poll();
