"""A crowd on one Streamlit process: N sessions open a shared link and move an input, over the loopback only.

Each session is a websocket client speaking Streamlit's own protocol (what the browser sends after it has loaded the
page's static files): it asks for a run with the link's query string, waits for `script_finished`, then changes the
concurrency input RERUNS times with a think time between changes, timing each round trip (sent → script finished).
Reports, per crowd size: first-load and rerun round trips (p50/p90), reruns per second served, the server's CPU
per run (its CPU seconds over the crowd / runs served), the client's own CPU share (it shares the machine), the
machine's CPU stolen by the hypervisor meanwhile (a shared host: every figure slows with it), and the server's
resident memory idle, at peak and after the crowd leaves (SETTLE_S later: Streamlit drops a closed session only after
server.disconnectedSessionTTL), and once more after the server has started afresh and served one warm-up session
again (ui/recycle.py: a process that held a crowd re-executes itself after PLANNER_RECYCLE_IDLE_S without a
session; this waits up to that + 60 s for it, and shows "-" where it did not happen).

    python scripts/crowd.py [--processes N] [SESSIONS ...]        # default: 1 10 40, one process

With --processes N (N ≥ 2), N servers run behind Debian's nginx on the loopback (each WebSocket goes to the next
server in turn; the crowd makes no downloads, so no affinity is needed) and CPU and memory are summed over them.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from streamlit.proto.BackMsg_pb2 import BackMsg  # noqa: E402
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # noqa: E402
from websockets.asyncio.client import connect  # noqa: E402

from scripts import usage  # noqa: E402
from scripts.serve import free_port, start_server  # noqa: E402

LINK = "model=qwen2.5-7b-instruct&gpu=rtx-4090&concurrency=16"
RERUNS = 5
THINK_S = (1.0, 3.0)  # a person moves an input, then reads the page
TIMEOUT_S = 120.0  # no session may run longer than this: the client is bounded in count and time
SETTLE_S = 60.0  # a closed session is dropped 30 s after its WebSocket closes, released by ui/upkeep.py within 10 s more


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    """Resident memory in MB: all of it (VmRSS), or its anonymous part (RssAnon: the heap, what sessions allocate;
    the rest is RssFile, pages of the libraries' files the kernel may drop and reload)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_s(pid: int) -> float:
    """User + system CPU seconds the process has used (/proc/PID/stat, clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_ticks() -> tuple[int, int]:
    """(steal, total) clock ticks of the whole machine (/proc/stat): on a shared host the hypervisor gives some of
    our CPU time to others (steal), and every figure here slows with it."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return values[7], sum(values[:8])


def rerun_msg(query: str, widget_id: str | None = None, value: int | None = None) -> bytes:
    msg = BackMsg()
    msg.rerun_script.query_string = query
    msg.rerun_script.page_script_hash = ""
    if widget_id is not None:
        w = msg.rerun_script.widget_states.widgets.add()
        w.id = widget_id
        w.int_value = value
    return msg.SerializeToString()


async def until_finished(ws, widgets: dict[str, str]) -> None:
    """Read ForwardMsgs until the run finishes, noting each widget's id by its user key."""
    while True:
        fm = ForwardMsg()
        fm.ParseFromString(await ws.recv())
        if fm.HasField("delta") and fm.delta.HasField("new_element"):
            el = fm.delta.new_element
            kind = el.WhichOneof("type")
            wid = getattr(getattr(el, kind), "id", "") if kind else ""
            if isinstance(wid, str) and wid:
                widgets[wid.rsplit("-", 1)[-1]] = wid
        if fm.HasField("script_finished"):
            return


async def session(url: str, rng: random.Random, out: dict[str, list[float]]) -> None:
    widgets: dict[str, str] = {}
    async with connect(url, max_size=None, open_timeout=TIMEOUT_S) as ws:
        t = time.perf_counter()
        await ws.send(rerun_msg(LINK))
        await until_finished(ws, widgets)
        out["first"].append(time.perf_counter() - t)
        wid = widgets.get("concurrency")
        for i in range(RERUNS):
            await asyncio.sleep(rng.uniform(*THINK_S))
            t = time.perf_counter()
            await ws.send(rerun_msg(LINK, wid, 17 + i))
            await until_finished(ws, widgets)
            out["rerun"].append(time.perf_counter() - t)


def pct(xs: list[float], q: float) -> float:
    return statistics.quantiles(xs, n=100)[q - 1] if len(xs) > 1 else (xs[0] if xs else float("nan"))


async def crowd(url: str, n: int, seed: int = 0) -> dict:
    out: dict[str, list[float]] = {"first": [], "rerun": []}
    rng = random.Random(seed)
    t = time.perf_counter()
    await asyncio.wait_for(asyncio.gather(*(session(url, random.Random(rng.random()), out) for _ in range(n))),
                           TIMEOUT_S)  # fmt: skip
    wall = time.perf_counter() - t
    return {"wall_s": wall, **out, "runs_per_s": (len(out["first"]) + len(out["rerun"])) / wall}


NGINX_CONF = """\
daemon off;
master_process off;
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {tmp}/body; proxy_temp_path {tmp}/proxy; fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi; scgi_temp_path {tmp}/scgi;
    upstream pool {{ {servers} }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://pool;
            proxy_http_version 1.1;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection "upgrade";
            proxy_set_header Host $http_host;
            proxy_read_timeout 600s;
            proxy_buffering off;
        }}
    }}
}}
"""


def start_pool(n: int) -> tuple[list[subprocess.Popen], list[subprocess.Popen], str]:
    """n servers, and nginx in front of them when n ≥ 2: (servers, helpers to stop too, the WebSocket URL)."""
    servers = [start_server() for _ in range(n)]
    procs = [p for p, _ in servers]
    if n == 1:
        return procs, [], servers[0][1].replace("http", "ws") + "/_stcore/stream"
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    tmp, port = tempfile.mkdtemp(prefix="crowd-nginx-"), free_port()
    conf = NGINX_CONF.format(tmp=tmp, port=port, servers=" ".join(f"server {b.split('//')[1]};" for _, b in servers))
    Path(tmp, "nginx.conf").write_text(conf)
    proxy = subprocess.Popen([nginx, "-p", tmp, "-e", f"{tmp}/error.log", "-c", f"{tmp}/nginx.conf"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    for _ in range(100):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1)
            break
        except OSError:
            time.sleep(0.1)
    return procs, [proxy], f"ws://127.0.0.1:{port}/_stcore/stream"


def await_recycle(procs, url: str, rss_all, after: float, n: int) -> str:
    """Wait for every server to start afresh (its resident size falls by half: a fresh interpreter has not imported
    the app yet), warm each with one session as at the start, and return the resident size then [MB]; "-" where
    recycling is off or a server did not restart in time."""
    from ui.recycle import from_env

    recycler = from_env()
    wait_s = recycler.idle_s
    if wait_s <= 0 or n < recycler.crowd:
        return "-"
    deadline = time.time() + wait_s + 60.0
    while any(rss_mb(p.pid) > after / len(procs) / 2 for p in procs):
        if time.time() > deadline:
            return "-"
        time.sleep(1.0)
    for _ in procs:
        for _ in range(100):  # the fresh process binds its port within a few seconds
            try:
                asyncio.run(crowd(url, 1))
                break
            except Exception:  # refused, or the proxy's 502, until the port is bound again
                time.sleep(0.2)
    time.sleep(2)
    return f"{rss_all():.0f}"


def main(sizes: list[int], processes: int = 1) -> None:
    procs, helpers, url = start_pool(processes)

    def rss_all(field: str = "VmRSS") -> float:
        return sum(rss_mb(p.pid, field) for p in procs)

    def cpu_all() -> float:
        return sum(cpu_s(p.pid) for p in procs)

    try:
        for _ in procs:  # warm each server's imports and caches once, as a running server would be
            asyncio.run(crowd(url, 1))
        time.sleep(2)
        idle, idle_anon = rss_all(), rss_all("RssAnon")
        print(f"{processes} server process(es) idle after one warm-up session each: {idle:.0f} MB resident"
              f" ({idle_anon:.0f} MB anonymous)")
        print(f"{'sessions':>8s} {'first load p50/p90':>20s} {'rerun p50/p90':>16s} {'runs/s':>7s} {'server CPU/run':>15s}"
              f" {'client CPU':>11s} {'steal':>6s} {'peak MB':>8s} {'after MB':>9s} {'anon MB':>8s} {'afresh MB':>10s}")  # fmt: skip
        for n in sizes:
            peak = [idle]

            async def watch(stop: asyncio.Event, peak: list = peak) -> None:
                while not stop.is_set():
                    peak.append(rss_all())
                    await asyncio.sleep(0.2)

            async def measured(n: int = n) -> dict:
                stop = asyncio.Event()
                w = asyncio.create_task(watch(stop))
                try:
                    return await crowd(url, n)
                finally:
                    stop.set()
                    await w

            server_cpu, client_cpu, ticks = cpu_all(), time.process_time(), cpu_ticks()
            r = asyncio.run(measured())
            server_cpu, client_cpu = cpu_all() - server_cpu, time.process_time() - client_cpu
            steal = (cpu_ticks()[0] - ticks[0]) / max(1, cpu_ticks()[1] - ticks[1])
            runs = len(r["first"]) + len(r["rerun"])
            time.sleep(SETTLE_S)  # closed sessions are dropped after server.disconnectedSessionTTL
            after, after_anon = rss_all(), rss_all("RssAnon")
            afresh = await_recycle(procs, url, rss_all, after, n)
            print(f"{n:8d} {pct(r['first'], 50):9.2f}/{pct(r['first'], 90):5.2f} s {pct(r['rerun'], 50):8.2f}/{pct(r['rerun'], 90):5.2f} s"
                  f" {r['runs_per_s']:7.1f} {server_cpu / runs * 1e3:12.0f} ms {client_cpu / r['wall_s']:10.0%} {steal:6.0%}"
                  f" {max(peak):8.0f} {after:9.0f} {after_anon:8.0f} {afresh:>10s}", flush=True)  # fmt: skip
    finally:
        for p in [*helpers, *procs]:
            p.terminate()


if __name__ == "__main__":
    args = usage.args(__doc__, valued=("--processes",))
    n_proc = 1
    if "--processes" in args:
        i = args.index("--processes")
        if i + 1 >= len(args):
            usage.fail("--processes: give a count of server processes")
        n_proc, args = usage.number(args[i + 1], "--processes", int), args[:i] + args[i + 2 :]
    main([usage.number(a, "SESSIONS", int) for a in args] or [1, 10, 40], n_proc)
