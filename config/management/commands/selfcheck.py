"""python manage.py selfcheck: what `make serve` checks before it serves; exits 1 with each problem
and its fix. Safe to run any time (it changes nothing)."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.migrations.executor import MigrationExecutor

from common.postgres.base import installed_vector_version
from config.safety import unsafe_start_reasons
from config.serving import worker_connections


def connection_plan() -> dict[str, int]:
    """Most connections this host's web server and worker may open together."""
    per_web = settings.CAIRN_DB_POOL_SIZE if settings.CAIRN_DB_POOL else settings.CAIRN_WEB_THREADS
    return {
        "web": settings.CAIRN_WEB_WORKERS * per_web,
        "worker": worker_connections(settings.Q_CLUSTER["workers"]),
        "commands": 2,  # a migration, a dbshell, an ingest beside them
    }


def server_room() -> tuple[int, int]:
    """(connections the server admits to ordinary roles, connections open now)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int"
            " - coalesce(current_setting('reserved_connections', true), '0')::int,"
            " (SELECT count(*) FROM pg_stat_activity"
            " WHERE backend_type = 'client backend')"
        )
        return cursor.fetchone()


class Command(BaseCommand):
    help = "Check that Cairn may serve: safe settings, database, migrations, models, connection budget."

    def handle(self, *args, **options):
        problems = list(unsafe_start_reasons())
        try:
            if installed_vector_version() is None:
                problems.append("The database has no pgvector extension: run `manage.py migrate`.")
            executor = MigrationExecutor(connections[DEFAULT_DB_ALIAS])
            if executor.migration_plan(executor.loader.graph.leaf_nodes()):
                problems.append("Migrations are not applied: run `manage.py migrate`.")
            allowed, open_now = server_room()
            plan = connection_plan()
            if sum(plan.values()) > allowed:
                problems.append(
                    f"This host may open {sum(plan.values())} database connections ({plan}) but the server "
                    f"admits {allowed}: lower CAIRN_WEB_WORKERS, CAIRN_WEB_THREADS or CAIRN_DB_POOL_SIZE, "
                    "or raise the server's max_connections."
                )
            self.stdout.write(f"database: {allowed} connections allowed, {open_now} open; this host plans {plan}")
        except Exception as exc:  # noqa: BLE001 - any database failure is a problem to report
            problems.append(f"The database is unreachable: {exc}")
        for name in ("CAIRN_NLI_MODEL", "CAIRN_RELEVANCE_MODEL"):
            path = getattr(settings, name)
            if not (path / "config.json").exists():
                problems.append(f"{name}: no model at {path}")
        connections.close_all()
        if problems:
            raise CommandError("Cairn is not ready to serve:\n- " + "\n- ".join(problems))
        self.stdout.write(self.style.SUCCESS("selfcheck: ready to serve"))
