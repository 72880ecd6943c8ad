"""python manage.py sources add NAME --kind KIND --location PATH_OR_URL --collection SLUG ... | list | remove NAME
| grant-secret NAME --collection SLUG --host [SCHEME://]HOST[:PORT] | revoke-secret NAME --collection SLUG [--host HOST] | secrets"""

from django.core.management.base import BaseCommand, CommandError

from common.exceptions import CairnError
from corpus.models import Collection
from corpus.services import collection_get_or_create
from sources.models import SecretGrant, Source
from sources.origins import origin_of, origin_text
from sources.services import secret_grant, secret_revoke, source_create, source_delete


class Command(BaseCommand):
    help = "Add, list and remove sources: places Cairn reads on a schedule into a collection (docs/sources.md)."

    def add_arguments(self, parser):
        actions = parser.add_subparsers(dest="action", required=True)
        add = actions.add_parser("add", help="Add a source.")
        add.add_argument("name", help="A unique slug: sales-share, intranet, handbook-git, eng-wiki.")
        add.add_argument("--kind", required=True, choices=Source.Kind.values)
        add.add_argument(
            "--location", required=True, help="Folder path, start URL or sitemap.xml, repository, space URL."
        )
        add.add_argument("--collection", required=True, help="Collection slug; created if it does not exist.")
        add.add_argument("--public", action="store_true", help="Make a new collection readable by every user.")
        add.add_argument("--group", action="append", default=[], help="A group that may read it (repeatable).")
        add.add_argument("--schedule", default="", help='Minutes between syncs ("30") or a cron line ("0 6 * * 1-5").')
        add.add_argument("--include", action="append", default=[], metavar="GLOB", help="Keys to read (repeatable).")
        add.add_argument("--exclude", action="append", default=[], metavar="GLOB", help="Keys to skip (repeatable).")
        add.add_argument(
            "--credentials", default="", metavar="ENV_OR_FILE", help="Where the secret is, never the secret."
        )
        add.add_argument("--branch", default="", help="Git: the branch to read (default main).")
        actions.add_parser("list", help="List the sources and their last sync.")
        remove = actions.add_parser("remove", help="Remove a source (its documents stay).")
        remove.add_argument("name")
        grant = actions.add_parser(
            "grant-secret",
            help="Let a collection's sources name a secret, sent only to one scheme, host and port (audited).",
        )
        grant.add_argument("name", help="An environment variable's name or a secret file's absolute path.")
        grant.add_argument("--collection", required=True, help="The collection whose sources may name it.")
        grant.add_argument(
            "--host", required=True, metavar="[SCHEME://]HOST[:PORT]",
            help="The only place it is sent: wiki.example.com (https, port 443), wiki.example.com:8443 (https), "
            "http://wiki.example.com:8080, ssh://git.example.org.",
        )  # fmt: skip
        revoke = actions.add_parser("revoke-secret", help="Take a grant back (audited); sources naming it then fail.")
        revoke.add_argument("name")
        revoke.add_argument("--collection", required=True)
        revoke.add_argument(
            "--host", default="", help="Only the grants at this host (every scheme and port there, or the one a "
            "URL or HOST:PORT names; default: every grant of the name).",
        )  # fmt: skip
        actions.add_parser("secrets", help="List the granted secrets: name, collection, where it is sent.")

    def handle(self, *args, action, **options):
        getattr(self, f"_{action.replace('-', '_')}")(**options)

    def _add(self, *, name, kind, location, collection, public, group, schedule, include, exclude, credentials,
             branch, **_):  # fmt: skip
        collection_obj, created = collection_get_or_create(slug=collection, public=public, group_names=group)
        try:
            source = source_create(
                operator=True, collection=collection_obj, name=name, kind=kind, location=location, branch=branch,
                credentials=credentials, schedule=schedule, include=include, exclude=exclude,
            )  # fmt: skip
        except CairnError as exc:
            raise CommandError(f"source {name}: {exc.field}: {exc.message}") from exc
        if credentials and (origin := origin_of(source.location)):
            self.stdout.write(f"Granted {credentials} to {collection} for {origin_text(*origin)} only.")
        if created and not (public or group):
            self.stdout.write(f"Created collection {collection!r}: private (superusers only) until groups are added.")
        when = f"every {schedule} min" if schedule.isdigit() else schedule or "by hand (manage.py sync)"
        self.stdout.write(f"Added source {source.name}: {kind} {source.location} into {collection}, synced {when}.")

    def _list(self, **_):
        for source in Source.objects.select_related("collection").order_by("name"):
            run = source.runs.order_by("-started_at").first()
            last = f"{run.status} {run.started_at:%Y-%m-%d %H:%M}" if run else "never synced"
            state = "" if source.enabled else " (disabled)"
            self.stdout.write(
                f"{source.name}\t{source.kind}\t{source.location}\t{source.collection.slug}\t"
                f"{source.schedule or '-'}\t{last}{state}"
            )

    def _remove(self, *, name, **_):
        source = Source.objects.filter(name=name).first()
        if source is None:
            raise CommandError(f"source {name}: no such source")
        source_delete(source=source)
        self.stdout.write(f"Removed source {name}; its documents stay in {source.collection.slug}.")

    def _collection(self, slug: str) -> Collection:
        collection = Collection.objects.filter(slug=slug).first()
        if collection is None:
            raise CommandError(f"collection {slug}: no such collection")
        return collection

    def _grant_secret(self, *, name, collection, host, **_):
        try:
            grant = secret_grant(name=name, collection=self._collection(collection), host=host)
        except CairnError as exc:
            raise CommandError(f"secret {name}: {exc.field}: {exc.message}") from exc
        self.stdout.write(f"Granted {name} to {collection}'s sources, sent only to {grant.origin}.")

    def _revoke_secret(self, *, name, collection, host, **_):
        revoked = secret_revoke(name=name, collection=self._collection(collection), host=host)
        if not revoked:
            raise CommandError(f"secret {name}: not granted to {collection}{f' for {host}' if host else ''}")
        self.stdout.write(f"Revoked {revoked} grant(s) of {name} from {collection}.")

    def _secrets(self, **_):
        for grant in SecretGrant.objects.select_related("collection"):
            self.stdout.write(f"{grant.name}\t{grant.collection.slug}\t{grant.origin}")
