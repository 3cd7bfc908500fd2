"""The calculator page (``vramsym html``): one self-contained HTML file, no network.

The page holds the model and GPU catalogs and, for every (regime, resolved options) that its
models and precisions need, the regime's components as exact JavaScript (BigInt rationals,
:func:`vramsym.printers.codegen.js_exact`) printed from the same sympy expressions as every
other export. Each model's numbers are bound here, by the engine (vramsym.engine.bind), and
travel as exact strings; the page only substitutes the inputs (batch, sequence, LoRA rank) and
rounds each sum up to a whole byte as the engine does, so its bytes equal the engine's. All
data reaches the page as JSON inside a ``<script type="application/json">`` element with ``<``,
``>``, ``&`` and every non-ASCII character escaped (a lone surrogate in a model name, from a
file name that is not UTF-8, cannot break the page's UTF-8), the template's slots are filled in
one pass (no name can create or hit a slot), and the page writes text with ``textContent`` only.

The page reads its inputs, typed or from the link, as the command line reads its flags
(vramsym.engine.values: a decimal or a ratio, at most 40 significant digits, an exponent of at
most 40, then the symbol's domain and its declared bounds); a value the command line would
refuse, or a model, regime, precision or GPU the page does not have, is said alone and nothing
is computed.
"""
from __future__ import annotations

import json
import re
from fractions import Fraction

from ..errors import InputError

#: the regimes and precisions the page offers (the first precision is the default)
PAGE_REGIMES = {"inference": ("bf16", "fp32"), "train": ("mixed_bf16", "bf16", "fp32"),
                "lora": ("bf16",), "qlora": ("fp32", "bf16")}
FREE = ("batch", "seq", "lora_rank")


def _json_for_script(data) -> str:
    return (json.dumps(data, separators=(",", ":"), sort_keys=True, ensure_ascii=True)
            .replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def _frac(v) -> str:
    f = Fraction(v)
    return str(f.numerator) if f.denominator == 1 else f"{f.numerator}/{f.denominator}"


def build_data(models=None, voc=None) -> tuple[dict, str]:
    """(data, functions): the page's JSON data and the JavaScript of its groups' components."""
    import vramsym
    from ..engine.bind import bind
    from ..engine.regimes import compose
    from ..engine.runtime import compile as _compile, vocabulary
    from .codegen import js_exact, prepare
    voc = voc or vocabulary()
    lib = voc.load_library()
    names = list(models) if models else [m["name"] for m in vramsym.catalog_models()]
    if not names:
        raise InputError("the page needs at least one model")
    groups, configs, model_rows, funcs = {}, {}, [], []
    for name in names:
        spec = vramsym.load_model(name)
        model_rows.append({"name": name, "label": spec.name, "source": str(spec.source), "hf_id": spec.hf_id})
        for regime, precisions in PAGE_REGIMES.items():
            for precision in precisions:
                r = _compile(spec, regime, {"precision": precision}, vocabulary_=voc)
                key = json.dumps([regime, sorted(r.regime.options)])
                free = {a: r.regime.symbol(a) for a in FREE if r.regime.symbol(a) in r.regime.args}
                if key not in groups:
                    gid = f"g{len(groups)}"
                    composed = compose(lib, regime, dict(r.regime.options))
                    prep = prepare(composed, lib)
                    comps = [e for e in prep.entries if e.key != "total"]
                    host = set(composed.host)
                    meta = {m["name"]: m for m in r.regime.components}
                    bounds = {}
                    for alias, sym in free.items():
                        for kind, (deps, expr) in (prep.bounds or {}).get(sym, {}).items():
                            if kind in ("max", "min"):
                                bounds.setdefault(alias, {})[kind] = len(funcs)
                                funcs.append(f"(a) => {js_exact(expr)}")
                    groups[key] = {"id": gid, "regime": regime, "args": list(prep.args), "free": free,
                                   "domains": {a: r.regime.symbols[s]["domain"] for a, s in free.items()},
                                   "options": dict(r.regime.options), "bounds": bounds,
                                   "description": composed.description, "function": len(funcs),
                                   "components": [{"name": e.key, "description": e.description,
                                                   "host": e.key in host,
                                                   "definition": meta.get(e.key, {}).get("definition", ""),
                                                   "formula": meta.get(e.key, {}).get("formula", ""),
                                                   "sources": list(e.sources)} for e in comps]}
                    funcs.append("(a) => [\n" + ",\n".join(js_exact(e.expr) for e in comps) + "]")
                g = groups[key]
                no_default = tuple(s for s in free.values() if r.regime.symbols[s]["default"] is None)
                values, prov = bind(r.regime, spec.config, {}, exclude=no_default, source=spec.source)
                need = [a for a in g["args"] if a not in free.values()]
                missing = [a for a in need if a not in values]
                if missing:
                    raise InputError(f"{name}: regime {regime} needs {', '.join(missing)}, which the model does not give")
                defaults = {alias: _frac(values[sym]) for alias, sym in free.items() if sym in values}
                configs[f"{name}|{regime}|{precision}"] = {
                    "group": g["id"], "values": {a: _frac(values[a]) for a in need},
                    "provenance": {a: str(prov.get(a, "")) for a in need}, "defaults": defaults}
    gpus = [{"name": g["name"], "capacity_bytes": str(g["capacity_bytes"]), "memory_mib": g["memory_mib"],
             "marketed": g["marketed"]} for g in vramsym.catalog_gpus()]
    data = {"version": vramsym.__version__, "models": model_rows, "gpus": gpus,
            "regimes": {k: {"precisions": list(v), "description": lib.regimes[k].description}
                        for k, v in PAGE_REGIMES.items()},
            "groups": {g["id"]: g for g in groups.values()}, "configs": configs}
    return data, "const FUNCS = [\n" + ",\n".join(funcs) + "\n];\n"


_SLOT = re.compile(r"/\*(DATA|RUNTIME|APP)\*/")


def page(models=None, voc=None) -> str:
    from .codegen import JS_EXACT_RUNTIME
    data, funcs = build_data(models, voc)
    fill = {"DATA": _json_for_script(data), "RUNTIME": JS_EXACT_RUNTIME + funcs, "APP": _APP}
    # one pass over the template: what a slot receives (a model's name, a path) is never searched
    # for another slot, so no data can create one or hit one
    return _SLOT.sub(lambda m: fill[m.group(1)], _HTML)


_HTML = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<title>vramsym calculator</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.1em; margin-top: 1.5em; }
form { display: grid; grid-template-columns: repeat(4, minmax(180px, 1fr)); gap: .6em 1em; }
label { display: flex; flex-direction: column; font-weight: 600; font-size: .9em; }
input, select { font: inherit; padding: .25em; }
table { border-collapse: collapse; width: 100%; margin-top: .5em; }
td, th { border-bottom: 1px solid #ddd; padding: .25em .5em; text-align: left; vertical-align: top; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
#summary { font-size: 1.15em; margin-top: 1em; } .fits { color: #1a7f37; } .over { color: #c62828; }
#error { color: #c62828; font-weight: 600; } code { font-size: .9em; word-break: break-all; }
.muted { color: #666; font-size: .9em; }
</style></head>
<body>
<h1>vramsym: will it fit on my GPU?</h1>
<p class="muted">Every number is computed in this page by the exact (BigInt rational) JavaScript export of
vramsym's compiled formulas; sizes in bytes, GiB (2^30 B) and GB (10^9 B). No network is used.</p>
<form id="inputs" onsubmit="return false">
<label>model <select id="model"></select></label>
<label>regime <select id="regime"></select></label>
<label>precision <select id="precision"></select></label>
<label>GPU <select id="gpu"></select></label>
<label>batch <input id="batch" type="text" inputmode="numeric" autocomplete="off" value="1"></label>
<label>sequence length <input id="seq" type="text" inputmode="numeric" autocomplete="off" value="4096"></label>
<label id="lora-label">LoRA rank <input id="lora_rank" type="text" inputmode="numeric" autocomplete="off" value="8"></label>
<label>link <a id="link" href="#">this configuration</a></label>
</form>
<div id="error" role="alert"></div>
<div id="summary">total: <span id="total-bytes"></span> B = <span id="total-gib"></span> GiB
(<span id="total-gb"></span> GB); <span id="fit"></span></div>
<p class="muted" id="regime-description"></p>
<svg id="chart" width="1000" height="120" viewBox="0 0 1000 120" role="img" aria-label="components stacked against the capacity"></svg>
<h2>Breakdown</h2>
<table id="breakdown"><thead><tr><th>component</th><th class="n">bytes</th><th class="n">GiB</th><th class="n">share</th><th>description</th></tr></thead><tbody></tbody></table>
<h2>Derivation</h2>
<p class="muted">Each component's formula over the declared symbols, then the symbols' values for this model
(bound by vramsym from the config) and the inputs.</p>
<table id="derivation"><thead><tr><th>component</th><th>formula</th><th class="n">bytes</th></tr></thead><tbody></tbody></table>
<table id="values"><thead><tr><th>symbol</th><th class="n">value</th><th>from</th></tr></thead><tbody></tbody></table>
<script type="application/json" id="vramsym-data">/*DATA*/</script>
<script>
"use strict";
/*RUNTIME*/
/*APP*/
</script>
</body></html>
"""

_APP = r"""
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

// a number as the command line reads one (vramsym.engine.values.to_fraction): a decimal or a
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
// the symbol's domain, as vramsym.engine.values.domain_problem
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
  let total = [0n, 1n];
  g.components.forEach((c, i) => { if (!c.host) total = Q.ad(total, parts[i]); });
  if (total[0] < 0n) throw new Error("the total is negative: the inputs are outside what the formulas describe");
  return {cfg, g, a, inputs, parts: parts.map(Q.bytes), exact: parts, total: Q.bytes(total)};
}

function chart(res, capacity) {
  const svg = $("chart"), NS = "http://www.w3.org/2000/svg";
  svg.textContent = "";
  const top = capacity > res.total ? capacity : res.total;
  const W = 1000, scale = (b) => ratio(b, top) * (W - 20);
  let x = 10;
  res.g.components.forEach((c, i) => {
    const b = res.parts[i];
    if (c.host || b <= 0n) return;
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
  $("regime-description").textContent = res.g.description;
  const body = $("breakdown").tBodies[0], der = $("derivation").tBodies[0], vals = $("values").tBodies[0];
  body.textContent = ""; der.textContent = ""; vals.textContent = "";
  res.g.components.forEach((c, i) => {
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
"""
