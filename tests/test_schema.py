"""The OpenAPI schema says what the server does: schemathesis, with every check, against the real
server (`manage.py serve`) and a database of its own, signed in as a curator so that the curators'
operations (retract, move, upload, approve, reject) run too. A status, a media type or a body the
schema does not list fails, as does a request the schema allows that the server refuses (or one it
forbids that the server takes), and any server error.

Asking costs real models (about half a second a question), so `POST /api/v1/query` has a run of
its own with a small budget; the rest share a larger one. The seed is fixed: a failure repeats."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from tests.test_serving import DOCUMENTS, ROOT, manage, served

pytestmark = pytest.mark.django_db
DATABASE = "test_cairn_schema"
SEED = "20251"
QUERY = "/api/v1/query"
# Rates above what the run sends, so that it reaches the operations' own logic; 429 is documented.
RATES = {f"CAIRN_THROTTLE_{scope}": "10000/minute" for scope in ("QUERY", "FEEDBACK", "UPLOAD", "ANON")}


@pytest.fixture(scope="module")
def curator_token(tmp_path_factory, django_db_blocker):
    """A migrated database with public documents and a curator with a token."""
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
    manage("migrate", "--noinput", CAIRN_DB_NAME=DATABASE)
    corpus = tmp_path_factory.mktemp("corpus") / "handbook.jsonl"
    corpus.write_text("\n".join(json.dumps(d) for d in DOCUMENTS))
    manage("ingest", str(corpus), "--collection", "handbook", "--public", CAIRN_DB_NAME=DATABASE)
    out = manage("demo_user", "--username", "schema-curator", CAIRN_DB_NAME=DATABASE).stdout
    return out.split("API token:")[1].split()[0]


def schemathesis(base: str, token: str, *selection: str, examples: int, cache: Path) -> subprocess.CompletedProcess:
    command = [
        shutil.which("schemathesis", path=str(Path(sys.executable).parent)) or "schemathesis",
        "run", f"{base}/api/schema/", "--checks", "all", "--max-examples", str(examples), "--seed", SEED,
        "--header", f"Authorization: Token {token}", "--generation-database", "none", "--workers", "1",
        "--request-timeout", "60", "--no-color",
        *selection,
    ]  # fmt: skip
    # In a folder of its own: schemathesis keeps a cache of past failures where it runs, and replays them.
    hooks = {**os.environ, "SCHEMATHESIS_HOOKS": "tests.schemathesis_hooks", "PYTHONPATH": str(ROOT)}
    return subprocess.run(command, cwd=cache, env=hooks, capture_output=True, text=True, timeout=600)


def test_the_served_api_does_what_its_schema_says(curator_token, tmp_path):
    with served(CAIRN_DB_NAME=DATABASE, **RATES) as base:
        runs = {
            "the API but asking": schemathesis(
                base, curator_token, "--exclude-path", QUERY, examples=30, cache=tmp_path
            ),
            "asking": schemathesis(base, curator_token, "--include-path", QUERY, examples=6, cache=tmp_path),
        }
    for name, run in runs.items():
        # The summary names each failure (a check's code, the status, the request to repeat it).
        assert run.returncode == 0, f"{name}: schemathesis found failures\n{run.stdout[-20000:]}\n{run.stderr[-3000:]}"
        assert "Tested: 0" not in run.stdout, f"{name}: no operation was tested\n{run.stdout[-3000:]}"
