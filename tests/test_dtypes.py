"""Number formats derived from their bit layouts; golden values from the format specifications."""
from fractions import Fraction

import pytest

from vramsym.catalog.dtypes import explain
from vramsym.lang.diagnostics import InputError


@pytest.mark.parametrize("name,max_normal,min_normal,eps", [
    ("fp32", (2 - Fraction(1, 2**23)) * 2**127, Fraction(1, 2**126), Fraction(1, 2**23)),   # IEEE 754 binary32
    ("fp16", 65504, Fraction(1, 2**14), Fraction(1, 2**10)),                                 # IEEE 754 binary16
    ("bf16", (2 - Fraction(1, 2**7)) * 2**127, Fraction(1, 2**126), Fraction(1, 2**7)),     # bfloat16
    ("fp8-e4m3", 448, Fraction(1, 2**6), Fraction(1, 8)),                                    # OCP OFP8 E4M3: max 448
    ("fp8-e5m2", 57344, Fraction(1, 2**14), Fraction(1, 4)),                                 # OCP OFP8 E5M2: max 57344
    ("mxfp4", 6, 1, Fraction(1, 2)),                                                         # OCP MX FP4 E2M1: max 6
])
def test_float_ranges(lib, name, max_normal, min_normal, eps):
    info = explain(name, lib)
    assert info["max_normal"] == max_normal
    assert info["min_normal"] == min_normal
    assert info["epsilon"] == eps


def test_stored_sizes(lib):
    assert explain("tf32", lib)["bytes_per_element"] == 4            # 19 bits computed, stored in 32
    assert explain("nf4", lib)["bits_per_element_stored"] == Fraction(9, 2)           # QLoRA: 4.5 bits
    assert float(explain("nf4-dq", lib)["bits_per_element_stored"]) == pytest.approx(4.127, abs=5e-4)  # QLoRA: ~4.127
    assert explain("int4", lib)["max"] == 7


def test_unknown_format_suggests():
    with pytest.raises(InputError, match="did you mean"):
        explain("bf61")
