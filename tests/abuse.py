"""Crafted text for every entry point that reads a user's or a document's text, and crafted files of
every format a user can upload: the tables of inputs and files and the entry points that
tests/test_abuse.py bounds and benchmarks/abuse.py times.

An input is a run of a character some pattern gives meaning to, or a shape that made one of them
backtrack (an unclosed comment, a heading whose closing hashes never come, a sentence stop before
a word that never starts), and it arrives as a text, or written into a file of each format (each
line a paragraph, a slide's line, a row). A file (files(), legacy_files()) is a shape its format's
reader walks: elements nested as deep as the XML parser allows, thousands of tiny runs, cells,
slides, styles, notes or MIME parts, repeats, quoting, control words. Each entry point calls the
real functions a request or an upload calls, in the order they call them, up to the models and
the database, on what arrives: a file's bytes (a PDF's are many more than its text's), a
question's or an answer's characters.
"""

from __future__ import annotations

import io
import json
import resource
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from xml.sax.saxutils import escape

# Every character a pattern in corpus/ or pipeline/ gives meaning to.
SIGNIFICANT = "#*_[]()<>!-.`~|\\: \t\n"


def inputs(size: int) -> dict[str, str]:
    """Name -> a crafted text of about `size` characters."""
    cases = {f"run of {c!r}": c * size for c in SIGNIFICANT}
    shapes = {
        "unclosed comments": "<!--",
        "images never closed": "![](",
        "links never closed": "[a](",
        "code spans never closed": "`a",
        "strong never closed": "**a ",
        "escapes": "\\[",
        "dot-space": ". ",
        "quotes nested": "> ",
        "citations": "[1] ",
        "abbreviations": "Dr. A ",
        "opened parentheses": "(a. B ",
        "tabbed lines": "\t\n",
        "blank-ish lines": " \n",
        "list markers": "- ",
        "table cells": "| ",
        "entities": "&amp;",
        "inline tags": "<a ",
        "elements nested": "<p>",
    }
    cases |= {name: unit * (size // len(unit)) for name, unit in shapes.items()}
    half = size // 2
    cases |= {
        "heading never closed": "# a" + " " * size + "b",
        "brackets nested": "[" * half + "]" * half,
        "parentheses nested": "(" * half + ")" * half,
        "stops before no sentence": "a" + "." * size + " b",
        "a word before its stop": "a" * size + " . B",
        "spaces before a citation": "a" + " " * size + "[1] x",
        "key and spaces": "| Key:" + " " * size + ";",
        "front matter title": "---\ntitle: a" + " " * size + "b\n---\nText.",
        "item of tabs": "-" + "\t" * size + "x [1]",
    }
    return cases


def _tokens() -> tuple[Callable, Callable]:
    from corpus.embedder import get_embedder

    embedder = get_embedder()
    return embedder.count_tokens, embedder.split_tokens


def document_read(text: str) -> None:
    """What ingestion does with a document's text before embedding it (corpus.services)."""
    from corpus.chunking import chunk_text
    from corpus.consistency import consistency_score
    from corpus.instructions import addresses_a_model
    from corpus.services import chunk_heading

    count_tokens, split_tokens = _tokens()
    for piece in chunk_text(text, count_tokens=count_tokens, split_tokens=split_tokens):
        consistency_score(piece.text)
        addresses_a_model(piece.text)
        chunk_heading("Abuse", piece.section)


def pdf_bytes(text: str) -> bytes:
    """A one-page PDF whose text layer holds `text` (tests.documents.write_pdf, in memory)."""
    from pathlib import Path
    from tempfile import TemporaryDirectory

    from tests.documents import write_pdf

    lines = [line[i : i + 1000] for line in text.split("\n") for i in range(0, len(line), 1000) or [0]]
    with TemporaryDirectory() as folder:
        return write_pdf(Path(folder) / "abuse.pdf", lines).read_bytes()


def upload(name: str, data: bytes) -> list:
    """An uploaded file: extracted as its name says (readers.extract), then read as a document. The
    documents read; none when it is refused."""
    from readers.extract import ExtractedDocument, ExtractionError, extract_bytes

    try:
        items = extract_bytes(name, data, source=f"upload:{name}")
    except ExtractionError:
        return []  # refused, with a reason: a 400, not a hang
    documents = [item for item in items if isinstance(item, ExtractedDocument)]
    for document in documents:
        document_read(document.text)
    return documents


def question_asked(question: str) -> None:
    """The request path's text functions over the question, before and between the models."""
    from corpus.instructions import addresses_a_model
    from corpus.selectors import DOTTED, SNAKE_CASE
    from judges.nli_data import claim_from
    from judges.verifiers import asking_sentence
    from pipeline.extractive import content_terms
    from pipeline.gate import without_echo, written_as_name
    from pipeline.search import keyword_query

    asking_sentence(question)
    content_terms(question)
    keyword_query(question)
    claim_from(question, "Wilhelm Conrad Röntgen")
    without_echo(question, ORDINARY_PASSAGE)
    addresses_a_model(question)
    SNAKE_CASE.findall(question)
    DOTTED.findall(question)
    for word in sorted(set(question.split()))[:20]:
        written_as_name(question, word)


def writeback_edit(answer: str) -> None:
    """A curator's edited answer: split into cited sentences and made into what would be published."""
    from corpus.citations import citation_numbers, keep_citations, without_citations
    from judges.grounding import answer_sentences, verbatim_in
    from writeback.validation import attribution_score, proposed_text

    sentences = answer_sentences(answer)
    proposed_text("Who got the first Nobel Prize in Physics?", sentences, [{"n": 1, "title": "Nobel"}])
    attribution_score(sentences, {1})
    for sentence, _ in sentences[:50]:
        verbatim_in(sentence, [{"text": ORDINARY_PASSAGE}])
    citation_numbers(answer)
    without_citations(answer)
    keep_citations(answer, {1})


def critique_reason(reason: str) -> None:
    """A curator's reason for rejecting a write-back, as later answers are warned with it."""
    from pipeline.generators import answer_prompt
    from writeback.validation import critique_text

    answer_prompt("When did it open?", [], warnings=[critique_text([{"check": "curator", "reason": reason}])])


def search_result(text: str) -> None:
    """An external search result's text, cut into strips and judged without the question's echo."""
    from corpus.strips import strips_of
    from pipeline.extractive import content_terms
    from pipeline.gate import without_echo

    for strip in strips_of(text):
        content_terms(strip)
    without_echo(ORDINARY_QUESTION, text)


def generated_answer(reply: str) -> None:
    """An LLM's reply (which may repeat a document's text): citations checked, streamed, inferred."""
    from pipeline.generators import answer_pieces, parse_answer
    from pipeline.retro import inferred_statements

    parse_answer(reply, {1, 2}, "ollama")
    answer_pieces(reply)
    inferred_statements(reply)


ORDINARY_QUESTION = "Who got the first Nobel Prize in Physics?"
ORDINARY_PASSAGE = (
    "The first Nobel Prize in Physics was awarded in 1901 to Wilhelm Conrad Röntgen, of Germany, who "
    "received 150,782 SEK. It honoured his discovery of the remarkable rays subsequently named after him."
)


def _jsonl(text: str) -> bytes:
    return json.dumps({"title": "Abuse", "text": text}).encode()


def cpu_time() -> float:
    """This process's CPU time and that of the children it has waited for: LibreOffice converts a
    legacy file for the upload in a process of its own."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


# --- Files: every format a user can upload -------------------------------------------------------
# Written here as the least XML (or RTF, or MIME) each reader accepts, so that a file's bytes are its
# shape: a ZIP package's entries are stored, not deflated, and a bound per 10 KB of the file holds
# its reader (how far deflate packs XML is readers.office.zip_problem's to bound).

DEPTH = 200  # elements nested this deep; lxml refuses a document nested past 256 (a parse error: a 400)


def _stored(entries: dict[str, str | bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return out.getvalue()


_OPC = "http://schemas.openxmlformats.org/package/2006"
_RELATED = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_ML = "application/vnd.openxmlformats-officedocument."


def _ooxml(main: str, kind: str, xml: str, parts: list[tuple[str, str, str, str]]) -> bytes:
    """An Office Open XML package: its main part (path, content type, XML) and the parts it relates
    as rId1, rId2, …, each (path beside it, content type, relationship, XML)."""
    folder, name = main.rsplit("/", 1)
    named = [(main, kind), *((f"{folder}/{path}", content) for path, content, _, _ in parts)]
    types = "".join(f'<Override PartName="/{path}" ContentType="{content}"/>' for path, content in named)
    related = "".join(
        f'<Relationship Id="rId{n}" Type="{_RELATED}/{relation}" Target="{path}"/>'
        for n, (path, _, relation, _) in enumerate(parts, start=1)
    )
    return _stored({
        "[Content_Types].xml": f'<Types xmlns="{_OPC}/content-types"><Default Extension="rels" '
        f'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>{types}</Types>',
        "_rels/.rels": f'<Relationships xmlns="{_OPC}/relationships">'
        f'<Relationship Id="rId1" Type="{_RELATED}/officeDocument" Target="{main}"/></Relationships>',
        main: xml,
        f"{folder}/_rels/{name}.rels": f'<Relationships xmlns="{_OPC}/relationships">{related}</Relationships>',
        **{f"{folder}/{path}": part for path, _, _, part in parts},
    })  # fmt: skip


_W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
_WORD = {
    ".docx": f"{_ML}wordprocessingml.document.main+xml",
    ".docm": "application/vnd.ms-word.document.macroEnabled.main+xml",
}


def word(suffix: str, body: str, *, styles: str = "", notes: str = "") -> bytes:
    """A Word document (.docx or .docm) of `body`, with its styles and its footnotes when given."""
    parts = [
        (path, f"{_ML}wordprocessingml.{relation}+xml", relation, f"<w:{relation} {_W}>{xml}</w:{relation}>")
        for path, relation, xml in [("styles.xml", "styles", styles), ("footnotes.xml", "footnotes", notes)]
        if xml
    ]
    return _ooxml("word/document.xml", _WORD[suffix], f"<w:document {_W}><w:body>{body}</w:body></w:document>", parts)


_P = (
    'xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" '
    f'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:r="{_RELATED}"'
)
_PRESENTATION = {
    ".pptx": f"{_ML}presentationml.presentation.main+xml",
    ".pptm": "application/vnd.ms-powerpoint.presentation.macroEnabled.main+xml",
}
_GROUP = '<p:nvGrpSpPr><p:cNvPr id="1" name="g"/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/>'


def presentation(suffix: str, slides: list[str]) -> bytes:
    """A presentation (.pptx or .pptm) of `slides`, each its shapes' XML."""
    listed = "".join(f'<p:sldId id="{255 + n}" r:id="rId{n}"/>' for n in range(1, len(slides) + 1))
    xml = (
        f'<p:presentation {_P}><p:sldIdLst>{listed}</p:sldIdLst><p:sldSz cx="9144000" cy="6858000"/>'
        '<p:notesSz cx="6858000" cy="9144000"/></p:presentation>'
    )
    parts = [
        (f"slides/slide{n}.xml", f"{_ML}presentationml.slide+xml", "slide",
         f"<p:sld {_P}><p:cSld><p:spTree>{_GROUP}{shapes}</p:spTree></p:cSld></p:sld>")
        for n, shapes in enumerate(slides, start=1)
    ]  # fmt: skip
    return _ooxml("ppt/presentation.xml", _PRESENTATION[suffix], xml, parts)


def _text_box(paragraphs: str, shape_id: int = 2, placeholder: str = "") -> str:
    return (
        f'<p:sp><p:nvSpPr><p:cNvPr id="{shape_id}" name="t"/><p:cNvSpPr txBox="1"/><p:nvPr>{placeholder}</p:nvPr>'
        f'</p:nvSpPr><p:spPr><a:prstGeom prst="rect"/></p:spPr><p:txBody><a:bodyPr/>{paragraphs}</p:txBody></p:sp>'
    )


_S = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
_WORKBOOK = {
    ".xlsx": f"{_ML}spreadsheetml.sheet.main+xml",
    ".xlsm": "application/vnd.ms-excel.sheet.macroEnabled.main+xml",
}


def workbook(suffix: str, sheets: list[str], strings: str = "") -> bytes:
    """A workbook (.xlsx or .xlsm) of `sheets`, each its rows' XML, and its shared strings' XML."""
    listed = "".join(f'<sheet name="Sheet{n}" sheetId="{n}" r:id="rId{n}"/>' for n in range(1, len(sheets) + 1))
    parts = [
        (f"worksheets/sheet{n}.xml", f"{_ML}spreadsheetml.worksheet+xml", "worksheet",
         f"<worksheet {_S}><sheetData>{rows}</sheetData></worksheet>")
        for n, rows in enumerate(sheets, start=1)
    ]  # fmt: skip
    if strings:
        parts.append(
            (
                "sharedStrings.xml",
                f"{_ML}spreadsheetml.sharedStrings+xml",
                "sharedStrings",
                f"<sst {_S}>{strings}</sst>",
            )
        )
    xml = f'<workbook {_S} xmlns:r="{_RELATED}"><sheets>{listed}</sheets></workbook>'
    return _ooxml("xl/workbook.xml", _WORKBOOK[suffix], xml, parts)


_ODF = {".odt": "text", ".ods": "spreadsheet", ".odp": "presentation"}
_O = " ".join(
    f'xmlns:{prefix}="urn:oasis:names:tc:opendocument:xmlns:{name}:1.0"'
    for prefix, name in [("office", "office"), ("text", "text"), ("table", "table"), ("draw", "drawing"),
                         ("presentation", "presentation")]
)  # fmt: skip


def opendocument(suffix: str, body: str) -> bytes:
    """An OpenDocument package (.odt, .ods or .odp) whose content.xml's body is `body`."""
    kind = _ODF[suffix]
    return _stored({
        "mimetype": f"application/vnd.oasis.opendocument.{kind}",
        "content.xml": f"<office:document-content {_O}><office:body><office:{kind}>{body}</office:{kind}>"
        "</office:body></office:document-content>",
    })  # fmt: skip


def rtf(body: str, fonts: str = "{\\f0 Arial;}") -> bytes:
    return f"{{\\rtf1\\ansi\\ansicpg1252\\deff0{{\\fonttbl{fonts}}}{body}}}".encode("latin-1")


def message(body: str, headers: str = "Subject: Abuse\nFrom: a@example.org\n", kind: str = "text/plain") -> bytes:
    """An e-mail message: `headers`, then a body of content type `kind`."""
    return f"{headers}MIME-Version: 1.0\nContent-Type: {kind}\nContent-Transfer-Encoding: 8bit\n\n{body}".encode()


def written(suffix: str, text: str) -> bytes:
    """A crafted text as a file of the format `suffix`, as a person writes text there: each line a
    paragraph (a slide's line, a row's one cell); a CSV or TSV file and an e-mail's body as it is."""
    lines = [escape(line) for line in text.split("\n")]
    if suffix == ".docx":
        return word(suffix, "".join(f'<w:p><w:r><w:t xml:space="preserve">{line}</w:t></w:r></w:p>' for line in lines))
    if suffix == ".pptx":
        return presentation(suffix, [_text_box("".join(f"<a:p><a:r><a:t>{line}</a:t></a:r></a:p>" for line in lines))])
    if suffix == ".xlsx":
        return workbook(suffix, ["".join(f'<row><c t="inlineStr"><is><t>{line}</t></is></c></row>' for line in lines)])
    if suffix == ".odt":
        return opendocument(suffix, "".join(f"<text:p>{line}</text:p>" for line in lines))
    if suffix == ".ods":
        rows = "".join(
            f"<table:table-row><table:table-cell><text:p>{line}</text:p></table:table-cell></table:table-row>"
            for line in lines
        )
        return opendocument(suffix, f'<table:table table:name="Abuse">{rows}</table:table>')
    if suffix == ".odp":
        paragraphs = "".join(f"<text:p>{line}</text:p>" for line in lines)
        return opendocument(
            suffix, f"<draw:page><draw:frame><draw:text-box>{paragraphs}</draw:text-box></draw:frame></draw:page>"
        )
    if suffix == ".rtf":
        escaped = text.replace("\\", "\\\\").replace("{", "\\{").replace("}", "\\}")
        return rtf("".join(c if c.isascii() else f"\\u{ord(c)}?" for c in escaped).replace("\n", "\\par\n"))
    if suffix == ".eml":
        return message(text, kind="text/plain; charset=utf-8")
    return text.encode()  # .csv, .tsv


def _times(unit: str, size: int) -> str:
    """`unit` repeated to about `size` characters."""
    return unit * max(size // len(unit), 1)


def _word_shapes(suffix: str, size: int) -> dict[str, bytes]:
    run, paragraph = "<w:r><w:t>a </w:t></w:r>", "<w:p><w:r><w:t>a.</w:t></w:r></w:p>"
    cell = "<w:tc><w:p><w:r><w:t>a</w:t></w:r></w:p></w:tc>"
    tracked = "<w:ins><w:r><w:t>a </w:t></w:r></w:ins><w:del><w:r><w:delText>b </w:delText></w:r></w:del>"
    first = '<w:tr><w:tc><w:tcPr><w:vMerge w:val="restart"/></w:tcPr><w:p/></w:tc></w:tr>'
    merged = "<w:tr><w:tc><w:tcPr><w:vMerge/></w:tcPr><w:p/></w:tc></w:tr>"
    spanning = f'<w:tr><w:tc><w:tcPr><w:gridSpan w:val="1000000"/></w:tcPr>{paragraph}</w:tc></w:tr>'
    shapes = {
        "tiny runs": f"<w:p>{_times(run, size)}</w:p>",
        "one-word paragraphs": _times(paragraph, size),
        "elements nested": _times("<w:p>" + "<w:hyperlink>" * DEPTH + run + "</w:hyperlink>" * DEPTH + "</w:p>", size),
        "tables nested": _times("<w:tbl><w:tr><w:tc>" * 60 + paragraph + "</w:tc></w:tr></w:tbl>" * 60, size),
        "a row of cells": f"<w:tbl><w:tr>{_times(cell, size)}</w:tr></w:tbl>",
        "rows of a cell": f"<w:tbl>{_times(f'<w:tr>{cell}</w:tr>', size)}</w:tbl>",
        "tracked changes": f"<w:p>{_times(tracked, size)}</w:p>",
        "cells merged down": f"<w:tbl>{first}{_times(merged, size)}</w:tbl>",
        "a cell spanning a million columns": f"<w:tbl>{_times(spanning, size)}</w:tbl>",
    }
    files = {name: word(suffix, body) for name, body in shapes.items()}
    # Each paragraph's style is looked up among all the styles, and so is each style it is based on.
    count = size // 160
    styled = f'<w:p><w:pPr><w:pStyle w:val="s{count - 1}"/></w:pPr><w:r><w:t>a.</w:t></w:r></w:p>'
    styles = "".join(
        f'<w:style w:type="paragraph" w:styleId="s{i}"><w:basedOn w:val="s{i - 1}"/></w:style>' for i in range(count)
    )
    files["styles based on styles"] = word(suffix, _times(styled, size // 2), styles=styles)
    notes = range(size // 150)
    cited = "".join(f'<w:r><w:footnoteReference w:id="{i}"/></w:r>' for i in notes)
    written_notes = "".join(f'<w:footnote w:id="{i}"><w:p><w:r><w:t>n</w:t></w:r></w:p></w:footnote>' for i in notes)
    files["footnotes"] = word(suffix, f"<w:p>{cited}</w:p>", notes=written_notes)
    return files


def _presentation_shapes(suffix: str, size: int) -> dict[str, bytes]:
    line = "<a:p><a:r><a:t>a.</a:t></a:r></a:p>"
    group = f"<p:grpSp>{_GROUP}" * DEPTH + _text_box(line) + "</p:grpSp>" * DEPTH
    cell = "<a:tc><a:txBody><a:bodyPr/><a:p><a:r><a:t>a</a:t></a:r></a:p></a:txBody></a:tc>"
    table = (
        '<p:graphicFrame><p:nvGraphicFramePr><p:cNvPr id="3" name="t"/><p:cNvGraphicFramePr/><p:nvPr/>'
        '</p:nvGraphicFramePr><p:xfrm><a:off x="0" y="0"/><a:ext cx="1" cy="1"/></p:xfrm><a:graphic>'
        '<a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/table"><a:tbl><a:tblGrid>'
        + '<a:gridCol w="1"/>' * 10
        + "</a:tblGrid>"
        + _times(f'<a:tr h="1">{cell * 10}</a:tr>', size)
        + "</a:tbl></a:graphicData></a:graphic></p:graphicFrame>"
    )
    boxes = range(2, size // 200)
    placeholders = "".join(_text_box(line, n, f'<p:ph type="body" idx="{n}"/>') for n in boxes)
    return {
        "slides": presentation(suffix, [_text_box(line)] * (size // 600)),
        "text boxes": presentation(suffix, ["".join(_text_box(line, n) for n in boxes)]),
        "placeholders": presentation(suffix, [placeholders]),
        "tiny runs": presentation(suffix, [_text_box("<a:p>" + _times("<a:r><a:t>a </a:t></a:r>", size) + "</a:p>")]),
        "one-word paragraphs": presentation(suffix, [_text_box(_times(line, size))]),
        "groups nested": presentation(suffix, [group] * max(size // len(group), 1)),
        "table cells": presentation(suffix, [table]),
    }


def _workbook_shapes(suffix: str, size: int) -> dict[str, bytes]:
    number = "<row><c><v>1</v></c></row>"
    strings = "".join(f"<si><t>s{i}</t></si>" for i in range(size // 40))
    referred = "".join(
        "<row>" + "".join(f'<c t="s"><v>{10 * r + c}</v></c>' for c in range(10)) + "</row>" for r in range(size // 400)
    )
    # Each row is read to its last cell, every empty one between: refused past MAX_WORKBOOK_CELLS.
    apart = "".join(
        f'<row r="{r}"><c r="A{r}"><v>1</v></c><c r="XFD{r}"><v>1</v></c></row>' for r in range(1, size // 80)
    )
    header = "<row>" + _times('<c t="s"><v>0</v></c>', size // 2) + "</row>"
    return {
        "numbers": workbook(suffix, [_times("<row>" + "<c><v>1</v></c>" * 10 + "</row>", size)]),
        "shared strings": workbook(suffix, [referred], strings),
        "a string of tiny runs": workbook(
            suffix, ['<row><c t="s"><v>0</v></c></row>'], "<si>" + _times("<r><t>a </t></r>", size) + "</si>"
        ),
        "sheets": workbook(suffix, [number] * (size // 400)),
        "cells far apart": workbook(suffix, [apart]),
        "a wide header over narrow rows": workbook(suffix, [header + _times(number, size // 2)], "<si><t>h</t></si>"),
    }


def _delimited_shapes(delimiter: str, size: int) -> dict[str, bytes]:
    shapes = {
        "empty fields": delimiter * size,
        "a field a line": "a\n" * (size // 2),
        "quotes doubled": '"' + '""' * (size // 2) + '"',
        "quoted line breaks": f'"a\nb"{delimiter}' * (size // 6),
        "a quote never closed": '"' + f"a{delimiter}\n" * (size // 3),
        "quotes inside fields": f'a"b{delimiter}' * (size // 4),
        "digits never a number": "1 " * (size // 2) + "x",
        "a wide header over narrow rows": f"h{delimiter}" * (size // 4) + "\n" + "a\n" * (size // 4),
    }
    return {name: text.encode() for name, text in shapes.items()}


# A table as no program writes one: a thousand cells a thousand times over, in 200 bytes.
_REPEATED_TABLE = (
    '<table:table><table:table-row table:number-rows-repeated="1000"><table:table-cell '
    'table:number-columns-repeated="1000"><text:p>a</text:p></table:table-cell></table:table-row></table:table>'
)


def _text_document_shapes(size: int) -> dict[str, bytes]:
    half = DEPTH // 2
    note = '<text:note text:note-class="footnote"><text:note-citation>1</text:note-citation><text:note-body><text:p>n'
    noted = "</text:p></text:note-body></text:note>"
    shapes = {
        "tiny spans": "<text:p>" + _times("<text:span>a </text:span>", size) + "</text:p>",
        "one-word paragraphs": _times("<text:p>a.</text:p>", size),
        "spans nested": _times("<text:p>" + "<text:span>" * DEPTH + "a" + "</text:span>" * DEPTH + "</text:p>", size),
        "lists nested": _times(
            "<text:list><text:list-item>" * half + "<text:p>a</text:p>" + "</text:list-item></text:list>" * half, size
        ),
        "sections nested": _times("<text:section>" * DEPTH + "<text:p>a</text:p>" + "</text:section>" * DEPTH, size),
        "runs of spaces": "<text:p>" + _times('<text:s text:c="100"/>a', size) + "</text:p>",
        "footnotes": "<text:p>" + _times(note + noted, size) + "</text:p>",
        "footnotes nested in footnotes": _times("<text:p>" + note * 20 + noted * 20 + "</text:p>", size),
        "a table repeated": _times(_REPEATED_TABLE, size),
    }
    return {name: opendocument(".odt", body) for name, body in shapes.items()}


def _spreadsheet_shapes(size: int) -> dict[str, bytes]:
    cell = "<table:table-cell><text:p>1</text:p></table:table-cell>"
    across = '<table:table-cell table:number-columns-repeated="16384"><text:p>{}</text:p></table:table-cell>'
    down = '<table:table-row table:number-rows-repeated="{}">{}</table:table-row>'
    shapes = {
        "numbers": _times(f"<table:table-row>{cell * 10}</table:table-row>", size),
        "a cell a row": _times(f"<table:table-row>{cell}</table:table-row>", size),
        # Repeats are read up to MAX_WORKBOOK_CELLS (2,000,000), counted as the sheet shows them.
        "cells repeated across and down": down.format(121, across.format("a")),
        "a row repeated a million times": down.format(1_000_000, cell),
        "a wide header over narrow rows": f"<table:table-row>{across.format('h')}</table:table-row>"
        + down.format(100_000, cell),
    }
    files = {
        name: opendocument(".ods", f'<table:table table:name="Abuse">{rows}</table:table>')
        for name, rows in shapes.items()
    }
    sheet = f'<table:table table:name="s"><table:table-row>{cell}</table:table-row></table:table>'
    files["sheets"] = opendocument(".ods", _times(sheet, size))
    return files


def _slides_shapes(size: int) -> dict[str, bytes]:
    half = DEPTH // 2
    frame = "<draw:frame><draw:text-box><text:p>a.</text:p></draw:text-box></draw:frame>"
    items = _times("<text:p>a</text:p>", size // 2)
    lists = "<text:list><text:list-item>" * half + items + "</text:list-item></text:list>" * half
    shapes = {
        "slides": _times(f"<draw:page>{frame}</draw:page>", size),
        "frames": "<draw:page>" + _times(frame, size) + "</draw:page>",
        "groups nested": "<draw:page>"
        + _times("<draw:g>" * DEPTH + frame + "</draw:g>" * DEPTH, size)
        + "</draw:page>",
        "lists nested": f"<draw:page><draw:frame><draw:text-box>{lists}</draw:text-box></draw:frame></draw:page>",
        "a table repeated": "<draw:page>"
        + _times(f"<draw:frame>{_REPEATED_TABLE}</draw:frame>", size)
        + "</draw:page>",
    }
    return {name: opendocument(".odp", body) for name, body in shapes.items()}


def _rtf_shapes(size: int) -> dict[str, bytes]:
    half = size // 2
    return {
        "groups nested": rtf("{" * half + "a" + "}" * half),
        "control words": rtf(_times("\\b ", size) + "a"),
        "hex escapes": rtf(_times("\\'e9", size)),
        "unicode escapes": rtf(_times("\\u233?", size)),
        "destinations skipped": rtf(_times("{\\*\\x a}", size) + "a"),
        "cells": rtf(_times("a\\cell ", size) + "\\row"),
        "paragraphs": rtf(_times("a.\\par ", size)),
        "pictures": rtf(_times("{\\pict\\bin4 abcd}", size) + "a"),
        "hyperlink fields never closed": rtf(_times('{\\field{\\*\\fldinst{HYPERLINK "', size)),
        "a font table of fonts never named": rtf("a", fonts=_times("\\f1", size)),
    }


def _message_shapes(size: int) -> dict[str, bytes]:
    def multipart(parts: list[str], boundary: str = "b") -> str:
        return "".join(f"--{boundary}\n{part}\n" for part in parts) + f"--{boundary}--\n"

    plain, mixed = "Content-Type: text/plain\n\na.", 'multipart/mixed; boundary="b"'
    nested = forwarded = plain
    for depth in range(DEPTH):
        nested = f'Content-Type: multipart/mixed; boundary="n{depth}"\n\n' + multipart([nested], f"n{depth}")
        forwarded = f"Content-Type: message/rfc822\n\nSubject: a\n{forwarded}"
    attachment = 'Content-Type: text/plain\nContent-Disposition: attachment; filename="a.txt"\n\na.'
    sender = "(" * (size // 2) + ")" * (size // 2)
    return {
        "parts": message(multipart([plain] * (size // 40)), kind=mixed),
        "multiparts nested": message(multipart([plain] + [nested] * max(size // len(nested), 1)), kind=mixed),
        "messages forwarded within": message(
            multipart([plain] + [forwarded] * max(size // len(forwarded), 1)), kind=mixed
        ),
        "attachments": message(multipart([plain] + [attachment] * (size // 90)), kind=mixed),
        "headers": message("a.", "Subject: Abuse\n" + _times("X-A: a\n", size)),
        "recipients": message("a.", "Subject: Abuse\nTo: " + _times("a@example.org, ", size) + "\n"),
        "encoded words": message("a.", "Subject: " + _times("=?utf-8?q?a?= ", size) + "\n"),
        "comments nested in the sender": message("a.", f"Subject: Abuse\nFrom: {sender} a@example.org\n"),
        "quoted replies": message("a.\n" + _times("On Monday, a wrote:\n> a\n", size)),
        "reply headers": message(_times("From: a\na\n", size)),
    }


@dataclass(frozen=True)
class EntryPoint:
    read: Callable  # what the entry point does with what arrives
    arrives: Callable[[str], str | bytes] = lambda text: text  # a crafted text as it arrives (a file's bytes)
    # Times the CPU bound per 10 KB it is held to. A PDF's layout is read from every glyph's box and
    # font: PDFium takes up to 56 ms per 10 KB of the file's bytes on crafted text (2026-11-29), twice
    # what a text or an Office file takes; twice the bound keeps the same room. A backtracking pattern
    # still misses the bound by orders of magnitude.
    cost: float = 1.0


def _file(name: str, encode: Callable[[str], bytes] = str.encode, cost: float = 1.0) -> EntryPoint:
    return EntryPoint(lambda data: upload(name, data), encode, cost)


def _written(suffix: str) -> EntryPoint:
    return _file(f"abuse{suffix}", lambda text: written(suffix, text))


ENTRY_POINTS: dict[str, EntryPoint] = {
    "question": EntryPoint(question_asked),
    "upload .txt": _file("abuse.txt"),
    "upload .md": _file("abuse.md"),
    "upload .html": _file("abuse.html"),
    "upload .jsonl": _file("abuse.jsonl", _jsonl),
    "upload .pdf": _file("abuse.pdf", pdf_bytes, cost=2.0),
    **{
        f"upload {suffix}": _written(suffix)
        for suffix in (".docx", ".pptx", ".xlsx", ".csv", ".tsv", ".odt", ".ods", ".odp", ".rtf", ".eml")
    },  # fmt: skip
    "write-back edit": EntryPoint(writeback_edit),
    "critique reason": EntryPoint(critique_reason),
    "search result": EntryPoint(search_result),
    "generated answer": EntryPoint(generated_answer),
}


def files(size: int) -> dict[str, dict[str, bytes]]:
    """Suffix -> shape -> a crafted file of about `size` bytes: a shape its format's reader walks
    (elements nested, many tiny runs, cells or slides, long lines, quoting, parts) for every format a
    user can upload but the text ones (inputs() arrive as they are) and the legacy ones (legacy_files)."""
    return {
        **{suffix: _word_shapes(suffix, size) for suffix in _WORD},
        **{suffix: _presentation_shapes(suffix, size) for suffix in _PRESENTATION},
        **{suffix: _workbook_shapes(suffix, size) for suffix in _WORKBOOK},
        ".csv": _delimited_shapes(",", size),
        ".tsv": _delimited_shapes("\t", size),
        ".odt": _text_document_shapes(size),
        ".ods": _spreadsheet_shapes(size),
        ".odp": _slides_shapes(size),
        ".rtf": _rtf_shapes(size),
        ".eml": _message_shapes(size),
    }


# Legacy files are LibreOffice's to read (readers.legacy): each is a shape of the format it converts to,
# saved in the legacy format by LibreOffice, so that it is a file LibreOffice writes.
LEGACY_SHAPES = {
    ".doc": ("one-word paragraphs", lambda size: _word_shapes(".docx", size)["one-word paragraphs"]),
    ".xls": ("numbers", lambda size: _workbook_shapes(".xlsx", size)["numbers"]),
    # LibreOffice saves a presentation of one slide or of ten in 600 KB and more: ten slides will do.
    ".ppt": ("slides", lambda size: _presentation_shapes(".pptx", size // 10)["slides"]),
}
# CPU seconds a conversion takes whatever the file (LibreOffice starting with a new profile):
# 1.0 to 1.5 s here (2026-11-29). A legacy file is held to twice that, and the bound per 10 KB beyond.
LIBREOFFICE_START = 3.0


def legacy_files(size: int) -> dict[str, dict[str, bytes]]:
    """Suffix -> shape -> a legacy file converted from a file of about `size` bytes in that shape
    (LEGACY_SHAPES). LibreOffice starts for each: seconds. Empty when LibreOffice is not installed."""
    import subprocess
    from pathlib import Path
    from tempfile import TemporaryDirectory

    from readers.legacy import soffice

    program, found = soffice(), {}
    if program is None:
        return found
    with TemporaryDirectory() as folder:
        work = Path(folder)
        for suffix, (shape, build) in LEGACY_SHAPES.items():
            source = work / f"abuse{suffix}x"  # .docx, .xlsx, .pptx
            source.write_bytes(build(size))
            subprocess.run(
                [program, f"-env:UserInstallation={(work / 'profile').as_uri()}", "--headless", "--convert-to",
                 suffix[1:], "--outdir", str(work / "out"), str(source)],
                check=True, capture_output=True, timeout=120,
            )  # fmt: skip
            found[suffix] = {shape: (work / "out" / f"abuse{suffix}").read_bytes()}
    return found
