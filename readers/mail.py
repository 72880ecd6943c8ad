"""E-mail messages (.eml) as block text.

An .eml is read with the standard library's email package (policy=default, which decodes headers
and bodies and records malformed parts as defects instead of failing): its subject is the title,
its sender, recipients and date are metadata, and its text is what the sender wrote: the
text/plain part (else the HTML part, read as an HTML page is) without the message it answers
(quoted "> " lines and the "On ... wrote:" line before them, and everything from an Outlook
"-----Original Message-----" or "From: ... Sent: ..." header block on). Attachments are named in
metadata "attachments"; `attachments` gives their bytes, and readers.extract reads the documents
among them into the message's text (the first CAIRN_EMAIL_MAX_ATTACHMENTS, in CAIRN_EMAIL_SECONDS).
"""

from __future__ import annotations

import re
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser

from readers.blocks import joined_blocks, plain_line
from readers.reading import Reading

_ORIGINAL = re.compile(r"^-{2,}\s*(original message|forwarded message)\s*-{2,}$", re.IGNORECASE)
_HEADER_FROM = re.compile(r"^\*?(from|von|de):\*?\s", re.IGNORECASE)
_HEADER_SENT = re.compile(r"^\*?(sent|date|gesendet|envoyé):\*?\s", re.IGNORECASE)
_ATTRIBUTION = re.compile(r"^On\b.{0,400}\bwrote:\s*$", re.DOTALL)
_ITEM = re.compile(r"^\s*(?:[-*\u2022\u00b7]|\d{1,3}[.)])\s+(.*)$")
_SEPARATOR = re.compile(r"^[_\-=\s]{8,}$")  # the line Outlook and Gmail set above a quoted header
_HEADERS = ("from", "to", "subject", "date")


def email_problem(data: bytes) -> str | None:
    """Why `data` is not an e-mail message, or None: it must open with RFC 5322 headers, one of
    them From, To, Subject or Date."""
    message = _parse(data)
    # By name only: a header's value is parsed when read, and a crafted one (a comment nested a
    # thousand deep in From) takes the email package's parser past the recursion limit.
    if not any(name in message for name in _HEADERS):
        return "not an e-mail message (no From, To, Subject or Date header)"
    return None


def _parse(data: bytes) -> EmailMessage:
    return BytesParser(policy=policy.default).parsebytes(data)


def read_eml(data: bytes) -> Reading:
    """(title, text) of an e-mail message, with "from", "to", "cc", "date" (ISO 8601) and
    "attachments" (file names) as metadata."""
    message = _parse(data)
    metadata: dict = {}
    for name in ("from", "to", "cc"):
        if (value := _header(message, name)) is not None:
            metadata[name] = value
    try:
        date = message["date"].datetime if message["date"] is not None else None
    except Exception:  # noqa: BLE001 - a date the policy cannot parse (or recurses on) is left out
        date = None
    if date is not None:
        metadata["date"] = date.isoformat()
        metadata["modified"] = date.isoformat()  # what the dispute preference for newer sources reads
    attachments = [_attachment_name(part) for part in message.iter_attachments()]
    if attachments:
        metadata["attachments"] = [" ".join(str(name).split())[:200] for name in attachments]
    text = ""
    if (plain := message.get_body(preferencelist=("plain",))) is not None:
        text = text_blocks(reply_only(_content(plain)))
    elif (html := message.get_body(preferencelist=("html",))) is not None:
        text = _html_blocks(_content(html))
    subject = _header(message, "subject") or ""
    return Reading(text, subject, metadata)


def attachments(data: bytes) -> list[tuple[str, bytes]]:
    """The files attached to an e-mail message, in order: (file name, bytes). A forwarded message
    attached whole is named after its subject (".eml"); a part whose bytes cannot be decoded is
    left out."""
    found = []
    for part in _parse(data).iter_attachments():
        try:
            if part.get_content_type() == "message/rfc822":
                inner = part.get_payload()[0] if part.is_multipart() else None
                if inner is not None:
                    subject = " ".join(str(inner.get("subject") or "forwarded message").split())[:150]
                    found.append((f"{subject}.eml", inner.as_bytes(policy=policy.default)))
                continue
            name, payload = " ".join(str(part.get_filename() or "").split())[:200], part.get_payload(decode=True)
        except Exception:  # noqa: BLE001 - a malformed part is left out, the message is still read
            continue
        if name and payload:
            found.append((name, payload))
    return found


def _attachment_name(part) -> str:
    try:
        return part.get_filename() or part.get_content_type()
    except Exception:  # noqa: BLE001 - a Content-Disposition the policy cannot parse
        return "attachment"


def _header(message: EmailMessage, name: str) -> str | None:
    try:
        value = message.get(name)
    except Exception:  # noqa: BLE001 - a header the policy cannot parse is left out
        return None
    return " ".join(str(value).split())[:1000] if value is not None else None


def _content(part) -> str:
    try:
        return part.get_content()
    except (LookupError, UnicodeError, KeyError):  # an unknown or wrong declared charset
        payload = part.get_payload(decode=True) or b""
        return payload.decode("utf-8", "replace")


def reply_only(text: str) -> str:
    """A reply's own text: quoted ("> ") lines and the "On ... wrote:" line that introduces them go,
    and everything from a forwarded or answered message's header block ("-----Original
    Message-----", or "From: ..." followed by "Sent: ...") on."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    kept: list[str] = []
    for i, line in enumerate(lines):
        stripped = line.strip()
        if _ORIGINAL.match(stripped) or (
            _HEADER_FROM.match(stripped) and any(_HEADER_SENT.match(later.strip()) for later in lines[i + 1 : i + 4])
        ):
            break
        kept.append(line)
    while kept and (not kept[-1].strip() or _SEPARATOR.match(kept[-1])):
        kept.pop()
    out: list[str] = []
    i = 0
    while i < len(kept):
        line = kept[i]
        if line.lstrip().startswith(">"):
            i += 1
            continue
        stripped = line.strip()
        if stripped.startswith("On "):  # an attribution, on one line or wrapped onto a second
            for span in (1, 2):
                joined = " ".join(part.strip() for part in kept[i : i + span])
                if _ATTRIBUTION.match(joined) and _quote_follows(kept, i + span):
                    i += span
                    break
            else:
                out.append(line)
                i += 1
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def _quote_follows(lines: list[str], start: int) -> bool:
    for line in lines[start:]:
        if line.strip():
            return line.lstrip().startswith(">")
    return True  # an attribution at the end: the quote was cut


def text_blocks(text: str) -> str:
    """Plain text as blocks: paragraphs apart by blank lines, their lines joined; a paragraph made
    of list lines ("- ", "* ", "1. ") a list; nothing a reader typed opens a heading or a table."""
    blocks: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text):
        lines = [line for line in paragraph.split("\n") if line.strip()]
        if not lines:
            continue
        if all(_ITEM.match(line) for line in lines):
            blocks.extend(f"- {plain_line(_ITEM.match(line).group(1))}" for line in lines)
        else:
            blocks.append(plain_line(" ".join(lines)))
    return joined_blocks(blocks)


def _html_blocks(html: str) -> str:
    """An HTML body's blocks without the message it quotes (a cite blockquote, Gmail's quote, an
    Outlook reply header and what follows it)."""
    from bs4 import BeautifulSoup

    from readers.html import NavigationPage, TooDeep, html_to_blocks

    soup = BeautifulSoup(html, "html.parser")
    for quoted in soup.select('blockquote[type="cite"], .gmail_quote, #divRplyFwdMsg, #appendonsend'):
        for after in list(quoted.find_all_next()) if quoted.get("id") in ("divRplyFwdMsg", "appendonsend") else []:
            after.decompose()
        quoted.decompose()
    try:
        _, blocks = html_to_blocks(str(soup))
    except (NavigationPage, TooDeep):  # a newsletter of links: its words, as text
        return text_blocks(reply_only(soup.get_text("\n")))
    return reply_only(blocks)
