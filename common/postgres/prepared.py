"""Server-side prepared statements for the few statements Cairn runs on every request.

Django's PostgreSQL cursors bind parameters client-side and never prepare, so each call is parsed
and planned again. For a statement like feedback's (six CTEs, two writes) parsing and planning cost
more server CPU than running it, and that CPU is what bounds throughput on a small machine. Here the
statement is prepared once per connection and then executed with a generic plan (the connection
starts with plan_cache_mode=force_generic_plan, common/postgres/base.py): its plan shape is the same
for every parameter value (primary-key lookups over a handful of rows), so a per-call custom plan
buys nothing. Only statements run through this module are prepared; the ORM's are not.

Behind a pooler in transaction mode that cannot keep prepared statements (PgBouncer before 1.21),
set CAIRN_DB_PREPARE=0: the same statements then run unprepared, only slower.
"""

from __future__ import annotations

import psycopg
from django.db import connection
from django.db.models import Model


def fetch_prepared(sql: str, params: dict) -> tuple | None:
    """Execute `sql` (named %(name)s placeholders, bound server-side) on Django's connection, in
    its current transaction, and return the first row. Database errors come out as Django's
    (IntegrityError and the rest), as from any ORM query."""
    connection.ensure_connection()
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(sql, params, prepare=True)
        return cursor.fetchone()


def returning(model: type[Model], table: str) -> str:
    """The columns of `table` (a name or alias) that `instance_from_row` needs, for a RETURNING
    clause: named, not `*`, so that a column a migration adds cannot change the result type of a
    statement already prepared."""
    return ", ".join(f"{table}.{field.column}" for field in model._meta.concrete_fields)


def instance_from_row(model: type[Model], row: tuple):
    """A model instance from a row laid out by `returning(model)`, as if the ORM had loaded it:
    each value through the converters the ORM applies (jsonb arrives as text, for one)."""
    fields = model._meta.concrete_fields
    values = []
    for field, value in zip(fields, row, strict=True):
        column = field.get_col(model._meta.db_table)
        for convert in connection.ops.get_db_converters(column) + field.get_db_converters(connection):
            value = convert(value, column, connection)
        values.append(value)
    return model.from_db(connection.alias, [field.attname for field in fields], values)
