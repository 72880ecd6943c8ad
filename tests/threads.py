"""Committed work inside a test: the test's own transaction is never committed, so what another
process (a worker) or thread (concurrent clients) must see is written from a thread, whose own
connection autocommits outside it."""

import threading

from django.db import connections


def committed(work):
    """Run `work()` on a fresh connection in another thread and return its result (or raise its error)."""
    result, errors = {}, []

    def run():
        try:
            result["value"] = work()
        except Exception as exc:  # noqa: BLE001 - re-raised in the test thread
            errors.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return result.get("value")
