"""The embedded Postgres is shared: a second process (a worker, a command) joins the running server."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(not settings.CAIRN_EMBEDDED_DB, reason="only for the embedded database"),
]
ROOT = Path(__file__).resolve().parent.parent

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
