"""Real files in every supported format, written by the tests themselves."""

from dataclasses import dataclass
from pathlib import Path


def write_pdf(path: Path, lines: list[str], title: str = "") -> Path:
    """Write a minimal valid one-page PDF whose text layer holds `lines` (Helvetica, WinAnsi)."""
    path.write_bytes(pdf_bytes([lines], title))
    return path


def pdf_bytes(pages: list[list[str]], title: str = "") -> bytes:
    """A minimal valid PDF of one page per item of `pages`, each page's text layer its lines."""
    count = len(pages)
    font = 3 + 2 * count  # objects: catalog, pages, then a page and its content stream per page
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % (3 + 2 * i) for i in range(count)), count),
    ]
    for i, lines in enumerate(pages):
        text_ops = " ".join(f"({_pdf_escape(line)}) Tj T*" for line in lines)
        stream = f"BT /F1 11 Tf 14 TL 72 740 Td {text_ops} ET".encode("latin-1")
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
            b"/Resources << /Font << /F1 %d 0 R >> >> >>" % (4 + 2 * i, font)
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    objects.append(f"<< /Title ({_pdf_escape(title)}) >>".encode("latin-1") if title else b"<< >>")
    return pdf_file(objects, info_number=len(objects))


def pdf_file(objects: list[bytes], *, info_number: int | None = None) -> bytes:
    """The PDF of numbered `objects` (1: the catalog; `info_number` its document information, if
    any), with its cross-reference table."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    info = b" /Info %d 0 R" % info_number if info_number else b""
    out += b"trailer\n<< /Size %d /Root 1 0 R%s >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, info, xref)
    return bytes(out)


def _pdf_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def write_corpus(folder: Path) -> Path:
    """One file of each supported format, plus one broken PDF and one unsupported file."""
    (folder / "nested").mkdir(parents=True, exist_ok=True)
    (folder / "handbook.txt").write_text(
        "The office opens at eight in the morning. Visitors sign in at the front desk.\n"
    )
    (folder / "guide.md").write_text(
        "# Onboarding guide\n\nNew staff receive a laptop on their first day.\n\n- Badge photos are taken on Mondays.\n"
    )
    (folder / "nested" / "page.html").write_text(
        "<html><head><title>Parking rules</title><style>body{color:red}</style></head>"
        "<body><h1>Parking</h1><p>Bicycles are parked in the courtyard.</p>"
        "<script>var secret = 'never indexed';</script></body></html>"
    )
    write_pdf(folder / "nested" / "safety.pdf", ["Fire drills happen twice a year.", "Exits are marked in green."],
              title="Safety manual")  # fmt: skip
    (folder / "faq.jsonl").write_text(
        '{"id": "wifi", "title": "Wi-Fi", "text": "The guest network password changes weekly."}\n'
        '{"title": "Canteen", "text": "Lunch is served from noon until two."}\n'
        "this line is not json\n"
        '{"title": "No text here"}\n'
    )
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4\nthis is not really a pdf at all")
    (folder / "diagram.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    return folder


@dataclass(frozen=True)
class Text:
    """A run of text on a page: `x` from the left edge, `top` from the top edge (the baseline sits
    `size` below it), in points."""

    x: float
    top: float
    text: str
    size: float = 11
    bold: bool = False
    mono: bool = False  # Courier: a listing


@dataclass(frozen=True)
class Rule:
    """A stroked line from (x0, top0) to (x1, top1), measured as Text is: a table's ruling."""

    x0: float
    top0: float
    x1: float
    top1: float


def write_pdf_pages(
    path: Path, pages: list[list[Text | Rule]], *, info: dict[str, str] | None = None, size=(612, 792)
) -> Path:
    """Write a PDF of several pages, each drawn from Text runs (Helvetica, Helvetica-Bold, Courier)
    and Rules.
    `info` is the document information dictionary ({"Title": ..., "Author": ..., "CreationDate":
    "D:20261126093000Z"})."""
    width, height = size
    page_count = len(pages)
    # 1 catalog, 2 page tree, 3 Helvetica, 4 Helvetica-Bold, 5 info, then a page and its content
    # each, then Courier.
    courier = 6 + 2 * page_count
    kids = " ".join(f"{6 + 2 * i} 0 R" for i in range(page_count))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {page_count} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>",
        ("<< " + " ".join(f"/{k} ({_pdf_escape(v)})" for k, v in (info or {}).items()) + " >>").encode("latin-1"),
    ]
    for number, items in enumerate(pages):
        ops = []
        for item in items:
            if isinstance(item, Text):
                font = "/F3" if item.mono else "/F2" if item.bold else "/F1"
                ops.append(
                    f"BT {font} {item.size:g} Tf {item.x:g} {height - item.top - item.size:g} Td "
                    f"({_pdf_escape(item.text)}) Tj ET"
                )
            else:
                ops.append(f"0.5 w {item.x0:g} {height - item.top0:g} m {item.x1:g} {height - item.top1:g} l S")
        stream = "\n".join(ops).encode("latin-1")
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {width} {height}] /Contents {7 + 2 * number} 0 R "
            f"/Resources << /Font << /F1 3 0 R /F2 4 0 R /F3 {courier} 0 R >> >> >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Courier /Encoding /WinAnsiEncoding >>")
    path.write_bytes(pdf_file(objects, info_number=5))
    return path


def table(x: float, top: float, rows: list[list[str]], *, widths: list[float], row_height: float = 18) -> list:
    """A ruled table: each cell's text inside a grid of Rules, the first row the header (bold)."""
    items: list[Text | Rule] = []
    right = x + sum(widths)
    bottom = top + row_height * len(rows)
    for r in range(len(rows) + 1):
        items.append(Rule(x, top + r * row_height, right, top + r * row_height))
    edge = x
    for w in [0, *widths]:
        edge += w
        items.append(Rule(edge, top, edge, bottom))
    for r, row in enumerate(rows):
        left = x
        for w, cell in zip(widths, row, strict=True):
            items.append(Text(left + 4, top + r * row_height + 4, cell, size=10, bold=r == 0))
            left += w
    return items
