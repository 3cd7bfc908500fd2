"""Regenerate docs/architectures.md: which causal-LM model types vramsym reads exactly, from
transformers itself.

    python tools/coverage.py                        # every type: writes docs/architectures.md
    python tools/coverage.py --types llama,qwen3     # a subset: prints the table
    python tools/coverage.py --catalog               # the catalog's families (what CI runs)
    python tools/coverage.py --image-text --types llava,gemma3   # image-text-to-text types, built whole

For every model type of transformers' ``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES``: the config class is
built with its defaults, the model is instantiated on the meta device
(``AutoModelForCausalLM.from_config`` under ``torch.device("meta")``) and its parameters counted
(``model.parameters()``: a tied weight once). vramsym reads the same config (``to_dict()`` written
to a config.json) with :func:`vramsym.load_model` and its parameter count is the ``params`` of the
inference regime. The status of a type:

* ``exact``: vramsym reads it without ``--assume`` and counts every parameter (0 difference);
* ``refused``: vramsym refuses it (the sentence is given); the ``--assume llama`` column shows how
  far the approximation it would give is from the meta count;
* ``text-exact``: a multimodal config whose text model (``get_text_config()``) vramsym counts exactly;
  the other towers are not counted (vramsym's note says so);
* ``WRONG``: vramsym reads it without ``--assume`` but the count differs (a bug: a silent error);
* ``build-failed``: the config or the model cannot be built on CPU (the reason is given).

KV per token: one token is run through the meta model (batch 1) and the elements of its own cache
(``past_key_values``: every layer's keys and values, and the sparse-attention indexer's keys where a layer
keeps them) are counted, against vramsym's ``kv_cache`` at
batch 1, sequence 1 in fp32 / 4. State per sequence: the elements of the recurrent layers' conv
windows and SSM / recurrent states in the same cache, against vramsym's ``recurrent_state`` in fp32 / 4
(an exact type whose KV or state differs is WRONG). A forward that cannot run on the meta device (data-dependent
routing, custom kernels) leaves the column "not checked".
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DOC = ROOT / "docs" / "architectures.md"


def image_text_types() -> list:
    """The image-text-to-text model types (the multimodal issue's table): built whole with
    ``AutoModelForImageTextToText``, their towers included."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES
    return sorted(MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES)


def _auto(kind: str):
    import transformers
    return transformers.AutoModelForImageTextToText if kind == "image-text" else transformers.AutoModelForCausalLM


def causal_lm_types() -> list:
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    return sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)


def catalog_types() -> list:
    """The model types of the bundled catalog (``vramsym models``) that transformers registers as causal
    LMs: a checkpoint's own type whose code is another family's (Kimi-K2's kimi_k2, DeepSeek-V3's
    modeling file) has no config class here; tests/test_params.py counts it through that family."""
    import vramsym
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    from vramsym.catalog.models import catalog
    types = {vramsym.load_model(n).config.get("model_type") for n in catalog()}
    return sorted(t for t in types if t in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)


def _short(e: BaseException, n: int = 160) -> str:
    text = f"{type(e).__name__}: {e}".replace("\n", " ").replace("|", "/")
    return text if len(text) <= n else text[:n - 3] + "..."


# Defaults some config classes leave unset (None) although their modeling file needs them, so the model does
# not build from the defaults alone. The repair fills each from the config's other fields, as the field's usual
# meaning defines it (the same config then goes to vramsym); the table says which fields were filled.
def _head_dim(c):
    return c["hidden_size"] // c["num_attention_heads"]


REPAIRS = {     # model_type -> {field: its value, or a function of the config's other fields}
    "ministral": {"head_dim": _head_dim},          # MinistralAttention reads config.head_dim
    "hunyuan_v1_dense": {"head_dim": _head_dim},   # HunYuanDenseV1Attention likewise
    "hunyuan_v1_moe": {"head_dim": _head_dim},
    "nemotron": {"num_key_value_heads": lambda c: c["num_attention_heads"]},   # MHA when unset (as Llama's config does)
    "reformer": {"is_decoder": True},     # ReformerModelWithLMHead asserts it: the causal LM is the decoder
    # dots.llm1's experts are None in Dots1Config: the published dots.llm1.base config's (128 routed, 2 shared, top 6)
    "dots1": {"n_routed_experts": 128, "n_shared_experts": 2, "num_experts_per_tok": 6},
}


def _config_repair(mt: str) -> dict:
    """Fields for a config class whose defaults fail its own validation: Gemma 4's assistant (a speculative-decoding
    draft that reads the target's KV, configuration_gemma4_assistant.py validate_architecture) requires a text model
    without per-layer inputs, MoE block or double-wide MLP, every layer sharing KV."""
    if mt != "gemma4_assistant":
        return {}
    from transformers import CONFIG_MAPPING
    layers = CONFIG_MAPPING["gemma4_text"]().num_hidden_layers
    return {"text_config": {"hidden_size_per_layer_input": 0, "enable_moe_block": False, "use_double_wide_mlp": False,
                            "vocab_size_per_layer_input": 0, "num_kv_shared_layers": layers}}


def _repair(mt: str, raw: dict) -> dict:
    return {key: rule(raw) if callable(rule) else rule for key, rule in REPAIRS.get(mt, {}).items()}


def _text_params(cfg, raw: dict):
    """A multimodal config's text model alone, as the whole model holds it (its head tied by the top-level
    tie_word_embeddings), counted on the meta device (None if not multimodal or if it does not build)."""
    if not isinstance(raw.get("text_config"), dict):
        return None
    import torch
    from transformers import AutoModelForCausalLM
    try:
        import copy
        text_cfg = copy.deepcopy(cfg.get_text_config())
        if isinstance(raw.get("tie_word_embeddings"), bool):    # the whole model ties by its own flag
            text_cfg.tie_word_embeddings = raw["tie_word_embeddings"]
        with torch.device("meta"):
            text = AutoModelForCausalLM.from_config(text_cfg, dtype=torch.bfloat16)
        return sum(p.numel() for p in text.parameters())
    except Exception:   # noqa: BLE001
        return None


def reference(mt: str, kind: str = "causal", **fields) -> dict:
    """The meta-device model of ``mt`` at its config defaults (``fields`` override them: the tests'
    tiny configs): {config, params, kv, state, conv_state, conv_kernels} or {error}: kv, state and conv_state are
    the elements of one sequence's cache after a one-token forward (conv_state: the conv windows, of conv_kernels
    columns each, among the state)."""
    import torch
    from transformers import CONFIG_MAPPING
    AutoModelForCausalLM = _auto(kind)     # the whole model of the table's kind (its towers too)
    repaired = {}
    try:
        try:
            cfg = CONFIG_MAPPING[mt](**fields)
        except Exception:   # noqa: BLE001 (any failure of a third-party config is reported)
            repaired = {k: v for k, v in _config_repair(mt).items() if k not in fields}
            if not repaired:
                raise
            cfg = CONFIG_MAPPING[mt](**fields, **repaired)
        raw = json.loads(cfg.to_json_string(use_diff=False))
    except Exception as e:   # noqa: BLE001
        return {"error": "config: " + _short(e)}
    try:
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
    except Exception as e:   # noqa: BLE001
        repaired = {k: v for k, v in _repair(mt, raw).items() if k not in fields}
        if not repaired:
            return {"error": "model: " + _short(e), "config": raw, "text_params": _text_params(cfg, raw)}
        try:
            cfg = CONFIG_MAPPING[mt](**fields, **repaired)
            raw = json.loads(cfg.to_json_string(use_diff=False))
            with torch.device("meta"):
                model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
        except Exception as e2:   # noqa: BLE001
            return {"error": "model: " + _short(e) + f" (and with {repaired}: {_short(e2, 80)})", "config": raw}
    params = sum(p.numel() for p in model.parameters())
    text_params = _text_params(cfg, raw)
    kv, kv_note, state, conv, kernel = None, "", None, None, set()
    try:
        with torch.no_grad():
            # position_ids given: a cache of only recurrent layers has no sequence length to derive them from
            out = model(input_ids=torch.zeros((1, 1), dtype=torch.long, device="meta"),
                        position_ids=torch.zeros((1, 1), dtype=torch.long, device="meta"), use_cache=True)
        cache = getattr(out, "past_key_values", None)
        layers = getattr(cache, "layers", None)
        if layers is None:
            kv_note = f"no per-layer cache ({type(cache).__name__})"
        else:
            total = 0
            for layer in layers:
                for name in ("keys", "values", "indexer_keys"):   # indexer_keys: DSA (DynamicIndexedLayer)
                    t = getattr(layer, name, None)
                    if isinstance(t, torch.Tensor):
                        total += t.numel()
            kv = total
            for layer in layers:     # recurrent layers: conv window and SSM / recurrent state, per sequence
                for name in ("conv_states", "recurrent_states"):
                    for t in (getattr(layer, name, None) or {}).values():
                        if isinstance(t, torch.Tensor):
                            state = (state or 0) + t.numel()
                            if name == "conv_states":      # (batch, conv_dim, conv_kernel_size)
                                conv = (conv or 0) + t.numel()
                                kernel.add(t.shape[-1])
            extra = [type(la).__name__ for la in layers if not hasattr(la, "keys")
                     and not hasattr(la, "recurrent_states") and type(la).__name__ != "DummyLayer"]
            if extra:
                kv_note = f"cache layers without keys: {sorted(set(extra))}"
    except Exception as e:   # noqa: BLE001
        kv_note = "forward on meta: " + _short(e, 90)
    del model
    return {"config": raw, "params": params, "text_params": text_params, "kv": kv, "kv_note": kv_note, "state": state,
            "conv_state": conv, "conv_kernels": sorted(kernel), "repaired": repaired}


def vram(raw: dict, assume=None) -> dict:
    """vramsym's reading of a config dict: {params, kv} or {refused: sentence} or {error}."""
    import vramsym
    from vramsym.errors import VramError
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "config.json")
        with open(p, "w", encoding="utf-8") as fh:
            json.dump(raw, fh)
        try:
            m = vramsym.load_model(p, assume=assume)
        except VramError as e:
            return {"refused": str(e).replace(f" of '{p}'", "")}
    try:
        est = vramsym.compile(m, "inference_kv", {"kv_dtype": "fp32", "precision": "fp32"}).evaluate(batch=1, seq=1)
    except VramError as e:
        return {"error": _short(e)}
    kv = next((c.bytes for c in est.all_components if c.name == "kv_cache"), None)
    state = next((c.bytes for c in est.all_components if c.name == "recurrent_state"), None)
    return {"params": est.params, "kv": None if kv is None else kv // 4, "state": None if state is None else state // 4,
            "approximate": m.approximate}


def row(mt: str, kind: str = "causal") -> dict:
    t0 = time.perf_counter()
    ref = reference(mt, kind)
    out = {"model_type": mt}
    got = vram(ref["config"]) if "config" in ref else {}
    if "error" in ref and "refused" in got:
        # the reference does not build, but vramsym refuses the config anyway: nothing is guessed
        out.update(status="refused", note=got["refused"] + f" (the model itself does not build on CPU: {ref['error']})")
    elif "error" in ref and ref.get("text_params") is not None and got.get("params") == ref["text_params"]:
        # the whole model does not build here (a vision tower's library), but its text model does, and is exact
        out.update(status="text-exact", vram_params=ref["text_params"],
                   note=f"multimodal: the text model is exact ({ref['text_params']:,} parameters); the whole model does "
                        f"not build on CPU ({ref['error']}), its other towers are not counted")
    elif "error" in ref:
        out.update(status="build-failed", note=ref["error"])
    else:
        out.update(meta_params=ref["params"], meta_kv=ref["kv"], kv_note=ref["kv_note"], meta_state=ref["state"])
        if "refused" in got:
            out.update(status="refused", note=got["refused"])
            approx = vram(ref["config"], assume="llama")
            if "params" in approx:
                out["assume_diff"] = (approx["params"] - ref["params"]) / ref["params"] if ref["params"] else None
            else:
                out["assume_error"] = approx.get("refused") or approx.get("error")
        elif "error" in got:
            out.update(status="WRONG", note="vramsym: " + got["error"])
        else:
            out.update(vram_params=got["params"], vram_kv=got["kv"], vram_state=got["state"])
            out["status"] = "exact" if got["params"] == ref["params"] else "WRONG"
            if out["status"] == "exact" and ref["kv"] is not None and (got["kv"] != ref["kv"] or
                                                                      (got["state"] or 0) != (ref["state"] or 0)):
                out["status"] = "WRONG"
                out["note"] = "the KV or recurrent state per token / sequence differs from the model's cache"
            if out["status"] == "WRONG" and got["params"] == ref.get("text_params") and ref["params"] > got["params"]:
                out["status"] = "text-exact"
                out["note"] = (f"multimodal: the text model is exact; the other towers ({ref['params'] - got['params']:,} "
                               f"parameters) are not counted")
            elif out["status"] == "WRONG":
                out["note"] = f"parameters off by {got['params'] - ref['params']:+,}"
        if ref.get("repaired"):
            out["note"] = ((out.get("note") + "; ") if out.get("note") else "") + \
                "built with " + ", ".join(f"{k}={v}" for k, v in ref["repaired"].items()) + \
                " (its config class leaves it unset, or sets it to a value its own validation rejects)"
    out["seconds"] = round(time.perf_counter() - t0, 2)
    return out


def _pct(x) -> str:
    if x is None:
        return ""
    return "±0 (exact)" if x == 0 else f"{x * 100:+.2f}%" if abs(x) >= 1e-4 else f"{x * 100:+.2g}%"


def _kv_cell(r: dict) -> str:
    if r.get("meta_kv") is None:
        return "not checked" + (f" ({r['kv_note']})" if r.get("kv_note") else "")
    if r.get("vram_kv") is None:
        return f"model {r['meta_kv']:,}"
    same = "=" if r["vram_kv"] == r["meta_kv"] else "≠"
    return f"{r['vram_kv']:,} {same} {r['meta_kv']:,}" + (f" ({r['kv_note']})" if r.get("kv_note") else "")


def _state_cell(r: dict) -> str:
    if not r.get("meta_state") and not r.get("vram_state"):
        return ""
    if r.get("vram_state") is None:
        return f"model {r['meta_state']:,}"
    if r.get("meta_kv") is None:      # the forward did not run: the cache was not read
        return f"{r['vram_state']:,} (not checked)"
    same = "=" if r["vram_state"] == (r.get("meta_state") or 0) else "≠"
    return f"{r['vram_state']:,} {same} {r.get('meta_state') or 0:,}"


def summary(rows: list) -> str:
    counts = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    approx = sum(1 for r in rows if r["status"] == "refused" and r.get("assume_diff") is not None)
    parts = [f"{counts.get(s, 0)} {s}" for s in ("exact", "text-exact", "refused", "WRONG", "build-failed")]
    return (f"{len(rows)} model types: " + ", ".join(parts) +
            f"; of the refused, `--assume llama` gives an approximation for {approx}")


def markdown(rows: list, seconds: float, versions: str, image_rows=None, image_seconds: float = 0.0) -> str:
    lines = [
        "# Architectures: what vramsym reads exactly",
        "",
        "Generated by `python tools/coverage.py` (do not edit by hand) with " + versions +
        f", in {seconds:.0f} s. Every causal-LM model type that transformers registers",
        "(`MODEL_FOR_CAUSAL_LM_MAPPING_NAMES`) is built from its config class's defaults on the meta device;",
        "its parameters (a tied weight once) are compared with the count vramsym gives for the same config.json.",
        "",
        "- **exact**: read without `--assume`, 0 parameters of difference.",
        "- **refused**: vramsym refuses the config with the sentence shown (a model_type not in",
        "  [formulas/architectures.json](../formulas/architectures.json), or a field the formulas do not read);",
        "  `--assume llama` reads it as a Llama-style decoder, marked approximate; its difference from the meta",
        "  count is shown.",
        "- **text-exact**: a multimodal config whose text model is exact; its vision / audio towers are not counted",
        "  yet (vramsym says so in a note; the multimodal issue).",
        "- **WRONG**: read without `--assume` but not exact (a bug; CI fails on it for the catalog's families).",
        "- **build-failed**: the config or the model does not build on CPU (the reason is shown) and vramsym does not",
        "  refuse the config; where the config class leaves unset a field its own model needs, the model is built",
        "  with that field filled from the others (the note says which).",
        "",
        "KV per token: elements of keys and values (and a sparse-attention indexer's keys) for one token, vramsym's `kv_cache` (batch 1, sequence 1, in",
        "fp32 / 4) against the model's own cache after a one-token forward on the meta device; \"not checked\"",
        "where that forward cannot run on meta. State elements / sequence: the conv windows and SSM / recurrent",
        "states of a hybrid's recurrent layers (Mamba, Mamba2, Gated DeltaNet) in the same cache, against vramsym's",
        "`recurrent_state` (fp32 / 4); an exact type whose KV or state differs from its cache is WRONG.",
        "",
        "**" + summary(rows) + "**",
        "",
        *_table(rows),
    ]
    if image_rows is not None:
        lines += [
            "",
            "## Image-text-to-text model types (the multimodal issue)",
            "",
            f"Every model type of `MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES` ({image_seconds:.0f} s), built whole with",
            "`AutoModelForImageTextToText` on the meta device, its vision tower and projector included, against the count",
            "vramsym gives for the same config.json (which reads its `text_config`): **exact** counts the whole model,",
            "**text-exact** the text model alone as the whole model holds it, its head tied by the top-level",
            "`tie_word_embeddings` (the towers are not counted yet).",
            "",
            "**" + summary(image_rows) + "**",
            "",
            *_table(image_rows),
        ]
    return "\n".join(lines) + "\n"


def _table(rows: list) -> list:
    lines = ["| model_type | status | meta params | vramsym params | `--assume llama` | KV elements / token (vramsym vs model) | state elements / sequence (vramsym vs model) | note |",
             "|---|---|---:|---:|---:|---|---|---|"]
    for r in rows:
        mp = f"{r['meta_params']:,}" if r.get("meta_params") is not None else ""
        vp = f"{r['vram_params']:,}" if r.get("vram_params") is not None else ""
        assume = _pct(r.get("assume_diff")) if r.get("assume_diff") is not None else \
            ("fails" if r.get("assume_error") else "")
        kv = _kv_cell(r) if r["status"] != "build-failed" else ""
        st = _state_cell(r) if r["status"] != "build-failed" else ""
        note = (r.get("note") or "").replace("|", "/").replace("\n", " ")
        lines.append(f"| `{r['model_type']}` | {r['status']} | {mp} | {vp} | {assume} | {kv} | {st} | {note} |")
    return lines


def run(types: list, log=None, kind: str = "causal") -> list:
    import torch
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    rows = []
    for mt in types:
        r = row(mt, kind)
        rows.append(r)
        if log is not None:
            print(f"{mt:<28} {r['status']:<13} {r['seconds']:>6.1f} s  {(r.get('note') or '')[:110]}", file=log)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--types", help="comma-separated model types (default: every causal-LM type)")
    ap.add_argument("--catalog", action="store_true", help="the model types of the bundled catalog")
    ap.add_argument("-o", "--output", help="write the Markdown here (default: docs/architectures.md for a full "
                                           "run, stdout for a subset)")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    ap.add_argument("--image-text", action="store_true",
                    help="--types names image-text-to-text model types, built whole (AutoModelForImageTextToText)")
    a = ap.parse_args(argv)
    import warnings
    warnings.filterwarnings("ignore")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    import torch
    import transformers
    try:
        transformers.logging.set_verbosity_error()
    except AttributeError:
        pass
    everything = image_text_types() if a.image_text else causal_lm_types()
    if a.catalog:
        types = catalog_types()
    elif a.types:
        types = [t.strip() for t in a.types.split(",") if t.strip()]
        unknown = [t for t in types if t not in everything]
        if unknown:
            kind = "image-text-to-text" if a.image_text else "causal-LM"
            ap.error(f"not {kind} model types of transformers {transformers.__version__}: {', '.join(unknown)}")
    else:
        types = everything
    t0 = time.perf_counter()
    rows = run(types, sys.stderr, "image-text" if a.image_text else "causal")
    seconds = time.perf_counter() - t0
    print(summary(rows) + f" ({seconds:.0f} s)", file=sys.stderr)
    if a.json:
        print(json.dumps(rows, indent=2))
        return 0
    image_rows, image_seconds = None, 0.0
    if types == everything and not a.image_text:       # the full table: the image-text-to-text types too
        t0 = time.perf_counter()
        image_rows = run(image_text_types(), sys.stderr, "image-text")
        image_seconds = time.perf_counter() - t0
        print(summary(image_rows) + f" ({image_seconds:.0f} s)", file=sys.stderr)
    text = markdown(rows, seconds, f"transformers {transformers.__version__}, torch {torch.__version__}",
                    image_rows, image_seconds)
    out = a.output or (str(DOC) if types == everything and not a.image_text else None)
    if out:
        Path(out).write_text(text, encoding="utf-8")
        print(f"wrote {out}", file=sys.stderr)
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
