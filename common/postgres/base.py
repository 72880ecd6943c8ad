"""Cairn's database backend: Django's PostgreSQL backend plus two start-up duties.

1. With no DATABASE_URL, start (or join) the embedded server on first connection, so commands
   that never touch the database (`check`, `help`) never start it; `dbshell` reaches it too
   (common/postgres/client.py).
2. Fail on the first connection, with a message that says how to fix it, when the server has
   no pgvector: every later error would be more confusing.
"""

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db.backends.postgresql import base

from common.embedded_db import embedded_socket_dir
from common.postgres.client import DatabaseClient

MISSING_VECTOR = (
    "The PostgreSQL server at {where} has no 'vector' extension available. Cairn needs pgvector "
    ">= 0.8: install it on that server (e.g. `apt install postgresql-<major>-pgvector`, or the "
    "pgvector/pgvector Docker image), or unset DATABASE_URL to use the embedded Postgres + pgvector."
)


def installed_vector_version() -> str | None:
    """pgvector's version in this database (None: the extension is not created here yet)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
    return row[0] if row else None


class DatabaseWrapper(base.DatabaseWrapper):
    client_class = DatabaseClient
    _vector_checked = False  # once per process, not per connection

    def get_connection_params(self):
        params = super().get_connection_params()
        if settings.CAIRN_EMBEDDED_DB:
            params["host"] = embedded_socket_dir(settings.CAIRN_DATA_DIR, settings.DATABASES["default"]["NAME"])
        # pgvector settings travel in the start-up packet: no extra round trip per query. Postgres
        # keeps them as placeholders until the extension library loads, then applies them.
        # plan_cache_mode reaches only statements prepared on purpose (common/postgres/prepared.py):
        # the ORM's cursors bind client-side and never prepare.
        gucs = {
            "hnsw.ef_search": settings.CAIRN_HNSW_EF_SEARCH,
            "hnsw.iterative_scan": settings.CAIRN_HNSW_ITERATIVE_SCAN,
            "plan_cache_mode": "force_generic_plan",
        }
        options = " ".join(f"-c {name}={value}" for name, value in gucs.items())
        params["options"] = f"{params.get('options', '')} {options}".strip()
        # psycopg prepares nothing while this is None, even when asked to.
        params["prepare_threshold"] = 5 if settings.CAIRN_DB_PREPARE else None
        return params

    def init_connection_state(self):
        super().init_connection_state()
        if not DatabaseWrapper._vector_checked:
            with self.connection.cursor() as cursor:
                cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
                available = cursor.fetchone() is not None
            if not available:
                where = settings.CAIRN_DATA_DIR if settings.CAIRN_EMBEDDED_DB else "DATABASE_URL"
                raise ImproperlyConfigured(MISSING_VECTOR.format(where=where))
            DatabaseWrapper._vector_checked = True
