"""Nothing phones home: serving, ingestion and syncs look up no name but the hosts a deployment
configures, and connect nowhere else. The run (tests/offline.py) goes on in network and mount
namespaces of its own, whose only resolver is one that logs, so a lookup made by any process
(Python's, git's, LibreOffice's, Tesseract's) is heard, and under strace, which writes down every
address any of its processes connects or sends to (the namespace has no route out, so none of it
leaves). CI's own variables are left out, as a library may stay quiet only under CI."""

import ipaddress
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from django.conf import settings
from django.db import connection

from tests.documents import write_corpus
from tests.offline import RESOLV_CONF, ROOT, SITE_HOST
from tests.test_formats import handbook_docx, libreoffice_convert
from tests.test_pdf import page_image, scanned_pdf
from tests.test_readers import RUNBOOK
from tests.test_sources_escapes import repository as git_repository

DATABASE = "test_cairn_offline"
QUIET_UNDER_CI = ("CI", "TF_BUILD", "JENKINS_URL", "GITHUB_ACTIONS")


def namespaces_available() -> bool:
    if os.geteuid() != 0 or not all(shutil.which(tool) for tool in ("unshare", "ip", "strace")):
        return False
    return subprocess.run(["unshare", "--net", "--mount", "true"], capture_output=True).returncode == 0


@pytest.fixture
def offline_database(django_db_blocker):
    """A database of the run's own on the same Postgres, made anew (outside the test's transaction)."""
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
    return DATABASE


@pytest.mark.skipif(not namespaces_available(), reason="needs root, unshare (util-linux), ip (iproute2) and strace")
def test_serving_ingestion_and_syncs_look_up_no_host_but_the_configured_ones(tmp_path, offline_database):
    corpus = write_corpus(tmp_path / "corpus")
    (corpus / "handbook.doc").write_bytes(libreoffice_convert(tmp_path, "handbook.docx", handbook_docx(), "doc"))
    scanned_pdf(corpus / "archive.pdf", page_image(["The archive door code is 4471."]))
    (corpus / "runbook.rst").write_text(RUNBOOK.format(secret="/etc/hostname"))
    folder = tmp_path / "share"
    folder.mkdir()
    (folder / "holidays.md").write_text("# Holidays\n\nThe office closes between Christmas and New Year.\n")
    repository = tmp_path / "repo"
    git_repository(repository, {"README.md": "# Deploys\n\nDeploys happen on Tuesdays after the review.\n"})
    resolv = tmp_path / "resolv.conf"
    resolv.write_text(RESOLV_CONF)
    home = tmp_path / "home"
    home.mkdir()
    result, trace = tmp_path / "result.json", tmp_path / "connections.trace"
    kept = {k: v for k, v in os.environ.items() if k not in QUIET_UNDER_CI and not k.startswith("CAIRN_")}
    environment = {
        **kept, "CAIRN_DATA_DIR": str(settings.CAIRN_DATA_DIR),  # the tests' own Postgres
        "HOME": str(home), "DJANGO_SETTINGS_MODULE": "config.settings", "CAIRN_DB_NAME": offline_database,
        "CAIRN_SECRET_KEY": "an-offline-test-key-0123456789-abcdefghijklmnopqrstuvwxyz-ABCDEFG",
        "DJANGO_SUPERUSER_PASSWORD": "root-offline-pw", "CAIRN_SOURCES_ALLOW_NETWORKS": "127.0.0.0/8",
        "CAIRN_SOURCES_CRAWL_DELAY": "0",
        "CAIRN_WEB_WORKERS": "1", "CAIRN_ACCESS_LOG": "",
    }  # fmt: skip
    inside = (
        f"ip link set lo up && mount --bind {resolv} /etc/resolv.conf && exec strace -f -qq --seccomp-bpf "
        f"-e trace=connect,sendto,sendmsg -e signal=none -o {trace} {sys.executable} -m tests.offline "
        f"{result} {corpus} {folder} {repository}"
    )
    run = subprocess.run(["unshare", "--net", "--mount", "sh", "-c", inside], cwd=ROOT, env=environment,
                         capture_output=True, text=True, timeout=1200)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    found = json.loads(result.read_text())
    steps = found["steps"]
    assert all(steps.get(step) == 0 for step in ("migrate", "ingest", "sync site", "sync share", "sync repo")), steps
    assert steps["query fast"] == steps["query standard"] == steps["query deep"] == 200, steps
    assert steps["upload"] == 201, steps
    asked = {name for name, _ in found["asked"]}
    # The resolver heard the one host configured (so it hears what is asked), and nothing else.
    assert asked == {SITE_HOST}, found["asked"]
    # Every connection went to loopback: the resolver, the site (the configured host is loopback here),
    # the server itself; Postgres is a Unix socket. The trace did see them, so it sees connections.
    addresses = set(re.findall(r'inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)"', trace.read_text()))
    addresses = {ipaddress.ip_address(v4 or v6) for v4, v6 in addresses}
    assert ipaddress.ip_address("127.0.0.1") in addresses
    elsewhere = {
        a for a in addresses if not (a.is_loopback or getattr(a, "ipv4_mapped", None) and a.ipv4_mapped.is_loopback)
    }
    assert elsewhere == set(), elsewhere
