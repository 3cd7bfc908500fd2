// Check TeX with KaTeX: reads a JSON array of {"tex": "...", "display": true|false} on
// stdin, renders each with throwOnError: true, prints a JSON array of
// {"index": i, "tex": ..., "error": ...} for the ones that fail (empty array: all parsed).
// KaTeX is found through $KATEX_MODULE, tests/.node/node_modules/katex, or the usual require.
"use strict";
const path = require("path");

function loadKatex() {
  const candidates = [];
  if (process.env.KATEX_MODULE) candidates.push(process.env.KATEX_MODULE);
  candidates.push(path.join(__dirname, ".node", "node_modules", "katex"));
  candidates.push("katex");
  for (const c of candidates) {
    try { return require(c); } catch (e) { /* next */ }
  }
  process.stderr.write("katex not found (npm install --prefix tests/.node katex)\n");
  process.exit(3);
}

const katex = loadKatex();
let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (d) => { input += d; });
process.stdin.on("end", () => {
  const items = JSON.parse(input);
  const failures = [];
  items.forEach((item, index) => {
    try {
      // maxExpand: a regime's export holds its total and each phase's total, every one expanded into
      // declared symbols; KaTeX's default of 1000 macro expansions per item is a resource limit, not syntax
      katex.renderToString(item.tex, { throwOnError: true, displayMode: !!item.display, strict: "error", maxExpand: 20000 });
    } catch (e) {
      failures.push({ index, tex: item.tex, error: String(e && e.message ? e.message : e) });
    }
  });
  process.stdout.write(JSON.stringify(failures) + "\n");
});
