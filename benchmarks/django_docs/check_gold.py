"""Check the django_docs QA set against Django's HTML documentation (Debian package python-django-doc).

Usage: check_gold.py [DOC_DIR]   (default: /usr/share/doc/python-django-doc/html)

DOC_DIR is the whole manual as python-django-doc installs it (Sphinx HTML for Django 3.2); pages.txt
names a subset of its pages, relative to it. The checks are benchmarks/gold_check.py's: gold strings
in their page's main text (code blocks excluded), unanswerable key terms ("absent") nowhere in the
whole manual (every HTML page under DOC_DIR: releases/, internals/, intro/, misc/, GeoDjango, the
indexes and the highlighted source pages under _modules/ included), even tune/held_out halves
covering every group. A second pass checks that Cairn's extractor (readers.extract.extract_file)
reads every page in pages.txt, and that every gold string is also in the text it makes of its
page, and reports any page or string that fails; it runs where Django and Cairn's settings can be
loaded and is skipped with a note otherwise. Exits non-zero on any problem.
"""

import sys
from pathlib import Path

from bs4 import BeautifulSoup

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from gold_check import grouping_problems, run_checks, without_code  # noqa: E402

DEFAULT_DOCS = Path("/usr/share/doc/python-django-doc/html")

# The page template (Sphinx with Django's "djangodocs" theme) around every page: the header div#hd
# ("Django 3.2.25 documentation", the Home | Table of contents | Index | Modules links and the
# "« previous | up | next »" bar), the sidebar div#sidebar (the page's "Table of Contents", "Previous
# topic", "Next topic", the "Quick search" form and "Last update:" with the build date) and the
# footer div#ft (the same previous/up/next bar). The content is div#yui-main. Inside it: the "¶"
# permalinks after every heading and signature (a.headerlink), the "[source]" links to the
# highlighted source pages (span.viewcode-link), the tables of contents of sub-pages
# (div.toctree-wrapper) and scripts.
NAVIGATION = ("a.headerlink", "span.viewcode-link", "div.toctree-wrapper", "script")

# Pages group by the manual's own top-level folders. ref/ includes settings.html (every setting
# with its "Default:" line) and the contrib apps (admin, auth, messages, postgres, staticfiles, ...).
GROUPS = {
    "topics": "topics/",  # the topic guides: models and queries, forms, views, auth, cache, testing, ...
    "ref": "ref/",  # the API reference: settings, fields, querysets, django-admin, request/response, ...
    "howto": "howto/",  # task guides: deployment, static files, migrations, custom commands and tags, ...
    "faq": "faq/",  # the FAQ: general, install, usage, help, models, admin, contributing, troubleshooting
}
LEFT_OUT = ("releases/", "internals/", "intro/", "misc/", "ref/contrib/gis/", "_modules/")

# index.html pages that are a guide's own text, not a list of links: kept.
CONTENT_INDEXES = (
    "topics/auth/index.html", "topics/class-based-views/index.html", "topics/forms/index.html",
    "topics/i18n/index.html", "ref/contrib/admin/index.html", "howto/deployment/asgi/index.html",
    "howto/deployment/wsgi/index.html", "howto/static-files/index.html",
)  # fmt: skip


def main_text(path: Path) -> str:
    """Visible text of the page's content (div#yui-main) less its permalinks, [source] links,
    sub-page tables of contents and scripts, without code blocks (pre: every highlighted example,
    shell session and settings snippet)."""
    soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
    main = soup.select_one("div#yui-main")
    for tag in main.select(", ".join(NAVIGATION)):
        tag.decompose()
    return without_code(main)


def group(page: str) -> str:
    for name, prefix in GROUPS.items():
        if page.startswith(prefix) and not page.startswith(LEFT_OUT):
            return name
    return "other"


def extra_checks(docs: Path) -> list[str]:
    """pages.txt is sorted, every page in it has a group and none is an index page; every answerable
    question's page has a group and at most 2 questions use it."""
    pages = (HERE / "pages.txt").read_text().split()
    return grouping_problems(HERE, group, per_page=2) + [
        f"page {p} is a navigation or index page" for p in pages
        if p.endswith(("/index.html", "flattened-index.html")) and p not in CONTENT_INDEXES
    ]  # fmt: skip


if __name__ == "__main__":
    sys.exit(run_checks(HERE, default_docs=DEFAULT_DOCS, prefix="dj", main_text=main_text, group=group,
                        extra_checks=extra_checks))  # fmt: skip
