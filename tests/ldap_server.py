"""A real OpenLDAP server (Debian's slapd) for tests: a throwaway database on loopback, started
for a test and stopped after it, as the embedded Postgres is for the suite."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

BASE = "dc=example,dc=org"
ADMIN_DN, ADMIN_PASSWORD = f"cn=admin,{BASE}", "admin-secret"
SLAPD = shutil.which("slapd") or "/usr/sbin/slapd"
SLAPADD = shutil.which("slapadd") or "/usr/sbin/slapadd"

CONFIG = """\
include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
include /etc/ldap/schema/nis.schema
modulepath /usr/lib/ldap
moduleload back_mdb
pidfile {root}/slapd.pid
database mdb
maxsize 10485760
suffix "{base}"
rootdn "{admin}"
rootpw {password}
directory {root}/db
"""


def person(uid: str, password: str, name: str) -> str:
    return (f"dn: uid={uid},ou=people,{BASE}\nobjectClass: inetOrgPerson\nuid: {uid}\ncn: {name}\n"
            f"sn: {name.split()[-1]}\ngivenName: {name.split()[0]}\nmail: {uid}@example.org\n"
            f"userPassword: {password}\n\n")  # fmt: skip


def group(cn: str, members: list[str]) -> str:
    lines = "".join(f"member: uid={m},ou=people,{BASE}\n" for m in members)
    return f"dn: cn={cn},ou=groups,{BASE}\nobjectClass: groupOfNames\ncn: {cn}\n{lines}\n"


DIRECTORY = (
    f"dn: {BASE}\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: Example\n\n"
    f"dn: ou=people,{BASE}\nobjectClass: organizationalUnit\nou: people\n\n"
    f"dn: ou=groups,{BASE}\nobjectClass: organizationalUnit\nou: groups\n\n"
    + person("erin", "erin-pw", "Erin Stone")
    + person("frank", "frank-pw", "Frank Moss")
    # Directory entries named like Cairn's local accounts in tests: the break-glass superuser, a reader.
    + person("admin", "admin-dir-pw", "Ada Admin")
    + person("alice", "alice-dir-pw", "Alice Other")
    + group("finance", ["erin"])
    + group("kb-editors", ["frank"])
    + group("staff", ["erin", "frank", "alice"])
)


@dataclass
class Directory:
    uri: str
    root: Path

    def modify(self, ldif: str) -> None:
        """Change the directory while it runs (ldapmodify as its administrator)."""
        subprocess.run(["ldapmodify", "-x", "-H", self.uri, "-D", ADMIN_DN, "-w", ADMIN_PASSWORD],
                       input=ldif, text=True, check=True, capture_output=True)  # fmt: skip


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def slapd(root: Path):
    (root / "db").mkdir(parents=True)
    config = root / "slapd.conf"
    config.write_text(CONFIG.format(root=root, base=BASE, admin=ADMIN_DN, password=ADMIN_PASSWORD))
    subprocess.run([SLAPADD, "-f", str(config), "-b", BASE], input=DIRECTORY, text=True, check=True,
                   capture_output=True)  # fmt: skip
    port = _free_port()
    uri = f"ldap://127.0.0.1:{port}"
    server = subprocess.Popen([SLAPD, "-f", str(config), "-h", uri, "-d", "0"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    try:
        deadline = time.monotonic() + 15
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"slapd did not start: {server.stderr.read().decode()[-2000:]}")
            time.sleep(0.05)
        yield Directory(uri, root)
    finally:
        server.terminate()
        server.wait(timeout=10)
