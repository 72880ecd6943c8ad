"""The application's database role (settings.CAIRN_DB_APP_ROLE): an ordinary role that owns
nothing. After every migrate, run as the owner, it is created if missing and given what the
application needs, and no more: read and write on every table, but only INSERT and SELECT on the
audit trail. Not owning the audit table, it can neither TRUNCATE it nor DISABLE its trigger;
not a superuser, it cannot SET session_replication_role = replica to bypass the trigger."""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import connections
from psycopg import sql

log = logging.getLogger(__name__)

AUDIT_TABLE = "corpus_auditevent"


def app_role_grant(using: str = "default") -> bool:
    """Create the app role if needed and grant its rights in this database. False (and a log line)
    when this connection is the app role itself or may not manage roles (an external server whose
    administrator set the roles up: deploy/README.md says how)."""
    role = settings.CAIRN_DB_APP_ROLE
    connection = connections[using]
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_user, rolsuper OR rolcreaterole FROM pg_roles WHERE rolname = current_user")
        current, may_manage_roles = cursor.fetchone()
        if not role or current == role:
            return False
        cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role])
        if not cursor.fetchone():
            if not may_manage_roles:
                log.warning("database role %s does not exist and %s may not create it", role, current)
                return False
            cursor.execute(
                sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE").format(sql.Identifier(role))
            )
        name = sql.Identifier(role)
        for statement in (
            "GRANT CONNECT, TEMPORARY ON DATABASE {db} TO {role}",
            "GRANT USAGE ON SCHEMA public TO {role}",
            "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}",
            "GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO {role}",
            "REVOKE UPDATE, DELETE, TRUNCATE, TRIGGER, REFERENCES ON {audit} FROM {role}",
        ):
            cursor.execute(
                sql.SQL(statement).format(
                    db=sql.Identifier(connection.settings_dict["NAME"]), role=name, audit=sql.Identifier(AUDIT_TABLE)
                )
            )
    return True


def on_post_migrate(sender, using="default", **kwargs) -> None:
    """post_migrate, once per migrate (it is sent per app after all of them ran)."""
    if sender.label == "corpus":
        app_role_grant(using)
