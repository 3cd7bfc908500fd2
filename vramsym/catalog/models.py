"""Models: the bundled catalog (formulas/models/*.json) or any Hugging Face config.json.

A model is its config dict, flattened (multimodal ``text_config`` lifted),
merged with the structural facts of its ``model_type`` from
``formulas/architectures.json``, plus counts over the layers (which layers are MoE,
which use a sliding window) by the named rules that file selects per model_type,
each in closed form (a config's layer count is untrusted). Formula symbols
read these fields by name (``from hidden_size | n_embd``).
"""
from __future__ import annotations

import json
import os

from ..errors import InputError, suggest
from .checkpoints import quantization, read_folder
from .gguf_file import read_gguf_model
from .hub import is_hub_id, load_hub
from .paths import formulas_path, open_member, read_text
from .sources import MAX_CONFIG_BYTES, Found, read_config   # noqa: F401 (MAX_CONFIG_BYTES: the public limit)


class ModelSpec:
    """A model: its config (flattened, with the architecture facts), where it came from."""
    __slots__ = ("name", "config", "source", "hf_id", "published_params", "notes", "raw_config", "checkpoint",
                 "approximate", "assume")

    def __init__(self, name: str, config: dict, source: str, hf_id: str | None = None,
                 published_params: int | None = None, notes: tuple[str, ...] = (),
                 raw_config: dict | None = None, checkpoint: dict | None = None, approximate: str | None = None,
                 assume: str | None = None):
        self.name, self.config, self.source, self.hf_id = name, config, source, hf_id
        self.published_params, self.notes = published_params, tuple(notes)
        self.raw_config = raw_config   # the config.json as given (for building the real model)
        self.checkpoint = checkpoint   # what was read from the weight files' headers (None: a config only)
        self.approximate = approximate  # why the numbers are an approximation (--assume llama), or None: exact structure
        self.assume = assume            # the structure --assume asked for (llama), or None: refuse what is not modelled

    def __repr__(self):
        return f"ModelSpec({self.name!r}, source={self.source!r})"


def _model_files(extra=None) -> dict:
    """Catalog name -> path of its JSON file (bundled, then the ``models/`` of extra folders)."""
    dirs = [os.path.join(formulas_path(), "models")]
    dirs += [os.path.join(str(d), "models") for d in extra or [] if os.path.isdir(os.path.join(str(d), "models"))]
    out = {}
    for d in dirs:
        for f in sorted(os.listdir(d)):
            if f.endswith(".json"):
                out[f[:-5]] = os.path.join(d, f)
    return out


def catalog(extra=None) -> dict:
    """Catalog name -> the path of its JSON file."""
    return dict(_model_files(extra))


_ARCHITECTURES: dict = {}
_LIKE: dict = {}


def _architectures() -> dict:
    """formulas/architectures.json, read once per process (every evaluation asks it what a family's
    terms do not model). Callers read it; none changes it."""
    folder = formulas_path()
    if folder not in _ARCHITECTURES:       # keyed by the folder: no path joined on every evaluation
        path = os.path.join(folder, "architectures.json")
        data = json.loads(read_text(path))
        raw = dict(data)                          # 'like' names an entry as written: no chains, in any order
        for mt, entry in raw.items():             # 'like': another family's entry, the own keys replace its keys
            if isinstance(entry, dict) and "like" in entry:
                base = raw.get(entry["like"])
                if not isinstance(base, dict) or "like" in base:
                    raise InputError(f"formulas/architectures.json: '{mt}' is like '{entry['like']}', which is not "
                                     "an entry of its own")
                data[mt] = {**base, **{k: v for k, v in entry.items() if k != "like"}}
        _LIKE[folder] = {mt: e["like"] for mt, e in raw.items() if isinstance(e, dict) and "like" in e}
        _ARCHITECTURES[folder] = data
    return _ARCHITECTURES[folder]


def family_like(model_type: str) -> str | None:
    """The family whose entry (and modeling file) ``model_type`` takes in formulas/architectures.json
    (its ``like``: Kimi K2 runs DeepSeek-V3's code under model_type kimi_k2), or None."""
    _architectures()
    return _LIKE[formulas_path()].get(model_type)


def load_model(name_or_path: str, extra=None, assume: str | None = None) -> ModelSpec:
    """A catalog name (``llama-3.1-8b``); a path to a config.json, or a folder holding one (with
    ``*.safetensors`` beside it, a checkpoint: the weights' bytes from their headers); a ``.gguf``
    file; or a Hugging Face id ``org/name`` (config.json and safetensors headers, honouring
    ``HF_HUB_OFFLINE`` and the local cache).

    A ``model_type`` that ``formulas/architectures.json`` does not describe, or a config whose
    fields contradict the structure the formulas read, is refused (:class:`InputError`) unless
    ``assume="llama"``: then the model is read as a Llama-style decoder and the spec says it is an
    approximation (``ModelSpec.approximate``, the reason)."""
    check_assume(assume)
    cat = _model_files(extra)
    key = str(name_or_path).strip()
    if key.lower() in cat:
        return _catalog_entry(cat[key.lower()], key, assume)
    path = os.path.expanduser(key)
    if os.path.isdir(path):
        if os.path.lexists(os.path.join(path, "config.json")):
            return load_checkpoint_dir(path, assume=assume)
        raise InputError(f"model folder '{path}' has no config.json (a checkpoint folder needs the model's "
                         f"config.json beside its weights)")
    if os.path.lexists(path):
        if _is_gguf(path):
            return from_found(read_gguf_model(path), assume)
        raw = read_config(path)
        if "config" in raw and isinstance(raw["config"], dict) and "name" in raw:
            return _spec(raw["config"], raw["name"], path, raw.get("hf_id"), raw.get("published_params"),
                         assume=assume)
        base = os.path.basename(path)
        name = os.path.basename(os.path.dirname(os.path.abspath(path))) if base == "config.json" else os.path.splitext(base)[0]
        return _spec(raw, name, path, assume=assume)
    if is_hub_id(key):
        same = _catalog_hf_ids(cat).get(key.lower())
        if same is not None:           # the catalog holds this repository's config.json: no network, no cache
            spec = _catalog_entry(cat[same], same, assume)
            spec.notes += (f"'{key}' is the catalog entry {same} (its config.json as the catalog transcribes it "
                           f"from {spec.source}; read offline)",)
            return spec
        return from_found(load_hub(key), assume)
    hint = suggest(key.lower(), cat)
    msg = f"unknown model '{key}': not a catalog name, not a path to a config.json, a checkpoint folder or a .gguf file"
    msg += f"; did you mean {', '.join(hint)}?" if hint else "; run `vramsym models` for the catalog"
    raise InputError(msg)


def _catalog_entry(path: str, key: str, assume) -> ModelSpec:
    entry = read_config(path, what="model catalog entry")
    if not isinstance(entry.get("config"), dict):
        raise InputError(f"model catalog entry '{path}' has no \"config\" object")
    return _spec(entry["config"], entry.get("name", key), entry.get("source", path),
                 entry.get("hf_id"), entry.get("published_params"), assume=assume)


def _catalog_hf_ids(cat: dict) -> dict:
    """The catalog's Hugging Face ids, lowercased (the Hub's ids are case-insensitive), to their
    catalog names."""
    out = {}
    for name, path in cat.items():
        hf = read_config(path, what="model catalog entry").get("hf_id")
        if isinstance(hf, str):
            out.setdefault(hf.lower(), name)
    return out


def _is_gguf(path) -> bool:
    """Whether the file at ``path`` is a GGUF file (by name or magic); a path that is not a
    regular file is refused here, before anything is read."""
    f, _ = open_member(path, None, "model file")
    with f:
        if path.lower().endswith(".gguf"):
            return True
        try:
            return f.read(4) == b"GGUF"
        except OSError:
            return False


# fields vramsym writes itself when it reads a checkpoint's headers: never from a config.json
INTERNAL_PREFIX = "ckpt_"


def _refuse_internal(config: dict, where: str, source):
    for k in config:
        if isinstance(k, str) and k.startswith(INTERNAL_PREFIX):
            raise InputError(f"model config field '{k[:80]}'{where} of '{source}' is one vramsym sets itself "
                             f"when it reads a checkpoint's weight files (every ckpt_* field is): remove it "
                             f"from the config")


def load_checkpoint_dir(path, name=None, source=None, hf_id=None, root=None, assume=None) -> ModelSpec:
    """A folder with a config.json, and its safetensors checkpoint when it has one. Every file read
    must lie inside ``root`` (default: the folder itself)."""
    return from_found(read_folder(path, name, source, hf_id, root), assume)


def from_found(f: Found, assume=None) -> ModelSpec:
    """The model a reader found (:class:`~vramsym.catalog.sources.Found`)."""
    return _spec(f.config, f.name, f.source, f.hf_id, f.published, fields=f.fields, extra_notes=f.notes,
                 checkpoint=f.checkpoint, assume=assume)


#: the values of ``--assume``: the structure read for a model vramsym does not describe
ASSUMABLE = ("llama",)


def check_assume(assume) -> None:
    if assume is not None and assume not in ASSUMABLE:
        raise InputError(f"--assume takes {', '.join(ASSUMABLE)} (a Llama-style decoder), not {str(assume)[:40]!r}")


def _spec(config: dict, name: str, source: str, hf_id=None, published=None, fields=None,
          extra_notes=(), checkpoint=None, assume=None) -> ModelSpec:
    check_assume(assume)
    cfg = dict(config)
    notes: list[str] = []
    _refuse_internal(cfg, "", source)
    if isinstance(cfg.get("text_config"), dict):
        _refuse_internal(cfg["text_config"], " (in text_config)", source)
        text = dict(cfg["text_config"])
        notes.append("multimodal config: using its text_config (the vision tower is not counted)")
        if "tie_word_embeddings" in cfg:      # (a value that is not a boolean is refused below, as in any config)
            # the whole model ties its head by the top-level flag (a multimodal PreTrainedModel reads its own
            # config's tie_word_embeddings), whatever the text config says: tools/coverage.py, the image-text
            # table (Mistral 3, InternVL, DeepSeek-VL, Ovis 2, MiniCPM-o, Kimi K2.5 built whole on meta)
            text["tie_word_embeddings"] = cfg["tie_word_embeddings"]
        cfg = {**{k: v for k, v in cfg.items() if k != "text_config"}, **text}
    arch = _architectures()
    mt = cfg.get("model_type")
    if mt is not None and not isinstance(mt, str):
        raise InputError(f"model config field 'model_type' is a {type(mt).__name__}, not a name such as \"llama\"")
    facts = dict(arch["default"])
    entry = _entry(arch, mt)
    known = entry is not None and not entry.get("rules_only")
    approximate = None
    refused = None
    if known:
        facts.update(entry)
        refused = _aliases(cfg, entry)
        invalid = _indivisible(cfg, entry)
        if invalid is not None and assume is None:
            raise InputError(f"model config '{source}': {invalid}")
    elif assume is None:
        raise InputError(_unknown_sentence(cfg, mt, arch, source))
    else:
        approximate = (f"model_type {mt!r} is not in formulas/architectures.json" if mt is not None
                       else "the config names no model_type") + \
            ": --assume llama reads it as a Llama-style decoder (gated MLP, RMSNorm, no hard-coded biases)"
    clash = refused or _contradiction(cfg, facts, arch)
    if clash is not None:
        field, what = clash
        if assume is None:
            raise InputError(f"model config field '{field}' of '{source}' is {what}, which the structure of "
                             f"model_type {mt!r} that vramsym reads (formulas/architectures.json) does not have: "
                             f"refused rather than guessed; `--assume llama` ignores it and gives an approximation")
        done = "is ignored"
        widths = cfg.get(field) if field in (facts.get("uniform_lists") or {}) else None
        if isinstance(widths, list):       # a per-layer list of widths: its largest, an upper bound
            nums = [x for x in widths if isinstance(x, int) and not isinstance(x, bool) and x >= 0]
            cfg[field] = max(nums) if nums else None
            done = f"is read as its largest entry, {max(nums)}, in every layer" if nums else done
        approximate = (approximate + "; " if approximate else "--assume llama: ") + \
            f"the config's '{field}' ({what}) {done}"
    if approximate:
        notes.append(f"approximate: {approximate}")
    elif assume is not None:
        notes.append(f"--assume {assume} changes nothing: model_type {mt!r} is in formulas/architectures.json")
    for k in ("source", *RULE_KEYS, *ENTRY_KEYS):
        facts.pop(k, None)
    for k, v in facts.items():
        cfg.setdefault(k, v)
    cfg.update(_derived(cfg, arch))
    cfg.update(fields or {})
    if "ckpt_quant" not in cfg and cfg.get("quantization_config") is not None:
        cfg.update(_declared_quant(cfg, notes))
    notes += list(extra_notes)
    return ModelSpec(name=name, config=cfg, source=source, hf_id=hf_id, published_params=published,
                     notes=tuple(notes), raw_config=dict(config), checkpoint=checkpoint, approximate=approximate,
                     assume=assume)


def _declared_quant(cfg: dict, notes: list) -> dict:
    """A config.json whose quantization_config names a method (gpt-oss's mxfp4, GPTQ, AWQ, FP8, ...)
    describes weights stored in that format: the fields that select its quant formulas (the same
    table as a checkpoint's, formulas/quantization.json, without headers to confirm it), with a
    note that says so; a method without a formula is a note too, never a silent dense count."""
    quant, group, qnotes = quantization(cfg, (), confirm=False)
    notes += qnotes
    fields = {}
    if quant is not None:
        fields["ckpt_quant"] = quant
    if group is not None:
        fields["ckpt_group_size"] = group
    return fields


def unmodelled(model: ModelSpec, components, values=None, options=None, regime=None) -> str | None:
    """What the formulas do not model for a hybrid model (layers with a Mamba / Mamba2 / Gated
    DeltaNet mixer) in a regime with these components, or with these bound values (``--tp 2``):
    the first sentence of ``_checks.hybrid_unmodelled`` in formulas/architectures.json that
    applies, or None. A family's own entry may name terms it is not modelled in too (its
    ``unmodelled``: term -> what is missing, or {a condition as the layer rules have (``if_equal``,
    ``if_set``, ...), ``what``: ...} for the configs it holds for only, and ``inputs``: symbol -> what a value above 1 needs, with
    ``{value}``, ``options``: rules {option, choices, regimes, what} for the choices the family's own
    tools refuse in those regimes (``regime``: the regime's name), and ``regimes``: regime -> what is
    not derived for the family in it),
    checked first. With ``options`` (the regime's option choices) and ``values``, a
    layout that ``_checks.layout_unmodelled`` does not model for the model's structure
    (``--tp-style dtensor`` with a fused q/k/v projection) is refused too. For a hybrid,
    ``hybrid_unmodelled`` may also refuse a whole regime (``regimes``: freeze tuning), an option's
    choices in named regimes (``options``: QLoRA's 4-bit base) and partial checkpointing when its
    layers are of several kinds (``partial_checkpointing``)."""
    cfg = model.config
    if options and values is not None:       # a layout the structure cannot take (--tp-style dtensor)
        what = _layout_gap(cfg, values, options)
        if what is not None:
            return what
    own = (_architectures().get(cfg.get("model_type")) or {}).get("unmodelled") or {}
    what = _option_gap(own.get("options"), options, regime, cfg)     # a choice the family's own tools refuse
    if what is None:
        what = (own.get("regimes") or {}).get(regime)                  # a regime not derived for the family
    if what is not None:
        return what
    what = _regime_gap(regime, cfg)                                    # a regime not derived for a structure
    if what is not None:
        return what
    if not components and cfg.get("arch_layer_mix") != "hybrid" and "inputs" not in own:
        return None             # what every evaluation asks (its layout): nothing to read for these
    for term in components:
        what = own.get(term) if term != "inputs" else None
        if isinstance(what, dict):     # refused only where its condition holds (the layer rules' conditions)
            what = what["what"] if _applies(what, cfg) else None
        if what is not None:
            return what
    for sym, what in (own.get("inputs") or {}).items():
        if values is not None and values.get(sym, 1) > 1:
            return what.format(value=values[sym])
    if cfg.get("arch_layer_mix") != "hybrid":
        return None
    data = (_architectures().get("_checks") or {}).get("hybrid_unmodelled") or {}
    names = data.get("mixers") or {}
    mixers = " and ".join(names[cfg[k]] for k in ("arch_ssm", "arch_linear_attn") if cfg.get(k) in names) \
        or "recurrent"
    kinds = [cfg.get(k) for k in ("arch_ssm", "arch_linear_attn")]
    for term in components:
        what = (data.get("terms") or {}).get(term)
        if isinstance(what, dict):       # a term that models some mixers: the first kind it does not
            what = next((what[k] for k in kinds if k in what), None)
        if what is not None:
            return what.format(mixers=mixers)
    for sym, what in (data.get("inputs") or {}).items():
        if values is not None and values.get(sym, 1) > 1:
            return what.format(mixers=mixers, value=values[sym])
    what = (data.get("regimes") or {}).get(regime)
    if isinstance(what, dict):           # a regime refused for some mixers: the first kind it names
        what = next((what[k] for k in kinds if k in what), None)
    if what is not None:
        return what.format(mixers=mixers)
    partial = data.get("partial_checkpointing")
    if partial and options and options.get("checkpointing") == "full" and values is not None:
        L = _first(cfg, "num_hidden_layers", "n_layer")
        mixed = isinstance(L, int) and any(0 < (cfg.get(f"arch_{k}_layers") or 0) < L for k in MIXER_KINDS)
        below = values.get("ckpt_ratio", 1) < 1 or (isinstance(L, int) and values.get("L_ck", L) < L)
        if mixed and below:
            return partial.format(mixers=mixers)
    return _option_gap(data.get("options"), options, regime, cfg, mixers=mixers)


def _regime_gap(regime, cfg: dict) -> str | None:
    """The sentence of the first rule of ``_checks.regime_unmodelled`` that names ``regime`` and
    whose condition holds for the config (SGLang for a model with sliding-window layers), or None."""
    rules = ((_architectures().get("_checks") or {}).get("regime_unmodelled") or {}).get("rules") or []
    return next((r["what"] for r in rules if regime in r.get("regimes", ()) and _applies(r, cfg)), None)


def _option_gap(rules, options, regime, cfg, **names) -> str | None:
    """The sentence of the first rule {option, choices, regimes, what} whose option is set to one of
    its choices in one of its regimes, and whose condition (the layer rules' ``if_equal``, ... on
    the config and its derived counts, ``cfg``) holds where it has one ('{choice}' and ``names``
    filled in), or None."""
    for rule in rules or []:
        if options and regime in rule.get("regimes", ()) and options.get(rule.get("option")) in rule.get("choices", ()) \
                and _applies(rule, cfg):
            return rule["what"].format(choice=options[rule["option"]], **names)
    return None


def _layout_gap(cfg: dict, values: dict, options: dict) -> str | None:
    """The first sentence of ``_checks.layout_unmodelled`` whose option is chosen, whose input is
    above 1 and whose structural fact the config sets, or None."""
    for rule in ((_architectures().get("_checks") or {}).get("layout_unmodelled") or {}).get("rules") or []:
        if options.get(rule["option"]) != rule["choice"] or values.get(rule["input"], 1) <= 1:
            continue
        for fact, what in rule["facts"].items():
            if _set(cfg.get(fact)):
                return what.format(value=values[rule["input"]])
    return None


# keys of an architectures.json entry that are not facts: field aliases, conditional settings, the
# _checks fields and layer_types values the family reads (not refused for it), the list whose length
# is the layer count
ENTRY_KEYS = ("defaults", "absent_defaults", "unread_fields", "aliases", "cases", "reads_fields", "reads_layer_types", "layers_from", "unmodelled",
              "mlp_act_from", "mlp_act_fixed", "kv_shared_from", "last_layer_global", "per_layer", "must_divide",
              "uniform_lists")


def _set(v) -> bool:
    """Whether a config value is set: not missing, null, 0, false or empty."""
    return v is not None and v is not False and v != 0 and v != [] and v != {} and v != ""


def _aliases(cfg: dict, entry: dict):
    """The entry's field aliases (``{"num_key_value_heads": ["num_kv_heads"]}``: a field the model
    class reads under another name, used when the config does not set the formulas' name; a dotted
    name reads a nested field) and its
    ``cases`` (applied first, so that a field a case sets is not taken from an alias), tried in
    order, each with a condition as the layer rules have (``if_set``,
    ``unless_set``, ...): ``set`` (fields the model class forces, e.g. one KV head when
    ``multi_query``) or ``refuse`` (a variant of the family the formulas do not read: returned as
    (field, what it is), to be refused like any contradicting field). Its ``defaults`` (the config
    class's defaults of the fields the aliases and cases read) come first, for a config that leaves
    them out or sets them to null (a key ``a|b`` names one field under two names: a's default, applied
    only when the config gives neither); ``absent_defaults`` only for a config that leaves them out (the
    class keeps an explicit null: Mistral's sliding_window). Its ``unread_fields`` (fields the family's
    configs carry that its model class does not read, where the formulas would read them: MPT's
    top-level resid_pdrop) are dropped first. Applied in place."""
    for k in entry.get("unread_fields") or []:
        cfg.pop(k, None)
    for key, keep_null in (("defaults", False), ("absent_defaults", True)):   # absent: the class keeps a null
        for k, v in (entry.get(key) or {}).items():
            names = k.split("|")           # "a|b": a's default, unless the config gives a or b (one field, two names)
            if not any(_given(cfg, n, keep_null) for n in names):
                cfg[names[0]] = v
    if cfg.get("num_hidden_layers") is None:
        for field in entry.get("layers_from") or []:
            if isinstance(cfg.get(field), (list, str)) and cfg[field]:
                cfg["num_hidden_layers"] = len(cfg[field])
                break
    for case in entry.get("cases") or []:
        if _applies(case, cfg):
            if "refuse" in case:
                field = (case.get("if_set") or case.get("unless_set") or case.get("if_not_mapping")
                         or (case.get("if_pattern_mismatch") or {}).get("field")
                         or next(iter(case.get("if_present", [])), "?"))
                return field, case["refuse"]
            cfg.update(case.get("set") or {})
            for target, src in (case.get("copy") or {}).items():
                cfg[target] = cfg.get(src)
    clash = _per_layer(cfg, entry.get("per_layer")) or _uniform_lists(cfg, entry.get("uniform_lists"))
    if clash is not None:
        return clash
    for target, sources in (entry.get("aliases") or {}).items():
        if cfg.get(target) is None:
            for src in sources:
                v = _field(cfg, src)
                if v is not None:
                    cfg[target] = v
                    break
    return None


def _given(cfg: dict, name: str, keep_null: bool) -> bool:
    """Whether the config gives a field (a dotted name: a nested one, given when set); a null counts
    as given only where the class keeps it (``keep_null``)."""
    if "." in name:
        return _field(cfg, name) is not None
    return name in cfg and (cfg[name] is not None or keep_null)


def _indivisible(cfg: dict, entry: dict) -> str | None:
    """A sentence for the first of the entry's ``must_divide`` pairs ({field, into, source}: the model
    class splits ``into`` into ``field`` equal parts and raises when it cannot) that the config breaks,
    or None. Read after the aliases, so a family's own names count."""
    for rule in entry.get("must_divide") or []:
        n, total = _field(cfg, rule["field"]), _field(cfg, rule["into"])
        if isinstance(n, int) and isinstance(total, int) and n > 0 and total % n:
            return (f"{rule['into']} {total} is not a multiple of {rule['field']} {n}; "
                    f"the model class cannot be built from it ({rule['source']})")
    return None


def _per_layer(cfg: dict, spec) -> tuple | None:
    """A family's per-layer overrides (``per_layer``: transformers 5 saves Gemma 4's full-attention
    heads as ``per_layer_config`` {layer: {head_dim, num_key_value_heads}} instead of
    global_head_dim / num_global_key_value_heads): one set of values for every listed layer is read
    into the fields the formulas read (a key a layer leaves out, or an empty table, keeps the config's
    own value);
    layers that differ among themselves, or other keys, are a structure the formulas lack and
    are returned as (field, what it is) to be refused. Applied in place."""
    if not spec or cfg.get(spec["from"]) is None:
        return None
    table, fields = cfg[spec["from"]], spec["fields"]
    rows = list(table.values()) if isinstance(table, dict) else None
    if rows is None or not all(isinstance(r, dict) and set(r) <= set(fields) for r in rows):
        return spec["from"], (f"per-layer overrides other than {', '.join(fields)} of one value for every "
                              f"listed layer")
    distinct = {tuple(sorted(r.items())) for r in rows}
    if len(distinct) > 1:
        return spec["from"], "per-layer overrides that differ between layers, which the formulas read as one value"
    for key, target in fields.items():       # an empty table: every layer keeps the config's own heads
        cfg[target] = (rows[0] if rows else {}).get(key, cfg.get(key))
    return None


def _uniform_lists(cfg: dict, fields) -> tuple | None:
    """A family's per-layer lists of numbers that the formulas read as one number (``uniform_lists``:
    Gemma 3n's intermediate_size, one width per layer): a list whose entries are all the same number is
    read as that number; a list of different or non-numeric entries, or an empty one, is returned as
    (field, what it is) to be refused. Applied in place."""
    for field in fields or {}:
        v = cfg.get(field)
        if not isinstance(v, list):
            continue
        if not v:
            return field, "an empty per-layer list, where the formulas read one number"
        if any(isinstance(x, bool) or not isinstance(x, int) or x < 0 for x in v):
            return field, "a per-layer list with an entry that is not a whole number"
        if any(x != v[0] for x in v):
            return field, ("a per-layer list of different widths (layers of different shapes), which the formulas "
                           "read as one number")
        cfg[field] = v[0]
    return None


def _field(cfg: dict, name: str):
    """A config field by name; a dotted name reads inside nested objects
    (``rope_parameters.partial_rotary_factor``: transformers 5 nests rotary settings). None when absent."""
    v = cfg
    for part in name.split("."):
        if not isinstance(v, dict):
            return None
        v = v.get(part)
    return v


def mlp_act(cfg: dict, arch: dict, entry: dict | None) -> tuple:
    """(field, value, kind) of the MLP's activation function: the first config field the family's
    model class reads (``_checks.mlp_act.from`` or the entry's ``mlp_act_from``) that is set, its
    value, and the option ``mlp_act`` it maps to (None for a value the formulas do not model). A
    config that sets none of the fields gets the config class's default (applied from the entry's
    ``defaults`` before this, else ``_checks.mlp_act.default``). An entry's ``mlp_act_fixed`` names the
    option for a model class that hard-codes its activation and reads no field (BLOOM's GeLUFunction)."""
    if entry and entry.get("mlp_act_fixed"):
        return None, entry["mlp_act_fixed"], entry["mlp_act_fixed"]
    data = (arch.get("_checks") or {}).get("mlp_act") or {}
    fields = (entry or {}).get("mlp_act_from") or data.get("from") or ["hidden_act"]
    field, value = config_value(cfg, tuple(fields))
    if field is None:
        field, value = fields[0], data.get("default", "silu")
    kind = (data.get("values") or {}).get(value) if isinstance(value, str) else None
    return field, value, kind


def _contradiction(cfg: dict, facts: dict, arch: dict):
    """(field, what it is) for the first config field that contradicts the structure the formulas
    read (the ``_checks`` of formulas/architectures.json), or None."""
    checks = arch.get("_checks") or {}
    field, value, kind = mlp_act(cfg, arch, facts)
    if kind is None:
        known = ", ".join(sorted((checks.get("mlp_act") or {}).get("values") or {}))
        return field, (f"an MLP activation {str(value)[:40]!r} whose saved tensors the formulas do not model "
                       f"(they read {known})")
    reads = set(facts.get("reads_fields") or [])
    for field, what in (checks.get("fields") or {}).items():
        if field in cfg and _set(cfg[field]) and field not in reads:
            return field, what
    for field in checks.get("numbers") or []:
        if isinstance(cfg.get(field), list):
            return field, "a per-layer list where the formulas read one number"
    lt = cfg.get("layer_types")
    if isinstance(lt, list):
        read = set(checks.get("layer_types") or []) | set(facts.get("reads_layer_types") or [])
        odd = next((t for t in lt if not isinstance(t, str) or t not in read), None)
        if odd is not None:
            return "layer_types", f"a layer pattern with {str(odd)[:40]!r} layers, which the formulas do not read"
    mlt = cfg.get("mlp_layer_types")
    if isinstance(mlt, list):
        read = set(checks.get("mlp_layer_types") or [])
        odd = next((t for t in mlt if not isinstance(t, str) or t not in read), None)
        if odd is not None:
            return "mlp_layer_types", f"an MLP pattern with {str(odd)[:40]!r} layers, which the formulas do not read"
    if facts.get("arch_attention") != "mla":
        for field in checks.get("mla_fields") or []:
            if field in cfg and _set(cfg[field]):
                return field, "a field of multi-head latent attention (MLA) on a model_type not marked MLA"
    return None


def _nearest(cfg: dict, mt, arch: dict) -> str:
    """The supported family closest to a config: by name (a known model_type that is a prefix of it,
    or a close spelling), else by structure (MLA, mixture of experts, else Llama)."""
    known = [k for k, e in arch.items() if _entry(arch, k) is not None and k != "default" and not e.get("rules_only")]
    if isinstance(mt, str) and mt:
        prefix = [k for k in known if mt.startswith(k) or k.startswith(mt)]
        if prefix:     # a variant of its own name first (gemma3: gemma3_text, not gemma3n_text), else the longest
            return max(prefix, key=lambda k: (k[len(mt):len(mt) + 1] in ("_", "-") and k.startswith(mt), len(k)))
        close = suggest(mt, known, 1)
        if close:
            return close[0]
    if _set(cfg.get("kv_lora_rank")):
        return "deepseek_v3"
    if _set(_first(cfg, "num_local_experts", "num_experts", "n_routed_experts")):
        return "mixtral"
    return "llama"


def _unknown_sentence(cfg: dict, mt, arch: dict, source) -> str:
    what = f"model_type {mt!r}" if mt is not None else "a config without a model_type"
    return (f"{what} of '{source}' is not in formulas/architectures.json, so vramsym does not know its structure "
            f"(nearest supported family: {_nearest(cfg, mt, arch)}): refused rather than guessed; "
            f"`--assume llama` gives an approximation as a Llama-style decoder")


def _first(cfg: dict, *keys, default=None):
    for k in keys:
        if cfg.get(k) is not None:
            return cfg[k]
    return default


def _int(v, default=0) -> int:
    """A config count as an int (a boolean or a non-integer is not a count)."""
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def _count(lo: int, hi: int, step: int, offset: int = 0) -> int:
    """How many i in [lo, hi) have (i + offset) % step == 0 (no loop: configs may claim any size)."""
    if hi <= lo:
        return 0
    step = max(1, step)
    first = lo + (-(lo + offset)) % step
    return 0 if first >= hi else (hi - 1 - first) // step + 1


# keys of an architectures.json entry that name layer rules (not merged into the config)
RULE_KEYS = ("moe_rule", "moe_rule_first", "sliding_rule", "sliding_rule_first", "rope_rule", "sparse_rule",
             "attn_rule", "ssm_rule", "gdn_rule", "ffn_rule", "rules_only")


def _entry(arch: dict, mt):
    """The architectures.json entry of a model_type, or None (keys starting with '_' are not entries)."""
    if not isinstance(mt, str) or mt.startswith("_"):
        return None
    e = arch.get(mt)
    return e if isinstance(e, dict) else None


def _rules(arch: dict, mt, kind: str) -> list:
    """The rules that count ``kind`` ('moe' or 'sliding') layers of a model_type, in the order they
    are tried: the default entry's ``<kind>_rule_first``, then the model_type's ``<kind>_rule`` (or
    the default's)."""
    default = arch["default"]
    entry = _entry(arch, mt) or {}
    own = entry.get(f"{kind}_rule", default.get(f"{kind}_rule", {"rule": "none"}))
    first = default.get(f"{kind}_rule_first", [])
    return [*(first if isinstance(first, list) else [first]), *(own if isinstance(own, list) else [own])]


def _applies(rule: dict, cfg: dict) -> bool:
    """Whether a rule's condition holds: ``if_present`` (one of the keys is in the config, even
    null), ``if_list`` (the field is a list), ``if_set`` (the field is set: not missing, null, 0,
    false or empty), ``unless_set`` (the field is missing, null, 0, false or empty), ``if_not_equal``
    ({field: value}: the config's field is not that value), ``if_equal`` ({field: value}: it is),
    ``if_not_mapping`` (the field is set to something other than an object), ``if_pattern_mismatch``
    ({field, layers, kinds}: the field, a repeat pattern ``[[[kind, ...], times], ...]``, is not one, names
    a kind not in ``kinds``, or does not expand to the ``layers`` field's count of layers)."""
    if "if_present" in rule and not any(k in cfg for k in rule["if_present"]):
        return False
    if "if_set" in rule and not _set(_field(cfg, rule["if_set"])):
        return False
    if "if_list" in rule and not isinstance(cfg.get(rule["if_list"]), list):
        return False
    if "unless_set" in rule and _field(cfg, rule["unless_set"]):
        return False
    if "if_not_equal" in rule and any(cfg.get(k) == v for k, v in rule["if_not_equal"].items()):
        return False
    if "if_equal" in rule and not all(cfg.get(k) == v for k, v in rule["if_equal"].items()):
        return False
    if "if_not_mapping" in rule and (cfg.get(rule["if_not_mapping"]) is None
                                     or isinstance(cfg.get(rule["if_not_mapping"]), dict)):
        return False
    if "if_pattern_mismatch" in rule and not _pattern_mismatch(cfg, rule["if_pattern_mismatch"]):
        return False
    return True


def _pattern_mismatch(cfg: dict, rule: dict) -> bool:
    """Whether the config's repeat pattern (GPT-Neo's attention_types: [[["global", "local"], 12]]) is
    malformed, names a kind the model class does not build, or does not give one kind per layer."""
    pattern = cfg.get(rule["field"])
    if pattern is None:
        return False
    count = 0
    if not isinstance(pattern, list):
        return True
    for item in pattern:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], list)
                and isinstance(item[1], int) and not isinstance(item[1], bool) and item[1] >= 0):
            return True
        if any(k not in rule["kinds"] for k in item[0]):
            return True
        count += len(item[0]) * item[1]
    layers = cfg.get(rule["layers"])
    return isinstance(layers, int) and count != layers


# ---- the named layer rules: (config, L, the rule's parameters) -> a count of layers, in closed form ----

def _rule_all(cfg, L, r):
    return L


def _rule_none(cfg, L, r):
    return 0


def _rule_alternate(cfg, L, r):
    """Layers 0, 2, 4, ... (even-indexed)."""
    return _count(0, L, 2)


def _rule_every_nth_global(cfg, L, r):
    """Every period-th layer (1-based) is global, the others slide (the period from a config field, or fixed)."""
    d = r["default_period"]
    period = _int(cfg.get(r["period_from"]), d) or d if "period_from" in r else d
    return L - L // abs(period)     # (i + 1) % p == 0 picks the same layers for p and -p (the config classes' test)


def _rule_every_nth(cfg, L, r):
    """Every period-th layer (1-based): floor(L / period) (Qwen3-Next's full_attention_interval)."""
    d = r["default_period"]
    period = _int(cfg.get(r["period_from"]), d) or d
    return L // abs(period)


def _rule_after_max_window_layers(cfg, L, r):
    """Layers i >= the field's value (missing or malformed: L, none)."""
    return max(0, L - _int(cfg.get(r["from"]), L))


def _rule_layer_types(cfg, L, r):
    """The entries of the config's per-layer list equal to ``match`` (a value or a list of values;
    a string is read as a list of one-character layer codes: Nemotron-H's hybrid_override_pattern)."""
    match = r["match"] if isinstance(r["match"], list) else [r["match"]]
    return sum(1 for t in cfg.get(r["from"]) if not isinstance(t, bool) and t in match)


def _rule_period_offset(cfg, L, r):
    """Layers i with i % period == offset (Jamba's attn_layer_period / attn_layer_offset)."""
    period = _int(cfg.get(r["period_from"]), 1) or 1
    offset = _int(cfg.get(r["offset_from"]), 0) % period
    return _count(0, L, period, (period - offset) % period)


def _rule_index_list(cfg, L, r):
    """The distinct layer indices 0 <= i < L that the config's list names (Llama 4's moe_layers,
    Bamba's attn_layer_indices)."""
    only = cfg.get(r["from"]) or []
    return len({i for i in only if isinstance(i, int) and not isinstance(i, bool) and 0 <= i < L})


def _rule_interval_range(cfg, L, r):
    """Layers start <= i <= end with (i + 1) % step == 0 (start, end, step from the config; missing:
    0, L - 1 and 1; an end of -1 or beyond the last layer: L - 1)."""
    start = max(0, _int(cfg.get(r["start_from"]), 0))
    end = _int(cfg.get(r["end_from"]), L - 1)
    end = L - 1 if end < 0 or end >= L else end
    return _count(start, end + 1, _int(cfg.get(r["step_from"]), 1) or 1, 1)


def _rule_first_k_dense(cfg, L, r):
    """Layers i >= k with i % freq == 0 (k, freq from the config; missing: 0 and 1)."""
    k = _int(cfg.get(r["k_from"]), 0)
    return _count(max(0, k), L, _int(cfg.get(r["freq_from"]), 1) or 1)


def _rule_sparse_step(cfg, L, r):
    """Layers with (i + 1) % step == 0, less those the config's list names."""
    step = _int(cfg.get(r["step_from"]), 1) or 1
    only = cfg.get(r["except_from"]) or []
    only = {i for i in only if isinstance(i, int) and not isinstance(i, bool)} if isinstance(only, list) else set()
    return _count(0, L, step, 1) - sum(1 for i in only if 0 <= i < L and (i + 1) % step == 0)


def _rule_positive_entries(cfg, L, r):
    """The entries of the config's per-layer list that are numbers above 0 (Gemma 3n's
    activation_sparsity_pattern)."""
    return sum(1 for v in (cfg.get(r["from"]) or [])[:L]
               if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0)


def _rule_first_n_over(cfg, L, r):
    """The first ``n`` layers when there are more than ``n``, else none (Gemma 3n's default sparsity)."""
    return r["n"] if L > r["n"] else 0


LAYER_RULES = {
    "all": _rule_all, "none": _rule_none, "alternate": _rule_alternate,
    "every_nth_global": _rule_every_nth_global, "after_max_window_layers": _rule_after_max_window_layers,
    "layer_types": _rule_layer_types, "first_k_dense": _rule_first_k_dense, "sparse_step": _rule_sparse_step,
    "period_offset": _rule_period_offset, "index_list": _rule_index_list, "every_nth": _rule_every_nth,
    "interval_range": _rule_interval_range, "positive_entries": _rule_positive_entries,
    "first_n_over": _rule_first_n_over,
}


def _layers_by_rule(cfg: dict, L: int, rules: list) -> int:
    for r in rules:
        if _applies(r, cfg):
            fn = LAYER_RULES.get(r.get("rule"))
            if fn is None:
                raise InputError(f"formulas/architectures.json names the layer rule {r.get('rule')!r}, which "
                                 f"vramsym does not have (known: {', '.join(LAYER_RULES)})")
            n = fn(cfg, L, r)
            return max(0, L - n) if r.get("complement") else n
    return 0


def _derived(cfg: dict, arch: dict | None = None) -> dict:
    """Per-layer counts (documented in formulas/README.md), in closed form, by the rules that
    formulas/architectures.json names for the config's model_type."""
    out: dict = {}
    L = _first(cfg, "num_hidden_layers", "n_layer")
    if not isinstance(L, int) or isinstance(L, bool) or L <= 0:
        return out    # binding reports the missing or malformed layer count
    arch = _architectures() if arch is None else arch
    mt = cfg.get("model_type")
    experts = _int(_first(cfg, "num_local_experts", "num_experts", "n_routed_experts", default=0))
    moe_layers = _layers_by_rule(cfg, L, _rules(arch, mt, "moe")) if experts else 0
    out["arch_n_experts"] = experts
    entry = arch.get(mt) if isinstance(mt, str) and not mt.startswith("_") else None
    out["arch_mlp_act"] = mlp_act(cfg, arch, entry if isinstance(entry, dict) else None)[2] or "single"
    out["arch_moe_layers"] = moe_layers
    out["arch_ffn"] = "moe" if moe_layers else "dense"
    out["arch_dense_layers"] = L - moe_layers
    sliding = _rules(arch, mt, "sliding")
    out["arch_sliding_layers"] = _layers_by_rule(cfg, L, sliding)
    own = entry if isinstance(entry, dict) else {}
    if own.get("last_layer_global") and L > 0 and _prefix_count(cfg, L - 1, sliding) < out["arch_sliding_layers"]:
        out["arch_sliding_layers"] -= 1      # the config class forces the last layer to full attention
    if own.get("kv_shared_from"):
        n = min(max(_int(cfg.get(own["kv_shared_from"]), 0), 0), L)
        out["arch_kv_shared_layers"] = n
        before = _prefix_count(cfg, L - n, sliding)
        out["arch_kv_shared_sliding"] = max(0, out["arch_sliding_layers"] - before)
    out["arch_kv_window"] = "sliding" if out["arch_sliding_layers"] else "full"
    if own.get("sparse_rule"):        # layers with activation-sparse MLPs (Gemma 3n)
        out["arch_sparse_layers"] = _layers_by_rule(cfg, L, _rules(arch, mt, "sparse"))
    if own.get("rope_rule"):          # layers with rotary positions, where some have none (Llama 4's NoPE layers)
        rope = _rules(arch, mt, "rope")
        out["arch_rope_layers"] = _layers_by_rule(cfg, L, rope)
        out["arch_rope_first"] = _prefix_count(cfg, 1, rope)
    # mixers of a hybrid: layers with attention (a KV cache), with a Mamba SSM, with Gated DeltaNet;
    # layers with a feed-forward block (MLP or MoE). A model_type without these rules: every layer
    # attends and has a feed-forward block.
    for kind in MIXER_KINDS:
        out[f"arch_{kind}_layers"] = _layers_by_rule(cfg, L, _rules(arch, mt, kind))
    # the top layer's blocks (its backward runs first): whether it has a feed-forward block, a Mamba mixer
    for kind in ("ffn", "ssm"):
        out[f"arch_top_{kind}"] = out[f"arch_{kind}_layers"] - _prefix_count(cfg, L - 1, _rules(arch, mt, kind))
    # the last recurrent (Mamba / Gated DeltaNet) layer: the blocks whose backward runs before its mixer's
    rec = [_rules(arch, mt, k) for k in ("ssm", "gdn")]
    n_rec = sum(_prefix_count(cfg, L, r) for r in rec)
    if n_rec:
        last = _first_prefix_reaching(L, n_rec, lambda n: sum(_prefix_count(cfg, n, r) for r in rec)) - 1
        out["arch_attn_above_rec"] = out["arch_attn_layers"] - _prefix_count(cfg, last + 1, _rules(arch, mt, "attn"))
        # with the last recurrent layer's own attention (Falcon-H1's parallel layers run the mixer first)
        out["arch_attn_from_rec"] = out["arch_attn_layers"] - _prefix_count(cfg, last, _rules(arch, mt, "attn"))
        out["arch_ffn_above_rec"] = out["arch_ffn_layers"] - _prefix_count(cfg, last, _rules(arch, mt, "ffn"))
        moe = _rules(arch, mt, "moe")
        out["arch_moe_above_rec"] = moe_layers - _prefix_count(cfg, last, moe) if moe_layers else 0
        out["arch_rec_own_moe"] = _prefix_count(cfg, last + 1, moe) - _prefix_count(cfg, last, moe) if moe_layers else 0
    # the layers at and above the first attention layer, by kind: LoRA on attention projections only
    # trains nothing below it, so backward (and what forward saves for it) stops there
    attn = _rules(arch, mt, "attn")
    first = _first_prefix_reaching(L, 1, lambda n: _prefix_count(cfg, n, attn)) - 1 if _prefix_count(cfg, L, attn) else L
    for kind in MIXER_KINDS:
        # a mixer that runs before the attention beside it (Falcon-H1) reads no gradient in that layer either
        below = first + 1 if kind == "ssm" and own.get("arch_ssm_beside_attn") and first < L else first
        out[f"arch_{kind}_layers_up"] = out[f"arch_{kind}_layers"] - _prefix_count(cfg, below, _rules(arch, mt, kind))
    out["arch_layers_up"] = L - first
    out["arch_moe_layers_up"] = moe_layers - (_prefix_count(cfg, first, _rules(arch, mt, "moe")) if experts else 0)
    if moe_layers:
        out["arch_dense_layers"] = max(0, out["arch_ffn_layers"] - moe_layers)
    return out


def _first_prefix_reaching(L: int, target: int, count) -> int:
    """The fewest first layers n (1 <= n <= L) among which ``count(n)`` reaches ``target``, by bisection:
    a count over the first n layers never falls as n grows, and a layer count may be any size a config
    names (a scan layer by layer would not end on a config of 10^12 layers)."""
    lo, hi = 1, L
    while lo < hi:
        mid = (lo + hi) // 2
        if count(mid) >= target:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _prefix_count(cfg: dict, n: int, rules: list) -> int:
    """The layers among the first ``n`` that the rules count: the rules applied to ``n`` layers, with
    the per-layer lists they read cut to their first ``n`` entries (the layers before Gemma 4's
    KV-sharing ones; whether the last layer slides)."""
    if n <= 0:
        return 0
    cut = dict(cfg)
    for r in rules:
        f = r.get("from")
        if isinstance(f, str) and isinstance(cut.get(f), (list, str)):
            cut[f] = cut[f][:n]
    return _layers_by_rule(cut, n, rules)


# rule kinds that count a hybrid's layers by mixer (arch_attn_layers, arch_ssm_layers, arch_gdn_layers)
# and the layers with a feed-forward block (arch_ffn_layers)
MIXER_KINDS = ("attn", "ssm", "gdn", "ffn")


def config_value(cfg: dict, keys: tuple[str, ...]):
    """The first of ``keys`` that the config sets (not null)."""
    for k in keys:
        if k in cfg and cfg[k] is not None:
            return k, cfg[k]
    return None, None
