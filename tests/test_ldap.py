"""LDAP sign-in (django-auth-ldap) against a real OpenLDAP: Debian's slapd, started per test on
loopback with a throwaway directory (tests/ldap_server.py). Sign-in goes through Cairn's own
sign-in page, as a person's would."""

import logging
import shutil
from pathlib import Path

import pytest

# Run where the directory can be: python-ldap (requirements-ldap.txt, built against OpenLDAP's
# headers) and Debian's slapd, both of which .ci/run installs.
pytest.importorskip("ldap", reason="python-ldap is not installed (requirements-ldap.txt)")
if not (shutil.which("slapd") or Path("/usr/sbin/slapd").exists()):
    pytest.skip("slapd is not installed (apt-get install slapd ldap-utils)", allow_module_level=True)
from django.contrib.auth.models import User
from django.test import Client, override_settings

from config.ldap import ldap_settings
from corpus.models import AuditEvent
from tests.ldap_server import ADMIN_DN, ADMIN_PASSWORD, BASE, slapd

BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django_auth_ldap.backend.LDAPBackend",
    "django.contrib.auth.backends.ModelBackend",
]


@pytest.fixture
def directory(tmp_path, db):
    with slapd(tmp_path) as server:
        configured = ldap_settings(
            uri=server.uri, bind_dn=ADMIN_DN, bind_password=ADMIN_PASSWORD, user_base=f"ou=people,{BASE}",
            group_base=f"ou=groups,{BASE}", curators_group="kb-editors", keep_groups=("curators",),
        )  # fmt: skip
        with override_settings(AUTHENTICATION_BACKENDS=BACKENDS, **configured):
            yield server


def sign_in(client: Client, username: str, password: str):
    return client.post("/accounts/login/", {"username": username, "password": password})


def test_a_directory_user_signs_in_with_groups_mirrored_and_audited(directory, finance):
    client = Client()
    response = sign_in(client, "erin", "erin-pw")
    assert response.status_code == 302 and "_auth_user_id" in client.session
    erin = User.objects.get(username="erin")
    assert (erin.first_name, erin.email, erin.is_staff) == ("Erin", "erin@example.org", False)
    assert sorted(erin.groups.values_list("name", flat=True)) == ["finance", "staff"]
    assert AuditEvent.objects.filter(action="user.groups", object_id=str(erin.id)).exists()
    documents = client.get("/api/v1/documents?collection=finance").json()["results"]
    assert [d["title"] for d in documents] == ["Travel expense policy"]  # finance in the directory: reads finance
    # The directory drops her from finance: at her next sign-in Cairn follows, audited.
    directory.modify(f"dn: cn=finance,ou=groups,{BASE}\nchangetype: modify\nreplace: member\n"
                     f"member: uid=frank,ou=people,{BASE}\n")  # fmt: skip
    assert sign_in(Client(), "erin", "erin-pw").status_code == 302
    assert list(erin.groups.values_list("name", flat=True)) == ["staff"]
    assert (
        "removed from finance"
        in AuditEvent.objects.filter(action="user.groups", object_id=str(erin.id)).latest("id").summary
    )


def test_the_directory_curators_group_makes_curators(directory):
    assert sign_in(Client(), "frank", "frank-pw").status_code == 302
    frank = User.objects.get(username="frank")
    assert frank.is_staff and sorted(frank.groups.values_list("name", flat=True)) == ["curators", "kb-editors", "staff"]
    assert AuditEvent.objects.filter(action="user.staff", object_id=str(frank.id)).exists()


def test_a_wrong_password_or_an_unknown_user_is_a_clear_refusal_and_no_session(directory):
    for username, password in (("erin", "wrong"), ("nobody", "erin-pw")):
        client = Client()
        response = sign_in(client, username, password)
        assert response.status_code == 200 and b"correct username and password" in response.content
        assert "_auth_user_id" not in client.session
    assert not User.objects.filter(username="nobody").exists()


def test_a_directory_that_is_down_is_a_refusal_and_a_log_line_not_a_500(directory, caplog):
    directory_uri = "ldap://127.0.0.1:9"  # nothing listens there
    with override_settings(AUTH_LDAP_SERVER_URI=directory_uri), caplog.at_level(logging.WARNING):
        client = Client()
        response = sign_in(client, "erin", "erin-pw")
    assert response.status_code == 200 and "_auth_user_id" not in client.session
    assert "Caught LDAPError" in caplog.text or "LDAP" in caplog.text
