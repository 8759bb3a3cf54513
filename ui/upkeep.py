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

EVERY_S = 10.0  # a closed tab's session is released at most this long after its TTL


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
    from streamlit import runtime

    if not runtime.exists():
        return 0
    try:
        rt = runtime.get_instance()
        storage, loop = rt._session_mgr._session_storage, rt._get_async_objs().eventloop
    except (AttributeError, RuntimeError):
        return 0
    done, removed = threading.Event(), [0]

    def reap() -> None:
        try:
            removed[0] = shut_down_expired(storage)
        finally:
            done.set()

    loop.call_soon_threadsafe(reap)
    done.wait(timeout=EVERY_S)
    return removed[0]


def start(every_s: float = EVERY_S) -> None:
    """One daemon thread per process. glibc keeps the heap a crowd grew even after its sessions are dropped:
    the free part goes back to the OS (malloc_trim is a no-op where there is no glibc)."""
    try:
        trim = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        trim = None

    def loop() -> None:
        while True:
            time.sleep(every_s)
            if reap_dropped_sessions():
                gc.collect()  # a session is a web of cycles; without runs nothing else collects them
            if trim is not None:
                trim(0)

    threading.Thread(target=loop, name="upkeep", daemon=True).start()
