"""Hosted for a team: the app at a sub-path (`--server.baseUrlPath planner`) behind Debian's nginx, driven through
the proxy by headless Chromium — a shared link, a slider, the address bar and the three downloads.

The nginx `location` block below is the one the README's "Host it for your team" section shows; a plain test checks
that the README still quotes it verbatim, so the documented block is the tested block."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from scripts.serve import CHROMIUM_ARGS, free_port

ROOT = Path(__file__).resolve().parent.parent
SUBPATH = "planner"
LINK = f"/{SUBPATH}/?model=llama-3.1-8b&gpu=h100-sxm&concurrency=32"
# The browser reaches nginx by a name, as a colleague would, not by 127.0.0.1 (which Streamlit always trusts as an
# origin): Chromium resolves it to the loopback address, so Streamlit's same-origin check on the WebSocket (Origin
# against the forwarded Host header, port included) is really exercised.
HOSTNAME = "planner.test"

# What the README shows. {upstream} is the app's host:port (one replica; see the README for several).
LOCATION_BLOCK = """\
location /planner/ {
    proxy_pass http://{upstream}/planner/;       # the app runs with --server.baseUrlPath planner
    proxy_http_version 1.1;                       # WebSocket upgrade (/planner/_stcore/stream)
    proxy_set_header Upgrade $http_upgrade;
    proxy_set_header Connection "upgrade";
    proxy_set_header Host $http_host;             # port included: Streamlit matches it against Origin
    proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
    proxy_set_header X-Forwarded-Proto $scheme;
    proxy_read_timeout 86400s;                    # an idle page keeps its WebSocket open
    proxy_send_timeout 86400s;
    proxy_buffering off;
}"""


def nginx_conf(tmp: Path, listen_port: int, upstream: str) -> str:
    """A self-contained nginx.conf: foreground, every path (pid, logs, temp files) inside `tmp`, loopback only."""
    location = LOCATION_BLOCK.replace("{upstream}", upstream)
    temp = "\n".join(
        f"    {kind}_temp_path {tmp / kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return f"""\
daemon off;
master_process off;
worker_processes 1;
pid {tmp / "nginx.pid"};
error_log {tmp / "error.log"} warn;
events {{ worker_connections 256; }}
http {{
    access_log {tmp / "access.log"};
{temp}
    server {{
        listen 127.0.0.1:{listen_port};
{_indent(location, 8)}
    }}
}}
"""


def _indent(text: str, n: int) -> str:
    return "\n".join(" " * n + line for line in text.splitlines())


def nginx_binary() -> str | None:
    return shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.access(p, os.X_OK)), None)


def wait_http(url: str, proc: subprocess.Popen, what: str, timeout_s: float = 60.0) -> None:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with status {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{what} did not answer {url} within {timeout_s:.0f} s")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def test_readme_shows_the_tested_location_block():
    assert LOCATION_BLOCK.replace("{upstream}", "127.0.0.1:8501") in (ROOT / "README.md").read_text(encoding="utf-8")


def test_nginx_conf_keeps_everything_in_the_tmp_dir(tmp_path):
    conf = nginx_conf(tmp_path, 8080, "127.0.0.1:8501")
    for line in conf.splitlines():
        for path in re.findall(r"\s(/\S+?);", line):
            assert path.startswith(str(tmp_path)) or line.strip().startswith("proxy_pass"), line
    assert "listen 127.0.0.1:8080;" in conf and "daemon off;" in conf


@pytest.fixture
def proxied(tmp_path):
    """streamlit at /planner/ on a loopback port, nginx in front of it on another; yields (base URL, nginx tmp dir)."""
    nginx = nginx_binary()
    if nginx is None:
        pytest.skip("Debian's nginx is required for the reverse-proxy test: apt-get install -y nginx")
    if shutil.which("chromium") is None:
        pytest.skip("Debian's chromium is required for the browser tests: apt-get install -y chromium")
    pytest.importorskip("playwright")

    app_port, proxy_port = free_port(), free_port()
    env = {**os.environ, "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"}
    app = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.baseUrlPath", SUBPATH,
         "--server.port", str(app_port), "--server.address", "127.0.0.1", "--server.headless", "true",
         "--server.fileWatcherType", "none"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    proxy = None
    try:
        wait_http(f"http://127.0.0.1:{app_port}/{SUBPATH}/_stcore/health", app, "streamlit")
        conf = tmp_path / "nginx.conf"
        conf.write_text(nginx_conf(tmp_path, proxy_port, f"127.0.0.1:{app_port}"), encoding="utf-8")
        # -e: the error log before the config is read (otherwise /var/log/nginx); -p: the prefix for relative paths
        proxy = subprocess.Popen([nginx, "-p", str(tmp_path), "-e", str(tmp_path / "error.log"), "-c", str(conf)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            wait_http(f"http://127.0.0.1:{proxy_port}/{SUBPATH}/_stcore/health", proxy, "nginx", timeout_s=20)
        except RuntimeError as e:
            log = tmp_path / "error.log"
            raise RuntimeError(f"{e}: {log.read_text()[-2000:] if log.exists() else ''}") from None
        yield f"http://{HOSTNAME}:{proxy_port}", tmp_path
    finally:
        if proxy is not None:
            stop(proxy)
        stop(app)


@pytest.mark.browser
def test_shared_link_slider_and_downloads_through_nginx(proxied, tmp_path):
    from playwright.sync_api import expect, sync_playwright
    from test_browser import verdict, wait_for_change

    base, nginx_dir = proxied
    prefix = re.escape(f"{base}/{SUBPATH}/")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), headless=True,
                                    args=[*CHROMIUM_ARGS, f"--host-resolver-rules=MAP {HOSTNAME} 127.0.0.1"])  # fmt: skip
        try:
            context = browser.new_context(viewport={"width": 1500, "height": 2200}, accept_downloads=True)
            page = context.new_page()

            # a shared link opens the scenario it names
            page.goto(base + LINK)
            first = verdict(page)
            assert first.startswith("32 × "), first
            expect(
                page.get_by_role("heading", name=re.compile(r"Llama-3\.1-8B on NVIDIA H100 SXM 80GB"))
            ).to_be_visible()
            expect(page.get_by_role("spinbutton", name="Concurrent requests")).to_have_value("32", timeout=30_000)
            expect(page).to_have_url(re.compile("^" + prefix + r"\?.*model=llama-3\.1-8b"))

            # a slider (gpu_memory_utilization, 0.9 → 0.85…0.89 by arrow keys) moves the headline and the address bar,
            # which stays under the sub-path — the app's WebSocket works through the proxy
            page.get_by_text("Engine (server flags)").click()
            thumb = page.get_by_role("slider", name="gpu_memory_utilization")
            thumb.focus()
            for _ in range(5):
                page.keyboard.press("ArrowLeft")
            wait_for_change(page, first)
            expect(page).to_have_url(re.compile("^" + prefix + r"\?.*gpu_memory_utilization=0\.8[5-9]"), timeout=15_000)
            assert "concurrency=32" in page.url and "gpu=h100-sxm" in page.url

            # the three exports, downloaded through the proxy
            page.get_by_role("tab", name="Compare & export").click()
            got = {}
            for label in ("Markdown report", "JSON report", "CSV of the curves"):
                button = page.get_by_role("button", name=label)
                expect(button).to_be_visible(timeout=20_000)
                with page.expect_download(timeout=30_000) as info:
                    button.click()
                dl = info.value
                assert dl.failure() is None, (label, dl.failure())
                assert re.match(prefix + "media/", dl.url), dl.url
                target = tmp_path / "downloads" / dl.suggested_filename
                dl.save_as(target)
                got[dl.suggested_filename] = target.read_text(encoding="utf-8")
            context.close()
        finally:
            browser.close()

    assert set(got) == {"capacity-plan.md", "capacity-plan.json", "capacity-curves.csv"}
    assert all(text.strip() for text in got.values())
    assert "Llama-3.1-8B" in got["capacity-plan.md"]
    report = json.loads(got["capacity-plan.json"])
    assert report["model"] == "llama-3.1-8b" and report["gpu"] == "h100-sxm"
    assert got["capacity-curves.csv"].count("\n") > 1 and "," in got["capacity-curves.csv"].splitlines()[0]

    # nginx saw the WebSocket upgrade (logged when it closed) and served the downloads
    access = (nginx_dir / "access.log").read_text()
    assert re.search(rf'"GET /{SUBPATH}/_stcore/stream HTTP/1\.1" 101 ', access), access[-2000:]
    assert len(re.findall(rf'"GET /{SUBPATH}/media/\S+ HTTP/1\.1" 200 ', access)) >= 3, access[-2000:]
