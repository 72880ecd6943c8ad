"""Shared fixtures. Personas: alice reads the finance collection, bob is a curator, charlie is an
outsider who belongs to no group. The demo corpus (public) is ingested once per test session into
the real test database, with the real bundled MiniLM."""

import json
import os
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from corpus.services import collection_get_or_create, curators_group_ensure, documents_ingest
from readers.extract import ExtractedDocument

ROOT = Path(__file__).resolve().parent.parent
DEMO_CORPUS = ROOT / "demo" / "corpus"
DEMO_QUESTIONS = ROOT / "demo" / "questions.jsonl"


# --- A CI run runs every test ---------------------------------------------------------------------
# A test skips where what it needs is missing (Chromium, slapd, python-ldap). .ci/run installs all of
# it and sets CAIRN_CI=1: there a skip means a test that did not run, and the run fails.

_SKIPPED: list = []


def _skip_recorded(report) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):  # an expected failure is no skip
        _SKIPPED.append(report)


def pytest_collectreport(report):  # a module skipped whole (pytest.skip(allow_module_level=True))
    _skip_recorded(report)


def pytest_runtest_logreport(report):
    _skip_recorded(report)


def _skips_fail() -> bool:
    return os.environ.get("CAIRN_CI", "") not in ("", "0")


def pytest_sessionfinish(session, exitstatus):
    if _skips_fail() and _SKIPPED and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter):
    if _skips_fail() and _SKIPPED:
        terminalreporter.section("skipped under CAIRN_CI", sep="=", red=True, bold=True)
        for report in _SKIPPED:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            terminalreporter.line(f"{report.nodeid}: {reason}")
        terminalreporter.line(f"{len(_SKIPPED)} skipped: CAIRN_CI is set, so every test must run (the run fails).")


@pytest.fixture(scope="session")
def originals_dir(tmp_path_factory):
    """The originals the tests keep go to a folder of this run's, never to var/originals: stored by
    content, a test that lets one go would take the file from under the developer's own database."""
    from django.conf import settings
    from django.test import override_settings

    folder = tmp_path_factory.mktemp("originals")
    storages = {**settings.STORAGES, "originals": {"BACKEND": "django.core.files.storage.FileSystemStorage",
                                                  "OPTIONS": {"location": str(folder)}}}  # fmt: skip
    with override_settings(STORAGES=storages):
        yield folder


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker, originals_dir):
    with django_db_blocker.unblock():
        call_command("ingest", str(DEMO_CORPUS), collection="demo", public=True, verbosity=0)


@pytest.fixture(scope="session")
def demo_questions() -> list[dict]:
    return [json.loads(line) for line in DEMO_QUESTIONS.read_text().splitlines()]


@pytest.fixture
def alice(db):
    user = User.objects.create_user("alice", password="alice-pw")
    user.groups.add(Group.objects.get_or_create(name="finance")[0])
    return user


@pytest.fixture
def bob(db):
    user = User.objects.create_user("bob", password="bob-pw", is_staff=True)
    user.groups.add(curators_group_ensure())
    return user


@pytest.fixture
def charlie(db):
    return User.objects.create_user("charlie", password="charlie-pw")


@pytest.fixture
def finance(db):
    """A private collection only the finance group reads, with one distinctive document."""
    collection, _ = collection_get_or_create(slug="finance", group_names=["finance"])
    documents_ingest(
        collection=collection,
        documents=[
            ExtractedDocument(
                title="Travel expense policy",
                text=(
                    "Employees may claim a per diem of 85 euros for overnight business travel. "
                    "Receipts for hotel stays must be submitted within thirty days of return. "
                    "Business class flights require approval from the chief financial officer."
                ),
                source="policies/travel.md",
                mime_type="text/markdown",
            )
        ],
    )
    return collection


SALARY = "The salary bands for engineers are reviewed every March by the compensation committee."


@pytest.fixture
def hr(db):
    """Private: read by `hr`, curated by `hr-curators` alone."""
    collection, _ = collection_get_or_create(slug="hr", group_names=["hr"], curator_group_names=["hr-curators"])
    documents_ingest(
        collection=collection,
        documents=[ExtractedDocument("Salary bands", SALARY, "hr/salary.md", "text/markdown")],
    )
    return collection


@pytest.fixture
def dana(db):
    """A curator of hr (and, as every curator, of the collections the curators group curates)."""
    user = User.objects.create_user("dana", password="dana-pw", is_staff=True)
    user.groups.add(curators_group_ensure(), Group.objects.get(name="hr-curators"), Group.objects.get(name="hr"))
    return user


@pytest.fixture(scope="session")
def smollm2(tmp_path_factory):
    """llama.cpp's OpenAI-compatible server with SmolLM2-135M (tests/llama_server.py), once a run."""
    from tests.llama_server import LlamaServer

    with LlamaServer(log=tmp_path_factory.mktemp("llama") / "server.log") as server:
        yield server


def client_for(user) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client
