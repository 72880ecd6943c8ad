"""What a directory decides about a Cairn user, whichever way they signed in (an SSO proxy's
headers, LDAP): their groups are mirrored (audited by accounts.signals), and membership of the
directory's curators group makes them curators."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.signals import user_logged_in
from django.dispatch import receiver

from corpus.audit import audit


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
