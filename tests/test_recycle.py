"""ui.recycle: when an idle server process starts afresh (by hand, on a clock moved by the test), what the
environment may set, and — against a real server — that it re-executes in place and serves again."""

import asyncio
import sys
import time
from pathlib import Path

import pytest

from ui.recycle import CROWD, IDLE_S, Recycler, from_env

ROOT = Path(__file__).resolve().parent.parent


def test_a_crowd_then_idle_for_the_wait_restarts_by_hand():
    """Ticks every 10 s: 5 sessions at t = 0 and 10, none from t = 20. Idle since 20, so at t = 20 + 120 = 140 the
    process restarts, not at t = 130."""
    r = Recycler(idle_s=120, crowd=4)
    assert not r.tick(0, 5) and not r.tick(10, 5)
    assert [r.tick(t, 0) for t in range(20, 140, 10)] == [False] * 12
    assert r.tick(140, 0)


def test_no_crowd_no_restart_and_a_visit_resets_the_wait():
    """Three sessions at most never make a crowd of four, however long the process idles; a visit during the wait
    starts it again."""
    quiet = Recycler(idle_s=60, crowd=4)
    assert not any(quiet.tick(t, 3 if t < 30 else 0) for t in range(0, 10_000, 10))
    r = Recycler(idle_s=60, crowd=4)
    r.tick(0, 4)
    assert not r.tick(10, 0) and not r.tick(50, 1)  # a visitor at t = 50
    assert not r.tick(60, 0) and not r.tick(110, 0)  # idle since 60: 50 s
    assert r.tick(120, 0)


def test_a_wait_of_zero_turns_recycling_off():
    r = Recycler(idle_s=0, crowd=1)
    assert not any(r.tick(t, 40 if t < 100 else 0) for t in range(0, 100_000, 10))


def test_the_environment_sets_the_wait_and_the_crowd_and_bad_values_keep_the_defaults():
    assert from_env({}) == Recycler(idle_s=IDLE_S, crowd=CROWD)
    assert from_env({"PLANNER_RECYCLE_IDLE_S": "30", "PLANNER_RECYCLE_CROWD": "10"}) == Recycler(idle_s=30, crowd=10)
    assert from_env({"PLANNER_RECYCLE_IDLE_S": "0"}).idle_s == 0
    for bad in ("soon", "-5", "nan", "inf", "1e400", ""):
        assert from_env({"PLANNER_RECYCLE_IDLE_S": bad, "PLANNER_RECYCLE_CROWD": bad}) == Recycler()


@pytest.mark.browser  # a live server, as the browser tests: run with -m browser
def test_a_server_restarts_in_place_after_a_crowd_and_serves_again(tmp_path):
    """A real `streamlit run app.py` with a wait of 2 s, a crowd of one, a closed tab's session kept 2 s and upkeep
    every second: one session, then none, then the same PID re-executes, its resident size falls to a fresh
    interpreter's, and the same port serves a page again."""
    sys.path.insert(0, str(ROOT))
    from scripts import crowd as client
    from scripts.crowd import crowd, rss_mb
    from scripts.serve import start_server, wait_healthy

    client.RERUNS = 0  # each session opens the page and leaves
    log = tmp_path / "server.log"
    with log.open("w") as out:
        proc, base = start_server(extra_args=("--server.disconnectedSessionTTL", "2"), log=out,
                                  env={"PLANNER_RECYCLE_IDLE_S": "2", "PLANNER_RECYCLE_CROWD": "1", "PLANNER_UPKEEP_S": "1"})  # fmt: skip
    url = base.replace("http", "ws") + "/_stcore/stream"
    try:
        assert asyncio.run(crowd(url, 1))["first"], "the page did not load"
        warm_mb = rss_mb(proc.pid)
        deadline = time.time() + 60
        while "starting afresh" not in log.read_text() and time.time() < deadline:
            time.sleep(1)
        assert "starting afresh" in log.read_text()
        assert proc.poll() is None  # the same process, re-executed
        assert wait_healthy(base, 60)
        assert rss_mb(proc.pid) < warm_mb / 2  # a fresh interpreter, the app not imported yet
        assert asyncio.run(crowd(url, 1))["first"], "the page did not load after the restart"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
