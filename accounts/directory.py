"""What a directory decides about a Cairn user, whichever way they signed in (an SSO proxy's
headers, LDAP, OpenID Connect): which user they are (accounts/identities.py), their groups, mirrored
(audited by accounts.signals), and whether they curate (membership of the directory's curators
group)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import Group
from django.contrib.auth.signals import user_logged_in
from django.db import transaction
from django.dispatch import receiver

from accounts.identities import directory_identity_user
from corpus.audit import audit

# The backend a directory user's session names: the user exists locally once synced.
SESSION_BACKEND = "django.contrib.auth.backends.ModelBackend"


def curator_role_set(user, curator: bool) -> None:
    """Put `user` in the curators group (and staff) or take them out, as the directory says; a
    superuser is left as is. Audited when it changes."""
    from corpus.services import curators_group_ensure

    if user.is_superuser:
        return
    curators = curators_group_ensure()
    member = user.groups.filter(id=curators.id).exists()
    if curator and not member:
        user.groups.add(curators)
    elif member and not curator:
        user.groups.remove(curators)
    if user.is_staff != curator:
        audit("user.staff", user, summary="curator by directory group" if curator else "no longer a curator",
              before={"is_staff": user.is_staff}, after={"is_staff": curator})  # fmt: skip
        user.is_staff = curator
        user.save(update_fields=["is_staff"])


@receiver(user_logged_in)
def ldap_curator_role(sender, request, user, **kwargs):
    """After an LDAP sign-in (django-auth-ldap mirrored the directory's groups already)."""
    ldap_user = getattr(user, "ldap_user", None)
    group = getattr(settings, "CAIRN_LDAP_CURATORS_GROUP", "")
    if ldap_user is not None and group:
        curator_role_set(user, group in ldap_user.group_names)


def group_names(values) -> list[str]:
    """A directory's group names as Django group names: stripped, at most 150 characters, each once."""
    return sorted({str(v).strip()[:150] for v in values if str(v).strip()})


@transaction.atomic
def directory_user_sync(*, issuer: str, subject: str, username: str, groups: list[str], curators_group: str, via: str):
    """The user `subject` at `issuer` signs in as (accounts/identities.py: bound to that identity,
    never found by `username`; created at first sign-in without a password, since they sign in `via`
    the directory), their groups mirroring `groups`, curators when `curators_group` is among them.
    Raises SignInRefused (a deactivated user, say) having changed nothing."""
    user, _ = directory_identity_user(issuer=issuer, subject=subject, username=username, via=via)
    wanted = set(groups) - {settings.CAIRN_CURATORS_GROUP}  # that one the directory's curators group decides
    current = set(user.groups.exclude(name=settings.CAIRN_CURATORS_GROUP).values_list("name", flat=True))
    if current - wanted:
        user.groups.remove(*user.groups.filter(name__in=current - wanted))  # audited per change (accounts.signals)
    if wanted - current:
        user.groups.add(*[Group.objects.get_or_create(name=name)[0] for name in sorted(wanted - current)])
    curator_role_set(user, bool(curators_group) and curators_group in groups)
    return user
