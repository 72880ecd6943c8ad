"""python manage.py demo_user: the local demo's curator account and its API token (idempotent)."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from rest_framework.authtoken.models import Token

from corpus.services import curators_group_ensure


class Command(BaseCommand):
    help = "Create (or reuse) the demo curator 'demo' / password 'demo' and print its API token."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="demo")
        parser.add_argument("--password", default="demo")

    def handle(self, *args, username, password, **options):
        user, created = get_user_model().objects.get_or_create(username=username, defaults={"is_staff": True})
        if created:
            user.set_password(password)
            user.save()
        user.groups.add(curators_group_ensure())
        token, _ = Token.objects.get_or_create(user=user)
        self.stdout.write(f"Demo curator: {username} / {password if created else '(unchanged password)'}")
        self.stdout.write(f"API token:    {token.key}")
