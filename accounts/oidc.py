"""Sign-in with an OpenID Connect provider (Keycloak, Entra ID, Okta, Google): the authorization
code flow with PKCE (S256). The provider is found by discovery (CAIRN_OIDC_DISCOVERY_URL); the ID
token's signature is checked against the provider's JWKS and its issuer, audience, expiry and nonce
against what this sign-in expects (joserfc). The ID token's issuer and subject (iss, sub) say which
Cairn user signs in (accounts/identities.py); the username claim only names a new one. The user's
groups come from a configurable claim (CAIRN_OIDC_GROUPS_CLAIM) and are mirrored as a directory's
are (accounts/directory.py).

Anything wrong (a state that does not match, the provider's refusal, an expired, forged or
misaddressed token, the provider unreachable or answering something that is not what the protocol
says) is a 400 page that says what, a log line, and no session.

A sign-in in progress (its state, nonce and PKCE verifier) waits in a signed, short-lived cookie
rather than in the session: starting a sign-in is an anonymous GET, and a session row for each one
would let anyone fill the sessions table. The session is made once the provider has answered."""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import secrets
import time

import httpx
from django.conf import settings
from django.contrib.auth import login
from django.http import HttpResponseBadRequest
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme, urlencode
from django.views.decorators.http import require_GET

from accounts.addresses import client_address
from accounts.directory import SESSION_BACKEND, directory_user_sync, group_names
from accounts.identities import VIA_OIDC, SignInRefused

log = logging.getLogger(__name__)

PENDING_COOKIE = "cairn_oidc"
PENDING_SALT = "accounts.oidc.pending"
PENDING_SECONDS = 600  # the person has this long at the provider to finish signing in
METADATA_TTL = 3600.0  # seconds a provider's discovery document is reused
_ENDPOINTS = ("issuer", "authorization_endpoint", "token_endpoint", "jwks_uri")
_metadata: dict[str, tuple[float, dict]] = {}


class SignInError(Exception):
    """Why an OpenID Connect sign-in is refused, in words for the person signing in."""


def provider_metadata() -> dict:
    """The provider's discovery document (cached for METADATA_TTL)."""
    url = settings.CAIRN_OIDC_DISCOVERY_URL
    cached = _metadata.get(url)
    if cached and time.monotonic() - cached[0] < METADATA_TTL:
        return cached[1]
    try:
        document = _json(httpx.get(url, timeout=10).raise_for_status(), "discovery document")
    except httpx.HTTPError as exc:
        raise SignInError(f"the sign-in provider cannot be reached ({type(exc).__name__})") from exc
    missing = [name for name in _ENDPOINTS if not isinstance(document.get(name), str)]
    if missing:
        raise SignInError(f"the provider's discovery document has no {', '.join(missing)}")
    _metadata[url] = (time.monotonic(), document)
    return document


def _json(response: httpx.Response, what: str) -> dict:
    """The JSON object the provider answered with, or a refusal that says what came instead."""
    try:
        document = response.json()
    except ValueError:
        document = None
    if not isinstance(document, dict):
        kind = response.headers.get("content-type", "no content type").split(";")[0]
        raise SignInError(f"the provider's {what} is not a JSON object (HTTP {response.status_code}, {kind})")
    return document


def _callback_url(request) -> str:
    return request.build_absolute_uri(reverse("oidc-callback"))


@require_GET
def oidc_login(request):
    """Send the browser to the provider, remembering this sign-in's state, nonce and PKCE verifier."""
    try:
        metadata = provider_metadata()
    except SignInError as exc:
        return _refused(request, exc)
    verifier = secrets.token_urlsafe(64)
    pending = {"state": secrets.token_urlsafe(32), "nonce": secrets.token_urlsafe(32), "verifier": verifier,
               "next": request.GET.get("next", "")[:2000]}  # fmt: skip
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = urlencode({
        "response_type": "code", "client_id": settings.CAIRN_OIDC_CLIENT_ID, "redirect_uri": _callback_url(request),
        "scope": settings.CAIRN_OIDC_SCOPES, "state": pending["state"], "nonce": pending["nonce"],
        "code_challenge": challenge, "code_challenge_method": "S256",
    })  # fmt: skip
    response = redirect(f"{metadata['authorization_endpoint']}?{query}")
    # Lax: the provider sends the browser back with a top-level GET, which carries it.
    response.set_signed_cookie(PENDING_COOKIE, json.dumps(pending), salt=PENDING_SALT, max_age=PENDING_SECONDS,
                               path=reverse("oidc-callback"), secure=settings.SESSION_COOKIE_SECURE, httponly=True,
                               samesite="Lax")  # fmt: skip
    return response


def _pending(request) -> dict | None:
    """The sign-in this browser started here, if its cookie is ours, whole and recent."""
    raw = request.get_signed_cookie(PENDING_COOKIE, default=None, salt=PENDING_SALT, max_age=PENDING_SECONDS)
    try:
        pending = json.loads(raw) if raw else None
    except ValueError:
        return None
    fields = ("state", "nonce", "verifier", "next")
    return pending if isinstance(pending, dict) and all(isinstance(pending.get(f), str) for f in fields) else None


@require_GET
def oidc_callback(request):
    """The provider's answer: check it, exchange the code, check the ID token, sign the user in."""
    response = _callback(request, _pending(request))
    response.delete_cookie(PENDING_COOKIE, path=reverse("oidc-callback"), samesite="Lax")  # used once, either way
    return response


def _callback(request, pending: dict | None):
    try:
        state = request.GET.get("state", "").encode()  # bytes: compare_digest refuses non-ASCII text with a 500
        if pending is None or not secrets.compare_digest(state, pending["state"].encode()):
            raise SignInError("this sign-in was not started here or has already been used (state mismatch)")
        if "error" in request.GET:
            raise SignInError(f"the provider refused: {request.GET['error']}")
        claims = id_token_claims(request, request.GET.get("code", ""), pending)
        username = str(claims.get(settings.CAIRN_OIDC_USERNAME_CLAIM) or "")[:150]
        if not username:
            raise SignInError(f"the ID token has no {settings.CAIRN_OIDC_USERNAME_CLAIM!r} claim")
        # Who signs in is the provider's (iss, sub): the user name is only what their account is
        # called, and the provider may let anyone choose it (accounts/identities.py).
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject:
            raise SignInError("the ID token has no 'sub' claim")
        claimed = claims.get(settings.CAIRN_OIDC_GROUPS_CLAIM) or []
        groups = group_names(claimed if isinstance(claimed, list) else [claimed])
        user = directory_user_sync(issuer=claims["iss"], subject=subject, username=username, groups=groups,
                                   curators_group=settings.CAIRN_OIDC_CURATORS_GROUP, via=VIA_OIDC)  # fmt: skip
    except (SignInError, SignInRefused) as exc:
        return _refused(request, exc)
    login(request, user, backend=SESSION_BACKEND)
    log.info("signed in %s (%s) as %s through OpenID Connect", username, subject, user.get_username())
    target = pending["next"]
    safe = url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return redirect(target if target and safe else settings.LOGIN_REDIRECT_URL)


def id_token_claims(request, code: str, pending: dict) -> dict:
    """Exchange `code` (with the PKCE verifier) and return the checked ID token's claims."""
    from joserfc import jwt
    from joserfc.errors import JoseError
    from joserfc.jwk import KeySet

    metadata = provider_metadata()
    try:
        response = httpx.post(metadata["token_endpoint"], timeout=10, data={
            "grant_type": "authorization_code", "code": code, "redirect_uri": _callback_url(request),
            "client_id": settings.CAIRN_OIDC_CLIENT_ID, "client_secret": settings.CAIRN_OIDC_CLIENT_SECRET,
            "code_verifier": pending["verifier"],
        })  # fmt: skip
        if response.status_code != 200:
            raise SignInError(f"the provider did not issue an ID token (HTTP {response.status_code})")
        id_token = _json(response, "token response").get("id_token")
        keys = _json(httpx.get(metadata["jwks_uri"], timeout=10).raise_for_status(), "key set")
    except httpx.HTTPError as exc:
        raise SignInError(f"the sign-in provider cannot be reached ({type(exc).__name__})") from exc
    if not isinstance(id_token, str):
        raise SignInError(f"the provider did not issue an ID token (HTTP {response.status_code})")
    try:
        token = jwt.decode(id_token, KeySet.import_key_set(keys), algorithms=["RS256", "ES256"])
        jwt.JWTClaimsRegistry(
            iss={"essential": True, "value": metadata["issuer"]},
            aud={"essential": True, "value": settings.CAIRN_OIDC_CLIENT_ID},
            exp={"essential": True},
            nonce={"essential": True, "value": pending["nonce"]},
        ).validate(token.claims)
    except (JoseError, ValueError, KeyError, TypeError) as exc:  # a malformed key set raises the last two
        raise SignInError(f"the ID token is not valid: {exc}") from exc
    return token.claims


def _refused(request, error: Exception):
    log.warning("OpenID Connect sign-in refused from %s: %s", client_address(request), error)
    return HttpResponseBadRequest(f"Sign-in failed: {error}.", content_type="text/plain; charset=utf-8")
