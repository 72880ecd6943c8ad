"""Secrets belong to a source's collection and host, granted by an operator: written as the attacks a
security review found (a curator naming the operator's wiki token or a secret file for a source at
a host of their own; one collection's curator using another's secret), and the source surfaces of
the access matrix for the five personas. Real database, real command line, real API and admin."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from corpus.models import AuditEvent, Document
from sources.connectors.base import ConnectorError, source_secret
from sources.models import SecretGrant, Source, SyncRun
from sources.services import secret_grant, source_create, source_sync, source_update
from tests.conftest import client_for

pytestmark = pytest.mark.django_db

WIKI = "https://wiki.example.com/wiki/spaces/HR"
EVIL = "https://collector.example.net/wiki/spaces/HR"


@pytest.fixture
def token(monkeypatch):
    monkeypatch.setenv("CAIRN_SOURCE_WIKI_TOKEN", "operator-wiki-token-s3cr3t")
    return "CAIRN_SOURCE_WIKI_TOKEN"


def confluence(api, name: str, location: str, credentials: str, collection: str = "hr"):
    body = {"name": name, "kind": "confluence", "location": location, "collection": collection}
    return api.post("/api/v1/sources", {**body, "credentials": credentials}, format="json")


def test_a_curator_names_no_secret_an_operator_did_not_grant_to_their_collection(hr, dana, token, tmp_path):
    """The variable exists and is named as the old rule wanted (CAIRN_SOURCE_*), and a secret file
    lies in the secrets folder: neither may be named until an operator grants it to hr."""
    secret_file = tmp_path / "db-password"
    secret_file.write_text("db-password-s3cr3t")
    api = client_for(dana)
    for credentials in (token, str(secret_file), "CAIRN_SECRET_KEY"):
        response = confluence(api, "hr-wiki", EVIL, credentials)
        assert response.status_code == 403 and "not granted to collection hr" in response.json()["credentials"][0]
    assert not Source.objects.exists()


def test_a_granted_secret_goes_only_to_its_host_whoever_moves_the_source(hr, dana, token):
    call_command("sources", "grant-secret", token, "--collection", "hr", "--host", "wiki.example.com", verbosity=0)
    grant = SecretGrant.objects.get()
    assert (grant.collection, grant.scheme, grant.host, grant.port) == (hr, "https", "wiki.example.com", 443)
    event = AuditEvent.objects.get(action="source.secret_grant")
    assert event.after == {
        "name": token,
        "collection": "hr",
        "scheme": "https",
        "host": "wiki.example.com",
        "port": 443,
    }
    assert "s3cr3t" not in str(event.after) + event.summary
    api = client_for(dana)
    response = confluence(api, "hr-wiki", EVIL, token)  # the granted name, another host
    assert response.status_code == 403
    assert response.json()["credentials"] == [
        f"{token} is granted for https://wiki.example.com only, not for https://collector.example.net"
    ]
    assert confluence(api, "hr-wiki", WIKI, token).status_code == 201
    # Moving the source to another host keeps its credentials from going there: refused when
    # changed, and refused again at the request, should the location change by another road.
    moved = api.patch("/api/v1/sources/hr-wiki", {"location": EVIL}, format="json")
    assert moved.status_code == 403 and "credentials" in moved.json()
    source = Source.objects.get(name="hr-wiki")
    assert source_secret(source, f"{WIKI}/rest/api/content") == "operator-wiki-token-s3cr3t"
    for url in (EVIL, "https://wiki.example.com.collector.example.net/", "https://user@collector.example.net/"):
        with pytest.raises(ConnectorError, match="not granted to collection hr for https://") as refused:
            source_secret(source, url)
        assert "s3cr3t" not in str(refused.value)
    Source.objects.filter(pk=source.pk).update(location=EVIL)
    run = source_sync(source=Source.objects.get(pk=source.pk), inline=True)
    assert (
        run.status == SyncRun.Status.FAILED
        and "not granted to collection hr for https://collector.example.net:" in run.error
    )


def test_one_collection_s_curator_cannot_use_another_collection_s_secret(hr, finance, dana, token):
    secret_grant(name=token, collection=finance, host="wiki.example.com")
    response = confluence(client_for(dana), "hr-wiki", WIKI, token)
    assert response.status_code == 403 and "not granted to collection hr" in response.json()["credentials"][0]
    # Nor by moving a finance source into hr's hands: a source's collection never changes.
    source = source_create(operator=True, collection=finance, name="fin-wiki", kind="confluence", location=WIKI)
    source_update(source=source, operator=True, credentials=token)
    Source.objects.filter(pk=source.pk).update(collection=hr)
    with pytest.raises(ConnectorError, match="not granted to collection hr"):
        source_secret(Source.objects.get(pk=source.pk), WIKI)


def test_an_operator_s_source_grants_its_secret_for_its_own_host_and_a_revoke_stops_it(hr, dana, token, capsys):
    call_command("sources", "add", "hr-wiki", "--kind", "confluence", "--location", WIKI, "--collection", "hr",
                 "--credentials", token)  # fmt: skip
    assert "Granted CAIRN_SOURCE_WIKI_TOKEN to hr for https://wiki.example.com only." in capsys.readouterr().out
    source = Source.objects.get(name="hr-wiki")
    assert source_secret(source, WIKI) == "operator-wiki-token-s3cr3t"
    call_command("sources", "secrets")
    assert f"{token}\thr\thttps://wiki.example.com\n" in capsys.readouterr().out
    listed = client_for(dana).get("/api/v1/source-secrets").json()
    assert listed == [{"name": token, "collection": "hr", "scheme": "https", "host": "wiki.example.com", "port": 443}]
    call_command("sources", "revoke-secret", token, "--collection", "hr", verbosity=0)
    assert AuditEvent.objects.filter(
        action="source.secret_revoke", summary__contains="https://wiki.example.com"
    ).exists()
    with pytest.raises(ConnectorError, match="not granted"):
        source_secret(source, WIKI)
    with pytest.raises(CommandError, match="not granted to hr"):
        call_command("sources", "revoke-secret", token, "--collection", "hr")
    with pytest.raises(CommandError, match="host"):
        call_command("sources", "grant-secret", token, "--collection", "hr", "--host", "https://")
    with pytest.raises(CommandError, match="credentials"):
        call_command("sources", "grant-secret", "the password itself", "--collection", "hr", "--host", "x.example")


def test_the_api_and_admin_offer_a_curator_only_the_secrets_granted_to_their_collections(hr, finance, bob, dana, token):
    """finance has no curator groups of its own, so every curator curates it; hr only dana."""
    secret_grant(name=token, collection=hr, host="wiki.example.com")
    secret_grant(name="CAIRN_SOURCE_FINANCE_TOKEN", collection=finance, host="fin.example.com")
    assert [g["name"] for g in client_for(bob).get("/api/v1/source-secrets").json()] == ["CAIRN_SOURCE_FINANCE_TOKEN"]
    assert {g["name"] for g in client_for(dana).get("/api/v1/source-secrets").json()} == {
        token,
        "CAIRN_SOURCE_FINANCE_TOKEN",
    }
    web = Client()
    web.force_login(bob)
    page = web.get("/admin/sources/source/add/").content.decode()
    assert "CAIRN_SOURCE_FINANCE_TOKEN (for https://fin.example.com in finance)</option>" in page and token not in page


PERSONAS = ["alice", "charlie", "bob", "dana", "root"]  # finance reader, outsider, other curator, hr's, superuser


@pytest.mark.parametrize("persona", PERSONAS)
def test_the_source_surfaces_of_the_access_matrix_have_no_unexpected_allow(
    persona, hr, finance, alice, charlie, bob, dana, token, tmp_path, settings
):
    """Each persona tries hr's source surfaces: add a source naming hr's granted secret, sync it, read
    its run's errors, open the original of what it ingested, see the grant. Only hr's curator and
    the superuser get through, everywhere; through the `never` surfaces no one does."""
    settings.CAIRN_SOURCES_FOLDER_ROOTS = [tmp_path.resolve()]
    share = tmp_path / "hr-share"
    share.mkdir()
    (share / "bands.md").write_text("# Salary bands\n\nSalary bands are reviewed every March.\n")
    (share / "broken.pdf").write_bytes(b"%PDF-1.7 salary bands, cut short")
    root = User.objects.create_superuser("root", password="root-pw")
    user = {"alice": alice, "charlie": charlie, "bob": bob, "dana": dana, "root": root}[persona]
    secret_grant(name=token, collection=hr, host="wiki.example.com")
    secret_grant(name="CAIRN_SOURCE_FINANCE_TOKEN", collection=finance, host="wiki.example.com")
    source = source_create(operator=True, collection=hr, name="hr-share", kind="folder", location=str(share))
    source_create(operator=True, collection=hr, name="hr-wiki", kind="confluence", location=WIKI, credentials=token)
    decoy = tmp_path / "x%2f..%2f..%2fhr-repo"  # a repository of that literal name, under the root
    for folder in ("objects", "refs/heads"):
        (decoy / folder).mkdir(parents=True)
    (decoy / "HEAD").write_text("ref: refs/heads/main\n")
    run = source_sync(source=source, inline=True)
    assert run.status == SyncRun.Status.SUCCEEDED and "broken.pdf" in run.errors
    document = Document.objects.get(collection=hr, source=str(share / "bands.md"))
    api, web = client_for(user), Client()
    web.force_login(user)
    detail = api.get("/api/v1/sources/hr-share")
    allowed = {
        "api create with hr's secret": confluence(api, f"wiki-{persona}", WIKI, token).status_code == 201,
        "api sync": api.post("/api/v1/sources/hr-share/sync").status_code == 202,
        "api run errors": detail.status_code == 200 and "broken.pdf" in str(detail.json()["runs"][0]["errors"]),
        "api granted secrets": token in api.get("/api/v1/source-secrets").content.decode(),
        "admin source page": web.get(f"/admin/sources/source/{source.pk}/change/").status_code == 200,
        "admin runs": "broken.pdf" in web.get(f"/admin/sources/syncrun/{run.pk}/change/").content.decode(),
        "original": api.get(f"/api/v1/documents/{document.id}/original").status_code == 200,
    }
    never = {
        "api create with finance's secret": confluence(api, f"fin-{persona}", WIKI, "CAIRN_SOURCE_FINANCE_TOKEN")
        .status_code == 201,
        "api create with an ungranted variable": confluence(api, f"key-{persona}", WIKI, "CAIRN_SECRET_KEY")
        .status_code == 201,
        "api move hr's secret to another host": api.post("/api/v1/sources", {
            "name": f"evil-{persona}", "kind": "confluence", "location": EVIL, "collection": "hr", "credentials": token,
        }, format="json").status_code == 201,
        "api folder outside the roots": api.post("/api/v1/sources", {
            "name": f"etc-{persona}", "kind": "folder", "location": "/etc", "collection": "hr",
        }, format="json").status_code == 201,
        "api git at a file:// URL whose %2f leads out of the roots": api.post("/api/v1/sources", {
            "name": f"repo-{persona}", "kind": "git", "location": f"file://{decoy}", "collection": "hr",
        }, format="json").status_code == 201,
        "api move hr's wiki to http at another port": api.patch("/api/v1/sources/hr-wiki", {
            "location": "http://wiki.example.com:8854/wiki/spaces/HR"}, format="json").status_code == 200,
    }  # fmt: skip
    expected = persona in ("dana", "root")
    assert {s for s, ok in allowed.items() if ok != expected} | {s for s, ok in never.items() if ok} == set()
    if not expected:
        assert not Source.objects.exclude(name__in=["hr-share", "hr-wiki"]).exists()
    assert Source.objects.get(name="hr-wiki").location == WIKI


@pytest.mark.django_db(transaction=True)
def test_grants_made_for_a_host_keep_what_travelled_encrypted_once_bound_to_an_origin():
    """Migration 0003: a grant for a host becomes https on 443, and the https or ssh origin of each
    source that named it there; a source over plain http is not granted by the migration."""
    from tests.test_migrations import migrated_back

    with migrated_back([("sources", "0002_secret_grants_and_item_tries")]) as old:
        hr = old.get_model("corpus", "Collection").objects.create(slug="hr-before", name="HR")
        for name, kind, location in [
            ("tls-port", "confluence", "https://wiki.example.com:8443/wiki/spaces/HR"),
            ("clear", "confluence", "http://wiki.example.com:8854/wiki/spaces/HR"),
            ("over-ssh", "git", "git@wiki.example.com:hr/handbook.git"),
            ("elsewhere", "confluence", "https://collector.example.net/wiki/spaces/HR"),
        ]:
            old.get_model("sources", "Source").objects.create(
                name=name, kind=kind, location=location, collection=hr, credentials="CAIRN_SOURCE_WIKI_TOKEN"
            )
        grants = old.get_model("sources", "SecretGrant").objects
        grants.create(name="CAIRN_SOURCE_WIKI_TOKEN", collection=hr, host="wiki.example.com")
        grants.create(name="CAIRN_SOURCE_FIN_TOKEN", collection=hr, host="fin.example.com")
    assert sorted(SecretGrant.objects.values_list("name", "scheme", "host", "port")) == [
        ("CAIRN_SOURCE_FIN_TOKEN", "https", "fin.example.com", 443),
        ("CAIRN_SOURCE_WIKI_TOKEN", "https", "wiki.example.com", 443),
        ("CAIRN_SOURCE_WIKI_TOKEN", "https", "wiki.example.com", 8443),
        ("CAIRN_SOURCE_WIKI_TOKEN", "ssh", "wiki.example.com", 22),
    ]
