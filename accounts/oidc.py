"""Sign-in with an OpenID Connect provider (Keycloak, Entra ID, Okta, Google): the authorization
code flow with PKCE (S256). The provider is found by discovery (CAIRN_OIDC_DISCOVERY_URL); the ID
token's signature is checked against the provider's JWKS and its issuer, audience, expiry and nonce
against what this sign-in expects (joserfc). The user's groups come from a configurable claim
(CAIRN_OIDC_GROUPS_CLAIM) and are mirrored as a directory's are (accounts/directory.py).

Anything wrong (a state that does not match, the provider's refusal, an expired, forged or
misaddressed token, the provider unreachable) is a 400 page that says what, a log line, and no
session."""

from __future__ import annotations

import base64
import hashlib
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

log = logging.getLogger(__name__)

SESSION_KEY = "cairn_oidc"
METADATA_TTL = 3600.0  # seconds a provider's discovery document is reused
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
        document = httpx.get(url, timeout=10).raise_for_status().json()
    except (httpx.HTTPError, ValueError) as exc:
        raise SignInError(f"the sign-in provider cannot be reached ({type(exc).__name__})") from exc
    _metadata[url] = (time.monotonic(), document)
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
               "next": request.GET.get("next", "")}  # fmt: skip
    request.session[SESSION_KEY] = pending
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = urlencode({
        "response_type": "code", "client_id": settings.CAIRN_OIDC_CLIENT_ID, "redirect_uri": _callback_url(request),
        "scope": settings.CAIRN_OIDC_SCOPES, "state": pending["state"], "nonce": pending["nonce"],
        "code_challenge": challenge, "code_challenge_method": "S256",
    })  # fmt: skip
    return redirect(f"{metadata['authorization_endpoint']}?{query}")


@require_GET
def oidc_callback(request):
    """The provider's answer: check it, exchange the code, check the ID token, sign the user in."""
    pending = request.session.pop(SESSION_KEY, None)
    try:
        if pending is None or not secrets.compare_digest(request.GET.get("state", ""), pending["state"]):
            raise SignInError("this sign-in was not started here or has already been used (state mismatch)")
        if "error" in request.GET:
            raise SignInError(f"the provider refused: {request.GET['error']}")
        claims = id_token_claims(request, request.GET.get("code", ""), pending)
        username = str(claims.get(settings.CAIRN_OIDC_USERNAME_CLAIM) or "")[:150]
        if not username:
            raise SignInError(f"the ID token has no {settings.CAIRN_OIDC_USERNAME_CLAIM!r} claim")
    except SignInError as exc:
        return _refused(request, exc)
    claimed = claims.get(settings.CAIRN_OIDC_GROUPS_CLAIM) or []
    groups = group_names(claimed if isinstance(claimed, list) else [claimed])
    user = directory_user_sync(username, groups, curators_group=settings.CAIRN_OIDC_CURATORS_GROUP,
                               via="OpenID Connect")  # fmt: skip
    login(request, user, backend=SESSION_BACKEND)
    log.info("signed in %s through OpenID Connect", username)
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
        keys = httpx.get(metadata["jwks_uri"], timeout=10).raise_for_status().json()
    except httpx.HTTPError as exc:
        raise SignInError(f"the sign-in provider cannot be reached ({type(exc).__name__})") from exc
    if response.status_code != 200 or "id_token" not in response.json():
        raise SignInError(f"the provider did not issue an ID token (HTTP {response.status_code})")
    try:
        token = jwt.decode(response.json()["id_token"], KeySet.import_key_set(keys), algorithms=["RS256", "ES256"])
        jwt.JWTClaimsRegistry(
            iss={"essential": True, "value": metadata["issuer"]},
            aud={"essential": True, "value": settings.CAIRN_OIDC_CLIENT_ID},
            exp={"essential": True},
            nonce={"essential": True, "value": pending["nonce"]},
        ).validate(token.claims)
    except (JoseError, ValueError) as exc:
        raise SignInError(f"the ID token is not valid: {exc}") from exc
    return token.claims


def _refused(request, error: SignInError):
    log.warning("OpenID Connect sign-in refused from %s: %s", client_address(request), error)
    return HttpResponseBadRequest(f"Sign-in failed: {error}.", content_type="text/plain; charset=utf-8")
