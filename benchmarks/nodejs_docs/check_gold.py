"""Check the nodejs_docs QA set against the Node.js 20 API manual in Markdown.

Usage: check_gold.py [API_DIR]   (default: /usr/share/doc/nodejs/api)

API_DIR holds the manual's pages as Markdown (*.md) and as HTML (*.html); pages.txt must list
every *.md file directly in it. The checks are benchmarks/gold_check.py's: gold strings in their
page's main text (fenced code blocks, HTML comments such as the YAML history blocks, and link
reference definitions excluded), unanswerable key terms ("absent") nowhere in the manual's HTML
pages, even tune/held_out halves covering every group. On top of those, this script checks the
"absent" terms against the Markdown pages too, and that pages.txt is exactly the *.md files.
Exits non-zero on any problem.
"""

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from gold_check import check_set, norm  # noqa: E402

DEFAULT_API = Path("/usr/share/doc/nodejs/api")

# A fence opens with 3+ backticks or tildes (indented inside list items) and closes with a line of
# at least as many of the same character.
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
# [label]: destination "optional title"
LINK_DEFINITION = re.compile(r"^ {0,3}\[[^\n]+?\]:\s+\S+(\s+(\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*$", re.MULTILINE)

GROUPS = {
    "files-streams": ["fs", "path", "stream", "buffer", "zlib", "string_decoder", "webstreams", "readline", "tty"],
    "network": ["http", "http2", "https", "net", "dgram", "dns", "url", "querystring", "punycode"],
    "crypto-security": ["crypto", "webcrypto", "tls", "permissions", "policy"],
    "process-workers": [
        "process", "child_process", "cluster", "worker_threads", "os", "async_hooks", "async_context",
        "perf_hooks", "v8", "vm", "domain",
    ],
    "modules-packages": ["modules", "esm", "packages", "module", "corepack", "addons", "n-api", "embedding", "wasi"],
    "utilities": ["util", "events", "assert", "console", "timers", "errors", "deprecations", "globals", "intl"],
    "tooling": [
        "cli", "debugger", "test", "report", "inspector", "repl", "tracing", "diagnostics_channel",
        "single-executable-applications",
    ],
}  # fmt: skip
PAGE_GROUP = {f"{name}.md": g for g, names in GROUPS.items() for name in names}


def without_fences(text: str) -> str:
    kept, fence = [], None
    for line in text.splitlines():
        match = FENCE.match(line)
        if fence is None:
            if match:
                fence = match.group(1)
            else:
                kept.append(line)
        elif (
            match
            and match.group(1)[0] == fence[0]
            and len(match.group(1)) >= len(fence)
            and not line.strip()[len(match.group(1)) :].strip()
        ):
            fence = None
    return "\n".join(kept)


def main_text(path: Path) -> str:
    """The page's Markdown without fenced code blocks, HTML comments (the YAML history blocks,
    introduced_in/source_link markers) and link reference definitions."""
    text = without_fences(path.read_text(encoding="utf-8"))
    text = COMMENT.sub(" ", text)
    return LINK_DEFINITION.sub("", text)


def group(page: str) -> str:
    return PAGE_GROUP.get(page, "other")


def extra_checks(api_dir: Path) -> list[str]:
    """pages.txt is exactly the *.md files; "absent" terms occur in no Markdown page either."""
    problems = []
    pages = (HERE / "pages.txt").read_text().split()
    on_disk = sorted(p.name for p in api_dir.glob("*.md"))
    if pages != on_disk:
        problems.append(f"pages.txt is not every *.md page, sorted ({len(pages)} listed, {len(on_disk)} on disk)")
    markdown = "\n".join(norm(p.read_text(encoding="utf-8", errors="replace")) for p in sorted(api_dir.glob("*.md")))
    for line in (HERE / "questions.jsonl").read_text().splitlines():
        if not line.strip():
            continue
        q = json.loads(line)
        problems += [
            f"{q['id']}: key term {t!r} occurs in the Markdown pages"
            for t in q.get("absent", [])
            if norm(t) in markdown
        ]
        if q["answerable"] and group(q["page"]) == "other":
            problems.append(f"{q['id']}: page {q['page']} has no group")
    return problems


if __name__ == "__main__":
    api_dir = (Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_API).resolve()
    status = check_set(HERE, docs=api_dir, everything=api_dir, prefix="nd", main_text=main_text, group=group,
                       every_page=False)  # fmt: skip
    problems = extra_checks(api_dir)
    for problem in problems:
        print("PROBLEM:", problem)
    if problems:
        print(f"{len(problems)} more problem(s) (Markdown checks)")
    sys.exit(1 if status or problems else 0)
