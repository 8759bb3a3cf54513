"""Start `streamlit run app.py` headless on a free local port; used by the browser tests, the screenshot script
and the benchmark. Returns (process, base URL)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-quic", "--no-first-run"]  # fmt: skip


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(base: str, timeout_s: float) -> bool:
    """Poll the server's health check until it answers 200 or `timeout_s` passes."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(base + "/_stcore/health", timeout=1).status == 200:
                return True
        except OSError:
            pass
        time.sleep(0.2)
    return False


def start_server(timeout_s: float = 60.0, script: Path | None = None, extra_args: tuple[str, ...] = (),
                 env: dict | None = None, log=None):  # fmt: skip
    """`script`: another Streamlit page (the benchmark's toy page); default app.py. `extra_args`: more Streamlit
    options; `env`: variables added to this process's; `log`: an open file for the server's output (default: its
    stderr is kept for the error message)."""
    port = free_port()
    env = {**os.environ, "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false", **(env or {})}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(script or ROOT / "app.py"), "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1", "--server.fileWatcherType", "none",
         *extra_args],
        cwd=ROOT, env=env, stdout=log or subprocess.DEVNULL, stderr=log or subprocess.PIPE,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    if wait_healthy(base, timeout_s):
        return proc, base
    proc.kill()
    raise RuntimeError("streamlit did not start: " + (proc.stderr.read().decode()[-2000:] if proc.stderr else ""))


def launch_browser(playwright):
    import shutil

    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        raise RuntimeError("Debian's chromium is not installed (apt-get install -y chromium)")
    return playwright.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS, headless=True)
