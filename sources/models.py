"""Places Cairn reads on a schedule (a folder, a website, a git repository, a Confluence space),
what it found there last time, and every sync (docs/sources.md)."""

from django.conf import settings
from django.db import models

from corpus.models import Collection, Document
from sources.origins import origin_text


class Source(models.Model):
    class Kind(models.TextChoices):
        FOLDER = "folder", "Folder or mounted share"
        WEBSITE = "website", "Website"
        GIT = "git", "Git repository"
        CONFLUENCE = "confluence", "Confluence space"

    name = models.SlugField(max_length=100, unique=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    location = models.CharField(
        max_length=1000,
        help_text="A folder path; a start URL or sitemap.xml; a repository URL or path; a Confluence space URL "
        "(https://example.atlassian.net/wiki/spaces/ENG).",
    )
    collection = models.ForeignKey(Collection, on_delete=models.PROTECT, related_name="sources")
    branch = models.CharField(max_length=200, blank=True, help_text="Git: the branch read (default: main).")
    # The name of what holds the secret, never the secret: an environment variable (CAIRN_SOURCE_*)
    # or a file. Read when the source is read, so rotating it needs no change here.
    credentials = models.CharField(
        max_length=500, blank=True,
        help_text="An environment variable's name or a secret file's path (Confluence: email:api-token or a "
        "personal access token).",
    )  # fmt: skip
    schedule = models.CharField(
        max_length=100,
        blank=True,
        help_text='Minutes between syncs ("30") or a cron line ("0 6 * * 1-5"); blank: by hand.',
    )
    include = models.JSONField(default=list, blank=True, help_text='Glob patterns an item\'s key must match: ["*.md"].')
    exclude = models.JSONField(
        default=list, blank=True, help_text='Glob patterns that leave an item out: ["drafts/*"].'
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="sources"
    )
    enabled = models.BooleanField(default=True, help_text="Disabled: not synced, by schedule or by hand.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def schedule_name(self) -> str:
        """The django-q2 Schedule that syncs it."""
        return f"source-sync-{self.pk}"


class SyncRun(models.Model):
    """One sync of a source: what its listing held and what became of each item. Its item tasks
    count themselves done here in SQL; the last one to finish closes the run."""

    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        SKIPPED = "skipped", "Skipped (a sync was still running)"

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="runs")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="Who asked for it (none: the schedule or the command line).",
    )  # fmt: skip
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    started_at = models.DateTimeField(auto_now_add=True)
    heartbeat_at = models.DateTimeField(auto_now_add=True, help_text="Last progress; a run silent for long is stale.")
    finished_at = models.DateTimeField(null=True, blank=True)
    complete = models.BooleanField(
        default=False, help_text="The listing was whole: only then are missing items retracted."
    )
    queued = models.PositiveIntegerField(default=0, help_text="Items to fetch and ingest.")
    done = models.PositiveIntegerField(default=0, help_text="Of those, finished (ingested, unchanged or failed).")
    listed = models.PositiveIntegerField(default=0)
    added = models.PositiveIntegerField(default=0)
    updated = models.PositiveIntegerField(default=0)
    moved = models.PositiveIntegerField(default=0, help_text="Renamed or moved with the same content.")
    unchanged = models.PositiveIntegerField(default=0)
    retracted = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    restricted = models.PositiveIntegerField(default=0, help_text="Skipped: readable only by some (not indexed).")
    chunks = models.PositiveIntegerField(default=0, help_text="Chunks written.")
    error = models.TextField(blank=True, help_text="Why the run failed.")
    errors = models.JSONField(default=dict, blank=True, help_text="Per item key: why it failed or was skipped.")

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [models.Index(fields=["source", "status"])]

    def __str__(self) -> str:
        return f"{self.source_id} {self.started_at:%Y-%m-%d %H:%M} {self.status}"

    @property
    def duration(self) -> float | None:
        """Seconds from start to finish."""
        return (self.finished_at - self.started_at).total_seconds() if self.finished_at else None

    def counts(self) -> dict[str, int]:
        names = ["listed", "added", "updated", "moved", "unchanged", "retracted", "failed", "restricted", "chunks"]
        return {name: getattr(self, name) for name in names}


class SourceItem(models.Model):
    """One thing a source's listing held (a file, a page, an attachment) and the document it became."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="items")
    key = models.CharField(max_length=1000, help_text="Stable within the source: a path, a URL, page:123.")
    name = models.CharField(max_length=500, help_text="The file name its reader goes by.")
    version = models.CharField(
        max_length=200, blank=True, help_text="The version stamp last ingested (size-mtime, blob id, ETag, version)."
    )
    sha256 = models.CharField(max_length=64, blank=True, help_text="SHA-256 of the bytes last ingested.")
    document = models.ForeignKey(Document, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    etag = models.CharField(max_length=500, blank=True)
    last_modified = models.CharField(max_length=100, blank=True)
    state = models.JSONField(default=dict, blank=True, help_text="What the connector keeps (a page's links).")
    seen_run = models.ForeignKey(
        SyncRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="The last run whose listing held it.",
    )  # fmt: skip
    queued_run = models.ForeignKey(
        SyncRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="The run that queued it to be fetched and ingested; cleared when done.",
    )  # fmt: skip
    # What the listing already fetched (a crawled page, a Confluence body), so that the worker that
    # ingests it, on whatever host, need not ask again; cleared once ingested.
    fetched = models.BinaryField(null=True, blank=True, editable=False)
    listed_version = models.CharField(max_length=200, blank=True, help_text="The version the queuing run listed.")
    listed_state = models.JSONField(
        default=dict, blank=True, help_text="Validators and state the queuing run listed: kept once ingested."
    )
    tries = models.PositiveSmallIntegerField(
        default=0, help_text="Times the queuing run's task began it; above one, a try never finished."
    )
    checked_at = models.DateTimeField(
        null=True, blank=True, help_text="When a sync last fetched it (or tried to): the longest unchecked go first."
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["source", "key"], name="source_item_key_unique")]
        indexes = [models.Index(fields=["source", "sha256"])]

    def __str__(self) -> str:
        return self.key


class SecretGrant(models.Model):
    """An operator's leave for one collection's sources to use a secret, and only toward one origin:
    a scheme, a host and a port. The scheme is part of it (a token granted over https is never sent
    over http, in clear text) and so is the port (another port of the same host is another server).
    The secret itself stays where it is (an environment variable or a file); this names it.

    Grants made before the scheme and port were part of one (migration 0003) became https on port
    443, and besides that the https or ssh origin of each source of the collection that named the
    secret at that host: what kept working is what travelled encrypted; a source over plain http
    fails its next sync, naming the grant it lacks, until an operator grants that origin."""

    class Scheme(models.TextChoices):
        HTTPS = "https", "https"
        HTTP = "http", "http (clear text)"
        SSH = "ssh", "ssh (a key file)"

    name = models.CharField(
        max_length=500, help_text="The environment variable's name or the secret file's absolute path."
    )
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="secret_grants")
    scheme = models.CharField(max_length=8, choices=Scheme.choices, default=Scheme.HTTPS)
    host = models.CharField(max_length=253, help_text="The only host it is sent to (a name or an address).")
    port = models.PositiveIntegerField(default=443, help_text="The only port it is sent to.")
    granted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["collection__slug", "name", "host", "scheme", "port"]
        constraints = [
            models.UniqueConstraint(
                fields=["name", "collection", "scheme", "host", "port"], name="secret_grant_unique"
            ),
            models.CheckConstraint(condition=models.Q(port__gte=1, port__lte=65535), name="secret_grant_port"),
        ]

    def __str__(self) -> str:
        return f"{self.name} for {self.origin} ({self.collection.slug})"

    @property
    def origin(self) -> str:
        """Where it is sent, as a URL is written: https://wiki.example.com, http://wiki.example.com:8080."""
        return origin_text(self.scheme, self.host, self.port)
