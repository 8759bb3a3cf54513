"""Screenshots of every tab from a shared link, into a temporary directory (or the one given), never the checkout:
look at them.

    python scripts/screenshots.py [OUT_DIR] [QUERY ...]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from playwright.sync_api import sync_playwright  # noqa: E402

from scripts import usage  # noqa: E402
from scripts.serve import launch_browser, start_server  # noqa: E402

TABS = ["Memory", "Latency", "Beyond the GPU", "SLOs & replicas", "Compare & export", "Check a vLLM log", "Find a deployment"]
QUERIES = {
    "seed": "model=qwen2.5-7b-instruct&gpu=rtx-4090&max_model_len=8192&concurrency=16&request_rate=20",
    "nofit": "model=llama-3.1-70b&gpu=rtx-4090",
    "hybrid": "model=nemotron-h-8b&gpu=h100-sxm",
}


def main(out: Path, queries: dict[str, str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    proc, base = start_server()
    try:
        with sync_playwright() as p:
            browser = launch_browser(p)
            page = browser.new_page(viewport={"width": 1500, "height": 3600})
            for name, query in queries.items():
                page.goto(f"{base}/?{query}")
                page.get_by_text("Available KV cache").first.wait_for(timeout=30_000)
                for i, tab in enumerate(TABS):
                    page.get_by_role("tab", name=tab).click()
                    page.wait_for_timeout(3000)
                    page.screenshot(path=str(out / f"{name}-tab{i}.png"), full_page=True)
            browser.close()
    finally:
        proc.terminate()
    print(out)


if __name__ == "__main__":
    args = usage.args(__doc__)
    target = Path(args.pop(0)) if args and not args[0].count("=") else Path(tempfile.mkdtemp(prefix="planner-shots-"))
    main(target, {f"q{i}": q for i, q in enumerate(args)} if args else QUERIES)
