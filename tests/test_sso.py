"""Sign-in by a trusted SSO proxy's headers (accounts/sso.py): real middleware, sessions, groups,
audit rows; the proxy is the test client speaking from its address."""

import logging
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client, override_settings

from accounts.models import DirectoryIdentity
from corpus.audit import audit
from corpus.models import AuditEvent
from tests.nginx import NGINX_ADDRESS, forwarded_meta

PROXY = "10.0.0.5"
SSO = {
    "CAIRN_SSO_USER_HEADER": "X-Forwarded-User",
    "CAIRN_SSO_GROUPS_HEADER": "X-Forwarded-Groups",
    "CAIRN_SSO_TRUSTED_PROXIES": ["10.0.0.0/24"],
    "CAIRN_SSO_CURATORS_GROUP": "kb-editors",
}


def through_proxy(
    client: Client, user: str, groups: str, address: str = PROXY, path: str = "/api/v1/documents?collection=finance"
):
    return client.get(path, REMOTE_ADDR=address, HTTP_X_FORWARDED_USER=user, HTTP_X_FORWARDED_GROUPS=groups)


@override_settings(**SSO)
def test_the_proxy_signs_in_a_new_employee_with_the_directory_groups(db, finance):
    client = Client()
    response = through_proxy(client, "erin", "finance, staff")
    assert response.status_code == 200
    erin = User.objects.get(username="erin")
    assert not erin.has_usable_password() and not erin.is_staff
    assert sorted(erin.groups.values_list("name", flat=True)) == ["finance", "staff"]
    assert "Travel expense policy" in [d["title"] for d in response.json()["results"]]  # finance reads finance
    assert AuditEvent.objects.filter(action="user.create", object_id=str(erin.id)).exists()
    assert AuditEvent.objects.filter(action="user.groups", object_id=str(erin.id)).exists()
    # The session holds: the same identity again is no new sign-in.
    before = AuditEvent.objects.count()
    assert through_proxy(client, "erin", "staff,finance").status_code == 200
    assert AuditEvent.objects.count() == before
    # The directory removes her from finance: the next request mirrors it, audited, and she no longer reads it.
    response = through_proxy(client, "erin", "staff")
    assert "Travel expense policy" not in [d["title"] for d in response.json()["results"]]
    assert list(erin.groups.values_list("name", flat=True)) == ["staff"]
    removed = AuditEvent.objects.filter(action="user.groups", object_id=str(erin.id)).latest("id")
    assert "removed from finance" in removed.summary


@override_settings(**SSO)
def test_a_directory_group_makes_curators_and_losing_it_unmakes_them(db):
    client = Client()
    through_proxy(client, "frank", "kb-editors")
    frank = User.objects.get(username="frank")
    assert frank.is_staff and frank.groups.filter(name="curators").exists()
    through_proxy(Client(), "frank", "staff")
    frank.refresh_from_db()
    assert not frank.is_staff and not frank.groups.filter(name="curators").exists()
    assert AuditEvent.objects.filter(action="user.staff", object_id=str(frank.id)).count() == 2


@override_settings(**SSO)
def test_a_forged_header_from_elsewhere_is_refused_and_logged_without_a_session(db, caplog):
    client = Client()
    with caplog.at_level(logging.WARNING, logger="accounts.sso"):
        response = through_proxy(client, "root", "kb-editors", address="203.0.113.9")
    assert response.status_code == 403 and b"only from the sign-in proxy" in response.content
    assert "203.0.113.9" in caplog.text and "not a trusted SSO proxy" in caplog.text
    assert not User.objects.filter(username="root").exists() and "sessionid" not in client.cookies
    # A malformed name from the proxy itself: a clear 400, no user.
    assert through_proxy(Client(), "bad name; DROP", "").status_code == 400
    assert not User.objects.filter(username__startswith="bad").exists()


@override_settings(**SSO | {"CAIRN_SSO_TRUSTED_PROXIES": [NGINX_ADDRESS]})
def test_through_the_shipped_proxy_a_client_cannot_name_itself(db, bob):
    """Attack: with nginx itself the trusted SSO proxy (auth_request), the identity headers a client
    sent used to pass through deploy/nginx.conf untouched."""
    client = Client()
    sent = {"X-Forwarded-User": "bob", "X-Forwarded-Groups": "kb-editors"}
    response = client.get("/", **forwarded_meta("198.51.100.7", sent))
    assert response.status_code == 302 and response.url.startswith("/accounts/login/")
    assert "_auth_user_id" not in client.session


@override_settings(**SSO)
def test_when_the_proxy_names_someone_else_the_session_changes_hands(db):
    client = Client()
    through_proxy(client, "gina", "staff")
    assert through_proxy(client, "hugo", "staff").status_code == 200
    assert client.session["_auth_user_id"] == str(User.objects.get(username="hugo").id)


def signed_in_as(client: Client) -> User:
    return User.objects.get(pk=client.session["_auth_user_id"])


@override_settings(**SSO)
def test_the_proxy_never_signs_in_as_a_local_account_of_the_same_name(db, alice, django_user_model):
    """Attack: the proxy's `admin` used to be Cairn's local break-glass superuser, and its `alice` the
    local reader alice, by name alone."""
    admin = django_user_model.objects.create_superuser("admin", password="local-admin-pw-long")
    for name in ("admin", "alice"):
        client = Client()
        assert through_proxy(client, name, "staff", path="/").status_code == 200
        user = signed_in_as(client)
        assert user.username == f"{name}-2" and not user.is_staff and not user.is_superuser
        assert DirectoryIdentity.objects.get(user=user).subject == name
    admin.refresh_from_db()
    alice.refresh_from_db()
    assert admin.is_superuser and admin.check_password("local-admin-pw-long") and not admin.groups.exists()
    assert alice.check_password("alice-pw") and list(alice.groups.values_list("name", flat=True)) == ["finance"]
    # A session the password form made for the local alice is not the proxy's alice.
    client = Client()
    client.force_login(alice)
    through_proxy(client, "alice", "staff", path="/")
    assert signed_in_as(client).username == "alice-2"


@override_settings(**SSO)
def test_an_operator_links_and_unlinks_the_proxys_name_and_a_local_account(db, alice, charlie):
    out = StringIO()
    call_command("link_identity", "alice", issuer="sso-header", subject="alice", stdout=out)
    assert "now signs in as alice" in out.getvalue() and "sso-header alice" in out.getvalue()
    client = Client()
    through_proxy(client, "alice", "finance", path="/")
    assert signed_in_as(client).pk == alice.pk
    event = AuditEvent.objects.filter(action="user.identity", object_id=str(alice.pk)).earliest("id")
    assert "linked by an operator" in event.summary and event.actor_name == "system"
    superuser = Client()
    superuser.force_login(User.objects.create_superuser("root", password="root-pw-long-enough"))
    listed = superuser.get("/admin/accounts/directoryidentity/")
    assert listed.status_code == 200 and b"sso-header" in listed.content  # shown, read-only
    with pytest.raises(CommandError, match="already signs in as alice"):
        call_command("link_identity", "charlie", issuer="sso-header", subject="alice")
    call_command("link_identity", "alice", issuer="sso-header", subject="alice", unlink=True, stdout=StringIO())
    client = Client()
    through_proxy(client, "alice", "finance", path="/")
    assert signed_in_as(client).username == "alice-2"  # unlinked: never adopted again by name
    with pytest.raises(CommandError, match="no account 'nobody'"):
        call_command("link_identity", "nobody", issuer="ldap", subject="uid=x")


@override_settings(**SSO)
def test_an_account_the_proxy_made_before_identities_keeps_working(db, django_user_model):
    erin = django_user_model(username="erin")
    erin.set_unusable_password()
    erin.save()
    audit("user.create", erin, summary="first sign-in through the SSO proxy")
    client = Client()
    through_proxy(client, "erin", "staff")
    assert signed_in_as(client).pk == erin.pk


@override_settings(**SSO)
def test_a_deactivated_user_is_refused_on_pages_as_by_the_api(db):
    """Attack: login() takes an inactive user, so the proxy's header signed a deactivated employee in
    to every page (the API alone refused them)."""
    client = Client()
    assert through_proxy(client, "erin", "staff", path="/").status_code == 200
    User.objects.filter(username="erin").update(is_active=False)
    for browser in (client, Client()):  # signed in before, and anew
        response = through_proxy(browser, "erin", "staff", path="/")
        assert response.status_code == 403 and b"deactivated" in response.content
        assert "_auth_user_id" not in browser.session
    assert through_proxy(Client(), "erin", "staff").status_code == 403


def test_without_the_setting_the_header_means_nothing(db, charlie):
    response = through_proxy(Client(), "charlie", "finance")
    assert response.status_code in (401, 403)  # not signed in: the API asks for credentials
    assert not charlie.groups.exists()


def test_the_header_without_trusted_proxies_is_a_configuration_error():
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        env={"DJANGO_SETTINGS_MODULE": "config.settings", "CAIRN_SSO_USER_HEADER": "X-Forwarded-User",
             "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, cwd=str(__import__("pathlib").Path(__file__).parent.parent),
    )  # fmt: skip
    assert run.returncode != 0 and "CAIRN_SSO_TRUSTED_PROXIES must name the proxy" in run.stderr


@pytest.fixture(autouse=True)
def _no_throttle(settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_CLASSES": []}
