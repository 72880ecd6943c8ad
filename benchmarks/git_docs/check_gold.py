"""Check the git_docs QA set against Git's HTML documentation (Debian package git-doc).

Usage: check_gold.py [--no-extract] [DOC_DIR]   (default: /usr/share/doc/git-doc)

DOC_DIR holds the manual: the man pages and guides as HTML generated from AsciiDoc (*.html),
their AsciiDoc sources (*.txt), and the howto/ and technical/ folders. pages.txt lists the subset
of pages the set uses (see README.md). The checks are benchmarks/gold_check.py's: gold strings in
their page's main text (code blocks excluded), unanswerable key terms ("absent") nowhere in the
whole manual (every HTML page under DOC_DIR, not only the subset), even tune/held_out halves
covering every group. On top of those, this script checks the "absent" terms against the AsciiDoc
sources (*.txt) too, that every page of pages.txt has a group, and, unless --no-extract, that every
gold string is in the text Cairn's own extractor (readers.extract.extract_file) makes of its page.
Exits non-zero on any problem.
"""

import sys
from pathlib import Path

from bs4 import BeautifulSoup

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from gold_check import check_set, gold_outside_extracted_text, norm, questions_of, without_code  # noqa: E402

DEFAULT_DOCS = Path("/usr/share/doc/git-doc")

# The groups follow git(1)'s own command lists (the cmds-*.txt files beside the pages).
GROUPS = {
    # cmds-mainporcelain.txt: the everyday commands.
    "porcelain": [
        "git-add", "git-am", "git-archive", "git-bisect", "git-branch", "git-bundle", "git-checkout",
        "git-cherry-pick", "git-citool", "git-clean", "git-clone", "git-commit", "git-describe", "git-diff",
        "git-fetch", "git-format-patch", "git-gc", "git-grep", "git-gui", "git-init", "git-log",
        "git-maintenance", "git-merge", "git-mv", "git-notes", "git-pull", "git-push", "git-range-diff",
        "git-rebase", "git-reset", "git-restore", "git-revert", "git-rm", "git-shortlog", "git-show",
        "git-sparse-checkout", "git-stash", "git-status", "git-submodule", "git-switch", "git-tag",
        "git-worktree", "gitk", "scalar",
    ],
    # cmds-ancillarymanipulators.txt and cmds-ancillaryinterrogators.txt.
    "ancillary": [
        "git-config", "git-fast-export", "git-fast-import", "git-filter-branch", "git-mergetool",
        "git-pack-refs", "git-prune", "git-reflog", "git-remote", "git-repack", "git-replace",
        "git-annotate", "git-blame", "git-bugreport", "git-count-objects", "git-diagnose", "git-difftool",
        "git-fsck", "git-help", "git-instaweb", "git-merge-tree", "git-rerere", "git-show-branch",
        "git-verify-commit", "git-verify-tag", "git-version", "git-whatchanged", "gitweb",
    ],
    # cmds-userinterfaces.txt: the files and syntax Git reads (attributes, ignore rules, hooks...).
    "interfaces": [
        "gitattributes", "gitcli", "githooks", "gitignore", "gitmailmap", "gitmodules", "gitrepository-layout",
        "gitrevisions",
    ],
    # cmds-guide.txt, plus git(1) itself and the Git User Manual.
    "guides": [
        "gitcore-tutorial", "gitcredentials", "gitcvs-migration", "gitdiffcore", "giteveryday", "gitfaq",
        "gitglossary", "gitnamespaces", "gitremote-helpers", "gitsubmodules", "gittutorial", "gittutorial-2",
        "gitworkflows", "git", "user-manual",
    ],
}  # fmt: skip
PAGE_GROUP = {f"{name}.html": g for g, names in GROUPS.items() for name in names}

# AsciiDoc pages: div#header (title and NAME) and div#content; the footer ("Last updated ...") is
# the page template's. The DocBook page (user-manual.html): its body less the tables of contents.
FURNITURE = ("div#footer", "div#footnotes", "div.toc", "script")


def main_text(path: Path) -> str:
    """Visible text of the page without its footer, tables of contents and code blocks (<pre>)."""
    soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
    body = soup.body
    for tag in body.select(", ".join(FURNITURE)):
        tag.decompose()
    return without_code(body)


def group(page: str) -> str:
    return PAGE_GROUP.get(page, "other")


def extra_checks(docs: Path) -> list[str]:
    """Every page has a group; "absent" terms occur in no AsciiDoc source (*.txt) either."""
    problems = [f"page {p} has no group" for p in (HERE / "pages.txt").read_text().split() if group(p) == "other"]
    sources = "\n".join(norm(p.read_text(encoding="utf-8", errors="replace")) for p in sorted(docs.rglob("*.txt")))
    for q in questions_of(HERE):
        problems += [f"{q['id']}: key term {t!r} occurs in the AsciiDoc sources" for t in q.get("absent", [])
                     if norm(t) in sources]  # fmt: skip
    return problems


if __name__ == "__main__":
    args = sys.argv[1:]
    extract = "--no-extract" not in args
    args = [a for a in args if a != "--no-extract"]
    docs = (Path(args[0]) if args else DEFAULT_DOCS).resolve()
    status = check_set(HERE, docs=docs, everything=docs, prefix="gt", main_text=main_text, group=group,
                       every_page=False)  # fmt: skip
    problems = extra_checks(docs)
    if extract:
        problems += gold_outside_extracted_text(docs, questions_of(HERE))
    for problem in problems:
        print("PROBLEM:", problem)
    print(f"{len(problems)} more problem(s) (group, AsciiDoc and extraction checks)" if problems else "more checks OK")
    sys.exit(1 if status or problems else 0)
