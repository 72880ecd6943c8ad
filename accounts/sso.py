"""Sign-in by a single-sign-on proxy's trusted headers (oauth2-proxy, Authelia, Keycloak's
gatekeeper, Apache mod_auth_mellon...): the proxy authenticates the employee against the
directory and passes who they are (CAIRN_SSO_USER_HEADER) and their directory groups
(CAIRN_SSO_GROUPS_HEADER, comma-separated) on every request.

The headers are believed only from the proxy's own addresses (CAIRN_SSO_TRUSTED_PROXIES): from
anywhere else a request carrying them is refused (403) and logged, never signed in. A user is
created on first sign-in (no password: they sign in through the proxy); their groups mirror the
directory's at every sign-in and whenever the proxy reports a change (each change audited by
accounts.signals), so group membership, which decides what a reader may read, is kept in one
place. Members of CAIRN_SSO_CURATORS_GROUP also become curators (staff, in the curators group).
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

log = logging.getLogger(__name__)

_SESSION_GROUPS = "cairn_sso_groups"


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
        signed_in = request.user.is_authenticated and request.user.get_username() == username
        if not signed_in or request.session.get(_SESSION_GROUPS) != groups:
            if request.user.is_authenticated and not signed_in:
                logout(request)  # the proxy now names someone else
            user = directory_user_sync(username, groups, curators_group=settings.CAIRN_SSO_CURATORS_GROUP,
                                       via="the SSO proxy")  # fmt: skip
            if not signed_in:
                login(request, user, backend=SESSION_BACKEND)
                log.info("signed in %s through the SSO proxy at %s", username, address)
            request.user = user
            request.session[_SESSION_GROUPS] = groups
        return self.get_response(request)
