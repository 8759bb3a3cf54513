"""Unit constants: the one place where decimal and binary prefixes live.

Decimal (SI) for bandwidth, FLOP/s, parameter counts and vendor datasheets; binary (IEC) for memory capacity as
nvidia-smi, PyTorch and vLLM report it ("Available KV cache memory: 6.41 GiB" means 6.41 · 2^30 bytes).
Inside calc/ every quantity is in base units: bytes, seconds, FLOP, FLOP/s, bytes/s, tokens/s.
"""

# decimal (SI)
MB = 10**6
GB = 10**9
TB = 10**12
GFLOP = 10**9
TFLOP = 10**12
PFLOP = 10**15

# binary (IEC)
KiB = 2**10
MiB = 2**20
GiB = 2**30

# time
MS = 1e-3
US = 1e-6
HOUR_S = 3600.0

# bytes per element of each precision a scenario can name
DTYPE_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    "mxfp4": 0.5,
}
