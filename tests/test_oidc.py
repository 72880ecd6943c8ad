"""OpenID Connect sign-in (accounts/oidc.py) against a loopback provider that speaks the protocol:
discovery, the authorization endpoint, the token endpoint with PKCE, JWKS and RS256-signed ID
tokens (tests/oidc_provider.py). The test is the browser: it follows the redirects itself."""

import logging
import time
from io import StringIO

import httpx
import pytest
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.core.management import call_command
from django.test import Client, override_settings
from joserfc.jwk import RSAKey

from accounts import oidc
from accounts.models import DirectoryIdentity
from corpus.audit import audit
from corpus.models import AuditEvent
from tests.oidc_provider import CLIENT_ID, CLIENT_SECRET, provider


@pytest.fixture
def op(db):
    with provider() as server, override_settings(
        CAIRN_OIDC_DISCOVERY_URL=f"{server.url}/.well-known/openid-configuration", CAIRN_OIDC_CLIENT_ID=CLIENT_ID,
        CAIRN_OIDC_CLIENT_SECRET=CLIENT_SECRET, CAIRN_OIDC_CURATORS_GROUP="kb-editors", CAIRN_OIDC_NAME="Keycloak",
    ):  # fmt: skip
        oidc._metadata.clear()
        yield server


def sign_in(client: Client, *, tamper_state: bool = False):
    """The browser's round trip: Cairn -> the provider's authorization endpoint -> Cairn's callback."""
    start = client.get("/accounts/oidc/login/?next=/history")
    assert start.status_code == 302
    at_provider = httpx.get(start.url, follow_redirects=False)
    assert at_provider.status_code == 302
    callback = httpx.URL(at_provider.headers["location"])
    query = dict(callback.params)
    if tamper_state:
        query["state"] = "forged"
    return client.get(callback.path, query)


def test_an_employee_signs_in_with_the_provider_and_gets_the_groups_claim(op, finance):
    assert b"Sign in with Keycloak" in Client().get("/accounts/login/").content
    client = Client()
    response = sign_in(client)
    assert response.status_code == 302 and response.url == "/history"
    ines = User.objects.get(username="ines")
    assert client.session["_auth_user_id"] == str(ines.id) and not ines.has_usable_password()
    assert sorted(ines.groups.values_list("name", flat=True)) == ["finance", "staff"]
    assert AuditEvent.objects.filter(action="user.create", object_id=str(ines.id)).exists()
    # The provider moves her into the curators' group: the next sign-in makes her a curator.
    op.user["groups"] = ["kb-editors"]
    sign_in(Client())
    ines.refresh_from_db()
    assert ines.is_staff and sorted(ines.groups.values_list("name", flat=True)) == ["curators", "kb-editors"]
    assert (
        "removed from finance, staff"
        in AuditEvent.objects.filter(action="user.groups", object_id=str(ines.id), summary__startswith="removed")
        .latest("id")
        .summary
    )


@pytest.mark.parametrize(
    "issue, reason",
    [
        ({"exp": int(time.time()) - 60}, "not valid"),  # expired
        ({"aud": "another-app"}, "not valid"),  # meant for someone else
        ({"nonce": "replayed"}, "not valid"),  # from another sign-in
        ({"iss": "https://evil.example"}, "not valid"),
        ({"sign_with": RSAKey.generate_key(2048, parameters={"kid": "k1"}, private=True)}, "not valid"),  # forged
    ],
)
def test_a_bad_id_token_is_a_clear_refusal_a_log_line_and_no_session(op, caplog, issue, reason):
    op.issue = issue
    client = Client()
    with caplog.at_level(logging.WARNING, logger="accounts.oidc"):
        response = sign_in(client)
    assert response.status_code == 400 and reason in response.content.decode()
    assert "OpenID Connect sign-in refused" in caplog.text
    assert "_auth_user_id" not in client.session and not User.objects.filter(username="ines").exists()


def test_a_state_mismatch_or_an_unreachable_provider_is_refused_without_a_500(op, caplog):
    client = Client()
    response = sign_in(client, tamper_state=True)
    assert response.status_code == 400 and "state mismatch" in response.content.decode()
    assert "_auth_user_id" not in client.session
    with override_settings(CAIRN_OIDC_DISCOVERY_URL="http://127.0.0.1:9/.well-known/openid-configuration"):
        oidc._metadata.clear()
        down = Client().get("/accounts/oidc/login/")
    assert down.status_code == 400 and "cannot be reached" in down.content.decode()


@pytest.mark.parametrize(
    "reply, reason",
    [
        ((200, b"<html><body>Please sign in to the proxy</body></html>"), "not a JSON object (HTTP 200, text/html)"),
        ((502, b"<html><body>Bad gateway</body></html>"), "did not issue an ID token (HTTP 502)"),
        ((200, {"access_token": "at", "token_type": "Bearer"}), "did not issue an ID token (HTTP 200)"),
    ],
)
def test_a_token_endpoint_that_answers_no_id_token_is_a_clear_refusal_not_a_500(op, caplog, reply, reason):
    """Attack: an HTML page from the token endpoint (a proxy in the way) used to be a 500."""
    op.token_reply = reply
    client = Client()
    client.raise_request_exception = False
    with caplog.at_level(logging.WARNING, logger="accounts.oidc"):
        response = sign_in(client)
    assert response.status_code == 400 and reason in response.content.decode()
    assert "_auth_user_id" not in client.session and not User.objects.filter(username="ines").exists()


def test_starting_a_sign_in_writes_no_session_row(op):
    """Attack: every anonymous GET of the sign-in link used to write a session row."""
    before = Session.objects.count()
    for _ in range(5):
        assert Client().get("/accounts/oidc/login/").status_code == 302
    assert Session.objects.count() == before
    # The provider's answer, once, makes the one session; the same answer again is refused.
    client = Client()
    start = client.get("/accounts/oidc/login/")
    back = httpx.URL(httpx.get(start.url, follow_redirects=False).headers["location"])
    assert client.get(back.path, dict(back.params)).status_code == 302
    assert Session.objects.count() == before + 1
    replay = client.get(back.path, dict(back.params))
    assert replay.status_code == 400 and "already been used" in replay.content.decode()


def test_a_state_that_is_not_ascii_is_a_refusal_not_a_500(op):
    client = Client()
    client.raise_request_exception = False
    client.get("/accounts/oidc/login/")
    response = client.get("/accounts/oidc/callback/", {"state": "é", "code": "x"})
    assert response.status_code == 400 and "state mismatch" in response.content.decode()


def signed_in_as(client: Client) -> User:
    return User.objects.get(pk=client.session["_auth_user_id"])


def test_a_provider_account_never_becomes_a_local_account_of_the_same_name(op, alice, django_user_model):
    """Attack: preferred_username is the provider account's own choice, and Cairn took the local
    account of that name: `admin` at the provider was the local break-glass superuser."""
    admin = django_user_model.objects.create_superuser("admin", password="local-admin-pw-long")
    for subject, name in (("u-9", "admin"), ("u-10", "alice"), ("u-11", "ALICE")):
        op.user = {"sub": subject, "preferred_username": name, "groups": ["staff"]}
        client = Client()
        assert sign_in(client).status_code == 302
        user = signed_in_as(client)
        assert user.pk not in (admin.pk, alice.pk) and not user.is_staff and not user.is_superuser
        assert DirectoryIdentity.objects.get(user=user).subject == subject
    assert sorted(User.objects.filter(directory_identities__issuer=op.url).values_list("username", flat=True)) == [
        "ALICE-3", "admin-2", "alice-2"
    ]  # fmt: skip
    admin.refresh_from_db()
    alice.refresh_from_db()
    assert admin.is_superuser and admin.check_password("local-admin-pw-long") and not admin.groups.exists()
    assert alice.check_password("alice-pw") and list(alice.groups.values_list("name", flat=True)) == ["finance"]


def test_the_same_user_name_from_two_subjects_is_two_users_and_a_renamed_one_is_still_itself(op):
    sign_in(Client())
    ines = User.objects.get(username="ines")
    op.user = {"sub": "u-2", "preferred_username": "ines", "groups": []}
    other = Client()
    sign_in(other)
    assert signed_in_as(other).username == "ines-2"
    op.user = {"sub": "u-1", "preferred_username": "ines.b", "groups": ["staff"]}  # renamed at the provider
    again = Client()
    sign_in(again)
    assert signed_in_as(again).pk == ines.pk


def test_an_operator_links_a_provider_account_to_a_local_account(op, alice):
    call_command("link_identity", "alice", issuer=op.url, subject="u-7", stdout=StringIO())
    op.user = {"sub": "u-7", "preferred_username": "a.smith", "groups": ["finance"]}
    client = Client()
    assert sign_in(client).status_code == 302 and signed_in_as(client).pk == alice.pk


def test_accounts_provider_sign_in_made_before_identities_keep_working_and_no_others(op, django_user_model):
    def made(name: str, summary: str | None) -> User:
        user = django_user_model(username=name)
        user.set_unusable_password()
        user.save()
        if summary:
            audit("user.create", user, summary=summary)
        return user

    ines = made("ines", "first sign-in through OpenID Connect")  # as the sign-in made it before
    client = Client()
    sign_in(client)
    assert signed_in_as(client).pk == ines.pk and DirectoryIdentity.objects.get(user=ines).subject == "u-1"
    # Not one made in the admin without a password, nor one the SSO proxy made.
    for subject, name, summary in (("u-5", "gus", None), ("u-6", "hal", "first sign-in through the SSO proxy")):
        local = made(name, summary)
        op.user = {"sub": subject, "preferred_username": name, "groups": []}
        client = Client()
        sign_in(client)
        assert signed_in_as(client).username == f"{name}-2" and not local.directory_identities.exists()


def test_a_deactivated_account_cannot_sign_in_through_the_provider(op):
    sign_in(Client())
    User.objects.filter(username="ines").update(is_active=False)
    client = Client()
    response = sign_in(client)
    assert response.status_code == 400 and "deactivated" in response.content.decode()
    assert "_auth_user_id" not in client.session
