"""Each supported format yields the right title and text; bad files are reported by name."""

import pytest

from readers import locations
from readers.extract import ExtractedDocument, ExtractionError, ExtractionFailure, discover_files, extract_file
from tests.documents import write_corpus, write_pdf


def only_document(path):
    (item,) = list(extract_file(path))
    assert isinstance(item, ExtractedDocument)
    return item


def html_document(tmp_path, title, body):
    """The document extracted from a page with this <title> and this <body> markup."""
    page = tmp_path / "page.html"
    page.write_text(f"<html><head><title>{title}</title></head><body>{body}</body></html>")
    return only_document(page)


def test_text_and_markdown(tmp_path):
    write_corpus(tmp_path)
    txt = only_document(tmp_path / "handbook.txt")
    assert txt.title == "handbook" and txt.mime_type == "text/plain"
    assert txt.text.startswith("The office opens at eight")
    md = only_document(tmp_path / "guide.md")
    assert md.title == "Onboarding guide" and md.mime_type == "text/markdown"
    assert "Badge photos" in md.text


def test_html_drops_scripts_and_styles(tmp_path):
    write_corpus(tmp_path)
    page = only_document(tmp_path / "nested" / "page.html")
    assert page.title == "Parking rules"
    assert "Bicycles are parked in the courtyard." in page.text
    assert "secret" not in page.text and "color" not in page.text


def test_pdf_text_layer_and_title(tmp_path):
    pdf = only_document(write_pdf(tmp_path / "manual.pdf", ["Fire drills happen twice a year."], title="Safety manual"))
    assert pdf.title == "Safety manual" and pdf.mime_type == "application/pdf"
    assert "Fire drills happen twice a year." in pdf.text


def test_broken_pdf_raises_a_clear_error(tmp_path):
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4\nnot a pdf")
    with pytest.raises(ExtractionError, match="cannot read PDF"):
        list(extract_file(tmp_path / "broken.pdf"))


@pytest.mark.parametrize(
    ("markup", "reason"),
    [
        ("<p>Intro</p><![<![ <p>Outro</p>", "the parser rejected the markup"),
        ("<div>" * 1500, "nested more than 100 deep"),
    ],
)
def test_html_the_reader_cannot_walk_is_refused_with_a_reason(tmp_path, markup, reason):
    page = tmp_path / "page.html"
    page.write_text(markup)
    with pytest.raises(ExtractionError, match=reason):
        list(extract_file(page))


def test_paragraphs_and_items_never_closed_are_read_as_a_browser_shows_them(tmp_path):
    """HTML leaves </p> and </li> optional; html.parser nested each unclosed one in the one before: a
    page of 150 such paragraphs (SQLite's result codes) was refused as nested too deep, and list items
    ran together."""
    codes = "".join(f"<p>Result code {n} means the operation failed for reason {n}.\n" for n in range(300))
    page = tmp_path / "rescode.html"
    page.write_text(
        f"<html><head><title>Result Codes</title></head><body><h1>Result Codes</h1>{codes}"
        "<h2>Primary codes</h2><p>The first <b>eight</b> bits are the primary code.<p>Done."
        "<ul><li>Copy the database file.<li>Relinquish the shared lock.</ul></body></html>"
    )
    (document,) = list(extract_file(page))
    paragraphs = document.text.split("\n\n")
    assert "Result code 0 means the operation failed for reason 0." in paragraphs
    assert "Result code 299 means the operation failed for reason 299." in paragraphs
    assert "## Primary codes" in paragraphs and "The first eight bits are the primary code." in paragraphs
    assert "- Copy the database file." in paragraphs and "- Relinquish the shared lock." in paragraphs


def test_jsonl_yields_documents_and_names_bad_lines(tmp_path):
    write_corpus(tmp_path)
    items = list(extract_file(tmp_path / "faq.jsonl"))
    documents = [i for i in items if isinstance(i, ExtractedDocument)]
    failures = [i for i in items if isinstance(i, ExtractionFailure)]
    assert [d.title for d in documents] == ["Wi-Fi", "Canteen"]
    assert documents[0].source.endswith("faq.jsonl#wifi")
    assert documents[1].source.endswith("faq.jsonl#Canteen")
    assert [f.name.rsplit(":", 1)[1] for f in failures] == ["3", "4"]
    assert "invalid JSON" in failures[0].reason and "'text'" in failures[1].reason


def test_discovery_recurses_and_reports_unsupported_and_missing(tmp_path):
    write_corpus(tmp_path)
    files, failures = discover_files([tmp_path, tmp_path / "missing.txt"])
    assert sorted(p.name for p in files) == [
        "broken.pdf",
        "faq.jsonl",
        "guide.md",
        "handbook.txt",
        "page.html",
        "safety.pdf",
    ]
    reasons = {f.name.rsplit("/", 1)[1]: f.reason for f in failures}
    assert reasons == {"diagram.png": "unsupported file type '.png'", "missing.txt": "no such file or folder"}


def test_empty_file_is_an_error(tmp_path):
    (tmp_path / "empty.txt").write_text("   \n")
    with pytest.raises(ExtractionError, match="no extractable text"):
        list(extract_file(tmp_path / "empty.txt"))


def test_a_docs_site_page_keeps_its_article_and_drops_the_site_around_it():
    from pathlib import Path

    page = only_document(Path(__file__).parent / "fixtures" / "manual" / "site.html")
    assert page.title == "Backups"  # the page's heading, not "Backups | Tidewater Docs"
    assert page.text.startswith("# Backups\n\nTidewater takes a snapshot")
    for chrome in ("Skip to content", "Pricing", "Install", "Edit this page", "All rights reserved", "«", "#\n"):
        assert chrome not in page.text
    assert "## Retention\n\n- Daily snapshots: 14 days\n\n- Weekly snapshots: 8 weeks" in page.text
    assert "```\ntidewater backup create --volume db1 --retain 30d\n```" in page.text
    assert "See Restore and the CLI reference for more." in page.text  # a sentence with links is content


def test_a_pdf_page_becomes_paragraphs_with_its_headings_apart(tmp_path):
    lines = [
        "3.2 Backups",
        "Tidewater takes a snapshot of every volume each night at two in the",
        "morning and keeps it for fourteen days unless a retention policy",
        "says otherwise.",
        "Deleting a volume deletes its snapshots, and restoring one needs a con-",
        "figured target volume of the same size or larger than the original.",
        "Retention",
        "Daily snapshots are kept for fourteen days and weekly ones for eight",
        "weeks.",
    ]
    pdf = only_document(write_pdf(tmp_path / "backups.pdf", lines))
    assert pdf.located and pdf.text.startswith(locations.page(1) + "\n")
    assert locations.without_markers(pdf.text).strip().split("\n\n") == [
        "3.2 Backups",
        "Tidewater takes a snapshot of every volume each night at two in the morning and keeps it for fourteen "
        "days unless a retention policy says otherwise.",
        "Deleting a volume deletes its snapshots, and restoring one needs a configured target volume of the same "
        "size or larger than the original.",
        "Retention",
        "Daily snapshots are kept for fourteen days and weekly ones for eight weeks.",
    ]


def test_one_example_in_two_code_flavours_keeps_each_flavours_lines(tmp_path):
    # Node.js's manual puts an example's ES module and CommonJS forms in one <pre>.
    text = html_document(
        tmp_path,
        "HTTP",
        "<main><h1>HTTP</h1><p>Connect to a server like this.</p>"
        '<pre><code class="mjs">import http from "node:http";\nhttp.get(url);</code>'
        '<code class="cjs">const http = require("node:http");\nhttp.get(url);</code></pre></main>',
    ).text
    assert '```\nimport http from "node:http";\nhttp.get(url);\n\nconst http = require("node:http");' in text


def test_a_page_title_loses_its_site_suffix_whatever_its_case_and_spaces(tmp_path):
    page = html_document(
        tmp_path,
        "What is\u00a0Ownership? - The Rust Programming Language",
        "<main><h1>What Is Ownership?</h1><p>Ownership is a set of rules that govern how memory is managed.</p></main>",
    )
    assert page.title == "What Is Ownership?"


def test_a_link_bar_with_separators_between_its_links_is_navigation(tmp_path):
    # Apache httpd's manual opens every page with its language switcher and a menu; the "|" between
    # links is no word of content, so neither reads as a sentence with links.
    page = html_document(
        tmp_path,
        ".htaccess files",
        '<p class="menu"><a href="m">Modules</a> | <a href="d">Directives</a> | <a href="f">FAQ</a> | '
        '<a href="g">Glossary</a></p><h1>.htaccess files</h1>'
        '<div class="toplang"><p><span>Available Languages: </span><a href="en">en</a> | <a href="es">es</a> | '
        '<a href="fr">fr</a> | <a href="ja">ja</a> | <a href="ko">ko</a> | <a href="pt">pt-br</a></p></div>'
        '<p>The default value of <a href="#o">AllowOverride</a> is None.</p>',
    )
    assert page.text == "# .htaccess files\n\nThe default value of AllowOverride is None."


def test_a_key_value_table_names_each_value_by_its_row_header(tmp_path):
    page = html_document(
        tmp_path,
        "core",
        "<main><h2>KeepAliveTimeout Directive</h2><table>"
        "<tr><th>Syntax:</th><td><code>KeepAliveTimeout <var>num</var>[ms]</code></td></tr>"
        "<tr><th>Default:</th><td><code>KeepAliveTimeout 5</code></td></tr>"
        "<tr><th>Context</th><td>server config</td><td>virtual host</td></tr></table></main>",
    )
    assert page.text.split("\n\n")[1:] == [
        "| Syntax: KeepAliveTimeout num[ms]",
        "| Default: KeepAliveTimeout 5",
        "| Context: server config; virtual host",
    ]


def test_an_example_set_as_code_broken_by_line_breaks_is_code_not_a_heading(tmp_path):
    text = html_document(
        tmp_path,
        "core",
        "<main><h2>HttpProtocolOptions</h2><p>Rejects it.</p>"
        "<p><code>\n  # Unsupported HTTP version<br>\n  GET /\\r\\n\\r\\n\n</code></p><p>Read the log.</p>"
        "<p><code>\n  httpd.exe -k install\n</code></p><p>Name the service with -n.</p></main>",
    ).text
    assert "```\n# Unsupported HTTP version\nGET /\\r\\n\\r\\n\n```\n\nRead the log." in text
    assert "```\nhttpd.exe -k install\n```\n\nName the service with -n." in text  # no fragment of a sentence


def test_a_note_box_titled_by_a_heading_leaves_its_section_named_as_it_was(tmp_path):
    # DocBook (PostgreSQL's manual) and Apache httpd's manual title their note and example boxes
    # with <h3>: read as headings, "Note" named the rest of the section and its chunks.
    page = html_document(
        tmp_path,
        "WAL",
        '<div class="sect1"><h2>Write Ahead Log</h2><p>The log protects committed work.</p>'
        '<div class="note"><h3 class="title">Note</h3><p>Unlogged tables skip it.</p></div>'
        "<p>The default level is replica.</p></div>"
        '<div class="sect1"><div class="titlepage"><div><h3 class="title">Checkpoints</h3></div></div>'
        "<p>A checkpoint flushes every data file.</p></div>",
    )
    assert page.text.split("\n\n") == [
        "## Write Ahead Log", "The log protects committed work.", "Note:", "Unlogged tables skip it.",
        "The default level is replica.", "### Checkpoints", "A checkpoint flushes every data file.",
    ]  # fmt: skip


MARKDOWN_PAGE = """---
title: "Release process"
owner: platform-team
---
Release process
===============

<!-- TODO(ana): the freeze date moves to Thursday; do not publish yet -->

Releases are cut from [the main branch](https://git.example.com/main "Main") every Tuesday.
See the [checklist][cl] and the [rollback guide][] before a release; [Freeze rules] apply.
![build status](https://ci.example.com/badge.svg)

Signing
-------

<!-- YAML
added: v2.1
-->
Artifacts are signed with `gpg --detach-sign [file](x)`. **Default:** `sha512`, see `**/*.sig`.

***

```
# keep: <!-- not a comment here --> and [a](b) stay as written
```

[cl]: https://wiki.example.com/checklist
[rollback guide]: https://wiki.example.com/rollback
[freeze rules]: ./freeze.md "Freeze"
"""


def test_markdown_keeps_what_a_reader_sees(tmp_path):
    """Front matter, comments, link targets and definitions, images: markup no reader sees never
    reaches a chunk; a setext heading is a heading; fenced code stays exactly as written."""
    from readers.blocks import parse_blocks

    (tmp_path / "release.md").write_text(MARKDOWN_PAGE)
    md = only_document(tmp_path / "release.md")
    assert md.title == "Release process"
    for hidden in ("owner: platform-team", "TODO(ana)", "freeze date", "added: v2.1", "https://", "badge", "[cl]"):
        assert hidden not in md.text.replace("# keep", ""), hidden
    assert "Releases are cut from the main branch every Tuesday." in md.text
    assert "See the checklist and the rollback guide before a release; Freeze rules apply." in md.text
    assert "signed with `gpg --detach-sign [file](x)`. Default: `sha512`, see `**/*.sig`." in md.text  # code is code
    assert "# keep: <!-- not a comment here --> and [a](b) stay as written" in md.text
    headings = [(b.level, b.text) for b in parse_blocks(md.text) if b.kind == "heading"]
    assert headings == [(1, "Release process"), (2, "Signing")]
    assert not any(b.text.strip("*-_ ") == "" for b in parse_blocks(md.text))  # the *** rule is no sentence


def test_markdown_title_from_front_matter(tmp_path):
    (tmp_path / "notes.md").write_text("---\ntitle: 'Travel policy'\n---\nBook trains over flights under 500 km.\n")
    md = only_document(tmp_path / "notes.md")
    assert md.title == "Travel policy" and md.text == "Book trains over flights under 500 km."


def test_markdown_html_reads_as_rendered(tmp_path):
    """Inline tags go (an anchor before each error code), entities and escapes show their
    character, and an HTML table in the Markdown is read as a table."""
    (tmp_path / "errors.md").write_text(
        '# Errors\n\n<a id="E_QUOTA"></a>\n### E_QUOTA\n\nThe upload exceeds the team&#39;s quota of 5&nbsp;GB; '
        "ask for \\*more\\* at <https://help.example.com>.\n\n"
        "<table>\n  <tr><th>Plan</th><th>Quota</th></tr>\n  <tr><td><code>team</code></td><td>5 GB</td></tr>\n</table>\n\n"
        "After the table.\n"
    )
    md = only_document(tmp_path / "errors.md")
    assert "<a" not in md.text and "</" not in md.text
    assert "The upload exceeds the team's quota of 5\xa0GB; ask for *more* at https://help.example.com." in md.text
    assert "Plan: team; Quota: 5 GB" in md.text
    assert md.text.endswith("After the table.")


def test_a_short_list_of_parameters_with_type_links_is_content(tmp_path):
    # Node.js's parameter lists link every type; with few words besides, the list read as a link bar.
    page = html_document(
        tmp_path,
        "StringDecoder",
        "<h1>StringDecoder</h1><h4>stringDecoder.end([buffer])</h4>"
        '<ul><li><code>buffer</code> <a href="#s">&lt;string&gt;</a> | <a href="#b">&lt;Buffer&gt;</a> | '
        '<a href="#d">&lt;DataView&gt;</a> The bytes to decode.</li><li>Returns: <a href="#s">&lt;string&gt;</a></li></ul>',
    )
    assert "- buffer <string> | <Buffer> | <DataView> The bytes to decode.\n\n- Returns: <string>" in page.text
