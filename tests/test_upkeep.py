"""ui.upkeep against the pinned Streamlit: an expired disconnected session stays referenced until the storage is next
written (why upkeep exists), and upkeep removes and shuts it down."""

import ast
import inspect
from pathlib import Path
from unittest.mock import MagicMock

from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.runtime.forward_msg_queue import ForwardMsgQueue
from streamlit.runtime.fragment import MemoryFragmentStorage
from streamlit.runtime.memory_session_storage import MemorySessionStorage
from streamlit.runtime.runtime import AsyncObjects, Runtime
from streamlit.runtime.session_manager import SessionInfo
from streamlit.runtime.state import SessionState
from streamlit.runtime.websocket_session_manager import WebsocketSessionManager

from ui.upkeep import reap_dropped_sessions, shut_down_expired


class Session:
    """What upkeep touches of an AppSession, with Streamlit's own state, queue and fragment classes."""

    def __init__(self, sid: str) -> None:
        self.id, self.shut_down = sid, False
        self._session_state, self._browser_queue = SessionState(), ForwardMsgQueue()
        self._fragment_storage = MemoryFragmentStorage()
        self._session_state["report"] = list(range(1000))  # what a run leaves behind
        self._browser_queue.enqueue(ForwardMsg(script_finished=ForwardMsg.FINISHED_SUCCESSFULLY))

    def shutdown(self) -> None:
        self.shut_down = True


def stored(*ids: str, ttl_seconds: int = 30, later_s: float = 0) -> tuple[MemorySessionStorage, list[Session]]:
    """Sessions disconnected together, seen `later_s` after (the storage's clock is moved on, not waited for)."""
    storage = MemorySessionStorage(ttl_seconds=ttl_seconds)
    clock = [0.0]
    storage._cache._timer = lambda: clock[0]
    sessions = [Session(i) for i in ids]
    for s in sessions:
        storage.save(SessionInfo(client=None, session=s))
    clock[0] = later_s
    return storage, sessions


def test_streamlit_keeps_an_expired_session_until_the_storage_is_written():
    storage, _ = stored("a", "b", later_s=31)
    assert storage.get("a") is None and storage.list() == []  # gone for Streamlit...
    assert set(storage._cache._data) == {"a", "b"}  # ...yet still held, with everything the session references


def test_expired_sessions_are_removed_and_shut_down():
    storage, sessions = stored("a", "b", later_s=31)
    assert shut_down_expired(storage) == 2
    assert all(s.shut_down for s in sessions)
    assert not storage._cache._data


def test_a_removed_session_lets_go_of_its_state_and_queued_messages():
    """Streamlit's send loop keeps the last session it flushed in a local variable until the next visitor connects,
    so a shut-down session can stay referenced: what it holds must not."""
    storage, (s,) = stored("a", later_s=31)
    shut_down_expired(storage)
    assert "report" not in s._session_state and s._browser_queue.is_empty()
    loop = inspect.getsource(Runtime._loop_coroutine)
    assert "for active_session_info in self._session_mgr.list_active_sessions():" in loop  # the lingering local


def test_a_session_within_its_ttl_is_kept_for_its_reconnect():
    storage, (s,) = stored("a", later_s=29)
    assert shut_down_expired(storage) == 0
    assert not s.shut_down and storage.get("a").session is s and "report" in s._session_state


def test_the_server_holds_its_sessions_and_loop_where_upkeep_looks():
    storage = MemorySessionStorage()
    mgr = WebsocketSessionManager(storage, uploaded_file_manager=None, script_cache=None, message_enqueued_callback=None)
    assert mgr._session_storage is storage
    assert "self._session_mgr = " in inspect.getsource(Runtime.__init__)
    assert "eventloop" in AsyncObjects._fields and callable(Runtime._get_async_objs)


def test_without_a_server_there_is_nothing_to_reap(monkeypatch):
    assert reap_dropped_sessions() == 0
    monkeypatch.setattr(Runtime, "_instance", MagicMock(spec=[]))  # AppTest's stand-in runtime
    assert reap_dropped_sessions() == 0


def test_the_page_keeps_no_run_in_module_globals():
    """Streamlit keeps the last run's script module (sys.modules["__main__"]) until the next run: a name assigned at
    app.py's top level would hold that run's report, charts and containers after every session has gone. Only
    imports, definitions and calls stand there."""
    tree = ast.parse((Path(__file__).resolve().parent.parent / "app.py").read_text())
    allowed = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.Expr)
    assert [type(node).__name__ for node in tree.body if not isinstance(node, allowed)] == []
