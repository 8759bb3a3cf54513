"""What a long-running server process does between crowds: drop the sessions Streamlit has given up on, collect
them, and hand the freed heap back to the OS.

Streamlit 1.67 keeps a closed tab's session for server.disconnectedSessionTTL, in a TTL cache that only removes
expired entries when something is next written to it (streamlit/runtime/caching/ttl_cache.py), and removes them
without shutting them down. After a crowd leaves nothing is written, so every session it opened (its session
state, widget registry, query-parameter bindings: ~0.15 MB each, ~6 MB for 40) stayed alive until the next
visitor closed a tab. Upstream: streamlit/streamlit#12506.
"""

from __future__ import annotations

import ctypes
import gc
import threading
import time

from ui import recycle

EVERY_S = 10.0  # a closed tab's session is released at most this long after its TTL (PLANNER_UPKEEP_S: the tests)


def shut_down_expired(storage) -> int:
    """Remove the expired sessions from a MemorySessionStorage, shut each down as Streamlit's own close does (its
    media and uploaded files, its script thread's event loop) and release what it holds; the number removed."""
    removed = [info for _, info in storage._cache.expire()]
    for info in removed:
        info.session.shutdown()
        release(info.session)
    return len(removed)


def release(session) -> None:
    """Drop what a shut-down session holds. Streamlit's send loop keeps the last session it flushed in a local
    variable until the next visitor connects (streamlit/runtime/runtime.py, _loop_coroutine), so the last tab of a
    crowd, with its session state, widget registry and queued messages, would outlive the crowd; scattered through
    the heap the crowd grew, its objects keep that heap from being handed back."""
    from streamlit.runtime.state import SessionState

    session._session_state = SessionState()
    session._browser_queue.clear()
    session._fragment_storage.clear()


def reap_dropped_sessions() -> int:
    """shut_down_expired on the running server's session storage, on the server's event loop (the one thread
    that touches that storage); 0 where there is no server (`python app.py`; AppTest's stand-in runtime is a Mock
    without a session manager)."""
    return _on_server_loop()[0]


def _on_server_loop() -> tuple[int, int | None]:
    """(sessions removed, sessions the server still holds: open, or kept for a closed tab's reconnect), done on the
    server's event loop; (0, None) where there is no server."""
    from streamlit import runtime

    if not runtime.exists():
        return 0, None
    try:
        rt = runtime.get_instance()
        mgr = rt._session_mgr
        storage, loop = mgr._session_storage, rt._get_async_objs().eventloop
    except (AttributeError, RuntimeError):
        return 0, None
    done, out = threading.Event(), [0, None]

    def reap() -> None:
        try:
            out[0] = shut_down_expired(storage)
            out[1] = len(mgr.list_sessions())
        finally:
            done.set()

    loop.call_soon_threadsafe(reap)
    done.wait(timeout=EVERY_S)
    return out[0], out[1]


def start(every_s: float | None = None) -> None:
    """One daemon thread per process. glibc keeps the heap a crowd grew even after its sessions are dropped:
    the free part goes back to the OS (malloc_trim is a no-op where there is no glibc); what the allocators keep
    beyond it goes when the idle process starts afresh (ui/recycle.py)."""
    try:
        trim = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        trim = None
    recycler = recycle.from_env()
    every_s = every_s or max(0.5, recycle.env_number("PLANNER_UPKEEP_S", EVERY_S))

    def loop() -> None:
        while True:
            time.sleep(every_s)
            removed, sessions = _on_server_loop()
            if removed:
                gc.collect()  # a session is a web of cycles; without runs nothing else collects them
            if trim is not None:
                trim(0)
            if sessions is not None and recycler.tick(time.monotonic(), sessions):
                recycle.restart()

    threading.Thread(target=loop, name="upkeep", daemon=True).start()
