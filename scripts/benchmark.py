"""Speed benchmark (not a test): evaluate() time, the continuous-batching simulation per 1,000 requests, the app's
rerun after one input change, and the page's load time in headless Chromium. Prints medians; quote them in the README.

    python scripts/benchmark.py [--skip-browser | --browser-only]
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from calc.evaluate import evaluate  # noqa: E402
from calc.loader import load_catalog  # noqa: E402
from calc.scenario import Scenario  # noqa: E402


def median_ms(fn, n: int) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def bench_evaluate() -> None:
    cat = load_catalog()
    for label, s in (("default", Scenario()), ("request_rate=20", Scenario(request_rate=20)),
                     ("gemma-3-27b on h100, TP 2", Scenario(model="gemma-3-27b", gpu="h100-sxm", tensor_parallel_size=2))):  # fmt: skip
        print(f"evaluate() {label:28s} median {median_ms(lambda s=s: evaluate(s, cat), 200):7.2f} ms")


def bench_simulate() -> None:
    """calc/scheduler.simulate() wall time per 1,000 requests of 1,024 + 256 tokens, one core. The step model is the
    seed's Qwen2.5-7B on an RTX 4090 as a max of linear terms (the shape the lead's step-time model has)."""
    from calc.scheduler import EngineConfig, simulate
    from calc.sim_stats import Workload

    def step_s(prefill_tokens, prefill_pairs, decode_seqs, decode_context):
        memory_s = 14.14e9 / (0.87 * 1.008e12) + decode_context * 57_344 / (0.93 * 1.008e12)
        compute_s = ((prefill_tokens + decode_seqs) * 13.05e9 + prefill_pairs * 401_408) / 146.3e12
        return max(memory_s, compute_s)

    def config(blocks: int, engine: str) -> EngineConfig:
        return EngineConfig(max_num_seqs=256, max_num_batched_tokens=2048, num_gpu_blocks=blocks, block_size=16,
                            blocks_for=lambda t: -(-t // 16), engine=engine)  # fmt: skip

    runs = (("C=16", 30_000, dict(max_concurrency=16)), ("C=256", 30_000, dict(max_concurrency=256)),
            ("Poisson 6.3 req/s (~64 in flight)", 30_000, dict(request_rate=6.3)),
            ("C=256, 7,504 blocks (preempts)", 7_504, dict(max_concurrency=256)))  # fmt: skip
    for engine in ("vllm", "sglang"):
        for label, blocks, kw in runs:
            cfg, w = config(blocks, engine), Workload(input_len=1024, output_len=256, num_prompts=1000, **kw)
            r = simulate(cfg, w, step_s)
            ms = median_ms(lambda cfg=cfg, w=w: simulate(cfg, w, step_s), 11)
            print(f"simulate() 1,000 requests {engine:6s} {label:34s} median {ms:6.1f} ms "
                  f"({r.num_steps:,} steps, {r.mean_running:5.1f} running, {r.preemptions} preemptions)")  # fmt: skip
    w = Workload(input_len=1024, output_len=256, num_prompts=1000, max_concurrency=256)
    summary_ms = median_ms(simulate(config(30_000, "vllm"), w, step_s).bench_summary, 11)
    print(f"SimResult.bench_summary(), vllm C=256 {'':48s} median {summary_ms:6.1f} ms")


def bench_rerun() -> None:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    script_ms = []
    for tab in ("Memory", "Latency", "SLOs & replicas"):
        at.session_state["tab"] = tab
        for c in range(2, 22):
            at.number_input(key="concurrency").set_value(c)
            at.run()
            script_ms.append(at.session_state["_script_ms"])
        print(f"app rerun after one input change, {tab} tab open: script median {statistics.median(script_ms):6.1f} ms")
        script_ms.clear()


# Records, in the page itself, when a headline number is first painted and when the headline last changed: a
# requestAnimationFrame loop (one check per painted frame) reads every st.metric value in the main area.
# performance.now() counts from the navigation's start, so "link → first number" needs no clock of ours.
FRAME_PROBE = """
window.__probe = {first: null, text: null, changedAt: null};
(function tick() {
  const els = document.querySelectorAll('main.stMain [data-testid="stMetricValue"]');
  const text = Array.from(els).map(e => e.textContent).join('|');
  const now = performance.now();
  if (els.length && text && window.__probe.first === null) window.__probe.first = now;
  if (text !== window.__probe.text) { window.__probe.text = text; window.__probe.changedAt = now; }
  requestAnimationFrame(tick);
})();
"""


def _one_visit(browser, url: str, values: list[str]) -> tuple[float, list[float]]:
    """A fresh browser context (no cache) opens `url`: ms to the first headline number; then, on the settled page,
    ms from pressing Enter on each new concurrency to the headline showing it."""
    ctx = browser.new_context(viewport={"width": 1500, "height": 1000})
    ctx.add_init_script(FRAME_PROBE)
    page = ctx.new_page()
    try:
        page.goto(url, wait_until="commit")
        page.wait_for_function("window.__probe && window.__probe.first !== null", timeout=60_000, polling=50)
        first = page.evaluate("window.__probe.first")
        page.locator(".js-plotly-plot").first.wait_for(timeout=60_000)  # a settled page: charts drawn, then idle
        page.wait_for_timeout(1500)
        changes = []
        for value in values:
            box = page.locator('input[type="number"][aria-label="Concurrent requests"]').first
            box.fill(value)
            before = page.evaluate("[performance.now(), window.__probe.text]")
            box.press("Enter")
            page.wait_for_function(f"window.__probe.text !== {json.dumps(before[1])}", timeout=60_000, polling=10)
            changes.append(page.evaluate("window.__probe.changedAt") - before[0])
            page.wait_for_timeout(1200)
        return first, changes
    finally:
        ctx.close()


def bench_page_vs_toy(runs: int = 9) -> dict:
    """The page against Streamlit's own floor: scripts/toy_page.py (one URL-bound input, two metrics, one plotly chart)
    on its own server, same machine, same Chromium, visits alternated. Medians and their ratios (targets: link ≤ 1.3×
    the toy, input change ≤ 1.5×)."""
    from playwright.sync_api import sync_playwright

    from scripts.serve import launch_browser, start_server

    servers = {"toy": start_server(script=ROOT / "scripts" / "toy_page.py"), "app": start_server()}
    query = "/?model=qwen2.5-7b-instruct&gpu=rtx-4090&concurrency=16"
    links: dict[str, list[float]] = {"toy": [], "app": []}
    inputs: dict[str, list[float]] = {"toy": [], "app": []}
    try:
        with sync_playwright() as p:
            browser = launch_browser(p)
            for _, base in servers.values():  # warm each server once (first-run imports), not measured
                _one_visit(browser, base + query, ["17"])
            for i in range(runs):
                for name, (_, base) in servers.items():
                    first, changes = _one_visit(browser, base + query, [str(20 + i), str(40 + i), str(60 + i)])
                    links[name].append(first)
                    inputs[name] += changes
            browser.close()
    finally:
        for proc, _ in servers.values():
            proc.terminate()
    med = {k: (statistics.median(links[k]), statistics.median(inputs[k])) for k in links}
    out = {"toy_link_ms": med["toy"][0], "app_link_ms": med["app"][0], "link_ratio": med["app"][0] / med["toy"][0],
           "toy_input_ms": med["toy"][1], "app_input_ms": med["app"][1], "input_ratio": med["app"][1] / med["toy"][1]}  # fmt: skip
    print(f"link → first headline number (Chromium, median of {runs} visits): toy {out['toy_link_ms']:6.0f} ms, app "
          f"{out['app_link_ms']:6.0f} ms, ratio {out['link_ratio']:.2f} (target ≤ 1.3)")
    print(f"concurrency changed → headline updated ({3 * runs} changes):  toy {out['toy_input_ms']:6.0f} ms, app "
          f"{out['app_input_ms']:6.0f} ms, ratio {out['input_ratio']:.2f} (target ≤ 1.5)")
    for k in links:
        print(f"  {k}: link {sorted(round(a) for a in links[k])} ms; input {sorted(round(b) for b in inputs[k])} ms")
    return out


if __name__ == "__main__":
    if "--browser-only" in sys.argv:
        bench_page_vs_toy()
        sys.exit(0)
    bench_evaluate()
    bench_simulate()
    bench_rerun()
    if "--skip-browser" not in sys.argv:
        bench_page_vs_toy()
