"""Number formats explained from their bit layout (formulas/number_formats.json).

Ranges are derived exactly (as fractions) from sign/exponent/mantissa widths;
the stored bytes per element come from the formula library's ``bytes_*`` terms.
"""
from __future__ import annotations

from fractions import Fraction
from typing import Dict

from ..lang.build import to_sympy
from ..lang.diagnostics import InputError, suggest
from .formats import _table, aliases, formats  # noqa: F401 (the table, read here too)


def explain(name: str, lib=None) -> Dict:
    table = _table()
    fm = table["formats"]
    key = name.lower().replace("-", "_")
    key = aliases(table).get(key, key)
    if key not in fm:
        hint = suggest(key, fm)
        raise InputError(f"unknown number format '{name}'" + (f"; did you mean {', '.join(hint)}?" if hint else
                                                               f"; known: {', '.join(fm)}"))
    f = dict(fm[key])
    out: Dict = {"name": key, "source": f.get("source")}
    if "exponent" in f:
        e, m = f["exponent"], f["mantissa"]
        bias = 2 ** (e - 1) - 1
        top = 2 ** e - 1
        if f["special"] == "ieee":
            emax, mant_max = top - 1 - bias, 2 - Fraction(1, 2 ** m)
        elif f["special"] == "fn":
            emax, mant_max = top - bias, 2 - Fraction(2, 2 ** m)
        else:
            emax, mant_max = top - bias, 2 - Fraction(1, 2 ** m)
        out.update({"bits": f["sign"] + e + m, "sign_bits": f["sign"], "exponent_bits": e, "mantissa_bits": m,
                    "exponent_bias": bias, "max_normal": mant_max * Fraction(2) ** emax,
                    "min_normal": Fraction(2) ** (1 - bias), "min_subnormal": Fraction(2) ** (1 - bias - m),
                    "epsilon": Fraction(1, 2 ** m), "special_values": f["special"]})
    elif "integer_bits" in f:
        n = f["integer_bits"]
        out.update({"bits": n, "min": -(2 ** (n - 1)), "max": 2 ** (n - 1) - 1})
    else:
        out.update({"levels": f["levels"], "note": f.get("note")})
    if lib is not None and f.get("storage") in lib.terms:
        v = to_sympy(lib.terms[f["storage"]].expr, lambda n: None, {})
        out["bytes_per_element"] = Fraction(int(v.p), int(v.q))
        out["bits_per_element_stored"] = out["bytes_per_element"] * 8
    return out
