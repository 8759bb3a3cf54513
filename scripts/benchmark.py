"""Speed benchmark (not a test): evaluate() time, the search over the default space beside a loop over evaluate(),
the continuous-batching simulation per 1,000 requests, the app's rerun after one input change (and with the Find a
deployment tab open), the page's load time in headless Chromium, and with --crowd a crowd of 1, 10 and 40 sessions
on one server (scripts/crowd.py). Prints medians; quote them in the README.

    python scripts/benchmark.py [--skip-browser | --browser-only] [--crowd]
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
from scripts import usage  # noqa: E402


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
    from calc.scheduler import simulate
    from calc.sim_engine import EngineConfig
    from calc.sim_stats import Workload

    def step_s(prefill_tokens, prefill_pairs, decode_seqs, decode_context, prefill_seqs=1):
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
    # the shipped step model of a MoE (its routed experts read per step through calc.routing's skewed router)
    from calc import bench
    from calc.evaluate import evaluate
    from calc.loader import load_catalog
    from calc.scenario import Scenario

    moe = evaluate(Scenario(model="qwen3-30b-a3b", gpu="h100-sxm", input_len=1024, output_len=256), load_catalog())
    for c in (16, 256):
        ms = median_ms(lambda c=c: bench.serve(moe, num_prompts=1000, max_concurrency=c), 11)
        print(f"simulate() 1,000 requests vllm   C={c:<3d} Qwen3-30B-A3B, H100 SXM, its step model{'':3s} median {ms:6.1f} ms")
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
    on its own server, same machine, same Chromium, visits alternated, three input changes per visit (input changes
    are noisier than loads, hence more of them). Medians and their ratios (targets: link ≤ 1.3× the toy, input change
    ≤ 1.5×)."""
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


def bench_search() -> None:
    """calc.search over the default search space (one core: numpy's elementwise arithmetic is single-threaded),
    beside a loop over evaluate() — and its fleet, which sizes replicas and cost — on the same configurations
    (a random sample of 1,000 of them, timed one by one and scaled to the whole space)."""
    import random

    from calc.search import search
    from calc.search_rows import scenario_of

    cat = load_catalog()
    done_when = Scenario(model="llama-3.1-70b", request_rate=10, input_len=2000, output_len=500)
    for label, s in (("default scenario", Scenario()), ("llama-3.1-70b, 10 req/s, 2,000/500", done_when),
                     ("deepseek-v3 (MLA, MoE), 5 req/s", Scenario(model="deepseek-v3", request_rate=5))):  # fmt: skip
        r = search(s, cat)
        n = r.configs_evaluated
        ms = median_ms(lambda s=s: search(s, cat), 21)
        cpu = time.process_time()
        for _ in range(21):
            search(s, cat)
        cpu_ms = (time.process_time() - cpu) / 21 * 1e3  # this process's CPU time: what a shared machine's load leaves out
        sample = random.Random(0).sample(range(n), min(1000, n))
        scenarios = [scenario_of(r, i) for i in sample]
        t = time.perf_counter()
        for x in scenarios:
            evaluate(x, cat)
        eval_us = (time.perf_counter() - t) / len(scenarios) * 1e6
        t = time.perf_counter()
        for x in scenarios:
            _ = evaluate(x, cat).fleet
        fleet_us = (time.perf_counter() - t) / len(scenarios) * 1e6
        print(f"search() {label:36s} {n:7,} configurations in {ms:6.1f} ms: {ms * 1e3 / n:5.2f} µs each, "
              f"{n / ms * 1e3 / 1e6:5.2f} M configurations/s (CPU time {cpu_ms * 1e3 / n:5.2f} µs each, "
              f"{n / cpu_ms * 1e3 / 1e6:5.2f} M/s); a loop over evaluate() on the same points "
              f"{eval_us * n / 1e6:6.2f} s ({eval_us:4.0f} µs each), with replicas and cost (.fleet) "
              f"{fleet_us * n / 1e6:6.2f} s ({fleet_us:4.0f} µs each)")  # fmt: skip


def bench_search_tab() -> None:
    """The Find a deployment tab open, one input changed per rerun (concurrency, then request_rate, then an SLO):
    the script's own time and AppTest's whole rerun (script, protobuf of the chart and tables)."""
    from streamlit.testing.v1 import AppTest

    from ui.held import open_key

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    for k, v in {"model": "llama-3.1-70b", "request_rate": "10", "input_len": "2000", "output_len": "500"}.items():
        at.query_params[k] = v
    at.session_state["tab"] = "Find a deployment"
    at.session_state[open_key("SLOs and cost")] = True  # the SLO inputs are drawn only while their group is open
    at.run()
    script_ms, run_ms, by_input = [], [], {}
    for c in range(2, 12):
        for key, value in (("concurrency", c), ("request_rate", 10.0 + c), ("slo_tpot_s", 0.04 + c / 1000)):
            at.number_input(key=key).set_value(value)
            t = time.perf_counter()
            at.run()
            run_ms.append((time.perf_counter() - t) * 1e3)
            script_ms.append(at.session_state["_script_ms"])
            by_input.setdefault(key, []).append(script_ms[-1])
    each = ", ".join(f"{k} {statistics.median(v):.1f}" for k, v in by_input.items())
    print(f"app rerun after one input change, Find a deployment tab open (default space, {len(run_ms)} changes): "
          f"script median {statistics.median(script_ms):6.1f} ms ({each} ms), whole AppTest rerun median "
          f"{statistics.median(run_ms):6.1f} ms")  # fmt: skip


def bench_search_tab_browser() -> None:
    """Headless Chromium: from pressing Enter in the request-rate input to the page idle again with the new numbers
    (the server's rerun, the websocket, and the browser drawing the chart and tables), for the Find a deployment
    tab and, as the yardstick, the Memory tab."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    from scripts.serve import launch_browser, start_server

    done = ("(b) => { const el = [...document.querySelectorAll('[data-testid=\"stCaptionContainer\"]')]"
            ".find(e => e.innerText.includes('Computed in')); return el && el.innerText !== b"
            " && !document.querySelector('[data-testid=\"stStatusWidget\"]'); }")  # fmt: skip
    proc, base = start_server()
    try:
        with sync_playwright() as p:
            browser = launch_browser(p)
            for tab in ("Find a deployment", "Memory"):
                page = browser.new_page(viewport={"width": 1600, "height": 1200})
                page.goto(base + "/?model=llama-3.1-70b&request_rate=10&input_len=2000&output_len=500")
                page.get_by_role("tab", name=tab).click()
                page.locator(".js-plotly-plot").first.wait_for(timeout=60_000)
                page.wait_for_timeout(2000)
                box = page.get_by_role("spinbutton", name="Request rate to serve (req/s)")
                times = []
                for k in range(14):
                    before = page.get_by_text("Computed in").first.inner_text()
                    box.fill(str(11 + k))
                    t = time.perf_counter()
                    box.press("Enter")
                    try:  # the caption's server time may repeat to the digit: such a change is not counted
                        page.wait_for_function(done, arg=before, timeout=10_000)
                    except PlaywrightTimeout:
                        continue
                    times.append((time.perf_counter() - t) * 1e3)
                print(f"browser: input change to the page idle again, {tab} tab open: median {statistics.median(times):6.0f} ms")
                page.close()
            browser.close()
    finally:
        proc.terminate()


def machine_speed() -> None:
    """A fixed pure-Python loop (`sum(range(10**6))`, best of 15): how fast this machine's Python is today, so that
    figures from different machines, or one shared host on different days, can be put side by side."""
    best = min(timed(lambda: sum(range(10**6))) for _ in range(15))
    print(f"machine: sum(range(10**6)) best of 15 {best * 1e3:6.1f} ms (a typical 2024 server core: ~10 ms)")


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


if __name__ == "__main__":
    usage.args(__doc__, ("--skip-browser", "--browser-only", "--crowd"))
    machine_speed()
    if "--browser-only" in sys.argv:
        bench_page_vs_toy()
        sys.exit(0)
    bench_evaluate()
    bench_search()
    bench_simulate()
    bench_rerun()
    bench_search_tab()
    if "--skip-browser" not in sys.argv:
        bench_page_vs_toy()
        bench_search_tab_browser()
    if "--crowd" in sys.argv:  # 1, 10 and 40 websocket sessions on one server (scripts/crowd.py), about 8 minutes with the restarts
        from scripts.crowd import main as crowd

        crowd([1, 10, 40])
