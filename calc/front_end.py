"""The API server in front of the engine: its latency per request, its CPU time per request (one request at a time),
and what that one-at-a-time queue does to the closed forms and to a replica's capacity.

    latency per request   = request_overhead_s (+ chat_request_s on the chat endpoint) + busy
    busy (CPU, serial)    = chat_serial_s (chat endpoint; harmony_serial_s for gpt-oss) + request_token_s · input_len
    engine's requests     k = E2E(k) / busy where b · busy > E2E(b), else b   (Little's law at the API server's rate)
    capacity              ≤ ρ / busy, ρ = 2s / (busy + 2s)  (M/D/1 wait within the TTFT's slack s)

Constants: engine_specs/*.yaml (fitted by scripts/calibrate.py; README, Accuracy).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from calc.engine_spec import EngineSpec
from calc.numeric import falling_root
from calc.scenario import Scenario
from calc.specs import ModelSpec

HARMONY_MODEL_TYPES = ("gpt_oss",)
"""Chat formats both servers render with the compiled openai_harmony library, not a Jinja chat template (vLLM's
serving_chat and SGLang's: use_harmony = model_type == "gpt_oss")."""

FRONT_STEPS = 6
"""Regula falsi steps for the requests in the engine (in_engine): over 2,560 chat scenarios (four models, four GPUs,
both engines, 8–1,024 in flight, prompts of 32–8,000 and outputs of 1–1,000 tokens) six leave TTFT and TPOT within
1.1e-4 of the root's (five: 1.2e-4, four: 1.5e-2)."""


def request_overhead_s(s: Scenario, engine: EngineSpec, m: ModelSpec) -> float:
    """Front-end time each request spends outside the engine's steps (HTTP, tokenisation, the first token's way
    out): the scenario's override, else the engine's calibrated figure."""
    if s.frontend_overhead_s is not None:
        return s.frontend_overhead_s
    return engine_request_overhead_s(s, engine) + front_busy_s(s, engine, m)


def engine_request_overhead_s(s: Scenario, engine: EngineSpec) -> float:
    """The engine's fixed front-end latency per request at the scenario's endpoint (the chat template's share on
    the chat endpoint), requests overlapping in it; the front end's CPU time is front_busy_s."""
    return engine.request_overhead_s + (engine.chat_request_s if s.endpoint_type == "openai-chat" else 0.0)


def front_serial_s(s: Scenario, engine: EngineSpec, m: ModelSpec) -> float:
    """The front end's CPU time per request besides tokenising [s]: on the chat endpoint, chat_serial_s (the Jinja
    chat template, the message and response objects), or harmony_serial_s for a harmony-format model, whose format a
    compiled library renders (GPUStack's gpt-oss-20b took 213 chat requests a second on one H100 where the
    Jinja-templated models took 44–48); none on the completions endpoint."""
    if s.endpoint_type != "openai-chat":
        return 0.0
    return engine.harmony_serial_s if m.model_type in HARMONY_MODEL_TYPES else engine.chat_serial_s


def front_busy_s(s: Scenario, engine: EngineSpec, m: ModelSpec) -> float:
    """b: the front end's CPU time per request, one request at a time (the chat template, then request_token_s
    per prompt token) [s]; 0 where the scenario sets its own front-end time. One API server serves at most 1 / b
    requests a second (front_end_rps)."""
    if s.frontend_overhead_s is not None:
        return 0.0
    return front_serial_s(s, engine, m) + engine.request_token_s * s.input_len


def in_engine(e2e_at: Callable[[float], float], flight: float, busy_s: float, e2e_flight: float) -> float:
    """k: requests in the engine when `flight` are in a closed loop and the API server takes busy_s of each, one at
    a time [requests]; e2e_at(k) is a request's end-to-end time with k in the engine [s], e2e_flight = e2e_at(flight).
    Where flight · busy ≤ E2E(flight) the API server keeps up and k = flight. Otherwise it sets the pace, 1 / busy
    requests a second, and by Little's law k = E2E(k) / busy are past it (1 at least); the rest wait their turn,
    flight · busy − E2E(k) each (calc.latency). Qwen3-8B on an H100, 64 chat requests of 128 + 16 tokens: 7.5 in
    the engine, not 64 (the scheduler simulation, which plays the queue out, decodes at 7.6 ms a token; at 64 the
    closed form's step was 32 ms). k solves E2E(k) − busy · k = 0 on [1, flight] (calc.numeric.falling_root);
    calc.search_capacity does the same over arrays."""
    if busy_s <= 0 or flight <= 1 or flight * busy_s <= e2e_flight:
        return flight
    one = e2e_at(1.0)
    if one <= busy_s:
        return 1.0
    return falling_root(lambda k: e2e_at(k) - busy_s * k, 1.0, one - busy_s, flight, e2e_flight - busy_s * flight,
                        FRONT_STEPS)  # fmt: skip


def front_end_rps(busy_s, slack_s):
    """The highest request rate the front end takes [requests/s]: it serves one request at a time for busy_s
    (front_busy_s), a queue with deterministic service whose mean wait at utilisation ρ is ρ·b / (2(1 − ρ))
    (M/D/1); the rate keeps that wait within the TTFT's slack s: ρ = 2s / (b + 2s), λ = ρ / b.
    b = 20 ms, s = 100 ms: ρ = 0.91, 45.5 requests/s. inf where the front end computes nothing (b = 0).
    Scalars or numpy arrays (calc.search_fleet)."""
    b, slack = np.asarray(busy_s, dtype=float), np.maximum(np.asarray(slack_s, dtype=float), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where(b > 0, 2 * slack / (b + 2 * slack), 1.0)
        return np.where(b > 0, rho / np.where(b > 0, b, 1.0), np.inf)
