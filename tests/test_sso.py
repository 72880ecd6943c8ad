"""Sign-in by a trusted SSO proxy's headers (accounts/sso.py): real middleware, sessions, groups,
audit rows; the proxy is the test client speaking from its address."""

import logging

import pytest
from django.contrib.auth.models import User
from django.test import Client, override_settings

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
