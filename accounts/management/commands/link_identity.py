"""python manage.py link_identity USERNAME --issuer ISSUER --subject SUBJECT [--unlink]

Bind a directory identity to an existing Cairn account, so that signing in as it is signing in as
that account (or, with --unlink, undo it). Directory sign-in never does this by itself for an
account it did not make (accounts/identities.py): a directory name is not proof of being the local
account of that name. The issuer and subject, by way of signing in:

  OpenID Connect   --issuer https://sso.example.org/realms/acme  (the discovery document's "issuer")
                   --subject 3f6c...                             (the ID token's "sub")
  LDAP             --issuer ldap --subject uid=alice,ou=people,dc=example,dc=org  (the entry's DN)
  SSO proxy        --issuer sso-header --subject alice           (the user header's value)

Audited (user.identity). An identity bound to another account must be unlinked from it first."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from accounts.identities import IdentityError, identity_link, identity_unlink


class Command(BaseCommand):
    help = "Bind a directory identity (issuer, subject) to an existing Cairn account, or --unlink it."

    def add_arguments(self, parser):
        parser.add_argument("username", help="the Cairn account")
        parser.add_argument("--issuer", required=True, help="an OpenID Connect issuer URL, 'ldap' or 'sso-header'")
        parser.add_argument("--subject", required=True, help="the ID token's sub, the LDAP DN, or the header's value")
        parser.add_argument("--unlink", action="store_true", help="remove the binding instead")

    def handle(self, *args, username, issuer, subject, unlink, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no account {username!r}")
        try:
            if unlink:
                identity_unlink(user=user, issuer=issuer, subject=subject)
                self.stdout.write(f"{issuer} {subject} no longer signs in as {username}.")
            elif identity_link(user=user, issuer=issuer, subject=subject):
                self.stdout.write(f"{issuer} {subject} now signs in as {username}.")
                if user.is_superuser or user.is_staff:
                    self.stdout.write(
                        self.style.WARNING(f"{username} is {'a superuser' if user.is_superuser else 'staff'}.")
                    )
            else:
                self.stdout.write(f"{issuer} {subject} already signs in as {username}.")
        except IdentityError as exc:
            raise CommandError(str(exc)) from None
        bound = [f"{i.issuer} {i.subject}" for i in user.directory_identities.order_by("issuer", "subject")]
        self.stdout.write(f"{username} signs in through: {'; '.join(bound) or 'its password only'}")
