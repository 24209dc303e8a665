// telering dashboard: polls /api/agents, turns two successive answers into rates and
// histogram percentiles (as Prometheus's rate() and histogram_quantile() do), keeps the
// last minutes of each shown agent, and draws them with uPlot. Each card has the
// agent's traffic, then its exporter health: events delivered, events undelivered
// (dropped + missed + unexported) and the export's state: failing, dropping (with the
// causes of the losses) or ok. Any loss since the previous answer shows as dropping,
// whatever the server says, so "ok" is never shown while the agent loses events.
// Agents with routes get a route table (dashboard_routes.js, loaded first).
"use strict";

const params = new URLSearchParams(location.search);
// ?refresh=SECONDS: 0.2 to 3600, 1 when absent or not a number (abc, Infinity); a value
// out of range is clamped to it, so a link can never make the page poll in a tight loop
// (setTimeout runs at once for NaN, Infinity or more than 2^31 ms).
const REFRESH_MIN_S = 0.2, REFRESH_MAX_S = 3600, REFRESH_DEFAULT_S = 1;
function refreshSeconds(text) {
  const s = text === null || text.trim() === "" ? NaN : Number(text);
  if (!Number.isFinite(s)) return REFRESH_DEFAULT_S;
  return Math.min(REFRESH_MAX_S, Math.max(REFRESH_MIN_S, s));
}
const REFRESH_MS = Math.round(1000 * refreshSeconds(params.get("refresh")));
const HISTORY = Math.ceil(300000 / REFRESH_MS); // five minutes of points
const state = {
  offset: Number(params.get("offset") || 0),
  limit: params.get("limit") || "25",
  filter: params.get("filter") || "",
  previous: new Map(),  // agent -> last sample
  history: new Map(),   // agent -> {t: [], series: {key: []}}
  cards: new Map(),     // agent -> card
  shown: "",
  polls: 0,
  firstRenderMs: null,
};

const TILES = [
  { key: "tx", label: "tx bytes/s", unit: "B/s" },
  { key: "rx", label: "rx bytes/s", unit: "B/s" },
  { key: "req", label: "requests/s (tx + rx)", unit: "/s" },
  { key: "xfer", label: "transfer time p50 / p90 / p99", unit: "us", lines: 3 },
  { key: "post", label: "post time p50 / p90 / p99", unit: "us", lines: 3 },
  { key: "err", label: "errors/s", unit: "/s" },
  { key: "mem", label: "memory registered (net)", unit: "B" },
];

// The exporter-health part: what reached the endpoint, what did not, and whether the
// export is failing (agent_telemetry_exporter_failing, from `telering serve`'s collector).
const HEALTH = [
  { key: "delivered", label: "telemetry events delivered/s", unit: "/s" },
  { key: "undelivered", label: "undelivered (dropped + missed + unexported)", unit: "/s", alert: true },
];
const CHARTED = [...TILES, ...HEALTH];
const UNDELIVERED = [
  "agent_telemetry_events_dropped_total",
  "agent_telemetry_events_missed_total",
  "agent_telemetry_events_unexported_total",
];
const DELIVERED = "agent_telemetry_events_delivered_total";
const FAILING = "agent_telemetry_exporter_failing";

const TOTALS = [
  ["agent_tx_bytes_total", "tx bytes"],
  ["agent_rx_bytes_total", "rx bytes"],
  ["agent_tx_requests_num_total", "tx requests"],
  ["agent_rx_requests_num_total", "rx requests"],
  ["agent_memory_registered_total", "registered"],
  ["agent_memory_deregistered_total", "deregistered"],
  ["agent_telemetry_events_dropped_total", "dropped"],
  ["agent_telemetry_events_missed_total", "missed"],
  ["agent_telemetry_events_unexported_total", "unexported"],
  [DELIVERED, "delivered"],
];

function si(v, unit) {
  if (v === null || v === undefined || !isFinite(v)) return "–";
  if (unit === "us") {
    if (v >= 1e6) return (v / 1e6).toFixed(2) + " s";
    if (v >= 1e3) return (v / 1e3).toFixed(2) + " ms";
    return v.toFixed(0) + " us";
  }
  const a = Math.abs(v);
  const [d, s] = a >= 1e9 ? [1e9, "G"] : a >= 1e6 ? [1e6, "M"] : a >= 1e3 ? [1e3, "K"] : [1, ""];
  return (d === 1 ? v.toFixed(a < 10 && v % 1 ? 1 : 0) : (v / d).toFixed(1)) + " " + s + unit;
}

// A y-axis label of at most six characters, so it fits the axis (44 px at 10 px):
// 2000000 B/s is "2M", 1500 us "1.5ms"; uPlot's own labels ("2,000,000") are cut.
function axisLabel(v, unit) {
  if (v === null || v === undefined || !isFinite(v)) return "";
  const a = Math.abs(v);
  const short = (x) => (Math.abs(x) >= 10 || x % 1 === 0 ? x.toFixed(0) : x.toFixed(1));
  if (unit === "us") {
    if (a >= 1e6) return short(v / 1e6) + "s";
    if (a >= 1e3) return short(v / 1e3) + "ms";
    return short(v) + "us";
  }
  if (a >= 1e12) return short(v / 1e12) + "T";
  if (a >= 1e9) return short(v / 1e9) + "G";
  if (a >= 1e6) return short(v / 1e6) + "M";
  if (a >= 1e3) return short(v / 1e3) + "K";
  return short(v);
}

function value(agent, name) {
  return agent.values[name] || 0;
}

function undelivered(agent) {
  return UNDELIVERED.reduce((sum, name) => sum + value(agent, name), 0);
}

// "failing", "dropping", "ok", or "unknown" when the endpoint does not report exporter
// health. `lostNow` is true when the undelivered total grew since the previous answer.
function exporterState(agent, lostNow) {
  if (agent.state === "failing" || agent.values[FAILING] > 0) return "failing";
  if (agent.state === "dropping" || lostNow) return "dropping";
  if (!(FAILING in agent.values) && agent.state === undefined) return "unknown";
  return "ok";
}

// Loss causes as the collector names them (ring_full, staging, missed, unexported; its
// not_in_layout is no loss), with their counts, for the dropping state's text.
function causesText(agent) {
  const losses = agent.losses || {};
  const named = (agent.dropping && agent.dropping.length ? agent.dropping : Object.keys(losses))
    .filter((c) => c !== "not_in_layout" && (losses[c] || 0) > 0);
  if (!named.length) return "events lost";
  return named.map((c) => c.replace(/_/g, " ") + " " + losses[c]).join(", ");
}

// The q-quantile of the observations between two cumulative snapshots of one histogram,
// linearly interpolated inside its bucket, as histogram_quantile() does.
function quantile(q, bounds, now, before) {
  if (!now) return null;
  const d = now.counts.map((c, i) => c - ((before && before.counts[i]) || 0));
  const total = d.reduce((a, b) => a + b, 0);
  if (total <= 0) return null;
  const rank = q * total;
  let seen = 0;
  for (let i = 0; i < d.length; i++) {
    if (seen + d[i] >= rank && d[i] > 0) {
      if (i >= bounds.length) return bounds[bounds.length - 1];
      const lower = i === 0 ? 0 : bounds[i - 1];
      return lower + (bounds[i] - lower) * ((rank - seen) / d[i]);
    }
    seen += d[i];
  }
  return bounds[bounds.length - 1];
}

function sample(agent, time, bounds) {
  const before = state.previous.get(agent.agent);
  const s = { time, agent };
  // Rates need half a refresh of the server's clock between the two answers. Until
  // the second arrives, the tiles show what one answer holds: the totals since the
  // agent started, and the percentiles of every transfer since then.
  if (!before || time - before.time < REFRESH_MS / 2) {
    if (before && before.tx !== undefined) {
      // The collector has not polled since the last answer: its rates still stand.
      return Object.assign({}, before, { agent, repeat: true });
    }
    const h = (name) => agent.histograms[name];
    s.sinceStart = {
      tx: value(agent, "agent_tx_bytes_total"),
      rx: value(agent, "agent_rx_bytes_total"),
      req: value(agent, "agent_tx_requests_num_total") + value(agent, "agent_rx_requests_num_total"),
      xfer: [0.5, 0.9, 0.99].map((q) => quantile(q, bounds, h("agent_xfer_time_us"), null)),
      post: [0.5, 0.9, 0.99].map((q) => quantile(q, bounds, h("agent_xfer_post_time_us"), null)),
      err: Object.values(agent.errors).reduce((x, y) => x + y, 0),
      delivered: value(agent, DELIVERED),
    };
    return s;
  }
  const dt = (time - before.time) / 1000;
  const rate = (name) => Math.max(0, (value(agent, name) - value(before.agent, name)) / dt);
  const errors = (a) => Object.values(a.errors).reduce((x, y) => x + y, 0);
  const h = (a, name) => a.histograms[name];
  s.tx = rate("agent_tx_bytes_total");
  s.rx = rate("agent_rx_bytes_total");
  s.req = rate("agent_tx_requests_num_total") + rate("agent_rx_requests_num_total");
  s.xfer = [0.5, 0.9, 0.99].map((q) =>
    quantile(q, bounds, h(agent, "agent_xfer_time_us"), h(before.agent, "agent_xfer_time_us")));
  s.post = [0.5, 0.9, 0.99].map((q) =>
    quantile(q, bounds, h(agent, "agent_xfer_post_time_us"), h(before.agent, "agent_xfer_post_time_us")));
  s.err = Math.max(0, (errors(agent) - errors(before.agent)) / dt);
  s.delivered = rate(DELIVERED);
  s.undelivered = Math.max(0, (undelivered(agent) - undelivered(before.agent)) / dt);
  return s;
}

const COLORS = ["#2f6fdf", "#e08a00", "#c02040"];

// A tile's chart; `tile.dataset.axisLabels` keeps the y-axis labels last drawn.
function chart(el, t, tile) {
  const lines = t.lines || 1;
  const series = [{}];
  for (let i = 0; i < lines; i++) series.push({ stroke: COLORS[i], width: 1.5, points: { show: false } });
  const data = [[]];
  for (let i = 0; i < lines; i++) data.push([]);
  const values = (u, splits) => {
    const labels = splits.map((v) => axisLabel(v, t.unit === "us" ? "us" : ""));
    tile.dataset.axisLabels = labels.join(" ");
    return labels;
  };
  return new uPlot({
    width: 220, height: 60, series, legend: { show: false }, cursor: { show: false },
    axes: [{ show: false }, { size: 44, font: "10px sans-serif", ticks: { show: false }, values }],
    scales: { x: { time: true } },
  }, data, el);
}

// The key of a chart with several lines (the p50 / p90 / p99 of a latency).
function legend(names) {
  const el = document.createElement("div");
  el.className = "legend";
  names.forEach((name, i) => {
    const item = document.createElement("span");
    item.dataset.series = name;
    item.style.color = COLORS[i];
    item.textContent = "━ " + name;
    el.appendChild(item);
  });
  return el;
}

// `shown` is the name escaped by the server (control and bidirectional characters
// written out), so a hostile file name cannot reorder or hide what the card shows.
function makeCard(name, shown) {
  const card = document.createElement("section");
  card.className = "agent";
  card.dataset.agent = name;
  const h = document.createElement("h2");
  h.textContent = shown === undefined ? name : shown;
  card.appendChild(h);
  const parts = { el: card, tiles: {}, charts: {} };
  const grid = (list) => {
    const tiles = document.createElement("div");
    tiles.className = "tiles";
    for (const t of list) {
      const tile = document.createElement("div");
      tile.className = "tile";
      tile.dataset.tile = t.key;
      tile.innerHTML = '<div class="label"></div><div class="value">–</div><div class="chart"></div>';
      tile.querySelector(".label").textContent = t.label;
      tiles.appendChild(tile);
      parts.tiles[t.key] = tile;
      parts.charts[t.key] = chart(tile.querySelector(".chart"), t, tile);
      if (t.lines === 3) tile.appendChild(legend(["p50", "p90", "p99"]));
    }
    return tiles;
  };
  const health = document.createElement("div");
  health.className = "health";
  const title = document.createElement("h3");
  title.textContent = "exporter health";
  const exporter = document.createElement("div");
  exporter.className = "tile exporter";
  exporter.dataset.tile = "exporter";
  exporter.innerHTML = '<div class="label">exporter</div><div class="value">–</div>';
  const healthTiles = grid(HEALTH);
  healthTiles.prepend(exporter);
  health.append(title, healthTiles);
  const errs = document.createElement("div");
  errs.className = "totals errors";
  const totals = document.createElement("div");
  totals.className = "totals";
  parts.routes = makeRouteBox();
  card.append(grid(TILES), health, parts.routes, errs, totals);
  parts.exporter = exporter;
  parts.errors = errs;
  parts.totals = totals;
  return parts;
}

function record(name, s) {
  let h = state.history.get(name);
  if (!h) {
    h = { t: [], series: {} };
    for (const t of CHARTED) h.series[t.key] = Array.from({ length: t.lines || 1 }, () => []);
    state.history.set(name, h);
  }
  if (s.tx === undefined || s.repeat) return h;
  h.t.push(s.time / 1000);
  const mem = value(s.agent, "agent_memory_registered_total") - value(s.agent, "agent_memory_deregistered_total");
  const values = {
    tx: [s.tx], rx: [s.rx], req: [s.req], xfer: s.xfer, post: s.post, err: [s.err], mem: [mem],
    delivered: [s.delivered], undelivered: [s.undelivered],
  };
  for (const t of CHARTED) values[t.key].forEach((v, i) => h.series[t.key][i].push(v));
  if (h.t.length > HISTORY) {
    h.t.shift();
    for (const t of CHARTED) h.series[t.key].forEach((a) => a.shift());
  }
  return h;
}

function show(card, s, h) {
  const mem = value(s.agent, "agent_memory_registered_total") - value(s.agent, "agent_memory_deregistered_total");
  for (const t of CHARTED) {
    const tile = card.tiles[t.key];
    let text;
    if (t.key === "mem") text = si(mem, "B");
    else if (t.key === "undelivered") {
      const total = undelivered(s.agent);
      tile.dataset.total = String(total);
      text = total + " in all · " + (s.undelivered === undefined ? "–" : si(s.undelivered, t.unit));
    } else if (t.key === "delivered" && !(DELIVERED in s.agent.values)) text = "not reported";
    else if (s[t.key] === undefined && s.sinceStart && t.key in s.sinceStart) {
      const v = s.sinceStart[t.key];
      const unit = t.unit === "B/s" ? "B" : "";
      text = t.lines ? v.map((x) => si(x, t.unit)).join(" / ") + " since start" : si(v, unit) + " since start";
    } else if (s[t.key] === undefined) text = "–";
    else if (t.lines) text = s[t.key].map((v) => si(v, t.unit)).join(" / ");
    else text = si(s[t.key], t.unit);
    tile.querySelector(".value").textContent = text;
    tile.dataset.since = s[t.key] === undefined && s.sinceStart && t.key in s.sinceStart ? "start" : "rate";
    if (t.alert) tile.dataset.alert = String((s[t.key] || 0) > 0);
    if (h.t.length) card.charts[t.key].setData([h.t, ...h.series[t.key]]);
  }
  const before = state.previous.get(s.agent.agent);
  const lostNow = before !== undefined && undelivered(s.agent) > undelivered(before.agent);
  const exporter = exporterState(s.agent, lostNow);
  card.el.dataset.exporter = exporter;
  card.exporter.dataset.state = exporter;
  card.exporter.dataset.causes = (s.agent.dropping || []).join(",");
  card.exporter.querySelector(".value").textContent = {
    failing: "FAILING: the writer is gone without a clean close, or reading its ring keeps failing",
    dropping: "DROPPING: " + causesText(s.agent),
    ok: "ok",
    unknown: "not reported by this endpoint",
  }[exporter];
  const statuses = Object.entries(s.agent.errors).sort((a, b) => b[1] - a[1]);
  card.errors.textContent = statuses.length
    ? "errors by status: " + statuses.map(([k, v]) => k + " " + v).join(", ")
    : "errors by status: none";
  const reported = TOTALS.filter(([family]) => family !== DELIVERED || family in s.agent.values);
  card.totals.replaceChildren(...reported.map(([family, label]) => {
    const span = document.createElement("span");
    span.dataset.family = family;
    span.dataset.value = String(value(s.agent, family));
    span.textContent = label + " " + value(s.agent, family);
    return span;
  }));
}

function setStatus(stateName, text) {
  const el = document.getElementById("status");
  el.dataset.state = stateName;
  el.textContent = text;
}

function render(data) {
  document.getElementById("hostname").textContent = data.hostname;
  const names = data.agents.map((a) => a.agent);
  const shownNames = new Map(data.agents.map((a) => [a.agent, a.shown]));
  const key = names.join("\n");
  const main = document.getElementById("agents");
  if (key !== state.shown) {
    for (const [name, card] of state.cards) {
      if (!names.includes(name)) {
        Object.values(card.charts).forEach((c) => c.destroy());
        forgetRoutes(name, card.routes);
        state.cards.delete(name);
        state.history.delete(name);
        state.previous.delete(name);
      }
    }
    main.replaceChildren(...names.map((n) => {
      if (!state.cards.has(n)) state.cards.set(n, makeCard(n, shownNames.get(n)));
      return state.cards.get(n).el;
    }));
    state.shown = key;
  }
  for (const agent of data.agents) {
    const s = sample(agent, data.time_ms, data.bounds_us);
    show(state.cards.get(agent.agent), s, record(agent.agent, s));
    showRoutes(state.cards.get(agent.agent).routes, agent, data.time_ms, data.route_bounds_us);
    if (s.tx !== undefined || !state.previous.has(agent.agent)) state.previous.set(agent.agent, s);
  }
  const first = data.agents.length ? data.offset + 1 : 0;
  document.getElementById("range").textContent =
    `${first}–${data.offset + data.agents.length} of ${data.agents_matched}` +
    (data.agents_matched !== data.agents_total ? ` (${data.agents_total} in all)` : "");
  document.body.dataset.agentsTotal = data.agents_total;
  document.body.dataset.agentsMatched = data.agents_matched;
}

async function poll() {
  const q = new URLSearchParams({ offset: state.offset, limit: state.limit });
  if (state.filter) q.set("filter", state.filter);
  const url = "/api/agents?" + q;
  try {
    const response = await fetch(url, { cache: "no-store" });
    const text = await response.text();
    let data;
    try {
      data = JSON.parse(text);
    } catch (e) {
      throw new Error(`${response.status} ${response.statusText}: not JSON (${e.message})`);
    }
    if (!response.ok) throw new Error(`${response.status} ${response.statusText}: ${data.error || text}`);
    render(data);
    state.polls += 1;
    if (state.firstRenderMs === null) {
      state.firstRenderMs = performance.now();
      document.body.dataset.firstRenderMs = state.firstRenderMs.toFixed(1);
    }
    document.body.dataset.polls = state.polls;
    document.body.dataset.timeMs = data.time_ms;
    const updated = `${data.agents_total} agents on ${data.hostname}; updated ${new Date(data.time_ms).toLocaleTimeString()}`;
    const unread = data.rings_not_followed || 0;
    document.body.dataset.ringsNotFollowed = unread;
    if (unread > 0) {
      setStatus("incomplete", `${updated}. NOT SHOWN: ${unread} ring files this node cannot follow (open-file limit, agent limit or another draining reader: see serve's log); their events are unread.`);
    } else {
      setStatus("ok", updated);
    }
  } catch (e) {
    document.body.dataset.error = String(e.message || e);
    setStatus("error", `Cannot load ${url}: ${e.message || e}. Retrying every ${REFRESH_MS / 1000} s; the figures below are stale.`);
  }
  setTimeout(poll, REFRESH_MS);
}

function go(offset) {
  state.offset = Math.max(0, offset);
  state.shown = null;
  const p = new URLSearchParams(location.search);
  p.set("offset", state.offset);
  if (state.filter) p.set("filter", state.filter); else p.delete("filter");
  history.replaceState(null, "", "?" + p);
}

document.getElementById("refresh").textContent = REFRESH_MS / 1000;
document.getElementById("filter").value = state.filter;
document.getElementById("filter").addEventListener("input", (e) => { state.filter = e.target.value; go(0); });
document.getElementById("prev").addEventListener("click", () => go(state.offset - Number(state.limit)));
document.getElementById("next").addEventListener("click", () => go(state.offset + Number(state.limit)));
poll();
