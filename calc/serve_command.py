"""The command that starts the server a configuration describes: `vllm serve …` or SGLang's launch_server, with the
scenario's engine settings; for disaggregated serving a prefill and a decode line. Used by the search's rows and by a
plan (its scenario as given)."""

from __future__ import annotations

import json
import re
import shlex

from calc.engine_spec import version_tuple
from calc.scenario import Scenario

# weight precision → the flags that serve it (vLLM and SGLang spell them alike); int8/int4 need a checkpoint
# quantized that way
DTYPE_FLAGS = {"auto": [], "bf16": ["--dtype", "bfloat16"], "fp16": ["--dtype", "float16"], "fp8": ["--quantization", "fp8"],
               "int8": [], "int4": []}  # fmt: skip
CHECKPOINT = {"int8": "an INT8 (W8A8) checkpoint of {}", "int4": "an INT4 (AWQ or GPTQ) checkpoint of {}"}
FP8_INC_ARCHS = ("gaudi3",)
"""Accelerators whose fp8 KV cache vLLM serves as `--kv-cache-dtype fp8_inc`: the vLLM-Gaudi plugin's platform
accepts no other ("fp8" is refused: HpuPlatform.is_kv_cache_dtype_supported returns kv_cache_dtype == "fp8_inc",
vllm-project/vllm-gaudi vllm_gaudi/platform.py and its unit test), and without a QUANT_CONFIG its attention quantizes
the cache on the fly (hpu_attn.py: enable_fp8_attn); one byte an element either way (docs.vllm.ai, FP8 INC)."""
PLACEHOLDER = "__CHECKPOINT__"  # shlex leaves it bare; replaced by "$CHECKPOINT" after quoting
NIXL = json.dumps({"kv_connector": "NixlConnector", "kv_role": "kv_both"}, separators=(",", ":"))


def _vllm_scenario_flags(s: Scenario, multimodal: bool = True) -> list:
    """The scenario's own engine settings the search priced and every configuration shares: left out, vLLM would
    serve something else (its default block size, CUDA graphs, a pool sized by memory, …). `multimodal`: the
    checkpoint has a vision or audio tower (language_model_only changes nothing otherwise)."""
    default = {k: f.default for k, f in Scenario.model_fields.items()}
    out: list = []
    if s.enforce_eager:
        out.append("--enforce-eager")
    if s.decode_context_parallel_size > 1:
        out += ["--decode-context-parallel-size", s.decode_context_parallel_size]
    if s.enable_prefix_caching:  # a hybrid's opt-in (its state's blocks: calc.kv_cache.state_blocks)
        out.append("--enable-prefix-caching")
    if s.enable_expert_parallel:
        out.append("--enable-expert-parallel")
    if s.block_size != default["block_size"]:
        out += ["--block-size", s.block_size]
    if s.kv_cache_memory_bytes is not None:
        out += ["--kv-cache-memory-bytes", int(s.kv_cache_memory_bytes)]
    if s.mamba_ssm_cache_dtype != default["mamba_ssm_cache_dtype"]:
        out += ["--mamba-ssm-cache-dtype", s.mamba_ssm_cache_dtype]
    if s.disable_hybrid_kv_cache_manager:
        out.append("--disable-hybrid-kv-cache-manager")
    if s.language_model_only and multimodal:  # the flag from 0.17; before, every modality's limit at 0 does the
        # same, and a text model refuses it ("`limit_mm_per_prompt` is only supported for multimodal models")
        release = version_tuple(s.engine_version)
        out += (["--language-model-only"] if release is None or release[:2] >= (0, 17)
                else ["--limit-mm-per-prompt", json.dumps({"image": 0, "video": 0, "audio": 0})])  # fmt: skip
    if s.speculative_method != "none":  # vLLM's JSON; "mtp" serves any family's MTP layers (calc.speculative)
        head = {"model": "EAGLE_HEAD_CHECKPOINT"} if s.speculative_method in ("eagle", "eagle3") else {}  # its own
        out += ["--speculative-config", json.dumps({"method": s.speculative_method, **head,
                                                    "num_speculative_tokens": s.num_speculative_tokens})]  # fmt: skip
    return out


HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]{0,95}/[\w.-]{1,96}")
"""A Hugging Face Hub id (owner/name): what `vllm serve` and SGLang's --model-path download."""


def checkpoint_of(hf_id: str | None, name: str) -> tuple[str, str | None]:
    """(what the command names, what the $CHECKPOINT comment describes or None): a shipped model's or a config's Hub
    id as it is; a config.json without one (or with a local path of the machine that wrote it) names no checkpoint
    the server could load, so the line takes $CHECKPOINT, the checkpoint that config.json belongs to."""
    if hf_id and HUB_ID.fullmatch(hf_id):
        return hf_id, None
    return name, f"the checkpoint whose config.json this is ({name})"


def kv_cache_flag(kv_cache_dtype: str, arch: str) -> str:
    """`--kv-cache-dtype`'s value in vLLM for the planner's KV precision on an `arch` accelerator (FP8_INC_ARCHS)."""
    return "fp8_inc" if kv_cache_dtype == "fp8" and arch in FP8_INC_ARCHS else kv_cache_dtype


def serve_lines(s: Scenario, f: dict, name: str, seqs: int, *, disaggregated: bool, counts: dict | None = None,
                note: str = "", hf_id: str | None = "", moe: bool = True, multimodal: bool = True,
                arch: str = "") -> list[tuple[str, str]]:  # fmt: skip
    """(role, command) lines for the fields `f` (tensor_parallel_size, pipeline_parallel_size, dtype, kv_cache_dtype,
    max_num_batched_tokens, gpu_memory_utilization) of scenario `s`, the checkpoint `name`, `seqs` sequences at most;
    `counts` (prefill, decode instances) label a disaggregated pair; `note` is a comment line above. `hf_id`: the
    model's Hub id (None: it has none, so the checkpoint is $CHECKPOINT; "": `name` is the id). `moe`: the model has
    routed experts (SGLang's data parallelism is then DP attention; a dense model's ranks are plain replicas).
    `multimodal`: the checkpoint has a vision or audio tower (before language_model_only dropped it). `arch`: the
    accelerator's (kv_cache_flag)."""
    name, unknown = (name, None) if hf_id == "" else checkpoint_of(hf_id, name)
    if f["dtype"] in CHECKPOINT:
        unknown = CHECKPOINT[f["dtype"]].format(name)
    model = PLACEHOLDER if unknown else name
    dp = s.data_parallel_size
    if s.engine == "sglang":  # with DP attention SGLang's --tp-size counts every GPU and its caps are the server's,
        # divided over the --dp-size ranks (server_args.py _handle_data_parallelism; boundary.bench_data reads them so);
        # a dense model's ranks are plain replicas (--dp-size alone: its --tp-size and caps are each replica's; Llama,
        # Qwen2 and Gemma implement no DP attention)
        kv = ["--kv-cache-dtype", "fp8_e4m3"] if f["kv_cache_dtype"] == "fp8" else []
        attention_dp = dp if moe else 1
        gpus = f["tensor_parallel_size"] * attention_dp
        pp = f["pipeline_parallel_size"]
        base = ["python", "-m", "sglang.launch_server", "--model-path", model, "--tp-size", gpus,
                *(["--pp-size", pp] if pp > 1 else []),  # no --pp-size before 0.4.7: left out at 1
                "--context-length", s.max_model_len, "--max-running-requests", seqs * attention_dp,
                "--chunked-prefill-size", f["max_num_batched_tokens"] * attention_dp, "--mem-fraction-static",
                f"{f['gpu_memory_utilization']:g}", *kv, *DTYPE_FLAGS[f["dtype"]]]  # fmt: skip
        base += (["--dp-size", dp, "--enable-dp-attention"] if moe else ["--dp-size", dp]) if dp > 1 else []
        release = version_tuple(s.engine_version)
        old_ep = release is not None and release[:2] < (0, 5)  # 0.4: --ep-size alone leaves the experts TP-sliced
        base += (["--ep-size", gpus, *(["--enable-ep-moe"] if old_ep else [])] if s.enable_expert_parallel else [])
        base += ["--disable-hybrid-swa-memory"] if s.disable_hybrid_kv_cache_manager else []  # the same switch
        base += (["--disable-cuda-graph"] if s.enforce_eager else []) + (
            ["--page-size", s.block_size] if s.block_size != Scenario.model_fields["block_size"].default else [])
        roles = (("prefill", ["--disaggregation-mode", "prefill"]), ("decode", ["--disaggregation-mode", "decode"]))
    else:
        base = ["vllm", "serve", model, "--tensor-parallel-size", f["tensor_parallel_size"], "--pipeline-parallel-size",
                f["pipeline_parallel_size"], "--max-model-len", s.max_model_len, "--max-num-seqs", seqs,
                "--max-num-batched-tokens", f["max_num_batched_tokens"], "--gpu-memory-utilization",
                f"{f['gpu_memory_utilization']:g}", "--kv-cache-dtype", kv_cache_flag(f["kv_cache_dtype"], arch),
                *DTYPE_FLAGS[f["dtype"]]]  # fmt: skip
        base += ["--data-parallel-size", dp] if dp > 1 else []
        base += _vllm_scenario_flags(s, multimodal)
        roles = (("prefill", ["--kv-transfer-config", NIXL]), ("decode", ["--kv-transfer-config", NIXL]))
    line = " ".join(shlex.quote(str(x)) for x in base)
    if unknown:  # a runnable line: the checkpoint is a shell variable the comment above explains
        comment = " ".join(unknown.split())  # one line whatever the name holds: a newline would end the comment
        line = f"# CHECKPOINT={{{comment}: a Hub id or a local path}}\n" + line.replace(PLACEHOLDER, '"$CHECKPOINT"')
    if note:
        line = note + "\n" + line
    if not disaggregated:
        return [("", line)]
    return [(f"{role}: {int(counts[role]):,} instance(s)" if counts else role,
             line + " " + " ".join(shlex.quote(x) for x in extra)) for role, extra in roles]  # fmt: skip


def plan_serve_commands(r) -> list[tuple[str, str]]:
    """(role, command) for a plan's scenario as given (a Report): its own max_num_seqs, and for disaggregated serving
    the fleet's prefill and decode instances where a request rate sized them."""
    s = r.scenario
    f = {k: getattr(s, k) for k in ("tensor_parallel_size", "pipeline_parallel_size", "dtype", "kv_cache_dtype",
                                    "max_num_batched_tokens", "gpu_memory_utilization")}  # fmt: skip
    fl = r.fleet if s.disaggregated else None
    counts = {"prefill": fl.prefill_instances, "decode": fl.decode_instances} \
        if fl is not None and fl.prefill_instances and fl.decode_instances else None  # fmt: skip
    return serve_lines(s, f, r.model.name, s.max_num_seqs, disaggregated=s.disaggregated, counts=counts,
                       hf_id=r.model.hf_id, moe=bool(r.model.routed_experts), multimodal=r.multimodal,
                       arch=r.gpu.arch)  # fmt: skip


def joined(lines: list[tuple[str, str]]) -> str:
    """The lines as one text: each disaggregated role under a '# role' comment."""
    return "\n".join(f"# {role}\n{cmd}" if role else cmd for role, cmd in lines)
