"""python manage.py reader USERNAME [--collection SLUG ...] [--group NAME ...] [--password-stdin]

Create a reader (or update one) and give them collections. A collection is given through a group:
`--collection hr` adds the user to the group `hr-readers`, created and granted read access to `hr`
on first use; `--group` adds any group by name. A new user without --password-stdin gets a random
password, printed once, to hand over and be changed at /accounts/password/. Every change of groups
is audited (accounts/signals.py)."""

from __future__ import annotations

import secrets
import sys

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from corpus.models import Collection


def readers_group(collection: Collection) -> Group:
    """The group that reads `collection`: the one named `<slug>-readers`, granted on first use."""
    group, _ = Group.objects.get_or_create(name=f"{collection.slug}-readers")
    collection.groups.add(group)  # audited by corpus.signals; adding twice is a no-op
    return group


class Command(BaseCommand):
    help = "Create or update a reader account and give it collections (through groups)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--collection", action="append", default=[], help="a collection slug; repeatable")
        parser.add_argument("--group", action="append", default=[], help="a group name; repeatable")
        parser.add_argument("--email", default="")
        parser.add_argument("--password-stdin", action="store_true", help="read the password from standard input")

    def handle(self, *args, username, collection, group, email, password_stdin, **options):
        collections = list(Collection.objects.filter(slug__in=collection))
        unknown = sorted(set(collection) - {c.slug for c in collections})
        if unknown:
            raise CommandError(f"--collection: no collection {', '.join(unknown)}")
        password = sys.stdin.readline().rstrip("\n") if password_stdin else None
        with transaction.atomic():
            user, created = get_user_model().objects.get_or_create(username=username, defaults={"email": email})
            if created and password is None:
                password = secrets.token_urlsafe(12)
                self.stdout.write(f"Password for {username} (shown once): {password}")
            if password is not None:
                try:
                    validate_password(password, user)
                except ValidationError as exc:
                    raise CommandError(f"--password-stdin: {' '.join(exc.messages)}") from None
                user.set_password(password)
                user.save()
            groups = [readers_group(c) for c in collections] + [Group.objects.get_or_create(name=g)[0] for g in group]
            user.groups.add(*groups)
        readable = sorted({c.slug for g in user.groups.all() for c in g.collections.all()})
        self.stdout.write(
            f"{'Created' if created else 'Updated'} {username}; groups: "
            f"{', '.join(sorted(g.name for g in user.groups.all())) or 'none'}; "
            f"reads: {', '.join(readable) or 'public collections only'}"
        )
