"""The audit trail against the application itself (issue 21): the web server and the worker
connect as an ordinary role (settings.CAIRN_DB_APP_ROLE) that can read and write the tables but
cannot erase the audit trail, however it tries. Real Postgres, real roles."""

import psycopg
import pytest
from django.conf import settings
from django.db import connection

ERASING = [
    "TRUNCATE corpus_auditevent",
    "ALTER TABLE corpus_auditevent DISABLE TRIGGER ALL",
    "SET session_replication_role = replica",
    "UPDATE corpus_auditevent SET summary = 'nothing happened'",
    "DELETE FROM corpus_auditevent",
    "DROP TABLE corpus_auditevent",
]


@pytest.fixture
def as_app_role(db):
    """A connection to the test database as the application's role; what it does is rolled back."""
    params = {**connection.get_connection_params(), "user": settings.CAIRN_DB_APP_ROLE}
    params.pop("cursor_factory", None)
    app = psycopg.connect(**params)
    try:
        yield app
    finally:
        app.rollback()
        app.close()


@pytest.mark.parametrize("statement", ERASING)
def test_the_application_role_cannot_erase_the_audit_trail(as_app_role, statement):
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        as_app_role.execute(statement)


def test_the_application_role_does_its_work_and_appends_to_the_trail(as_app_role):
    assert as_app_role.execute("SELECT current_user").fetchone()[0] == settings.CAIRN_DB_APP_ROLE
    collection_id = as_app_role.execute(
        "INSERT INTO corpus_collection (name, slug, description, is_public, created_at) "
        "VALUES ('Ops', 'ops', '', false, now()) RETURNING id"
    ).fetchone()[0]
    as_app_role.execute("UPDATE corpus_collection SET name = 'Operations' WHERE id = %s", [collection_id])
    as_app_role.execute(
        "INSERT INTO corpus_auditevent (created_at, actor_name, action, object_type, object_id, summary, before, after)"
        " VALUES (now(), 'system', 'collection.public', 'corpus.collection', %s, 'made public', '{}', '{}')",
        [str(collection_id)],
    )
    assert as_app_role.execute(
        "SELECT count(*) FROM corpus_auditevent WHERE object_id = %s", [str(collection_id)]
    ).fetchone() == (1,)
