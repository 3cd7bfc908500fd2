const DATA = JSON.parse(document.getElementById("vramsym-data").textContent);
const $ = (id) => document.getElementById(id);
const GIB = 1073741824n, GB = 1000000000n;
const COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];
// the page's inputs: the option selects and the numbers, each shown where the regime reads it
const OPTIONS = DATA.inputs.options, NUMBERS = DATA.inputs.numbers;

// text shown to a person: control characters, lone surrogates and bidirectional controls as \xNN / \uNNNN
const UNSAFE = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
function visible(s) {
  return String(s).replace(UNSAFE, (c) => { const n = c.charCodeAt(0);
    return n < 256 ? "\\x" + n.toString(16).padStart(2, "0") : "\\u" + n.toString(16).padStart(4, "0"); });
}
function quoted(s) { s = visible(s); return "'" + (s.length > 60 ? s.slice(0, 57) + "..." : s) + "'"; }
// a whole number with en-US thousands separators (a BigInt: exact however large)
const grouped = (n) => BigInt(n).toLocaleString("en-US");
const dashed = (v) => String(v).replace(/_/g, "-");

function option(sel, value, text) { const o = document.createElement("option"); o.value = value; o.textContent = visible(text); sel.appendChild(o); }
function fill() {
  DATA.models.forEach((m) => option($("model"), m.name, m.name));
  DATA.inputs.regimes.forEach((r) => option($("regime"), r, dashed(r)));
  DATA.gpus.forEach((g) => option($("gpu"), g.name, g.name + " (" + g.memory_mib.toLocaleString("en-US") + " MiB)"));
}

// the configuration of the model and regime chosen, at the regime's defaults (its options as
// resolved for the model), and the option inputs this regime offers
const baseKey = () => $("model").value + "|" + $("regime").value + "|";
function base() { return DATA.configs[baseKey()]; }
function offered() {
  const r = DATA.regimes[$("regime").value];
  return r ? r.options : [];
}
// each option's select: the regime's values, the default for this model first; it keeps its
// value where the new list has it and that leaves one option changed at most (another model),
// else (and with reset: another regime) every option is at its default
function optionSelects(reset) {
  const b = base(), offer = offered();
  OPTIONS.forEach((name) => {
    const sel = $(name), keep = sel.value, spec = offer.find((o) => o.name === name);
    sel.textContent = "";
    $(name + "-label").style.display = spec ? "" : "none";
    if (!spec) return;
    const first = b && b.options ? b.options[name] : spec.values[0];
    [first, ...spec.values.filter((v) => v !== first)].forEach((v) => option(sel, v, dashed(v) + (v === first ? " (default)" : "")));
    sel.value = !reset && [...sel.options].some((o) => o.value === keep) ? keep : first;
  });
  if (!reset && changedOptions().length > 1) optionSelects(true);
}
// the options that differ from the regime's defaults for this model
function changedOptions() {
  const b = base();
  if (!b || !b.options) return [];
  return offered().map((o) => o.name).filter((n) => $(n).value !== b.options[n]);
}
function configKey() {
  const changed = changedOptions();
  if (changed.length > 1) throw new Error("this page holds one option changed at a time from the defaults of regime " +
    dashed($("regime").value) + " (" + changed.map((n) => n + " " + dashed($(n).value)).join(", ") + "); `vramsym estimate` takes any combination");
  return baseKey() + (changed.length ? changed[0] + "=" + $(changed[0]).value : "");
}
function currentGroup() {
  let key;
  try { key = configKey(); } catch (e) { return null; }
  const cfg = DATA.configs[key];
  return cfg && cfg.group ? DATA.groups[cfg.group] : null;
}
// the number inputs this configuration reads are shown; the others are not
function numberInputs() {
  const g = currentGroup();
  NUMBERS.forEach((n) => { $(n + "-label").style.display = (g ? g.free[n] : ["batch", "seq"].includes(n)) ? "" : "none"; });
}

// what the link gives that this page does not have, by input: said alone (nothing is computed)
// until the user changes that input
const queryErrors = {};
const LINK = ["model", "regime", "gpu", ...OPTIONS, ...NUMBERS];
function fromQuery() {
  const q = new URLSearchParams(window.location.search);
  const unknown = [...new Set(q.keys())].filter((k) => !LINK.includes(k));
  if (unknown.length) queryErrors.link = "unknown " + (unknown.length > 1 ? "parameters " : "parameter ") +
    unknown.map(quoted).join(", ") + " in the link (it takes " + LINK.join(", ") + ")";
  // a regime or an option value as the command line writes it (mixed-bf16) or as the page does
  const underscored = (v) => v === null ? null : v.replace(/-/g, "_");
  const set = (id, v, as = v) => { if (v === null) return true; const el = $(id);
    if (el.tagName === "SELECT" && ![...el.options].some((o) => o.value === as)) { queryErrors[id] = "unknown " + id + " " + quoted(v) + " in the link"; return false; }
    el.value = as; return true; };
  set("model", q.get("model"));
  const regimeKnown = set("regime", q.get("regime"), underscored(q.get("regime")));
  optionSelects();
  const names = offered().map((o) => o.name);
  OPTIONS.forEach((n) => {
    const v = q.get(n);
    if (v === null) return;
    if (!names.includes(n)) { if (regimeKnown) queryErrors[n] = "the link sets " + n + ", which regime " + dashed($("regime").value) + " does not offer"; return; }
    set(n, v, underscored(v));
  });
  set("gpu", q.get("gpu"));
  const key = (() => { try { return configKey(); } catch (e) { return null; } })();
  const cfg = key && DATA.configs[key], g = cfg && cfg.group ? DATA.groups[cfg.group] : null;
  NUMBERS.forEach((n) => {
    const v = q.get(n);
    if (g && v !== null && !g.free[n]) { if (regimeKnown) queryErrors[n] = "the link gives " + n + ", which regime " + dashed($("regime").value) + " does not read"; return; }
    // an input the link does not give: the value the formula files default to (as `vramsym
    // estimate` without the flag), else the page's own
    if (v !== null) set(n, v); else if (g && g.defaults[n] !== undefined) set(n, g.defaults[n]);
  });
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

// a symbol as messages name it: its command-line name, else its own, with its description
function named(g, n) { const s = g.symbols[n] || {}; return (s.alias || n) + (s.description ? " (" + s.description + ")" : ""); }
// the bounds the formula files declare on what the page gives and on the defaults reading it,
// as vramsym.engine.bind.check_bounds checks them
function checkBounds(g, a) {
  for (const c of g.checks) {
    const v = a[c.symbol];
    if (v === undefined) continue;
    if (c.kind === "divides") {
      const t = a[c.target];
      if (t !== undefined && v[0] !== 0n && Q.mu(t, [v[1], v[0]])[1] !== 1n)
        throw new Error(named(g, c.symbol) + " must divide " + named(g, c.target) + " = " + show(t) + ", got " + show(v));
      continue;
    }
    if (c.args.some((d) => a[d] === undefined)) continue;
    const b = FUNCS[c.function](a), shown = c.text === show(b) ? c.text : c.text + " = " + show(b);
    if (c.kind === "multiple") {
      if (b[0] !== 0n && Q.mu(v, [b[1], b[0]])[1] !== 1n) throw new Error(named(g, c.symbol) + " must be a whole multiple of " + shown + ", got " + show(v));
    } else if (c.kind === "max" ? Q.gt(v, b) : Q.lt(v, b)) {
      throw new Error(named(g, c.symbol) + " must be " + (c.kind === "max" ? "at most " : "at least ") + shown + ", got " + show(v));
    }
  }
}

function compute() {
  const key = configKey();
  const cfg = DATA.configs[key];
  if (!cfg) throw new Error("no configuration " + quoted(key) + " on this page");
  if (cfg.refused) throw new Error(cfg.refused);
  const g = DATA.groups[cfg.group], model = DATA.bound[$("model").value];
  const gpu = DATA.gpus.find((x) => x.name === $("gpu").value);
  const a = {}, from = {};
  for (const [k, v] of Object.entries(model.values)) { a[k] = Q.parse(v); from[k] = model.provenance[k]; }
  for (const [k, v] of Object.entries(cfg.values)) a[k] = Q.parse(v);
  for (const [k, v] of Object.entries(cfg.provenance)) from[k] = v;
  const inputs = {};
  for (const [alias, sym] of Object.entries(g.free)) {
    a[sym] = inputValue(alias, (g.symbols[sym] || {}).domain);
    inputs[alias] = show(a[sym]); from[sym] = "input";
  }
  // what the GPU fixes (its capacity, its catalog inputs), as `vramsym estimate --gpu`
  for (const [alias, sym] of Object.entries(g.given)) {
    const v = alias === "capacity" ? gpu.capacity_bytes : gpu.inputs[alias];
    if (v !== undefined) { a[sym] = Q.parse(v); from[sym] = "the GPU " + gpu.name; }
  }
  // the defaults that read them, each after what it reads
  for (const d of g.derived) {
    if (!cfg.derive.includes(d.symbol) || (from[d.symbol] || "").startsWith("the GPU ")) continue;
    const v = FUNCS[d.function](a), s = g.symbols[d.symbol] || {};
    if (domainProblem(s.domain || "posint", v)) throw new Error(named(g, d.symbol) + " must be " + (WANT[s.domain] || "a number") +
      ", got " + show(v) + " from default (" + d.args.filter((x) => a[x] !== undefined).map((x) => ((g.symbols[x] || {}).alias || x) + "=" + show(a[x])).join(", ") + ")");
    a[d.symbol] = v; from[d.symbol] = "default";
  }
  checkBounds(g, a);
  for (const [sym, text] of Object.entries(cfg.gaps || {}))
    if (a[sym] !== undefined && Q.gt(a[sym], [1n, 1n])) throw new Error(text.split("{value}").join(show(a[sym])));
  const comps = g.components.map((i) => DATA.components[i]);
  const parts = comps.map((c) => FUNCS[c.function](a));
  // a share (allocator slack) is a fraction of the peak phase's other GPU components
  if (comps.some((c) => c.share)) {
    const sum = (ids) => ids.reduce((t, i) => Q.ad(t, parts[i]), [0n, 1n]);
    const peak = Q.ad(sum(g.peak.static), g.peak.owns.length ? Q.mx(...g.peak.owns.map(sum)) : [0n, 1n]);
    comps.forEach((c, i) => { if (c.share) parts[i] = Q.mu(parts[i], peak); });
  }
  // the timeline: each phase's total is the sum of the components alive in it; the total is the
  // largest (the first phase declared, on a tie), and the breakdown is that peak phase's
  let total = null, peak = null;
  g.phases.forEach((p) => {
    let t = [0n, 1n];
    p.components.forEach((i) => { if (!comps[i].host) t = Q.ad(t, parts[i]); });
    if (total === null || Q.gt(t, total)) { total = t; peak = p; }
  });
  if (total[0] < 0n) throw new Error("the total is negative: the inputs are outside what the formulas describe");
  const alive = new Set(peak.components);
  return {cfg, g, a, from, comps, inputs, parts: parts.map(Q.bytes), exact: parts, total: Q.bytes(total), peak, alive, gpu};
}

function chart(res, capacity) {
  const svg = $("chart"), NS = "http://www.w3.org/2000/svg";
  svg.textContent = "";
  const top = capacity > res.total ? capacity : res.total;
  const W = 1000, scale = (b) => ratio(b, top) * (W - 20);
  let x = 10;
  res.comps.forEach((c, i) => {
    const b = res.parts[i];
    if (c.host || b <= 0n || !res.alive.has(i)) return;
    const r = document.createElementNS(NS, "rect");
    const w = scale(b);
    r.setAttribute("x", x); r.setAttribute("y", 20); r.setAttribute("width", Math.max(w, 0.5)); r.setAttribute("height", 50);
    r.setAttribute("fill", COLORS[i % COLORS.length]); r.setAttribute("class", "component");
    const t = document.createElementNS(NS, "title"); t.textContent = c.name + ": " + grouped(b) + " B"; r.appendChild(t);
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
  ["total-bytes", "total-gib", "total-gb", "fit", "regime-description", "options-line"].forEach((id) => { $(id).textContent = ""; });
  ["breakdown", "derivation", "values"].forEach((id) => { $(id).tBodies[0].textContent = ""; });
  $("chart").textContent = "";
  $("summary").style.visibility = "hidden";
}

function render() {
  numberInputs();
  let res;
  const errors = Object.values(queryErrors);
  try { res = compute(); } catch (e) { errors.push(e.message); }
  if (errors.length) { clearResults(); showError(errors.join("; ")); return; }
  showError("");
  $("summary").style.visibility = "";
  const capacity = BigInt(res.gpu.capacity_bytes);
  $("total-bytes").textContent = grouped(res.total);
  $("total-gib").textContent = fmt(res.total, GIB);
  $("total-gb").textContent = fmt(res.total, GB);
  const head = capacity - res.total;
  $("fit").textContent = (head >= 0n ? "fits " : "does not fit ") + visible(res.gpu.name) + " (" + grouped(capacity) +
    " B), headroom " + grouped(head) + " B";
  $("fit").className = head >= 0n ? "fits" : "over";
  $("regime-description").textContent = res.g.description + (res.g.phases.length > 1
    ? " Peak phase: " + res.peak.name + " (" + res.peak.description + "); the components alive in it:" : "");
  $("options-line").textContent = "options: " + Object.keys(res.g.options).sort()
    .map((k) => k + "=" + dashed(res.g.options[k])).join(", ");
  const body = $("breakdown").tBodies[0], der = $("derivation").tBodies[0], vals = $("values").tBodies[0];
  body.textContent = ""; der.textContent = ""; vals.textContent = "";
  res.comps.forEach((c, i) => {
    if (!res.alive.has(i)) return;
    const b = res.parts[i];
    const tr = document.createElement("tr");
    cell(tr, c.name + (c.host ? " (host memory)" : ""));
    cell(tr, grouped(b), "n"); cell(tr, fmt(b, GIB), "n");
    cell(tr, c.host || res.total === 0n ? "" : (ratio(b, res.total) * 100).toFixed(1) + "%", "n");
    cell(tr, c.description);
    body.appendChild(tr);
    const d = document.createElement("tr");
    cell(d, c.name);
    const f = cell(d, ""); const code = document.createElement("code");
    code.textContent = c.definition + (c.formula && c.formula !== c.definition ? "  =  " + c.formula : ""); f.appendChild(code);
    cell(d, grouped(b), "n");
    der.appendChild(d);
  });
  const shown = new Set(res.g.args);
  res.g.derived.forEach((d) => { if (res.a[d.symbol] !== undefined) shown.add(d.symbol); });
  Object.values(res.g.free).forEach((s) => shown.add(s));
  Object.values(res.g.given).forEach((s) => { if (res.a[s] !== undefined) shown.add(s); });
  [...shown].sort().forEach((k) => {
    if (res.a[k] === undefined) return;
    const tr = document.createElement("tr");
    cell(tr, k); cell(tr, show(res.a[k]), "n");
    cell(tr, visible(res.from[k] || ""));
    vals.appendChild(tr);
  });
  chart(res, capacity);
  const q = new URLSearchParams({model: $("model").value, regime: $("regime").value, gpu: $("gpu").value});
  const names = offered().map((o) => o.name), changed = changedOptions();
  // the precision always, another option where it differs from the regime's defaults
  names.forEach((n) => { if (n === "precision" || changed.includes(n)) q.set(n, dashed($(n).value)); });
  NUMBERS.forEach((n) => { if (res.g.free[n]) q.set(n, $(n).value); });
  $("link").href = "?" + q.toString();
  try { window.history.replaceState(null, "", "?" + q.toString()); } catch (e) { /* file: URLs may refuse */ }
}

// a change by the user answers the link's complaint about that input (and about unknown parameters)
function changed(...ids) { ids.forEach((id) => { delete queryErrors[id]; }); delete queryErrors.link; render(); }
// one option at a time: choosing one sets the others the page changed back to their defaults
function optionChanged(name) {
  const b = base(), back = [];
  if (b && b.options && $(name).value !== b.options[name])
    offered().forEach((o) => { if (o.name !== name && $(o.name).value !== b.options[o.name]) { back.push(o.name + " " + dashed(b.options[o.name])); $(o.name).value = b.options[o.name]; } });
  $("notice").textContent = back.length ? "one option at a time: " + back.join(", ") + " set back to the default" : "";
  changed(...OPTIONS);
}
fill();
$("model").value = DATA.initial.model; $("regime").value = DATA.initial.regime; $("gpu").value = DATA.initial.gpu;
$("batch").value = DATA.initial.batch; $("seq").value = DATA.initial.seq;
fromQuery();
$("regime").addEventListener("change", () => { optionSelects(true); $("notice").textContent = ""; changed("regime", ...OPTIONS, ...NUMBERS); });
["input", "change"].forEach((ev) => $("model").addEventListener(ev, () => { optionSelects(); changed("model"); }));
OPTIONS.forEach((n) => $(n).addEventListener("change", () => optionChanged(n)));
["gpu", ...NUMBERS].forEach((id) => $(id).addEventListener("input", () => changed(id)));
$("gpu").addEventListener("change", () => changed("gpu"));
render();
