// telering dashboard, routes: each agent card's table of its routes (operation,
// backend, memory types, peer) with bytes/s, transfers/s and the transfer-time mean,
// p50 and p99 over the last ROUTE_WINDOW_MS of /api/agents answers (as Prometheus's rate()
// over a window: smoother than two successive answers, between which an agent's
// route file may not have been rewritten; until an answer half a refresh older
// arrives, totals and percentiles since the agent started), sortable by clicking a
// column header. The
// sort is kept in the address (?routes=COLUMN, a leading "-" for descending), so a
// link shows the same order. Every text from the server is set with textContent;
// names are shown as the server escaped them (backend_shown, peer_shown).
"use strict";

const ROUTE_COLUMNS = [
  { key: "route", label: "route", text: true },
  { key: "bytes_s", label: "bytes/s", unit: "B/s" },
  { key: "xfers_s", label: "transfers/s", unit: "/s" },
  { key: "mean", label: "mean", unit: "us" },
  { key: "p50", label: "p50", unit: "us" },
  { key: "p99", label: "p99", unit: "us" },
  { key: "bytes", label: "bytes", unit: "B" },
  { key: "errors", label: "errors", unit: "" },
];
const routeSort = (() => {
  const p = new URLSearchParams(location.search).get("routes") || "-bytes_s";
  const desc = p.startsWith("-");
  const key = desc ? p.slice(1) : p;
  return ROUTE_COLUMNS.some((c) => c.key === key) ? { key, desc } : { key: "bytes_s", desc: true };
})();
const routeMemory = new Map(); // agent -> [{time, routes: Map(key -> route)}], oldest first
const routeTables = new Set();  // every table shown, re-sorted on a header click

function routeKey(r) {
  return [r.operation, r.backend, r.local_mem, r.remote_mem, r.peer].join("\u0000");
}

function routeErrors(r) {
  return Object.values(r.errors || {}).reduce((a, b) => a + b, 0);
}

// One row per route: rates against `before` (a Map of the previous answer's routes
// over `dt` seconds), or totals since the start when there is none.
function routeRows(agent, before, dt, bounds) {
  return (agent.routes || []).map((r, index) => {
    const prev = before ? before.get(routeKey(r)) : undefined;
    const rated = before !== undefined && dt > 0;
    const field = (x, name) => (name === "xfer_time_us_sum" ? x.xfer_time_us.sum : x[name]);
    const d = (name) => field(r, name) - ((prev && field(prev, name)) || 0);
    const hist = (x) => x && { counts: x.xfer_time_us.counts };
    const q = (p) => quantile(p, bounds, hist(r), rated ? hist(prev) : null);
    return {
      index,
      route: `${r.operation} ${r.backend_shown} ${r.local_mem}->${r.remote_mem} ${r.peer_shown === "" ? "(local)" : r.peer_shown}`,
      bytes_s: rated ? Math.max(0, d("bytes") / dt) : null,
      xfers_s: rated ? Math.max(0, d("transfers") / dt) : null,
      mean: meanOf(d, rated ? undefined : r),
      p50: q(0.5),
      p99: q(0.99),
      bytes: r.bytes,
      errors: routeErrors(r),
    };
  });
}

// The mean transfer time over the window (or since the start): the difference of the
// time histogram's sums over that of the transfers; null without transfers.
function meanOf(d, total) {
  const xfers = total ? total.transfers : d("transfers");
  const sum = total ? total.xfer_time_us.sum : d("xfer_time_us_sum");
  return xfers > 0 ? sum / xfers : null;
}

function compareRows(a, b) {
  const x = a[routeSort.key], y = b[routeSort.key];
  let c;
  if (typeof x === "string" || typeof y === "string") c = String(x).localeCompare(String(y));
  else c = (x === null ? -Infinity : x) - (y === null ? -Infinity : y);
  return (routeSort.desc ? -c : c) || a.index - b.index;
}

function routeCell(row, col) {
  const v = row[col.key];
  if (col.text) return v;
  if (v === null || v === undefined) return "–";
  return col.unit === "" ? String(v) : si(v, col.unit);
}

// The row with the highest mean transfer time, when two or more routes moved: marked
// on the page (data-slowest, an orange row saying "slowest"), so the slow route is
// seen at a glance whatever the sort.
function slowestRow(rows) {
  const moving = rows.filter((r) => r.mean !== null);
  if (moving.length < 2) return null;
  return moving.reduce((m, r) => (r.mean > m.mean ? r : m));
}

function drawRouteTable(box) {
  const rows = (box.routeRows || []).slice().sort(compareRows);
  const slowest = slowestRow(rows);
  const table = box.querySelector("table");
  for (const th of table.querySelectorAll("th")) {
    const on = th.dataset.col === routeSort.key;
    th.dataset.sorted = on ? (routeSort.desc ? "desc" : "asc") : "";
    th.textContent = th.dataset.label + (on ? (routeSort.desc ? " ▼" : " ▲") : "");
  }
  table.tBodies[0].replaceChildren(...rows.map((row) => {
    const tr = document.createElement("tr");
    tr.dataset.route = String(row.index);
    if (row === slowest) {
      tr.dataset.slowest = "true";
      tr.title = "the slowest route: the highest mean transfer time";
    }
    for (const col of ROUTE_COLUMNS) {
      const td = document.createElement("td");
      td.dataset.col = col.key;
      td.textContent = routeCell(row, col);
      tr.appendChild(td);
    }
    return tr;
  }));
}

function sortRoutesBy(key) {
  if (routeSort.key === key) routeSort.desc = !routeSort.desc;
  else Object.assign(routeSort, { key, desc: key !== "route" });
  const p = new URLSearchParams(location.search);
  p.set("routes", (routeSort.desc ? "-" : "") + routeSort.key);
  history.replaceState(null, "", "?" + p);
  for (const box of routeTables) drawRouteTable(box);
}

// The routes part of a card (empty until the agent has routes).
function makeRouteBox() {
  const box = document.createElement("div");
  box.className = "routes";
  box.hidden = true;
  const title = document.createElement("h3");
  const table = document.createElement("table");
  const head = table.createTHead().insertRow();
  for (const col of ROUTE_COLUMNS) {
    const th = document.createElement("th");
    th.dataset.col = col.key;
    th.dataset.label = col.label;
    th.title = "sort by " + col.label;
    th.addEventListener("click", () => sortRoutesBy(col.key));
    head.appendChild(th);
  }
  table.createTBody();
  box.append(title, table);
  routeTables.add(box);
  return box;
}

function forgetRoutes(name, box) {
  routeMemory.delete(name);
  routeTables.delete(box);
}

function routeWindowMs() {
  return Math.max(3 * REFRESH_MS, 3000);
}

function showRoutes(box, agent, time, bounds) {
  if (!agent.routes) {
    box.hidden = true;
    return;
  }
  box.hidden = false;
  let past = routeMemory.get(agent.agent);
  if (!past) routeMemory.set(agent.agent, (past = []));
  while (past.length > 1 && time - past[1].time >= routeWindowMs()) past.shift();
  const base = past.find((p) => time - p.time >= REFRESH_MS / 2);
  const rows = base
    ? routeRows(agent, base.routes, (time - base.time) / 1000, bounds)
    : routeRows(agent, undefined, 0, bounds);
  if (!past.length || past[past.length - 1].time !== time) {
    past.push({ time, routes: new Map(agent.routes.map((r) => [routeKey(r), r])) });
  }
  box.routeRows = rows;
  box.dataset.rated = String(rows.some((r) => r.bytes_s !== null));
  box.querySelector("h3").textContent =
    `routes: ${agent.routes.length}` + (agent.routes_folded ? `, ${agent.routes_folded} folded into other` : "");
  drawRouteTable(box);
}
