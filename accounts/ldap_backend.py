"""LDAP / Active Directory sign-in: django-auth-ldap, with the directory entry bound to its own Cairn
user as every directory identity is (accounts/identities.py: "ldap" and the entry's DN).

django-auth-ldap on its own finds the Django user whose name matches the typed one, case-insensitively,
so a directory entry called `admin` signed in as Cairn's local break-glass superuser `admin`.
Settings name this backend (CAIRN_LDAP_URI puts it in AUTHENTICATION_BACKENDS); config/settings.py
refuses django-auth-ldap's own."""

from __future__ import annotations

import logging

from django_auth_ldap.backend import LDAPBackend

from accounts.identities import LDAP, VIA_LDAP, SignInRefused, directory_identity_user

log = logging.getLogger(__name__)


class DirectoryLDAPBackend(LDAPBackend):
    def get_or_build_user(self, username, ldap_user):
        """The user the entry `ldap_user.dn` signs in as, made (and bound) at its first sign-in.
        django-auth-ldap then fills in names and e-mail and mirrors the directory's groups."""
        try:
            return directory_identity_user(issuer=LDAP, subject=ldap_user.dn, username=username.lower(), via=VIA_LDAP)
        except SignInRefused as exc:
            log.warning("LDAP sign-in of %s refused: %s", ldap_user.dn, exc)
            raise ldap_user.AuthenticationFailed(str(exc)) from exc

    def get_user(self, user_id):
        # django-auth-ldap's keeps a deactivated user's session alive; Django's ModelBackend does not.
        user = super().get_user(user_id)
        return user if user is not None and user.is_active else None
