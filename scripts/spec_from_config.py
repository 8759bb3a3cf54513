"""Write a model_specs/<id>.yaml from a Hugging Face config.json, through the same reader the page uses.

    python scripts/spec_from_config.py tests/data/hf_configs/nemotron-h-8b-base-8k/config.json nemotron-h-8b \
        --name "Nemotron-H-8B-Base-8K" --hf-id nvidia/Nemotron-H-8B-Base-8K --source "…"

The YAML holds the fields the reader keeps, in Hugging Face spelling; per-layer lists are written only when the
config stated them (otherwise the family's pattern fields are, and the lists are expanded again on load). The
script checks that the file it wrote loads to the same spec.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from calc.hf_config import model_from_hf_config  # noqa: E402
from calc.loader import load_spec_file  # noqa: E402
from calc.model_spec import ModelSpec  # noqa: E402

PATTERN_FIELDS = ("sliding_window_pattern", "hybrid_override_pattern", "full_attention_interval", "attn_layer_period",
                  "attention_chunk_size", "first_k_dense_replace", "decoder_sparse_step", "interleave_moe_layer_step",
                  "expert_layer_period", "kv_heads_per_layer", "intermediate_size_per_layer")  # fmt: skip


def spec_yaml(config: dict, *, name: str, hf_id: str, source: str, note: str = "") -> str:
    m = model_from_hf_config(config, name=name, source=source)
    data = m.model_dump(exclude_defaults=True, exclude={"assumptions"})
    data = {"name": data.pop("name"), "hf_id": hf_id, "source": data.pop("source"), **data}
    derivable = any(data.get(k) is not None for k in PATTERN_FIELDS) or len(set(m.layer_types)) == 1
    if derivable and ModelSpec.model_validate({k: v for k, v in data.items() if k != "layer_types"}).layer_types == m.layer_types:
        data.pop("layer_types", None)
    if ModelSpec.model_validate({k: v for k, v in data.items() if k != "mlp_layer_types"}).mlp_layer_types == m.mlp_layer_types:
        data.pop("mlp_layer_types", None)
    data = {k: list(v) if isinstance(v, tuple) else v for k, v in data.items()}
    head = f"# {name}: Hugging Face config.json fields (planning-relevant subset), read by calc/hf_config.py. File stem is the spec id.\n"
    body = yaml.safe_dump(data, sort_keys=False, width=120, default_flow_style=None, allow_unicode=True)
    tail = f"# note: {note}\n" if note else ""
    return head + body + tail


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("config")
    p.add_argument("sid")
    p.add_argument("--name", required=True)
    p.add_argument("--hf-id", required=True)
    p.add_argument("--source", required=True)
    p.add_argument("--note", default="")
    p.add_argument("--set", action="append", default=[], help="field=json-value added to the config (a gap it has)")
    a = p.parse_args()
    config = json.loads(Path(a.config).read_text())
    target = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    for item in a.set:
        k, v = item.split("=", 1)
        target[k] = json.loads(v)
    out = ROOT / "model_specs" / f"{a.sid}.yaml"
    out.write_text(spec_yaml(config, name=a.name, hf_id=a.hf_id, source=a.source, note=a.note))
    back = load_spec_file(out, ModelSpec)
    want = model_from_hf_config(config, name=a.name, source=a.source)
    same = back.model_dump(exclude={"hf_id", "assumptions", "source"}) == want.model_dump(exclude={"hf_id", "assumptions", "source"})
    print(f"{out.relative_to(ROOT)}: {'round-trips' if same else 'DIFFERS from the config'}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
