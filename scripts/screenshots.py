"""Screenshots of every tab from a shared link, into artifacts/ (look at them)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from playwright.sync_api import sync_playwright  # noqa: E402

from scripts.serve import ROOT, launch_browser, start_server  # noqa: E402

TABS = ["Memory", "Latency", "Beyond the GPU", "SLOs & replicas", "Compare & export", "Check a vLLM log"]


def main(query: str = "model=qwen2.5-7b-instruct&gpu=rtx-4090&max_model_len=8192&concurrency=16") -> None:
    out = ROOT / "artifacts"
    out.mkdir(exist_ok=True)
    proc, base = start_server()
    try:
        with sync_playwright() as p:
            browser = launch_browser(p)
            page = browser.new_page(viewport={"width": 1500, "height": 2400})
            page.goto(f"{base}/?{query}")
            page.get_by_text("Available KV cache").first.wait_for(timeout=30_000)
            page.wait_for_timeout(1500)
            page.screenshot(path=str(out / "page.png"), full_page=True)
            for i, name in enumerate(TABS):
                page.get_by_role("tab", name=name).click()
                page.wait_for_timeout(2500)
                page.screenshot(path=str(out / f"tab{i}.png"), full_page=True)
            browser.close()
    finally:
        proc.terminate()


if __name__ == "__main__":
    main(*sys.argv[1:])
