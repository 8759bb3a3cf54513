"""Speed benchmark (not a test): evaluate() time, the app's rerun after one input change, and the page's load
time in headless Chromium. Prints medians; quote them in the README.

    python scripts/benchmark.py [--skip-browser]
"""

from __future__ import annotations

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


def bench_page_load() -> None:
    from playwright.sync_api import sync_playwright

    from scripts.serve import launch_browser, start_server

    proc, base = start_server()
    times = []
    try:
        with sync_playwright() as p:
            browser = launch_browser(p)
            for _ in range(5):
                page = browser.new_page()
                t = time.perf_counter()
                page.goto(base + "/?model=qwen2.5-7b-instruct&gpu=rtx-4090&concurrency=16")
                page.locator('[data-testid="stAlertContentSuccess"]').first.wait_for(timeout=30_000)
                verdict_ms = (time.perf_counter() - t) * 1e3
                page.locator(".js-plotly-plot").first.wait_for(timeout=30_000)
                times.append((verdict_ms, (time.perf_counter() - t) * 1e3))
                page.close()
            browser.close()
    finally:
        proc.terminate()
    print(
        f"page load from a shared link (Chromium): verdict median {statistics.median(v for v, _ in times):6.0f} ms, "
        f"first chart {statistics.median(c for _, c in times):6.0f} ms"
    )


if __name__ == "__main__":
    bench_evaluate()
    bench_rerun()
    if "--skip-browser" not in sys.argv:
        bench_page_load()
