"""Which Cairn user a directory identity signs in as, for every way in: OpenID Connect (issuer: the
provider's `iss`, subject: the ID token's `sub`), LDAP ("ldap", the entry's DN) and an SSO proxy's
header ("sso-header", the header's value).

The rule: an identity signs in as the user it is bound to (accounts.DirectoryIdentity), and is never
matched to an account by its user name alone. At its first sign-in it gets a new account of its own:
under its directory user name when that is free, and under `name-2`, `name-3`... when a local account
or another identity already has that name (compared case-insensitively). Refusing the clash instead
would lock a directory user out until an operator acts, for a name they often did not choose; a
distinct name keeps them working and leaves the local account untouched. An operator binds an
identity to an existing account, a superuser included, with `manage.py link_identity` (audited).

Accounts made by directory sign-in before identities were bound have no binding; each is taken
over ("adopted") by the first sign-in through the same route that names it, and only if nothing
says it is anyone else's: it has no usable password (so it was never a local account with a secret),
is not a superuser, was never bound to an identity (the audit trail says), and was made by that
route: its `user.create` audit row says "first sign-in through OpenID Connect" (or "the SSO proxy");
for LDAP, whose accounts django-auth-ldap made without an audit row, it has no `user.create` row at
all. A local account that is anyone's to use has a password or is a superuser, so it is never
adopted; an account made by one route is never adopted by another. Curators (staff) are adopted:
the directory made them staff and goes on deciding it. The audit trail is append-only and the
application cannot erase it, which is why it can be trusted to say who made an account."""

from __future__ import annotations

import logging

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction

from accounts.models import DirectoryIdentity
from corpus.audit import audit
from corpus.models import AuditEvent

log = logging.getLogger(__name__)

LDAP, SSO_HEADER = DirectoryIdentity.LDAP, DirectoryIdentity.SSO_HEADER
VIA_OIDC, VIA_LDAP, VIA_SSO = "OpenID Connect", "LDAP", "the SSO proxy"  # in audit rows: "first sign-in through ..."
_USER = "auth.user"  # the audit trail's name for a user row


class IdentityError(Exception):
    """Why a directory identity cannot be bound, unbound or signed in, in words for a person."""


class SignInRefused(IdentityError):
    """Why a directory identity may not sign in."""


def identity_subject(issuer: str, subject: str) -> str:
    """`subject` as it is stored: an LDAP DN in lower case (directories compare DNs case-insensitively)."""
    subject = subject.strip()
    return subject.lower() if issuer == LDAP else subject


def _checked(issuer: str, subject: str) -> tuple[str, str]:
    subject = identity_subject(issuer, subject)
    fields = DirectoryIdentity._meta
    issuer_field, subject_field = fields.get_field("issuer"), fields.get_field("subject")
    if not issuer or not subject:
        raise IdentityError("a directory identity needs an issuer and a subject")
    if len(issuer) > issuer_field.max_length or len(subject) > subject_field.max_length:
        raise IdentityError(
            f"the identity is too long (issuer at most {issuer_field.max_length} characters, subject at most "
            f"{subject_field.max_length})"
        )
    return issuer, subject


@transaction.atomic
def directory_identity_user(*, issuer: str, subject: str, username: str, via: str):
    """The (user, created) that `subject` at `issuer` signs in as: the bound user; else, once, the
    account this route made before identities were bound (see the module's docstring); else a new
    user named after `username`, made by a sign-in `via` a route ("OpenID Connect", "LDAP", "the SSO
    proxy"). Raises SignInRefused for a deactivated user."""
    try:
        issuer, subject = _checked(issuer, subject)
    except IdentityError as exc:
        raise SignInRefused(str(exc)) from exc
    for _ in range(3):  # a concurrent first sign-in of the same identity, or for the same name, may win
        identity = _bound(issuer, subject)
        if identity is not None:
            user, created = identity.user, False
            break
        try:
            with transaction.atomic():
                user, created = _legacy_account(username, via), False
                if user is not None:
                    _bind(user, issuer, subject, how=f"adopted: this account was made by {via} sign-in before "
                                                      "identities were bound")  # fmt: skip
                    log.warning("%s %s adopted the account %s", issuer, subject, user.get_username())
                else:
                    user, created = _user_create(username, via), True
                    _bind(user, issuer, subject, how=f"first sign-in through {via}")
            break
        except IntegrityError:
            continue
    else:
        raise SignInRefused("another sign-in of the same account is under way; try again")
    if not user.is_active:
        raise SignInRefused("this Cairn account is deactivated")
    return user, created


def identity_link(*, user, issuer: str, subject: str) -> bool:
    """Bind `subject` at `issuer` to `user`, an operator's decision (audited); False when it already is."""
    issuer, subject = _checked(issuer, subject)
    with transaction.atomic():
        identity = _bound(issuer, subject)
        if identity is not None and identity.user_id == user.pk:
            return False
        if identity is not None:
            raise IdentityError(
                f"{issuer} {subject} already signs in as {identity.user.get_username()}: unlink it from that "
                "account first (--unlink)"
            )
        _bind(user, issuer, subject, how="linked by an operator (manage.py link_identity)")
    return True


def identity_unlink(*, user, issuer: str, subject: str) -> None:
    """Unbind `subject` at `issuer` from `user` (audited): its next sign-in makes an account of its own."""
    issuer, subject = _checked(issuer, subject)
    with transaction.atomic():
        deleted, _ = DirectoryIdentity.objects.filter(issuer=issuer, subject=subject, user=user).delete()
        if not deleted:
            raise IdentityError(f"{user.get_username()} is not linked to {issuer} {subject}")
        audit("user.identity", user, summary=f"no longer signs in as {issuer} {subject} (manage.py link_identity)",
              before={"issuer": issuer, "subject": subject})  # fmt: skip


def _bound(issuer: str, subject: str) -> DirectoryIdentity | None:
    return DirectoryIdentity.objects.select_related("user").filter(issuer=issuer, subject=subject).first()


def _bind(user, issuer: str, subject: str, *, how: str) -> None:
    DirectoryIdentity.objects.create(issuer=issuer, subject=subject, user=user)
    audit("user.identity", user, summary=f"signs in as {issuer} {subject}: {how}",
          after={"issuer": issuer, "subject": subject})  # fmt: skip


def _user_create(username: str, via: str):
    name = _free_username(username)
    user = get_user_model()(username=name)
    user.set_unusable_password()  # they sign in through the directory
    user.save()
    clash = f" (as {name}: {username!r} is another account's)" if name != username else ""
    audit("user.create", user, summary=f"first sign-in through {via}{clash}", after={"username": name})
    return user


def _free_username(wanted: str) -> str:
    """`wanted`, or `wanted-2`, `wanted-3`...: the first no account has, in any case."""
    users = get_user_model().objects
    wanted = wanted[:150] or "user"
    if not users.filter(username__iexact=wanted).exists():
        return wanted
    for n in range(2, 1000):
        candidate = f"{wanted[: 150 - len(str(n)) - 1]}-{n}"
        if not users.filter(username__iexact=candidate).exists():
            return candidate
    raise SignInRefused(f"no free user name like {wanted!r}; an operator can link this account (link_identity)")


def _legacy_account(username: str, via: str):
    """The account sign-in `via` this route made for `username` before identities were bound, if
    nothing says it is anyone else's (the module's docstring says what and why); else None."""
    user = get_user_model().objects.filter(username=username).first()
    if user is None or user.is_superuser or user.has_usable_password() or user.directory_identities.exists():
        return None
    trail = AuditEvent.objects.filter(object_type=_USER, object_id=str(user.pk))
    if trail.filter(action="user.identity").exists():
        return None  # bound once and unlinked since: only an operator binds it again
    made = trail.filter(action="user.create")
    if via == VIA_LDAP:
        return None if made.exists() else user
    return user if made.filter(summary=f"first sign-in through {via}").exists() else None
