"""Hostile input classes of issue 16 as fuzz boundaries (pasted vLLM logs, spec YAML files, special files where the
CLI wants a file), sharing tests/properties.py's cost bound and CLI runner."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from hypothesis import strategies as st
from properties import GOOD_CONFIG, NASTY_TEXT, bounded, catalog, one_line_rejection, run_cli

from boundary.reconcile import reconcile
from boundary.vllm_log import parse_log
from calc.errors import InputError
from calc.loader import load_spec_file, parse_config_json
from calc.specs import GPUSpec, ModelSpec

LOG_DIR = Path(__file__).resolve().parent / "data" / "vllm_logs"
LOG_LINES = [
    "Loading model weights took 14.9888 GB", "Available KV cache memory: 5.98 GiB", "# GPU blocks: 1478",
    "PyTorch activation peak memory takes 1.40GiB", "non_torch_memory takes 0.20GiB", "GPU KV cache size: 567,978 tokens",
    "Graph capturing finished in 3 secs, took 0.22 GiB", "Maximum concurrency for 131,072 tokens per request: 4.33x",
    "Initializing a V1 LLM engine (v0.10.1) with config: model='Qwen/Qwen3-14B', max_seq_len=8192, "
    "tensor_parallel_size=1, gpu_memory_utilization=0.9", "Available KV cache memory: -3.21 GiB",
]  # fmt: skip


@st.composite
def log_text(draw):
    """A real-looking log with hostile edits: digit runs where numbers go, giant lines, Markdown, many lines."""
    lines = draw(st.lists(st.sampled_from(LOG_LINES), min_size=1, max_size=12))
    out = []
    for line in lines:
        edit = draw(st.integers(0, 5))
        if edit == 0:
            run = "9" * draw(st.sampled_from([50, 4_400, 20_000]))
            line = line.replace("1", run, 1) if "1" in line else run + line
        elif edit == 1:
            line = line + draw(NASTY_TEXT)
        elif edit == 2:
            line = line * draw(st.sampled_from([2, 100, 3_000]))
        out.append(line)
    repeat = draw(st.sampled_from([1, 1, 1, 50, 5_000]))
    return "\n".join(out * repeat)


@bounded("vLLM log")
def check_log(text: str) -> str:
    try:
        log = parse_log(text)
    except InputError as e:
        return one_line_rejection(e)
    try:
        r = reconcile(log, catalog())
    except InputError as e:
        return one_line_rejection(e)
    json.dumps(r.to_dict(), default=str)
    return "valid"


GOOD_GPU_YAML = (LOG_DIR.parent.parent.parent / "hardware_specs" / "l4.yaml").read_text()
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)


@st.composite
def spec_yaml(draw):
    """A shipped GPU spec edited the ways people and attackers edit: a field to junk, duplicate keys, alias bombs,
    deep nesting, Markdown in the name, huge numbers, bytes that are not UTF-8."""
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return BOMB.encode()
    if kind == 1:
        return ("x: " + "[" * draw(st.sampled_from([10, 100, 10_000])) + "]" * 10).encode()
    if kind == 2:
        return (GOOD_GPU_YAML + "\n" + GOOD_GPU_YAML.splitlines()[0] + "\n").encode()  # a duplicate key
    if kind == 3:
        return draw(st.binary(max_size=300))
    lines = GOOD_GPU_YAML.splitlines()
    i = draw(st.integers(0, len(lines) - 1))
    if ":" in lines[i] and not lines[i].lstrip().startswith("#"):
        key = lines[i].split(":", 1)[0]
        value = draw(st.one_of(NASTY_TEXT, st.text(max_size=20))).replace("\n", " ")
        lines[i] = f"{key}: {json.dumps(value)}"
    return "\n".join(lines).encode()


@bounded("spec YAML file")
def check_spec_yaml(raw: bytes) -> str:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "gpu.yaml"
        path.write_bytes(raw)
        try:
            load_spec_file(path, GPUSpec)
        except InputError as e:
            return one_line_rejection(e, "gpu.yaml")
    return "valid"


SPECIAL = ["/dev/zero", "/dev/urandom", "/dev/null", "/", "/proc/self/mem", "/nonexistent/x.json", "{fifo}", "{dir}"]
special_files = st.tuples(st.sampled_from(["plan --model", "plan --gpu", "reconcile", "bench --model"]),
                          st.sampled_from(SPECIAL))  # fmt: skip


@bounded("CLI special files")
def check_special_file(case: tuple[str, str]) -> str:
    """A device, a FIFO, a directory or a missing path where the CLI wants a file: exit 2, one line, no blocking."""
    cmd, target = case
    with tempfile.TemporaryDirectory() as d:
        fifo = os.path.join(d, "fifo")
        os.mkfifo(fifo)
        path = target.format(fifo=fifo, dir=d)
        return check_cli_argv([*cmd.split(), path])


def check_cli_argv(argv: list[str]) -> str:
    code, text = run_cli(argv)
    assert code == 2 and len(text.strip().splitlines()) == 1 and "Traceback" not in text, (argv, code, text)
    return "rejected"


# --- malformed model input: the family pattern fields and the config.json shapes the readers walk -----------------
MOE = GOOD_CONFIG | {"num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 1024}
NAS = {"attention": {"n_heads_in_group": 4}, "ffn": {"ffn_mult": 2.625}}  # one Nemotron-NAS block
# shape → (config, the field a refusal must name). The first group are ModelSpec fields (a spec YAML may hold them,
# and a ?custom_model= link); the rest exist only in a config.json. Each raised a TypeError, AttributeError,
# ZeroDivisionError, IndexError or OverflowError before it was refused by name.
MALFORMED_SPEC: dict[str, tuple[dict, str]] = {
    "decoder_sparse_step-text": (MOE | {"decoder_sparse_step": "x"}, "decoder_sparse_step"),
    "moe_layer_freq-text": (MOE | {"first_k_dense_replace": 1, "moe_layer_freq": "x"}, "moe_layer_freq"),
    "mlp_only_layers-number": (MOE | {"mlp_only_layers": 3}, "mlp_only_layers"),
    "mlp_only_layers-nested": (MOE | {"mlp_only_layers": [[1]]}, "mlp_only_layers"),
    "no_rope_layers-number": (GOOD_CONFIG | {"attention_chunk_size": 8192, "no_rope_layers": 3}, "no_rope_layers"),
    "max_window_layers-text": (GOOD_CONFIG | {"model_type": "qwen2", "sliding_window": 4096, "use_sliding_window": True,
                                              "max_window_layers": "x"}, "max_window_layers"),
}  # fmt: skip
MALFORMED_CONFIG: dict[str, tuple[dict, str]] = MALFORMED_SPEC | {
    "model_type-list": (GOOD_CONFIG | {"model_type": ["llama"]}, "model_type"),
    "block_configs-number": (GOOD_CONFIG | {"block_configs": [1]}, "block_configs"),
    "block_configs-attention": (GOOD_CONFIG | {"block_configs": [NAS | {"attention": 1}]}, "block_configs.attention"),
    "ffn_mult-text": (GOOD_CONFIG | {"block_configs": [NAS | {"ffn": {"ffn_mult": "abc"}}]}, "ffn_mult"),
    "ffn_mult-infinite": (GOOD_CONFIG | {"block_configs": [NAS | {"ffn": {"ffn_mult": 1e400}}]}, "ffn_mult"),
    "n_heads_in_group-text": (GOOD_CONFIG | {"block_configs": [NAS | {"attention": {"n_heads_in_group": "x"}}]},
                              "n_heads_in_group"),
    "attn_type_list-empty": (GOOD_CONFIG | {"attn_type_list": []}, "attn_type_list"),
    "weights-number": (GOOD_CONFIG | {"quantization_config": {"quant_method": "compressed-tensors",
                                                              "config_groups": {"g": {"weights": 1}}}}, "weights"),
    "config_groups-list": (GOOD_CONFIG | {"quantization_config": {"quant_method": "compressed-tensors",
                                                                  "config_groups": [1]}}, "config_groups"),
    "gemma-defaults-list": ({"model_type": "gemma3", "text_config": GOOD_CONFIG | {"_defaults_from_Gemma3TextConfig": [1]}},
                            "_defaults_from_Gemma3TextConfig"),
    "image_size-empty": (GOOD_CONFIG | {"vision_config": {"hidden_size": 64, "intermediate_size": 256,
                                                         "num_hidden_layers": 2, "image_size": []}}, "image_size"),
    # found by hand (2026-12-02): a TypeError or ValueError out of the family readers, a traceback on the CLI and page
    "layers_block_type-nested": (GOOD_CONFIG | {"model_type": "nemotron_h", "layers_block_type": [[1]]},
                                 "layers_block_type"),
    "moe_layer_start_index-mixed": (GOOD_CONFIG | {"model_type": "ernie4_5_moe", "moe_num_experts": 8,
                                                   "moe_layer_start_index": [1, "a"]}, "moe_layer_start_index"),
    "moe_layer_end_index-mixed": (GOOD_CONFIG | {"model_type": "ernie4_5_moe", "moe_num_experts": 8,
                                                 "moe_layer_end_index": [1, None]}, "moe_layer_end_index"),
    "mlp_ratio-infinite": (GOOD_CONFIG | {"model_type": "qwen2_vl", "vision_config": {"embed_dim": 1280,
                                                                                    "mlp_ratio": 1e400}}, "mlp_ratio"),
}  # fmt: skip
JUNK = st.one_of(NASTY_TEXT, st.integers(-3, 3), st.floats(), st.lists(st.integers(-2, 4), max_size=3),
                 st.just([[1]]), st.just({}), st.just([1]), st.none())  # fmt: skip


@st.composite
def malformed_model(draw):
    """(config, field): a shape above, often with its bad value swapped for other junk (then the field need not be
    the one refused: the junk may be valid)."""
    config, field = MALFORMED_CONFIG[draw(st.sampled_from(sorted(MALFORMED_CONFIG)))]
    config = json.loads(json.dumps(config))
    if draw(st.booleans()):
        key = field.split(".")[-1]
        holder = next((d for d in _dicts(config) if key in d), config)
        holder[key] = draw(JUNK)
        field = ""
    return config, field


def _dicts(x):
    if isinstance(x, dict):
        yield x
        for v in x.values():
            yield from _dicts(v)
    elif isinstance(x, list):
        for v in x:
            yield from _dicts(v)


@bounded("malformed model")
def check_malformed_model(case: tuple[dict, str]) -> str:
    """As a config.json, and (when every key is a ModelSpec field) as a spec YAML: a model, or one line naming the
    field (the YAML's names the file, then the field)."""
    config, field = case
    try:
        parse_config_json(json.dumps(config, allow_nan=True))
        verdict = "valid"
    except InputError as e:
        assert field in str(e), (field, str(e))
        verdict = one_line_rejection(e)
    if set(config) <= set(ModelSpec.model_fields):
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "model.yaml"
            path.write_text(json.dumps({"name": "M", **config}, allow_nan=True))  # JSON is YAML
            try:
                load_spec_file(path, ModelSpec)
            except InputError as e:  # a config.json-only shape is refused by the spec's own fields
                assert field not in ModelSpec.model_fields or field in str(e), (field, str(e))
                one_line_rejection(e, "model.yaml")
    return verdict
