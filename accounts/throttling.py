"""API rate limits, counted in Postgres so that every web process on every host shares them.

One statement per request: an upsert that counts the request in its fixed window and returns the
count. A fixed window lets a caller burst up to twice the rate across a window boundary; that is
the price of one round trip and no cache server. The first request of a new window also deletes
the key's older windows, so the table holds about one row per active caller and needs no sweep.
"""

from __future__ import annotations

import time

from django.db import connection
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle

from accounts.addresses import client_address
from accounts.models import RateWindow
from common.env import parse_rate

_TABLE = RateWindow._meta.db_table
_COUNT = f"""
    INSERT INTO {_TABLE} (key, "window", hits) VALUES (%s, %s, 1)
    ON CONFLICT (key, "window") DO UPDATE SET hits = {_TABLE}.hits + 1
    RETURNING hits
"""
_FORGET_OLDER = f'DELETE FROM {_TABLE} WHERE key = %s AND "window" < %s'


def clock() -> float:
    """The time the windows are counted by (tests fix it, so that no window ends mid-test)."""
    return time.time()


def hit(key: str, *, period: int, now: float | None = None) -> tuple[int, float]:
    """Count one request for `key`; return the hits in the current window and its seconds left."""
    now = clock() if now is None else now
    window = int(now // period) * period
    with connection.cursor() as cursor:
        cursor.execute(_COUNT, [key, window])
        (hits,) = cursor.fetchone()
        if hits == 1:
            cursor.execute(_FORGET_OLDER, [key, window])
    return hits, window + period - now


class ScopedRateThrottle(BaseThrottle):
    """Signed-in callers are limited per user by the view's `throttle_scope` (none: unlimited);
    anonymous callers per address by the `anon` rate, on every view that admits them."""

    def allow_request(self, request, view) -> bool:
        user = request.user
        if user and user.is_authenticated:
            scope = getattr(view, "throttle_scope", None)
            key = f"{scope}:user:{user.pk}"
        else:
            scope = "anon"
            key = f"anon:{self.get_ident(request)}"
        rate = api_settings.DEFAULT_THROTTLE_RATES.get(scope) if scope else None
        if not rate:
            return True
        limit, period = parse_rate(rate)
        hits, self._left = hit(key, period=period)
        return hits <= limit

    def get_ident(self, request) -> str:
        # The same address sign-in lockouts count by; DRF's own believes X-Forwarded-For from anyone.
        return client_address(request)

    def wait(self) -> float | None:
        return getattr(self, "_left", None)
