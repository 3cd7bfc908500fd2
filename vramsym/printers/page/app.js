const DATA = JSON.parse(document.getElementById("vramsym-data").textContent);
const $ = (id) => document.getElementById(id);
const GIB = 1073741824n, GB = 1000000000n;
const COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];

// text shown to a person: control characters, lone surrogates and bidirectional controls as \xNN / \uNNNN
const UNSAFE = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
function visible(s) {
  return String(s).replace(UNSAFE, (c) => { const n = c.charCodeAt(0);
    return n < 256 ? "\\x" + n.toString(16).padStart(2, "0") : "\\u" + n.toString(16).padStart(4, "0"); });
}
function quoted(s) { s = visible(s); return "'" + (s.length > 60 ? s.slice(0, 57) + "..." : s) + "'"; }

function option(sel, value, text) { const o = document.createElement("option"); o.value = value; o.textContent = visible(text); sel.appendChild(o); }
function fill() {
  DATA.models.forEach((m) => option($("model"), m.name, m.name));
  Object.keys(DATA.regimes).forEach((r) => option($("regime"), r, r));
  DATA.gpus.forEach((g) => option($("gpu"), g.name, g.name + " (" + g.memory_mib.toLocaleString("en-US") + " MiB)"));
}
function precisions() {
  const sel = $("precision"), keep = sel.value;
  sel.textContent = "";
  DATA.regimes[$("regime").value].precisions.forEach((p) => option(sel, p, p.replace(/_/g, "-")));
  if ([...sel.options].some((o) => o.value === keep)) sel.value = keep;
}

// what the link gives that this page does not have, by input: said alone (nothing is computed)
// until the user changes that input
const queryErrors = {};
const LINK = ["model", "regime", "precision", "gpu", "batch", "seq", "lora_rank"];
function fromQuery() {
  const q = new URLSearchParams(window.location.search);
  const unknown = [...new Set(q.keys())].filter((k) => !LINK.includes(k));
  if (unknown.length) queryErrors.link = "unknown " + (unknown.length > 1 ? "parameters " : "parameter ") +
    unknown.map(quoted).join(", ") + " in the link (it takes " + LINK.join(", ") + ")";
  const set = (id, v) => { if (v === null) return; const el = $(id);
    if (el.tagName === "SELECT" && ![...el.options].some((o) => o.value === v)) { queryErrors[id] = "unknown " + id + " " + quoted(v) + " in the link"; return; }
    el.value = v; };
  set("model", q.get("model")); set("regime", q.get("regime")); precisions();
  set("precision", q.get("precision") && q.get("precision").replace(/-/g, "_"));
  set("gpu", q.get("gpu")); set("batch", q.get("batch")); set("seq", q.get("seq"));
  const cfg = DATA.configs[$("model").value + "|" + $("regime").value + "|" + $("precision").value];
  // the rank the formula files default to (as `vramsym estimate` without --lora-rank), unless the link gives one
  set("lora_rank", q.get("lora_rank") !== null ? q.get("lora_rank") : (cfg && cfg.defaults.lora_rank) || null);
}
function showError(text) { $("error").textContent = text; }

// a number as the command line reads one (vramsym.numbers.to_fraction): a decimal or a
// ratio, exact, at most 40 significant digits, an exponent of at most 40, 90 characters
const MAX_DIGITS = 40, MAX_EXPONENT = 40n;
const DECIMAL = /^\s*([+-]?)(\d[\d_]*)?(?:\.(\d*))?(?:[eE]([+-]?\d+))?\s*$/, RATIO = /^\s*([+-]?\d+)\s*\/\s*(\d+)\s*$/;
function readNumber(text) {
  if (text.length > 2 * MAX_DIGITS + 10) throw new Error("longer than " + (2 * MAX_DIGITS + 10) + " characters");
  let m = RATIO.exec(text);
  if (m) {
    if (BigInt(m[2]) === 0n) throw new Error("a fraction with a zero denominator");
    return Q.q(BigInt(m[1]), BigInt(m[2]));
  }
  m = DECIMAL.exec(text);
  if (!m || !(m[2] || m[3])) throw new Error("not a number");
  const frac = m[3] || "", digits = (m[2] || "").replace(/_/g, "") + frac;
  if (digits.replace(/^0+/, "").length > MAX_DIGITS) throw new Error("more than " + MAX_DIGITS + " significant digits");
  const e = m[4] ? BigInt(m[4]) : 0n;
  if (e > MAX_EXPONENT || e < -MAX_EXPONENT) throw new Error("an exponent beyond \u00b1" + MAX_EXPONENT);
  let n = BigInt(digits || "0") * (m[1] === "-" ? -1n : 1n), d = 10n ** BigInt(frac.length);
  if (e >= 0n) n *= 10n ** e; else d *= 10n ** -e;
  return Q.q(n, d);
}
// the symbol's domain, as vramsym.numbers.domain_problem
const WANT = {posint: "a whole number of at least 1", nonnegint: "a whole number of at least 0", posreal: "positive",
              nonnegreal: "at least 0", bool: "0 or 1 (false or true)"};
function domainProblem(domain, v) {
  if (["posint", "nonnegint", "bool"].includes(domain) && v[1] !== 1n) return true;
  if (["posint", "posreal"].includes(domain) && v[0] <= 0n) return true;
  if (["nonnegint", "nonnegreal"].includes(domain) && v[0] < 0n) return true;
  return domain === "bool" && v[0] !== 0n && v[0] !== 1n;
}
function inputValue(alias, domain) {
  const t = String($(alias).value), want = alias + " must be " + (WANT[domain] || "a number") + ", got " + quoted(t.trim());
  let v;
  try { v = readNumber(t); } catch (e) { throw new Error(want + ": " + e.message); }
  if (domainProblem(domain || "posint", v)) throw new Error(want);
  return v;
}
const show = (x) => x[1] === 1n ? x[0].toString() : x[0] + "/" + x[1];
// exact decimals of a whole number of bytes in a unit (no float overflow, however large)
function fmt(b, unit) {
  const neg = b < 0n, c = ((neg ? -b : b) * 100n + unit / 2n) / unit;
  return (neg ? "-" : "") + (c / 100n).toLocaleString("en-US") + "." + String(c % 100n).padStart(2, "0");
}
const ratio = (b, of) => Number(b * 1000000n / of) / 1e6;
function cell(tr, text, cls) { const td = document.createElement("td"); td.textContent = text; if (cls) td.className = cls; tr.appendChild(td); return td; }

function compute() {
  const key = $("model").value + "|" + $("regime").value + "|" + $("precision").value;
  const cfg = DATA.configs[key];
  if (!cfg) throw new Error("no configuration " + quoted(key) + " on this page");
  const g = DATA.groups[cfg.group];
  const a = {};
  for (const [k, v] of Object.entries(cfg.values)) a[k] = Q.parse(v);
  const inputs = {};
  for (const [alias, sym] of Object.entries(g.free)) {
    a[sym] = inputValue(alias, (g.domains || {})[alias]);
    inputs[alias] = show(a[sym]);
  }
  for (const [alias, b] of Object.entries(g.bounds)) {
    if (b.max !== undefined && Q.gt(a[g.free[alias]], FUNCS[b.max](a))) throw new Error(alias + " must be at most " + show(FUNCS[b.max](a)) + ", got " + inputs[alias]);
    if (b.min !== undefined && Q.lt(a[g.free[alias]], FUNCS[b.min](a))) throw new Error(alias + " must be at least " + show(FUNCS[b.min](a)) + ", got " + inputs[alias]);
  }
  const parts = FUNCS[g.function](a);
  // the timeline: each phase's total is the sum of the components alive in it; the total is the
  // largest (the first phase declared, on a tie), and the breakdown is that peak phase's
  let total = null, peak = null;
  g.phases.forEach((p) => {
    let t = [0n, 1n];
    p.components.forEach((i) => { if (!g.components[i].host) t = Q.ad(t, parts[i]); });
    if (total === null || Q.gt(t, total)) { total = t; peak = p; }
  });
  if (total[0] < 0n) throw new Error("the total is negative: the inputs are outside what the formulas describe");
  const alive = new Set(peak.components);
  return {cfg, g, a, inputs, parts: parts.map(Q.bytes), exact: parts, total: Q.bytes(total), peak, alive};
}

function chart(res, capacity) {
  const svg = $("chart"), NS = "http://www.w3.org/2000/svg";
  svg.textContent = "";
  const top = capacity > res.total ? capacity : res.total;
  const W = 1000, scale = (b) => ratio(b, top) * (W - 20);
  let x = 10;
  res.g.components.forEach((c, i) => {
    const b = res.parts[i];
    if (c.host || b <= 0n || !res.alive.has(i)) return;
    const r = document.createElementNS(NS, "rect");
    const w = scale(b);
    r.setAttribute("x", x); r.setAttribute("y", 20); r.setAttribute("width", Math.max(w, 0.5)); r.setAttribute("height", 50);
    r.setAttribute("fill", COLORS[i % COLORS.length]); r.setAttribute("class", "component");
    const t = document.createElementNS(NS, "title"); t.textContent = c.name + ": " + b.toLocaleString("en-US") + " B"; r.appendChild(t);
    svg.appendChild(r);
    if (w > 70) { const l = document.createElementNS(NS, "text"); l.setAttribute("x", x + 4); l.setAttribute("y", 50);
      l.setAttribute("font-size", "12"); l.setAttribute("fill", "#fff"); l.textContent = c.name; svg.appendChild(l); }
    x += w;
  });
  const cx = 10 + scale(capacity);
  const line = document.createElementNS(NS, "line");
  line.setAttribute("x1", cx); line.setAttribute("x2", cx); line.setAttribute("y1", 10); line.setAttribute("y2", 80);
  line.setAttribute("stroke", "#c62828"); line.setAttribute("stroke-width", 3); line.setAttribute("id", "capacity-line");
  svg.appendChild(line);
  const lab = document.createElementNS(NS, "text");
  lab.setAttribute("x", Math.min(cx, W - 260)); lab.setAttribute("y", 100); lab.setAttribute("font-size", "13");
  lab.textContent = "capacity " + visible($("gpu").value) + ": " + fmt(capacity, GIB) + " GiB";
  svg.appendChild(lab);
}

// an error is said alone: no total, no table, no chart of some other configuration beside it
function clearResults() {
  ["total-bytes", "total-gib", "total-gb", "fit", "regime-description"].forEach((id) => { $(id).textContent = ""; });
  ["breakdown", "derivation", "values"].forEach((id) => { $(id).tBodies[0].textContent = ""; });
  $("chart").textContent = "";
  $("summary").style.visibility = "hidden";
}

function render() {
  const cfgNow = DATA.configs[$("model").value + "|" + $("regime").value + "|" + $("precision").value];
  $("lora-label").style.display = cfgNow && DATA.groups[cfgNow.group].free.lora_rank ? "" : "none";
  let res;
  const errors = Object.values(queryErrors);
  try { res = compute(); } catch (e) { errors.push(e.message); }
  if (errors.length) { clearResults(); showError(errors.join("; ")); return; }
  showError("");
  $("summary").style.visibility = "";
  const gpu = DATA.gpus.find((g) => g.name === $("gpu").value);
  const capacity = BigInt(gpu.capacity_bytes);
  $("total-bytes").textContent = res.total.toString();
  $("total-gib").textContent = fmt(res.total, GIB);
  $("total-gb").textContent = fmt(res.total, GB);
  const head = capacity - res.total;
  $("fit").textContent = (head >= 0n ? "fits " : "does not fit ") + visible(gpu.name) + " (" + capacity.toLocaleString("en-US") +
    " B), headroom " + head.toLocaleString("en-US") + " B";
  $("fit").className = head >= 0n ? "fits" : "over";
  $("regime-description").textContent = res.g.description + (res.g.phases.length > 1
    ? " Peak phase: " + res.peak.name + " (" + res.peak.description + "); the components alive in it:" : "");
  const body = $("breakdown").tBodies[0], der = $("derivation").tBodies[0], vals = $("values").tBodies[0];
  body.textContent = ""; der.textContent = ""; vals.textContent = "";
  res.g.components.forEach((c, i) => {
    if (!res.alive.has(i)) return;
    const b = res.parts[i];
    const tr = document.createElement("tr");
    cell(tr, c.name + (c.host ? " (host memory)" : ""));
    cell(tr, b.toLocaleString("en-US"), "n"); cell(tr, fmt(b, GIB), "n");
    cell(tr, c.host || res.total === 0n ? "" : (ratio(b, res.total) * 100).toFixed(1) + "%", "n");
    cell(tr, c.description);
    body.appendChild(tr);
    const d = document.createElement("tr");
    cell(d, c.name);
    const f = cell(d, ""); const code = document.createElement("code");
    code.textContent = c.definition + (c.formula && c.formula !== c.definition ? "  =  " + c.formula : ""); f.appendChild(code);
    cell(d, b.toLocaleString("en-US"), "n");
    der.appendChild(d);
  });
  const shown = Object.assign({}, res.cfg.values);
  for (const [alias, sym] of Object.entries(res.g.free)) shown[sym] = res.inputs[alias];
  Object.keys(shown).sort().forEach((k) => {
    const tr = document.createElement("tr");
    cell(tr, k); cell(tr, shown[k], "n");
    cell(tr, Object.values(res.g.free).includes(k) ? "input" : visible(res.cfg.provenance[k] || ""));
    vals.appendChild(tr);
  });
  chart(res, capacity);
  const q = new URLSearchParams({model: $("model").value, regime: $("regime").value, precision: $("precision").value,
    batch: $("batch").value, seq: $("seq").value, gpu: $("gpu").value});
  if (res.g.free.lora_rank) q.set("lora_rank", $("lora_rank").value);
  $("link").href = "?" + q.toString();
  try { window.history.replaceState(null, "", "?" + q.toString()); } catch (e) { /* file: URLs may refuse */ }
}

// a change by the user answers the link's complaint about that input (and about unknown parameters)
function changed(...ids) { ids.forEach((id) => { delete queryErrors[id]; }); delete queryErrors.link; render(); }
fill(); precisions();
$("gpu").value = DATA.gpus.some((g) => g.name === "rtx-4090") ? "rtx-4090" : DATA.gpus[0].name;
fromQuery();
$("regime").addEventListener("change", () => { precisions(); changed("regime", "precision"); });
["model", "precision", "gpu", "batch", "seq", "lora_rank"].forEach((id) => $(id).addEventListener("input", () => changed(id)));
["model", "precision", "gpu"].forEach((id) => $(id).addEventListener("change", () => changed(id)));
render();
