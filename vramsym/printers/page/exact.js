const Q = (() => {
  const abs = (x) => (x < 0n ? -x : x);
  const gcd = (a, b) => { a = abs(a); b = abs(b); while (b) { [a, b] = [b, a % b]; } return a; };
  const q = (n, d) => {
    if (d === 0n) throw new Error("division by zero");
    if (d < 0n) { n = -n; d = -d; }
    const g = gcd(n, d) || 1n;
    return [n / g, d / g];
  };
  const cmp = (a, b) => { const l = a[0] * b[1], r = b[0] * a[1]; return l < r ? -1 : (l > r ? 1 : 0); };
  const mu = (a, b) => q(a[0] * b[0], a[1] * b[1]);
  return {
    q, cmp,
    ad: (...xs) => xs.reduce((a, b) => q(a[0] * b[1] + b[0] * a[1], a[1] * b[1])),
    mu: (...xs) => xs.reduce(mu),
    pw: (x, k) => { let r = [1n, 1n]; const b = k < 0 ? q(x[1], x[0]) : x; for (let i = 0; i < Math.abs(k); i++) r = mu(r, b); return r; },
    mx: (...xs) => xs.reduce((a, b) => (cmp(a, b) >= 0 ? a : b)),
    mn: (...xs) => xs.reduce((a, b) => (cmp(a, b) <= 0 ? a : b)),
    fl: (x) => { let f = x[0] / x[1]; if (x[0] < 0n && f * x[1] !== x[0]) f -= 1n; return [f, 1n]; },
    ce: (x) => { let f = x[0] / x[1]; if (x[0] > 0n && f * x[1] !== x[0]) f += 1n; return [f, 1n]; },
    gt: (a, b) => cmp(a, b) > 0, ge: (a, b) => cmp(a, b) >= 0, lt: (a, b) => cmp(a, b) < 0,
    le: (a, b) => cmp(a, b) <= 0, eq: (a, b) => cmp(a, b) === 0, ne: (a, b) => cmp(a, b) !== 0,
    parse: (t) => { const [n, d] = String(t).split("/"); return q(BigInt(n), BigInt(d || "1")); },
    bytes: (x) => { let f = x[0] / x[1]; if (x[0] > 0n && f * x[1] !== x[0]) f += 1n; return f; },
    num: (x) => Number(x[0]) / Number(x[1]),
  };
})();
