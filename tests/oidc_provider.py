"""A loopback OpenID Connect provider that speaks the protocol (discovery, authorization endpoint,
token endpoint with PKCE, JWKS, RS256-signed ID tokens): what a Keycloak or Entra ID would be,
for Cairn's real OIDC client to talk to over TCP. Its `issue` knobs forge the failures tests need."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import secrets
import time
from urllib.parse import urlencode

from joserfc import jwt
from joserfc.jwk import RSAKey

from tests.loopback import LoopbackServer

CLIENT_ID, CLIENT_SECRET = "cairn", "cairn-secret"


class Provider:
    def __init__(self) -> None:
        self.key = RSAKey.generate_key(2048, parameters={"kid": "k1"}, private=True)
        self.codes: dict[str, dict] = {}
        self.user = {"sub": "u-1", "preferred_username": "ines", "groups": ["finance", "staff"]}
        self.issue: dict = {}  # overrides of the ID token's claims, or {"sign_with": another key}
        self.token_reply: tuple | None = None  # (status, payload): what the token endpoint says instead
        self.url = ""

    def id_token(self, nonce: str) -> str:
        now = int(time.time())
        claims = {"iss": self.url, "aud": CLIENT_ID, "iat": now, "exp": now + 300, "nonce": nonce, **self.user}
        claims |= {k: v for k, v in self.issue.items() if k != "sign_with"}
        key = self.issue.get("sign_with", self.key)
        return jwt.encode({"alg": "RS256", "kid": "k1"}, claims, key)

    def handle(self, method: str, path: str, query: dict, form: dict | None):
        if path == "/.well-known/openid-configuration":
            return 200, {"issuer": self.url, "authorization_endpoint": f"{self.url}/authorize",
                         "token_endpoint": f"{self.url}/token", "jwks_uri": f"{self.url}/jwks",
                         "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
                         "id_token_signing_alg_values_supported": ["RS256"]}  # fmt: skip
        if path == "/jwks":
            return 200, {"keys": [self.key.as_dict(private=False)]}
        if path == "/authorize":  # the user has signed in at the provider: back to the client with a code
            assert query["client_id"] == [CLIENT_ID] and query["code_challenge_method"] == ["S256"]
            code = secrets.token_urlsafe(16)
            self.codes[code] = {"challenge": query["code_challenge"][0], "nonce": query["nonce"][0],
                                "redirect_uri": query["redirect_uri"][0]}  # fmt: skip
            target = f"{query['redirect_uri'][0]}?{urlencode({'code': code, 'state': query['state'][0]})}"
            return 302, None, {"Location": target}
        if path == "/token" and method == "POST" and self.token_reply is not None:
            return self.token_reply
        if path == "/token" and method == "POST":
            form = form or {}
            grant = self.codes.pop(form.get("code", [""])[0], None)
            verifier = form.get("code_verifier", [""])[0]
            challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            if (grant is None or challenge != grant["challenge"] or form.get("client_secret") != [CLIENT_SECRET]
                    or form.get("redirect_uri") != [grant["redirect_uri"]]):  # fmt: skip
                return 400, {"error": "invalid_grant"}
            return 200, {"access_token": "at", "token_type": "Bearer", "id_token": self.id_token(grant["nonce"])}
        return 404, {"error": "not found"}


@contextlib.contextmanager
def provider():
    op = Provider()
    server = LoopbackServer(op.handle)
    op.url = server.url  # the issuer the ID tokens name
    with server:
        yield op
