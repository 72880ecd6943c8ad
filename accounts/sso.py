"""Sign-in by a single-sign-on proxy's trusted headers (oauth2-proxy, Authelia, Keycloak's
gatekeeper, Apache mod_auth_mellon...): the proxy authenticates the employee against the
directory and passes who they are (CAIRN_SSO_USER_HEADER) and their directory groups
(CAIRN_SSO_GROUPS_HEADER, comma-separated) on every request.

The headers are believed only from the proxy's own addresses (CAIRN_SSO_TRUSTED_PROXIES): from
anywhere else a request carrying them is refused (403) and logged, never signed in. The header's
value is a directory identity ("sso-header", the value), bound to its own Cairn user
(accounts/identities.py), never to a local account of the same name unless an operator links them;
the user is created on first sign-in (no password: they sign in through the proxy), and a
deactivated one is refused (403). Their groups mirror the directory's at every sign-in and whenever
the proxy reports a change (each change audited by accounts.signals), so group membership, which
decides what a reader may read, is kept in one place. Members of CAIRN_SSO_CURATORS_GROUP also become curators (staff, in the curators group).
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib.auth import login, logout
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.http import HttpResponseBadRequest, HttpResponseForbidden

from accounts.addresses import address_in
from accounts.directory import SESSION_BACKEND, directory_user_sync, group_names
from accounts.identities import SSO_HEADER, VIA_SSO, SignInRefused

log = logging.getLogger(__name__)

_SESSION_GROUPS = "cairn_sso_groups"
_SESSION_SUBJECT = "cairn_sso_subject"  # the header's value this session was signed in for


def _meta_key(header: str) -> str:
    return "HTTP_" + header.upper().replace("-", "_")


def trusted(address: str) -> bool:
    return address_in(address, settings.CAIRN_SSO_TRUSTED_PROXIES)


class TrustedHeaderMiddleware:
    """After AuthenticationMiddleware: sign in the user the trusted proxy names (off while
    CAIRN_SSO_USER_HEADER is empty)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        header = settings.CAIRN_SSO_USER_HEADER
        if not header or _meta_key(header) not in request.META:
            return self.get_response(request)
        address = request.META.get("REMOTE_ADDR", "")
        if not trusted(address):
            log.warning("refused %s from %s: not a trusted SSO proxy (CAIRN_SSO_TRUSTED_PROXIES)", header, address)
            return HttpResponseForbidden(f"{header} is accepted only from the sign-in proxy.")
        username = request.META[_meta_key(header)].strip()
        try:
            if not username or len(username) > 150:
                raise ValidationError("empty or longer than 150 characters")
            UnicodeUsernameValidator()(username)
        except ValidationError as exc:
            log.warning("refused %s %r from %s: %s", header, username[:200], address, "; ".join(exc.messages))
            return HttpResponseBadRequest(f"{header}: not a valid user name.")
        groups = group_names(request.META.get(_meta_key(settings.CAIRN_SSO_GROUPS_HEADER), "").split(","))
        # Signed in by the proxy as this very identity; a session the password form made for an
        # account of the same name is not (that would make the header a way into local accounts).
        signed_in = request.user.is_authenticated and request.session.get(_SESSION_SUBJECT) == username
        if not signed_in or request.session.get(_SESSION_GROUPS) != groups:
            if request.user.is_authenticated and not signed_in:
                logout(request)  # the proxy now names someone else
            try:
                user = directory_user_sync(
                    issuer=SSO_HEADER, subject=username, username=username, groups=groups,
                    curators_group=settings.CAIRN_SSO_CURATORS_GROUP, via=VIA_SSO,
                )  # fmt: skip
            except SignInRefused as exc:
                # A deactivated user: login() would take them, and the pages would serve them.
                logout(request)
                log.warning("refused %s %r from %s: %s", header, username, address, exc)
                return HttpResponseForbidden(f"Sign-in refused: {exc}.", content_type="text/plain; charset=utf-8")
            if not signed_in:
                login(request, user, backend=SESSION_BACKEND)
                request.session[_SESSION_SUBJECT] = username
                log.info("signed in %s as %s through the SSO proxy at %s", username, user.get_username(), address)
            request.user = user
            request.session[_SESSION_GROUPS] = groups
        return self.get_response(request)
