"""Check the postfix_docs QA set against Postfix's HTML documentation (Debian package postfix-doc).

Usage: check_gold.py [--no-extract] [DOC_DIR]   (default: /usr/share/doc/postfix/html)

DOC_DIR is the whole HTML manual as postfix-doc installs it (136 pages: the hand-written READMEs,
postconf.5.html and the HTML renderings of the manual pages); pages.txt names a subset of its
pages, relative to it (see README.md). The checks are benchmarks/gold_check.py's: gold strings in
their page's main text (code blocks excluded), unanswerable key terms ("absent") nowhere in the
whole manual (every HTML page under DOC_DIR, not only the subset), even tune/held_out halves
covering every group. On top of those, this script checks that pages.txt is sorted and every page
has a group, that the "absent" terms occur in none of the plain-text READMEs beside the HTML folder
either, and, unless --no-extract, that Cairn's extractor (readers.extract.extract_file) reads every
page in pages.txt and that every gold string is in the text it makes of its page. Exits non-zero
on any problem.
"""

import gzip
import re
import sys
from pathlib import Path

from bs4 import BeautifulSoup

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from gold_check import grouping_problems, norm, questions_of, run_checks, without_code  # noqa: E402

DEFAULT_DOCS = Path("/usr/share/doc/postfix/html")

# The groups: the README howtos by what a user does with them, and the manual pages by section
# (1: commands, 5: configuration files and lookup tables, 8: the daemons).
GROUPS = {
    # Installing, configuring and running a mail system: addresses, domains, lookup tables, delivery.
    "howto-setup": [
        "ADDRESS_CLASS_README", "ADDRESS_REWRITING_README", "BASIC_CONFIGURATION_README", "BDAT_README",
        "CDB_README", "COMPATIBILITY_README", "CONNECTION_CACHE_README", "DATABASE_README", "DB_README",
        "DSN_README", "ETRN_README", "IPV6_README", "LDAP_README", "LINUX_README", "LMDB_README",
        "LOCAL_RECIPIENT_README", "MAILDROP_README", "MEMCACHE_README", "MULTI_INSTANCE_README",
        "MYSQL_README", "NFS_README", "OVERVIEW", "PCRE_README", "PGSQL_README", "SMTPUTF8_README",
        "SOHO_README", "SQLITE_README", "STANDARD_CONFIGURATION_README", "UUCP_README", "VERP_README",
        "VIRTUAL_README",
    ],
    # Authentication, encryption, access control, spam and content filtering.
    "howto-security": [
        "ADDRESS_VERIFICATION_README", "BACKSCATTER_README", "BUILTIN_FILTER_README",
        "CONTENT_INSPECTION_README", "FILTER_README", "FORWARD_SECRECY_README", "MILTER_README",
        "POSTSCREEN_README", "RESTRICTION_CLASS_README", "SASL_README", "SMTPD_ACCESS_README",
        "SMTPD_POLICY_README", "SMTPD_PROXY_README", "TLS_README", "XCLIENT_README", "XFORWARD_README",
    ],
    # Logging, troubleshooting, performance and the queue.
    "howto-operation": [
        "DEBUG_README", "MAILLOG_README", "QSHAPE_README", "SCHEDULER_README", "STRESS_README", "TUNING_README",
    ],
    # Manual pages, section 1: the commands.
    "commands": [
        "postalias.1", "postcat.1", "postconf.1", "postdrop.1", "postfix-tls.1", "postfix.1", "postkick.1",
        "postlock.1", "postlog.1", "postmap.1", "postmulti.1", "postqueue.1", "postsuper.1", "posttls-finger.1",
        "qshape.1", "sendmail.1", "smtp-sink.1", "smtp-source.1",
    ],
    # Manual pages, section 5: main.cf (postconf.5), master.cf and the lookup tables.
    "config-files": [
        "access.5", "aliases.5", "bounce.5", "canonical.5", "cidr_table.5", "generic.5", "header_checks.5",
        "ldap_table.5", "lmdb_table.5", "master.5", "memcache_table.5", "mysql_table.5", "pcre_table.5",
        "pgsql_table.5", "postconf.5", "postfix-wrapper.5", "regexp_table.5", "relocated.5",
        "socketmap_table.5", "sqlite_table.5", "tcp_table.5", "transport.5", "virtual.5",
    ],
    # Manual pages, section 8: the daemons and their configuration parameters.
    "daemons": [
        "anvil.8", "bounce.8", "cleanup.8", "discard.8", "dnsblog.8", "error.8", "flush.8", "local.8",
        "master.8", "oqmgr.8", "pickup.8", "pipe.8", "postlogd.8", "postscreen.8", "proxymap.8", "qmgr.8",
        "qmqpd.8", "scache.8", "showq.8", "smtp.8", "smtpd.8", "spawn.8", "tlsmgr.8", "tlsproxy.8",
        "trivial-rewrite.8", "verify.8", "virtual.8",
    ],
}  # fmt: skip
PAGE_GROUP = {f"{name}.html": g for g, names in GROUPS.items() for name in names}

# The hand-written pages (the READMEs and postconf.5.html) have almost no template: an <h1> that
# opens with the Postfix logo (img src="postfix-logo.jpg", alt="") before the title, and an <hr>
# under it. Their code blocks are <pre> (mostly inside <blockquote>: main.cf and master.cf
# excerpts, commands, logs), removed with every other <pre>.
#
# The manual pages (*.1.html, *.5.html but postconf.5.html, *.8.html) are man(1) output wrapped in
# one <pre>: there that <pre> is the prose, not a code block. Their template is the running head
# and foot ("POSTQUEUE(1)   POSTQUEUE(1)") and, on nearly every page, the closing LICENSE section
# ("The Secure Mailer license must be distributed with this software.") and AUTHOR(S) section
# (Wietse Venema's addresses, "IBM T.J. Watson Research", ...). Those are dropped; the section
# headings (NAME, SYNOPSIS, DESCRIPTION, SEE ALSO, ...) are kept. Examples inside a manual page are
# indented text in the same <pre>, so they can't be told from prose by markup: gold strings on
# these pages are chosen by hand from descriptions, never from an example.
TEMPLATE_SECTIONS = ("LICENSE", "AUTHOR(S)", "AUTHOR")
HEADING = re.compile(r"^[A-Z][A-Z0-9 ()/_-]*$")


def is_manual_page(body) -> bool:
    """A man(1) page: the body is one <pre> and nothing else of substance."""
    pres = body.find_all("pre", recursive=False)
    return len(pres) == 1 and not body.find(["p", "h1", "h2", "dl", "table"])


def manual_page_text(pre) -> str:
    lines = pre.get_text().splitlines()
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    lines = lines[1:-1]  # the running head and foot: "POSTQUEUE(1)   POSTQUEUE(1)"
    kept, skipping = [], False
    for line in lines:
        if line.strip() and HEADING.match(line):  # a section heading starts in column 0
            skipping = line.strip() in TEMPLATE_SECTIONS
        if not skipping:
            kept.append(line)
    return "\n".join(kept)


def main_text(path: Path) -> str:
    """Visible text of the page without the template (logo, running head and foot, the license and
    author sections of the manual pages) and without code blocks (<pre> on the hand-written pages)."""
    soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
    body = soup.body or soup
    for tag in body.select("script, img, hr"):
        tag.decompose()
    if is_manual_page(body):
        return manual_page_text(body.find("pre", recursive=False))
    return without_code(body)


def group(page: str) -> str:
    return PAGE_GROUP.get(page, "other")


def extra_checks(docs: Path) -> list[str]:
    """pages.txt sorted, every page and every answerable question's page in a group; "absent" terms
    in none of the plain-text READMEs (DOC_DIR/.., many gzipped) either."""
    problems = grouping_problems(HERE, group)
    texts = []
    for path in sorted(docs.parent.iterdir()):  # README.gz, TLS_README.gz, RELEASE_NOTES.gz, PORTING, ...
        if path.is_file() and re.fullmatch(r"[A-Z0-9_.]+(proto)?(\.gz)?", path.name):
            data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
            texts.append(norm(data.decode("utf-8", errors="replace")))
    plain = "\n".join(texts)
    for q in questions_of(HERE):
        problems += [f"{q['id']}: key term {t!r} occurs in the plain-text READMEs" for t in q.get("absent", [])
                     if norm(t) in plain]  # fmt: skip
    return problems


if __name__ == "__main__":
    sys.exit(run_checks(HERE, default_docs=DEFAULT_DOCS, prefix="pf", main_text=main_text, group=group,
                        extra_checks=extra_checks))  # fmt: skip
