"""Names in a vLLM log → shipped spec ids: `match_model` for model paths / Hugging Face ids, `detect_gpu` (with the
`_DEVICES` patterns) for the GPU."""

from __future__ import annotations

import re

from boundary.vllm_log import VllmLog
from calc.catalog import Catalog

# (pattern, spec id, a lower-case literal every match holds), in priority order; the literal skips absent devices
# with one C-level `in` instead of a case-insensitive scan of a megabyte per device
_DEVICES = (
    (r"GH200", "gh200", "gh200"), (r"H100[ _-]?NVL", "h100-nvl", "h100"), (r"H100[ _-]?PCIe", "h100-pcie", "h100"),
    (r"H100", "h100-sxm", "h100"), (r"H200[ _-]?NVL", "h200-nvl", "h200"), (r"H200", "h200", "h200"),
    (r"H20[ _-]?3e", "h20-3e", "h20"), (r"H20(?!\d)", "h20", "h20"), (r"H800(?![ _-]?PCIe)", "h800", "h800"),
    (r"B200", "b200", "b200"), (r"(?<!G)B300", "b300", "b300"), (r"RTX[ _]PRO[ _]6000[\w -]*Workstation", "rtx-pro-6000-blackwell-workstation", "6000"),
    (r"RTX[ _]PRO[ _]6000", "rtx-pro-6000-blackwell", "6000"),
    (r"A100[ _-]?80\s?GB[ _-]?PCIe|A100[ _-]?PCIE[ _-]?80\s?GB", "a100-80gb-pcie", "a100"),
    (r"A100[\w -]{0,12}80\s?GB", "a100-80gb-sxm", "a100"), (r"A100[\w -]{0,12}40\s?GB", "a100-40gb", "a100"),
    (r"L40S", "l40s", "l40s"), (r"NVIDIA[ _]L4\b", "l4", "l4"), (r"A10G", "a10g", "a10g"),
    (r"NVIDIA[ _]A10\b", "a10", "a10"), (r"RTX[ _]?3090", "rtx-3090", "3090"), (r"RTX[ _]?4090", "rtx-4090", "4090"),
    (r"RTX[ _]?5090", "rtx-5090", "5090"), (r"RTX[ _]6000[ _]Ada", "rtx-6000-ada", "6000"),
    (r"Tesla[ _]T4|NVIDIA[ _]T4\b", "t4", "t4"), (r"MI300X", "mi300x", "mi300x"), (r"MI325X", "mi325x", "mi325x"),
)  # fmt: skip
_DEVICE_RX = tuple((re.compile(rx, re.IGNORECASE), sid, core) for rx, sid, core in _DEVICES)


def _name_keys(name: str) -> set[str]:
    """A model name's last path component, lower-cased, with and without 'meta-' and an -Instruct/-Chat/-it suffix."""
    last = name.strip().rstrip("/").rsplit("/", 1)[-1].lower()
    bare = last.removeprefix("meta-")
    for suffix in ("-instruct", "-chat", "-it"):
        bare = bare.removesuffix(suffix)
    return {last, bare}


def match_model(name: str, catalog: Catalog) -> str | None:
    """Shipped spec id for a logged model path or Hugging Face id: the hf_id, or the last path component against each
    spec's id, name and hf_id; then the same ignoring a 'meta-' prefix and an -Instruct/-Chat/-it suffix."""
    want = name.strip().rstrip("/").lower()
    last = want.rsplit("/", 1)[-1]
    for sid, m in catalog.models.items():
        if (m.hf_id or "").lower() == want or last in {sid, m.name.lower(), (m.hf_id or "").rsplit("/", 1)[-1].lower()}:
            return sid
    for sid, m in catalog.models.items():
        if _name_keys(want) & (_name_keys(sid) | _name_keys(m.name) | _name_keys(m.hf_id or sid)):
            return sid
    return None


def detect_gpu(log: VllmLog, catalog: Catalog, total_gib: float | None) -> tuple[str | None, str]:
    """GPU spec id from a device name in the log body, else the fixture header's '# gpu:', else the logged total
    memory (within 0.02 GiB of a spec's memory_gib). Returns (id or None, how it was found)."""
    body = "\n".join(log.lines)
    for where, text in (("device name in the log", body), ("the file's '# gpu:' header", log.header.get("gpu", ""))):
        lower = text.lower()
        for rx, sid, core in _DEVICE_RX:
            m = rx.search(text) if core in lower else None
            if m and sid in catalog.gpus:
                return sid, f"{where} ('{m.group(0)}')"
    if total_gib is not None:
        # a measured capacity before one copied from a sibling part (the H20-3e's is the H200's: `derived`)
        near = sorted((sid for sid, g in catalog.gpus.items() if abs(g.memory_gib - total_gib) <= 0.02),
                      key=lambda sid: "memory_gib" in catalog.gpus[sid].derived)
        if near:
            alt = f"; also {', '.join(near[1:])}" if len(near) > 1 else ""
            return near[0], f"logged total memory {total_gib} GiB{alt}"
    return None, ""
