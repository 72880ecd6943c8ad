"""Writes for sources: adding and changing them (audited, with their django-q2 schedule), and
syncing one (docs/sources.md).

A sync lists the source, then fetches and ingests only the items whose version changed, each as
its own django-q2 task, so that every worker sharing the database takes a part. Each item task
counts itself done on the run in SQL; the one that brings `done` up to `queued` closes the run,
and only then, and only on a complete listing, is what the listing no longer holds retracted.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import logging
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.db.models.expressions import RawSQL
from django.utils import timezone
from django_q.models import Schedule
from django_q.tasks import async_task
from rest_framework import status

from common.exceptions import CairnError
from corpus.audit import audit
from corpus.lifecycle import document_retract
from corpus.models import Collection, Document
from corpus.originals import originals_for
from corpus.services import documents_ingest
from readers.extract import ExtractedDocument, ExtractionError, extract_bytes
from sources.connectors import connector_for
from sources.connectors.base import ConnectorError, Fetched, Item, Known, Listing
from sources.connectors.git import cache_of, cache_remove, local_path, repository_check
from sources.models import SecretGrant, Source, SourceItem, SyncRun
from sources.origins import origin_of, origin_text
from sources.places import cairn_place_overlapping

log = logging.getLogger(__name__)

SYNC_TASK = "sources.tasks.source_sync"
ITEM_TASK = "sources.tasks.source_item_sync"
EDITABLE = ("location", "branch", "credentials", "schedule", "include", "exclude", "enabled", "owner")
MAX_PATTERNS = 100


def _cron_field(value: str) -> str:
    item = rf"(?:\*|{value}(?:-{value})?)(?:/[1-9][0-9]?)?"
    return rf"{item}(?:,{item})*"


def _names(*names: str) -> str:  # "mon" in any case: cron reads names so
    return "|".join("".join(f"[{c.lower()}{c.upper()}]" for c in name) for name in names)


_MONTHS = _names("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = _names("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_CRON = " ".join(
    _cron_field(v)
    for v in (
        r"[0-5]?[0-9]", r"(?:[01]?[0-9]|2[0-3])", r"(?:0?[1-9]|[12][0-9]|3[01])", rf"(?:0?[1-9]|1[0-2]|{_MONTHS})",
        rf"(?:[0-7]|{_DAYS})",
    )
)  # fmt: skip
# The shape of each field of a source, one pattern for the API's schema (sources/api.py) and for
# source_check (re.match, re.fullmatch where it ends in $): a value of another shape is a 400 naming
# the field. Where a location of the right shape may not be read (outside the roots, a curator's
# ssh) is a 403; one that is not there a 404. Character classes are spelled out: Python's and
# JavaScript's \s and . differ at the edges, and the schema is read by both.
_SPACE = " \t\n\r\f\v"
# A host (a name, an address, an IPv6 address in brackets) and no user: no secret hides in it.
HOST_URL = rf"https?://(?:\[[0-9A-Fa-f:.]+\]|[^/?#\[\]@{_SPACE}]+)(?::[0-9]+)?"
SCP_LIKE = r"[A-Za-z0-9._][A-Za-z0-9._-]*@[A-Za-z0-9.-]+:"  # git's user@host:path
_REST = r"[^\x00]*$"  # anything after what the kind needs, but a NUL
LOCATIONS = {
    Source.Kind.FOLDER: rf"^/{_REST}",
    Source.Kind.WEBSITE: rf"^{HOST_URL}{_REST}",
    Source.Kind.GIT: rf"^(?:{HOST_URL}|(?:ssh|git)://|file:///|/|{SCP_LIKE}){_REST}",
    Source.Kind.CONFLUENCE: rf"^{HOST_URL}(?:[^?#{_SPACE}\x00]*/(?:spaces|display)/[^/?#{_SPACE}\x00]+"
    rf"|[^?#{_SPACE}\x00]*\?(?:[^#{_SPACE}\x00]*&)?spaceKey=[^&#{_SPACE}\x00]+){_REST}",
}
BRANCH = r"^(?![A-Za-z0-9._/-]*\.\.)[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$"  # git's names; never ".." (a path out)
SCHEDULE = rf"^(?:[1-9][0-9]{{0,3}}|[12][0-9]{{4}}|3[01][0-9]{{3}}|32[0-6][0-9]{{2}}|327[0-5][0-9]|3276[0-7]|{_CRON})$"
CREDENTIALS = r"^(?:[A-Za-z_][A-Za-z0-9_]*|/[^\n]*)$"  # an environment variable's name or a secret file's path


# --- Checking what a source may be ----------------------------------------------------------------


def source_check(*, fields: dict, operator: bool) -> None:
    """Raise CairnError naming the field when `fields` (a source's, whole) are not a source Cairn can
    read. A curator's (`operator` False) may reach only folders under CAIRN_SOURCES_FOLDER_ROOTS and
    name only the secrets an operator granted to the source's collection (`collection`) for the
    location's scheme, host and port: otherwise a source could read the server's own files, or send
    its secrets to a server of the curator's choosing, or to the granted host in clear text. Where a
    secret may go is checked again at every request (connectors.base.source_secret)."""
    kind, location = fields["kind"], fields["location"].strip()
    if kind not in Source.Kind.values:
        raise CairnError("kind", f"{kind!r} is not one of {', '.join(Source.Kind.values)}")
    if not re.match(LOCATIONS[kind], location):
        raise CairnError("location", LOCATION_SHAPES[kind])
    if kind == Source.Kind.FOLDER:
        _local_path_check(location, operator=operator, what="folder")
        if not Path(location).is_dir():
            raise CairnError("location", f"{location} is not a folder", status_code=status.HTTP_404_NOT_FOUND)
    elif kind == Source.Kind.GIT:
        _git_location_check(location, operator=operator)
    branch = fields.get("branch") or ""
    if branch and (kind != Source.Kind.GIT or not re.fullmatch(BRANCH, branch)):
        raise CairnError("branch", "only a git source has a branch: a name like main or release/2.1")
    _schedule_check(fields.get("schedule") or "")
    for field in ("include", "exclude"):
        patterns = fields.get(field) or []
        if not isinstance(patterns, list) or len(patterns) > MAX_PATTERNS:
            raise CairnError(field, f"must be a list of at most {MAX_PATTERNS} glob patterns")
        if any(not isinstance(p, str) or not p.strip() or len(p) > 200 for p in patterns):
            raise CairnError(field, "each pattern must be a non-blank string of at most 200 characters")
    _credentials_check(fields.get("credentials") or "", collection=fields.get("collection"), operator=operator,
                       origin=origin_of(location))  # fmt: skip


LOCATION_SHAPES = {
    Source.Kind.FOLDER: "a folder is an absolute path",
    Source.Kind.WEBSITE: "must be an http:// or https:// URL",
    Source.Kind.GIT: "must be an http(s), ssh or git URL, user@host:path, or an absolute path",
    Source.Kind.CONFLUENCE: "must be a Confluence space's http(s) URL: …/spaces/KEY, …/display/KEY or ?spaceKey=KEY",
}
FORBIDDEN = status.HTTP_403_FORBIDDEN


def _local_path_check(location: str, *, operator: bool, what: str) -> None:
    path = Path(location)
    if not path.is_absolute():
        raise CairnError("location", f"a {what} must be an absolute path")  # the shape checked it already
    # Every sync reads this very path and follows no symlink on its way (sources/connectors/folder.py,
    # git.py): one lying under a root when saved still does, whatever is swapped in later.
    if (resolved := path.resolve()) != path:
        raise CairnError(
            "location", f"a {what} is given by its real path, without symlinks: {resolved}", status_code=FORBIDDEN
        )
    if place := cairn_place_overlapping(path):
        raise CairnError(
            "location", f"a {what} may neither lie in nor hold Cairn's own files ({place})",
            status_code=FORBIDDEN,
        )  # fmt: skip
    if operator:
        return
    roots = settings.CAIRN_SOURCES_FOLDER_ROOTS
    if not any(path == root or root in path.parents for root in roots):
        where = ", ".join(map(str, roots)) if roots else "none are set: only operators add them (manage.py sources add)"
        raise CairnError(
            "location", f"a {what} must lie under CAIRN_SOURCES_FOLDER_ROOTS ({where})", status_code=FORBIDDEN
        )


def _git_location_check(location: str, *, operator: bool) -> None:
    """A location of git's shape (LOCATIONS): a local repository must lie under the roots and be one;
    an ssh or git:// one, or user@host:path, is an operator's (the server's own keys and network:
    git cannot be held to the address checks there)."""
    if location.startswith(("/", "file:///")):
        try:
            path = local_path(location)  # a file:// URL decoded as git decodes it: the path checked is the path read
        except ConnectorError as exc:
            raise CairnError("location", str(exc)) from None
        _local_path_check(str(path), operator=operator, what="local repository")
        try:
            repository_check(path)  # as before every fetch
        except ConnectorError as exc:
            raise CairnError("location", str(exc), status_code=status.HTTP_404_NOT_FOUND) from None
    elif not re.match(HOST_URL, location) and not operator:
        raise CairnError(
            "location",
            "a curator adds an http(s) repository, or a local one under CAIRN_SOURCES_FOLDER_ROOTS: ssh and "
            "git:// repositories are added by operators (manage.py sources add)",
            status_code=FORBIDDEN,
        )


def _schedule_check(schedule: str) -> None:
    if not schedule or schedule.isdigit() and 1 <= int(schedule) <= 32767:
        return
    from croniter import croniter

    if not re.fullmatch(SCHEDULE, schedule) or not croniter.is_valid(schedule):
        raise CairnError("schedule", f"{schedule!r} is neither minutes (1-32767) nor a cron line like '0 6 * * 1-5'")


def _credentials_check(
    reference: str, *, collection: Collection | None, operator: bool, origin: tuple[str, str, int] | None = None
) -> None:
    if not reference:
        return
    if not re.fullmatch(CREDENTIALS, reference):
        raise CairnError(
            "credentials",
            "must name an environment variable or a secret file (an absolute path), never hold the secret itself",
        )
    if operator:
        return
    grants = SecretGrant.objects.filter(name=reference, collection=collection)
    origins = set(grants.values_list("scheme", "host", "port"))
    if collection is None or not origins:
        where = f"collection {collection.slug}" if collection is not None else "this collection"
        raise CairnError(
            "credentials",
            f"{reference} is not granted to {where}: name one an operator granted (manage.py sources grant-secret)",
            status_code=FORBIDDEN,
        )
    if origin not in origins:
        granted = ", ".join(sorted(origin_text(*o) for o in origins))
        raise CairnError(
            "credentials",
            f"{reference} is granted for {granted} only, not for {origin_text(*origin) if origin else 'a local path'}",
            status_code=FORBIDDEN,
        )


# --- Secrets an operator grants -------------------------------------------------------------------


def secret_grant(*, name: str, collection: Collection, host: str, actor=None) -> SecretGrant:
    """Let `collection`'s sources name the secret `name` (an environment variable or an absolute
    file path), sent only to one origin (audited): `host` is a URL's origin (http://wiki:8080,
    ssh://git.example.org) or a host with or without a port, then https. Granting what is granted
    already changes nothing."""
    origin = _origin_named(host)
    if origin is None:
        raise CairnError(
            "host", "must be a host name or address, such as wiki.example.com, wiki.example.com:8443 or "
            "http://wiki.example.com:8080 (https and its port when no scheme is given)",
        )  # fmt: skip
    _credentials_check(name, collection=collection, operator=True)
    scheme, host, port = origin
    if scheme not in SecretGrant.Scheme.values:
        raise CairnError("host", f"a secret is sent over {', '.join(SecretGrant.Scheme.values)}, not {scheme}")
    where = origin_text(*origin)
    with transaction.atomic():
        grant, created = SecretGrant.objects.get_or_create(
            name=name, collection=collection, scheme=scheme, host=host, port=port, defaults={"granted_by": actor}
        )
        if created:
            audit("source.secret_grant", grant, actor=actor, summary=f"{name} to {collection.slug} for {where}",
                  after={"name": name, "collection": collection.slug, "scheme": scheme, "host": host,
                         "port": port})  # fmt: skip
    return grant


def _origin_named(text: str) -> tuple[str, str, int] | None:
    """The origin an operator names for a grant ("wiki.example.com", "WIKI.example.com:8443", a URL)
    as requests are matched against it: lower case; https and its port unless a scheme is given."""
    text = text.strip()
    return origin_of(text if "://" in text else f"https://{text}")


def secret_revoke(*, name: str, collection: Collection, host: str = "", actor=None) -> int:
    """Take back the grants of `name` to `collection` (each audited): all of them, or those at `host`
    (every scheme and port there, or the one a URL or host:port names). Sources that still name it
    fail their next sync, naming the missing grant. Returns how many."""
    grants = SecretGrant.objects.filter(name=name, collection=collection)
    if host:
        origin = _origin_named(host)
        grants = grants.filter(host=origin[1] if origin else host)
        if origin and "://" in host:
            grants = grants.filter(scheme=origin[0])
        if origin and urlsplit(host if "://" in host else f"//{host}").port is not None:
            grants = grants.filter(port=origin[2])
    revoked = 0
    with transaction.atomic():
        for grant in grants.select_for_update():
            audit("source.secret_revoke", grant, actor=actor, summary=f"{name} from {collection.slug} for {grant.origin}",
                  before={"name": name, "collection": collection.slug, "scheme": grant.scheme, "host": grant.host,
                          "port": grant.port})  # fmt: skip
            grant.delete()
            revoked += 1
    return revoked


# --- Adding, changing and removing sources --------------------------------------------------------


def source_create(*, actor=None, operator: bool = False, collection: Collection, **fields) -> Source:
    """Add a source (audited) and schedule its syncs. CairnError names a field that is wrong. An
    operator's source grants the secret it names to its collection for its location's host."""
    fields = {"branch": "", "credentials": "", "schedule": "", "include": [], "exclude": [], **fields}
    fields["location"] = fields["location"].strip()
    source_check(fields={**fields, "collection": collection}, operator=operator)
    with transaction.atomic():
        if Source.objects.filter(name=fields["name"]).exists():
            raise CairnError(
                "name", f"a source named {fields['name']!r} exists already", status_code=status.HTTP_409_CONFLICT
            )
        source = Source.objects.create(collection=collection, **fields)
        origin = origin_of(source.location)
        if operator and source.credentials and origin and origin[0] in SecretGrant.Scheme.values:
            # The operator who names a secret for a source grants it to that source's origin alone.
            secret_grant(name=source.credentials, collection=collection, host=origin_text(*origin), actor=actor)
        audit("source.add", source, actor=actor, summary=f"{source.kind} {source.location} into {collection.slug}",
              after=_described(source))  # fmt: skip
        _schedule_save(source)
    return source


def source_update(*, source: Source, actor=None, operator: bool = False, **changes) -> Source:
    """Change what may change of a source (audited, its schedule updated): not its kind or
    collection, which would make its documents another source's (add a new source instead)."""
    for field in changes:
        if field not in EDITABLE:
            raise CairnError(field, "cannot be changed: add a new source instead")
    before = _described(source)
    fields = {**before, "kind": source.kind, **changes, "collection": source.collection}
    try:
        source_check(fields=fields, operator=operator)
    except CairnError as error:
        if error.field in ("location", "branch") and error.field in changes and error.status_code == 400:
            # Of a shape some source takes (the schema cannot know this one's kind): not this one's.
            raise CairnError(error.field, f"{error.message} (a {source.kind} source)", status_code=409) from None
        raise
    with transaction.atomic():
        for field, value in changes.items():
            setattr(source, field, value.strip() if field == "location" else value)
        source.save()
        after = _described(source)
        changed = {k: v for k, v in after.items() if before.get(k) != v}
        if changed:
            audit("source.change", source, actor=actor, summary=", ".join(sorted(changed)),
                  before={k: before.get(k) for k in changed}, after=changed)  # fmt: skip
        _schedule_save(source)
    return source


def source_delete(*, source: Source, actor=None) -> None:
    """Remove a source, its items and its runs (audited), and once that commits its git copy. Its
    documents stay in the collection: curators retract what they no longer want."""
    cache = cache_of(source)
    with transaction.atomic():
        audit("source.delete", source, actor=actor, summary=f"{source.kind} {source.location}",
              before=_described(source))  # fmt: skip
        Schedule.objects.filter(name=source.schedule_name).delete()
        source.delete()
        if source.kind == Source.Kind.GIT:
            transaction.on_commit(lambda: cache_remove(cache))


def _described(source: Source) -> dict:
    """What the audit trail keeps of a source: its settings (the credentials' reference, not a secret)."""
    return {
        "name": source.name, "kind": source.kind, "location": source.location, "collection": source.collection.slug,
        "branch": source.branch, "credentials": source.credentials, "schedule": source.schedule,
        "include": source.include, "exclude": source.exclude, "enabled": source.enabled,
        "owner": source.owner.get_username() if source.owner else None,
    }  # fmt: skip


def _schedule_save(source: Source) -> None:
    """Keep the django-q2 Schedule that syncs `source` as its schedule says (none when blank or disabled)."""
    if not (source.schedule and source.enabled):
        Schedule.objects.filter(name=source.schedule_name).delete()
        return
    timing = (
        {"schedule_type": Schedule.MINUTES, "minutes": int(source.schedule), "cron": None}
        if source.schedule.isdigit()
        else {"schedule_type": Schedule.CRON, "cron": source.schedule, "minutes": None}
    )
    Schedule.objects.update_or_create(
        name=source.schedule_name, defaults={"func": SYNC_TASK, "args": repr(source.pk), "repeats": -1, **timing}
    )


def source_sync_enqueue(*, source: Source, actor=None) -> None:
    """Queue a sync of `source` for the workers (after the caller's transaction commits)."""
    if not source.enabled:
        raise CairnError("source", f"source {source.name!r} is disabled", status_code=status.HTTP_409_CONFLICT)
    requested_by = actor.pk if actor is not None and actor.is_authenticated else None
    transaction.on_commit(
        lambda: async_task(SYNC_TASK, source.pk, requested_by, task_name=f"sync-{source.name}", group="sources")
    )


# --- Syncing --------------------------------------------------------------------------------------


def source_sync(
    *,
    source: Source,
    actor=None,
    inline: bool = False,
    on_progress: Callable[[int, str], None] | None = None,
) -> SyncRun:
    """Sync `source` once and return its run. `inline`: fetch and ingest every changed item here,
    one after another (the command line); else queue each as a task for the workers, and the run
    finishes when they have. `on_progress(total, outcome)` is called once the listing is planned
    (outcome "") and after each inline item. A source still being synced is not synced again: the
    run returned is a skipped one saying so."""
    run = _run_start(source, actor)
    if run.status == SyncRun.Status.SKIPPED:
        return run
    try:
        connector = connector_for(source)
        listing = connector.list(_known(source))
        queued = _plan(run, source, listing)
    except ConnectorError as exc:
        return _run_fail(run, str(exc))
    except Exception:
        log.exception("sync of source %s failed", source.name)
        return _run_fail(run, "the sync stopped on an internal error (see the server log)")
    if on_progress:
        on_progress(len(queued), "")
    if inline:
        for item_id in queued:
            outcome = source_item_sync(run_id=run.id, item_id=item_id, connector=connector)
            if on_progress:
                on_progress(len(queued), outcome)
    else:
        for item_id in queued:
            transaction.on_commit(
                lambda item_id=item_id: async_task(
                    ITEM_TASK, run.id, item_id, task_name=f"sync-{run.id}-item-{item_id}", group="source-items"
                )
            )
    if not queued:
        _run_close_if_done(run.id)
    run.refresh_from_db()
    return run


def _run_start(source: Source, actor) -> SyncRun:
    requested_by = actor if actor is not None and actor.is_authenticated else None
    with transaction.atomic():
        Source.objects.select_for_update().get(pk=source.pk)  # this source's runs start one at a time
        stale = timezone.now() - timedelta(seconds=settings.CAIRN_SOURCES_STALE_SECONDS)
        for running in source.runs.filter(status=SyncRun.Status.RUNNING):
            if running.heartbeat_at >= stale:
                return SyncRun.objects.create(
                    source=source, requested_by=requested_by, status=SyncRun.Status.SKIPPED,
                    finished_at=timezone.now(), error=f"sync {running.id} is still running (started {running.started_at:%Y-%m-%d %H:%M:%S})",
                )  # fmt: skip
            running.status, running.finished_at = SyncRun.Status.FAILED, timezone.now()
            running.error = f"abandoned: no progress for {settings.CAIRN_SOURCES_STALE_SECONDS} s"
            running.save(update_fields=["status", "finished_at", "error"])
        if not source.enabled:
            raise CairnError("source", f"source {source.name!r} is disabled")
        return SyncRun.objects.create(source=source, requested_by=requested_by)


def _run_fail(run: SyncRun, reason: str) -> SyncRun:
    """The listing failed: nothing is queued and nothing retracted (an unreachable server is not an empty one)."""
    with transaction.atomic():
        SyncRun.objects.filter(pk=run.pk).update(
            status=SyncRun.Status.FAILED, finished_at=timezone.now(), error=reason[:5000]
        )
        run.refresh_from_db()
        audit("source.sync", run.source, actor=run.requested_by, summary=f"sync {run.id} failed: {reason[:1000]}",
              after={"run": run.id, "status": run.status})  # fmt: skip
    return run


def _known(source: Source) -> dict[str, Known]:
    rows = (
        SourceItem.objects.filter(source=source)
        .exclude(version="")
        .values_list("key", "version", "etag", "last_modified", "state")
    )
    return {key: Known(version, etag, last_modified, state) for key, version, etag, last_modified, state in rows}


def _wanted(source: Source, key: str) -> bool:
    if source.include and not any(fnmatch.fnmatchcase(key, p) for p in source.include):
        return False
    return not any(fnmatch.fnmatchcase(key, p) for p in source.exclude)


def _plan(run: SyncRun, source: Source, listing: Listing) -> list[int]:
    """Record what the listing held: mark every listed item seen by `run`, leave unchanged ones
    alone, and mark new and changed ones queued by it. Returns the ids of the queued items."""
    items = [item for item in listing.items if _wanted(source, item.key)]
    existing = {
        row.key: row for row in SourceItem.objects.filter(source=source).only("id", "key", "version", "checked_at")
    }
    if listing.complete and not items and any(row.version for row in existing.values()):
        raise ConnectorError(
            f"the listing is empty where {len(existing)} items were: nothing is retracted on an empty listing "
            "(an unmounted share, a site that lost its pages?); remove the source to let its documents go"
        )
    unchanged, changed, created, restricted = [], [], [], {}
    for item in items:
        row = existing.get(item.key)
        if item.restricted:  # never indexed; if it was, the deletion pass retracts it (it is not marked seen)
            restricted[item.key] = "restricted: readable only by some, so not indexed"
            continue
        if row is not None and item.version and item.version == row.version:
            unchanged.append(row.id)
            continue
        row = row or SourceItem(source=source, key=item.key)
        row.name, row.seen_run, row.queued_run, row.listed_version = item.name, run, run, item.version
        row.tries = 0
        row.listed_state = {**item.state, "uri": item.uri or item.key, "title": item.title}
        row.fetched = item.data
        (changed if row.pk else created).append(row)
    with transaction.atomic():
        SourceItem.objects.bulk_create(created, batch_size=500)
        SourceItem.objects.bulk_update(
            changed,
            ["name", "seen_run", "queued_run", "listed_version", "listed_state", "fetched", "tries"],
            batch_size=500,
        )
        for start in range(0, len(unchanged), 5000):
            SourceItem.objects.filter(id__in=unchanged[start : start + 5000]).update(seen_run=run)
        # The items left unchecked longest go first (new ones before all): a sync that runs out of
        # time (CAIRN_SOURCES_SYNC_SECONDS) leaves the recently checked, and the next begins with the rest.
        queued = [row.pk for row in sorted([*created, *changed], key=_unchecked_first)]
        SyncRun.objects.filter(pk=run.pk).update(
            listed=len(items), unchanged=len(unchanged), restricted=len(restricted), queued=len(queued),
            complete=listing.complete, error="; ".join(listing.problems)[:5000], errors=restricted,
            heartbeat_at=timezone.now(),
        )  # fmt: skip
    return queued


def _unchecked_first(row: SourceItem) -> tuple:
    return (row.checked_at is not None, row.checked_at or timezone.now())


def _out_of_time(run: SyncRun) -> bool:
    return timezone.now() - run.started_at > timedelta(seconds=settings.CAIRN_SOURCES_SYNC_SECONDS)


@contextmanager
def _item_lock(item_id: int) -> Iterator[bool]:
    """A Postgres advisory lock on one item, held while it is fetched and ingested: a task handed
    out twice (a retry, a second sync) never ingests the same item at the same time. No global lock."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [item_id])
        held = cursor.fetchone()[0]
    try:
        yield held
    finally:
        if held:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [item_id])


def source_item_sync(*, run_id: int, item_id: int, connector=None) -> str:
    """Fetch and ingest one item a run queued; count it done on the run, and close the run if it
    was the last. Returns its outcome: added, updated, moved, unchanged or failed; "busy" when
    another task holds it, "done" when it was already done (a task handed out again)."""
    with _item_lock(item_id) as held:
        if not held:
            return "busy"
        item = (
            SourceItem.objects.select_related("source__collection", "document", "queued_run")
            .filter(id=item_id, queued_run_id=run_id)
            .first()
        )
        if item is None:
            return "done"
        if _out_of_time(item.queued_run):  # not fetched: the next sync begins with it
            note = f"this one ran past CAIRN_SOURCES_SYNC_SECONDS ({settings.CAIRN_SOURCES_SYNC_SECONDS} s)"
            outcome = _Outcome("failed", note=f"{item.key}: left for the next sync, {note}", keep=False, checked=False)
        else:
            outcome = _item_try(item, run_id, connector)
        _item_finish(item, run_id, outcome)
    _run_close_if_done(run_id)
    return outcome.outcome


def _item_try(item: SourceItem, run_id: int, connector) -> _Outcome:
    """Fetch and ingest `item`, once: what became of it, a failure included."""
    # Counted before the work, outside any transaction: a try that a worker's timeout or a
    # crash cut short is not made again by the broker's redelivery, so one hostile item holds
    # a worker once, never max_attempts times. It is tried again at the next sync.
    SourceItem.objects.filter(pk=item.pk).update(tries=F("tries") + 1)
    item.tries += 1
    try:
        if item.tries > 1:
            raise ConnectorError(
                f"{item.key}: its last try did not finish (a timeout or a crash): left for the next sync"
            )
        return _item_ingest(item, run_id, connector or connector_for(item.source))
    except ConnectorError as exc:  # could not be read: tried again next sync
        return _Outcome("failed", note=str(exc)[:1000], keep=False)
    except Exception:
        log.exception("source item %s (%s) failed", item.pk, item.key)
        return _Outcome("failed", note="an internal error (see the server log)", keep=False)


class _Outcome:
    def __init__(self, outcome: str, *, chunks=0, note="", keep=True, checked=True, sha="", document=None,
                 state=None):  # fmt: skip
        self.outcome, self.chunks, self.note, self.keep, self.checked = outcome, chunks, note, keep, checked
        self.sha, self.document, self.state = sha, document, state or {}


def _sha(data) -> str:
    return hashlib.sha256(bytes(data)).hexdigest() if data is not None else ""


def _item_ingest(item: SourceItem, run_id: int, connector) -> _Outcome:
    listed = Item(key=item.key, version=item.listed_version, name=item.name, uri=item.listed_state.get("uri", item.key),
                  title=item.listed_state.get("title", ""), state=item.listed_state)  # fmt: skip
    data = bytes(item.fetched) if item.fetched is not None else None
    fetched = Fetched(data)
    if data is None:
        known = Known(item.version, item.etag, item.last_modified, item.state) if item.version or item.etag else None
        fetched = connector.fetch(listed, known)
        if fetched.data is None:  # not modified: no body was read
            return _Outcome("unchanged", state=fetched.state, sha=item.sha256, document=item.document)
        data = fetched.data
    sha = _sha(data)
    if item.document is not None and sha == item.sha256:  # a new version stamp, the same bytes
        return _Outcome("unchanged", sha=sha, document=item.document, state=fetched.state)
    try:
        (document,) = _extracted(item, listed, data)
    except ExtractionError as exc:  # these bytes are no document: not read again until they change
        return _Outcome("failed", note=f"{item.key}: {exc}"[:1000], sha=sha, state=fetched.state)
    moved = item.document is None and _move_twin(item, run_id, sha, listed.uri)
    # The fetched file is kept as the document's original: a synced PDF's citation opens at its page.
    originals = originals_for(item.name, [document.source], data=data)
    report = documents_ingest(collection=item.source.collection, documents=[document], originals=originals)
    if report.failed:
        return _Outcome("failed", note=f"{item.key}: {report.failed[0].reason}", sha=sha, state=fetched.state)
    result = report.outcomes[0]
    outcome = "moved" if moved else "unchanged" if result.outcome == "retracted" else result.outcome
    return _Outcome(outcome, chunks=result.chunks, sha=sha, document=result.document, state=fetched.state)


def _extracted(item: SourceItem, listed: Item, data: bytes) -> list[ExtractedDocument]:
    found = extract_bytes(item.name, data, source=listed.uri)
    documents = [d for d in found if isinstance(d, ExtractedDocument)]
    if len(documents) != 1:
        raise ExtractionError(f"holds {len(documents)} documents; a source's file must be one document")
    if listed.title:  # the source's own title (a Confluence page's) over the reader's guess
        documents[0].title = listed.title[:500]
    return documents


def _move_twin(item: SourceItem, run_id: int, sha: str, uri: str) -> bool:
    """A new item whose bytes are those of an item this run's listing no longer holds is that item
    moved or renamed: its document takes the new name (audited) instead of being retracted and
    added again, so its chunks, their reputation and what rests on it stay."""
    with transaction.atomic():
        twin = (
            SourceItem.objects.select_for_update(skip_locked=True)
            .filter(source=item.source, sha256=sha, document__isnull=False)
            .exclude(seen_run_id=run_id)
            .select_related("document")
            .first()
        )
        if twin is None or Document.objects.filter(collection=twin.document.collection, source=uri).exists():
            return False
        document = twin.document
        Document.objects.filter(pk=document.pk).update(source=uri, updated_at=timezone.now())
        audit("document.move_source", document, summary=f"source {item.source.name}: {twin.key} is now {item.key}",
              before={"source": document.source}, after={"source": uri})  # fmt: skip
        SourceItem.objects.filter(pk=item.pk).update(document=document)
        twin.delete()
    return True


_COUNTER = {"added": "added", "updated": "updated", "moved": "moved", "unchanged": "unchanged", "failed": "failed"}


def _item_finish(item: SourceItem, run_id: int, outcome: _Outcome) -> None:
    """Keep what was ingested on the item and count it on the run, together."""
    fields: dict = {"queued_run": None, "fetched": None, "tries": 0}
    if outcome.checked:
        fields["checked_at"] = timezone.now()
    if outcome.keep:
        state = {"etag": item.etag, "last_modified": item.last_modified, **item.state, **item.listed_state,
                 **outcome.state}  # fmt: skip
        fields |= {"version": item.listed_version, "sha256": outcome.sha, "etag": state.pop("etag") or "",
                   "last_modified": state.pop("last_modified") or "", "state": state}  # fmt: skip
        if outcome.document is not None:
            fields["document"] = outcome.document
    counter = _COUNTER[outcome.outcome]
    updates = {counter: F(counter) + 1, "done": F("done") + 1, "chunks": F("chunks") + outcome.chunks,
               "heartbeat_at": timezone.now()}  # fmt: skip
    if outcome.note:  # appended in SQL: other workers append theirs at the same time
        updates["errors"] = RawSQL("errors || %s::jsonb", [json.dumps({item.key: outcome.note})])
    with transaction.atomic():
        SourceItem.objects.filter(pk=item.pk).update(**fields)
        SyncRun.objects.filter(pk=run_id).update(**updates)


def _run_close_if_done(run_id: int) -> None:
    """Close the run if every queued item is done. The conditional update lets exactly one caller
    (the last item's task) through, whichever worker it ran on."""
    closing = SyncRun.objects.filter(
        pk=run_id, status=SyncRun.Status.RUNNING, finished_at__isnull=True, done__gte=F("queued")
    ).update(finished_at=timezone.now())
    if closing != 1:
        return
    run = SyncRun.objects.select_related("source", "requested_by").get(pk=run_id)
    retracted = _retract_vanished(run) if run.complete else 0
    run.retracted, run.status, run.finished_at = retracted, SyncRun.Status.SUCCEEDED, timezone.now()
    run.save(update_fields=["retracted", "status", "finished_at"])
    counts = run.counts()
    if run.added or run.updated or run.moved or run.retracted or run.failed:
        summary = ", ".join(f"{n} {k}" for k, n in counts.items())
        audit("source.sync", run.source, actor=run.requested_by, summary=f"sync {run.id}: {summary}",
              after={"run": run.id, **counts})  # fmt: skip


def _retract_vanished(run: SyncRun) -> int:
    """Retract the documents of the items a complete listing no longer holds (each audited, with
    the lineage cascade to what rests on them) and forget the items."""
    retracted = 0
    vanished = SourceItem.objects.filter(source=run.source).exclude(seen_run=run).select_related("document")
    for item in vanished:
        if item.document is not None and item.document.status == Document.Status.ACTIVE:
            reason = f"source {run.source.name}: {item.key} is no longer there (sync {run.id})"
            document_retract(item.document, actor=run.requested_by, reason=reason)
            retracted += 1
        item.delete()
    return retracted
