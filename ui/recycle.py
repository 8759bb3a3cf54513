"""A server process that a crowd has grown starts afresh once it is idle again, so its memory returns to its idle
level (as gunicorn's --max-requests and uWSGI's reload-on-rss do).

After the sessions of a crowd are dropped and collected (ui/upkeep.py), every Python object they made is gone, yet
the process keeps ~8 MB more than before it (40 sessions): CPython's 1 MiB small-object arenas and glibc's
per-thread arenas, each held by a few long-lived objects made while the crowd was there (docs/speed-history.md). No
allocator setting returned it. A process with no session left has nothing to lose, so once it has held `crowd`
sessions at a time and then none for `idle_s` seconds, it re-executes itself in place: same PID, command line and
environment, the port bound again within its start-up time (~3 s; behind the proxy a visitor's request goes to
another process meanwhile). PLANNER_RECYCLE_IDLE_S sets the wait (default 120 s; 0 turns recycling off),
PLANNER_RECYCLE_CROWD the sessions that make a crowd (default 4).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

IDLE_S = 120.0
CROWD = 4


@dataclass
class Recycler:
    """When to start afresh: `tick` is called every few seconds with the clock [s] and the sessions the server holds
    (open, or kept for a closed tab's reconnect, which keeps a crowd counted for 30 s after it left); True once
    the process has held `crowd` sessions at a time since it started and has held none for `idle_s`."""

    idle_s: float = IDLE_S
    crowd: int = CROWD
    peak_sessions: int = 0
    idle_since: float | None = None

    def tick(self, now: float, sessions: int) -> bool:
        self.peak_sessions = max(self.peak_sessions, sessions)
        if sessions or self.idle_s <= 0:
            self.idle_since = None
            return False
        if self.idle_since is None:
            self.idle_since = now
        return self.peak_sessions >= self.crowd and now - self.idle_since >= self.idle_s


def env_number(name: str, default: float, environ=os.environ) -> float:
    """A setting from the environment: a number in [0, 1e9), else the default."""
    try:
        x = float(environ.get(name, default))
    except ValueError:
        return default
    return x if 0 <= x < 1e9 else default


def from_env(environ=os.environ) -> Recycler:
    """The Recycler the environment asks for; a value that is not a number keeps the default."""
    return Recycler(idle_s=env_number("PLANNER_RECYCLE_IDLE_S", IDLE_S, environ),
                    crowd=max(1, int(env_number("PLANNER_RECYCLE_CROWD", CROWD, environ))))  # fmt: skip


def restart() -> None:
    """Replace this process with a fresh run of the command that started it. Uvicorn marks its listening socket
    inheritable (for its worker processes): every descriptor past stderr is closed on exec here, so the port is
    free for the new process to bind."""
    print("recycle: idle since a crowd left; starting afresh", file=sys.stderr, flush=True)
    sys.stdout.flush()
    for fd in _open_fds():
        if fd > 2:
            try:
                os.set_inheritable(fd, False)
            except OSError:
                pass  # closed meanwhile
    os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])


def _open_fds() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        return list(range(3, 1024))
