"""The production web server's shape, from the environment: read by config/gunicorn.py (before
Django starts), by the settings (the connection pool's size) and by `manage.py selfcheck`."""

from __future__ import annotations

import os

from common.env import env_int


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


# Processes: each loads its own models (about 1.1 GB resident) and computes on its own cores. Threads: each
# serves one request at a time and holds at most one database connection; most of a request's time
# is model calls that release the GIL, so a few threads keep a process's cores busy.
WEB_WORKERS = env_int("CAIRN_WEB_WORKERS", min(cores(), 4), minimum=1)
WEB_THREADS = env_int("CAIRN_WEB_THREADS", 4, minimum=1)


def torch_threads_per_worker() -> int:
    """Split the cores between the workers, so that N workers do not run N × cores threads."""
    return max(1, cores() // WEB_WORKERS)


def worker_connections(q_workers: int) -> int:
    """Connections one django-q2 cluster may hold: its workers, plus its sentinel, pusher and
    monitor (ORM broker)."""
    return q_workers + 3
