"""LDAP sign-in (django-auth-ldap) against a real OpenLDAP: Debian's slapd, started per test on
loopback with a throwaway directory (tests/ldap_server.py). Sign-in goes through Cairn's own
sign-in page, as a person's would."""

import logging
import shutil
from io import StringIO
from pathlib import Path

import pytest

# Run where the directory can be: python-ldap (requirements-ldap.txt, built against OpenLDAP's
# headers) and Debian's slapd, both of which .ci/run installs.
pytest.importorskip(
    "ldap", reason="python-ldap is not installed: apt-get install libldap2-dev libsasl2-dev, then make venv"
)
if not (shutil.which("slapd") or Path("/usr/sbin/slapd").exists()):
    pytest.skip("slapd is not installed (apt-get install slapd ldap-utils)", allow_module_level=True)
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client, override_settings

from accounts.models import DirectoryIdentity
from config.ldap import ldap_settings
from corpus.models import AuditEvent
from tests.ldap_server import ADMIN_DN, ADMIN_PASSWORD, BASE, slapd

LDAP_BACKEND = "accounts.ldap_backend.DirectoryLDAPBackend"  # what CAIRN_LDAP_URI puts in the settings
BACKENDS = ["axes.backends.AxesStandaloneBackend", LDAP_BACKEND, "django.contrib.auth.backends.ModelBackend"]


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


def ldap_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "django_auth_ldap" and r.levelno >= logging.WARNING]


def test_a_directory_that_is_down_is_a_refusal_and_a_log_line_not_a_500(directory, caplog):
    with caplog.at_level(logging.WARNING):  # a wrong password: the directory answered, nothing to log
        assert sign_in(Client(), "erin", "wrong").status_code == 200
    assert ldap_warnings(caplog) == []
    directory_uri = "ldap://127.0.0.1:9"  # nothing listens there
    with override_settings(AUTH_LDAP_SERVER_URI=directory_uri), caplog.at_level(logging.WARNING):
        client = Client()
        response = sign_in(client, "erin", "erin-pw")
    assert response.status_code == 200 and "_auth_user_id" not in client.session
    assert b"correct username and password" in response.content  # the reader sees a refusal
    # The operator's log says the directory could not be reached (not that a password was wrong:
    # python-ldap's INVALID_CREDENTIALS), from the service account's bind that looks the user up.
    (warning,) = ldap_warnings(caplog)
    assert warning.startswith("Caught LDAPError looking up user: SERVER_DOWN(")
    assert "Can't contact LDAP server" in warning


def signed_in_as(client: Client) -> User:
    return User.objects.get(pk=client.session["_auth_user_id"])


def test_a_directory_entry_never_becomes_a_local_account_of_the_same_name(directory, alice, django_user_model):
    """Attack: django-auth-ldap took the Django user whose name matched, so the directory's `admin`
    signed in as Cairn's local break-glass superuser, and its `alice` as the local reader alice."""
    admin = django_user_model.objects.create_superuser("admin", password="local-admin-pw-long")
    for name in ("admin", "alice"):
        client = Client()
        assert sign_in(client, name, f"{name}-dir-pw").status_code == 302
        user = signed_in_as(client)
        assert user.username == f"{name}-2" and not user.is_staff and not user.is_superuser
        assert DirectoryIdentity.objects.get(user=user).subject == f"uid={name},ou=people,{BASE}"
        assert AuditEvent.objects.filter(action="user.create", object_id=str(user.pk)).exists()
        again = Client()  # and it is theirs from now on
        sign_in(again, name, f"{name}-dir-pw")
        assert signed_in_as(again).pk == user.pk
    admin.refresh_from_db()
    alice.refresh_from_db()
    assert admin.is_superuser and admin.check_password("local-admin-pw-long") and not admin.groups.exists()
    assert alice.check_password("alice-pw") and list(alice.groups.values_list("name", flat=True)) == ["finance"]
    assert alice.first_name == "" and not alice.directory_identities.exists()
    local = Client()  # the local accounts still sign in with their own passwords
    assert sign_in(local, "admin", "local-admin-pw-long").status_code == 302 and signed_in_as(local).pk == admin.pk


def test_an_operator_links_a_directory_entry_to_a_local_account(directory, alice):
    out = StringIO()
    call_command("link_identity", "alice", issuer="ldap", subject=f"uid=alice,ou=people,{BASE}", stdout=out)
    assert "now signs in as alice" in out.getvalue()
    client = Client()
    assert sign_in(client, "alice", "alice-dir-pw").status_code == 302
    assert signed_in_as(client).pk == alice.pk
    assert AuditEvent.objects.filter(action="user.identity", object_id=str(alice.pk)).exists()
    assert list(alice.groups.values_list("name", flat=True)) == ["staff"]  # the directory's, from now on


def test_an_account_ldap_sign_in_made_before_identities_keeps_working(directory, django_user_model):
    erin = django_user_model(username="erin")  # as django-auth-ldap made it: no password, no audit row
    erin.set_unusable_password()
    erin.save()
    client = Client()
    assert sign_in(client, "erin", "erin-pw").status_code == 302
    assert signed_in_as(client).pk == erin.pk
    assert DirectoryIdentity.objects.get(user=erin).subject == f"uid=erin,ou=people,{BASE}"
    adopted = AuditEvent.objects.get(action="user.identity", object_id=str(erin.pk))
    assert "adopted" in adopted.summary


def test_a_deactivated_directory_user_is_signed_out_and_cannot_sign_in(directory):
    client = Client()
    assert sign_in(client, "erin", "erin-pw").status_code == 302
    erin = signed_in_as(client)
    erin.is_active = False
    erin.save()
    assert client.get("/").status_code == 302  # the session no longer holds
    refused = Client()
    assert sign_in(refused, "erin", "erin-pw").status_code == 200 and "_auth_user_id" not in refused.session


def test_django_auth_ldaps_own_backend_is_a_configuration_error():
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        env={"DJANGO_SETTINGS_MODULE": "config.settings", "PATH": "/usr/bin:/bin",
             "CAIRN_AUTH_BACKENDS": "django_auth_ldap.backend.LDAPBackend,django.contrib.auth.backends.ModelBackend"},
        capture_output=True, text=True, cwd=str(Path(__file__).parent.parent),
    )  # fmt: skip
    assert run.returncode != 0 and "set CAIRN_LDAP_URI instead" in run.stderr
