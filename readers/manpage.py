"""Manual pages set as preformatted text, read as sections, paragraphs and option lists.

A manual page rendered to HTML by man2html or by a project's own script (Postfix's manual pages:
one ``<pre>`` per page), or saved as text (``man ls | col -b``), is laid out by troff: section
names at the margin ("NAME", "DESCRIPTION"), text indented under them, justified with doubled
spaces and hyphenated across lines ("delet-" / "ing"), an option's name at the text's indent with
its description indented further, on the same line or below it. Read as one code block, none of it
was ever quoted in an answer. `manpage_blocks` gives Cairn's blocks instead (corpus.chunking's
syntax): ``##`` sections, ``###`` subsections, paragraphs with their lines joined and hyphenation
undone, an option as a term with ``: `` definitions, and the synopsis and examples as code.
"""

from __future__ import annotations

import re

# "POSTQUEUE(1)      ...      POSTQUEUE(1)": the running header and footer lines.
_RUNNING = re.compile(r"^\s*(\S+\(\w+\)).*\S+\(\w+\)\s*$")
_SECTION = re.compile(r"[A-Z][A-Z0-9 ()/&,.'-]*")  # at the margin: "NAME", "SEE ALSO", "AUTHOR(S)"
_HYPHENATED = re.compile(r"[a-z][-\u2010]$")  # a word troff broke across lines ("delet-" / "ing")
_CODE_SECTIONS = frozenset({"SYNOPSIS"})
_TERM_MAX_WORDS = 6  # "-c config_dir", "--dry-run", "queue_id": an option's name, not a sentence


def is_manpage(text: str) -> bool:
    """Is `text` a manual page as troff lays one out: a NAME section and a DESCRIPTION or SYNOPSIS
    at the margin, their text indented?"""
    sections = {_section_name(line) for line in text.splitlines()}
    return "NAME" in sections and bool(sections & {"DESCRIPTION", "SYNOPSIS"})


def manpage_blocks(text: str) -> list[str]:
    """The page's blocks, in corpus.chunking's syntax (see the module docstring)."""
    blocks: list[str] = []
    section = ""
    paragraph: list[str] = []
    in_definition = False  # the paragraph before was an option's description: deeper text continues it

    def flush() -> None:
        nonlocal in_definition
        if paragraph:
            in_definition = _emit_paragraph(paragraph, section, base, blocks, in_definition)
            paragraph.clear()

    page = _page_name(text)
    lines = [line.expandtabs() for line in text.splitlines() if not _running(line, page)]
    base = _text_indent(lines)
    for line in lines:
        if not line.strip():
            flush()
        elif name := _section_name(line):
            flush()
            section, in_definition = name, False
            blocks.append(f"## {section}")
        elif _indent(line) < base:  # a subsection's title, set between the margin and the text
            flush()
            in_definition = False
            blocks.append(f"### {_joined([line]).rstrip(':')}")
        else:
            paragraph.append(line)
    flush()
    return blocks


def _page_name(text: str) -> str:
    """ "QUEUECTL(1)": the name the running header opens with; "" without one."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    return first.split()[0] if _RUNNING.fullmatch(first) else ""


def _running(line: str, page: str) -> bool:
    """A running header or footer: the page's name at both ends ("GZIP(1)   General Commands
    Manual   GZIP(1)"), or at one end of a line set far from the text ("   2023-01-01   GZIP(1)")."""
    if _RUNNING.fullmatch(line):
        return True
    stripped = line.strip()
    far = _at_margin(line) or _indent(line) >= 20 or "   " in stripped
    return bool(page) and far and (stripped.startswith(page) or stripped.endswith(page))


def _emit_paragraph(lines: list[str], section: str, base: int, blocks: list[str], in_definition: bool) -> bool:
    """Append one paragraph's blocks; return whether it leaves an option's description open."""
    indent = _indent(lines[0])
    if section == "NAME":  # "postqueue - Postfix queue control": what the page is about, in words
        blocks.append(_joined(lines))
        return False
    if section in _CODE_SECTIONS:
        blocks.append(_code(lines))
        return False
    if indent == base:
        term, rest = _term(lines, base)
        if term:
            blocks.append(term)
            blocks.append(f": {text}" if _reads_as_prose(text := _joined(rest)) else _code(rest))
            return True
        blocks.append(text if _reads_as_prose(text := _joined(lines)) else _code(lines))
        return False
    # Deeper than the text: more of an option's description, or an example.
    if in_definition and _reads_as_prose(text := _joined(lines)):
        blocks.append(f": {text}")
        return True
    blocks.append(_code(lines))
    return in_definition


def _term(lines: list[str], base: int) -> tuple[str, list[str]]:
    """An option's name and its description's lines, when the paragraph is one: the name at the
    text's indent, the description indented further, below it or on the same line after a gap
    ("-f     Flush the queue…"); ("", lines) otherwise. Justified prose has doubled spaces too, but
    its next line starts at the text's indent, not under the words after the gap."""
    first, rest = lines[0], lines[1:]
    deeper = [_indent(line) for line in rest if line.strip()]
    if rest and deeper and min(deeper) > base:
        name = first.strip()
        if len(name.split()) <= _TERM_MAX_WORDS:
            return name, rest
    gap = first.find("  ", base)
    if gap == -1:
        return "", lines
    name, after = first[base:gap], first[gap:].lstrip()
    column = len(first) - len(after)
    if after and len(name.split()) <= _TERM_MAX_WORDS and all(_indent(line) == column for line in rest):
        return name, [" " * column + after, *rest]
    return "", lines


def _reads_as_prose(text: str) -> bool:
    """Sentences rather than an example: the (joined) text ends a sentence or runs to several words."""
    return bool(text) and (text[-1] in ".:;?!)" or len(text.split()) >= 8) and "=" not in text.split()[0]


def _joined(lines: list[str]) -> str:
    """The lines as one paragraph: a word troff hyphenated across lines made whole again, the
    doubled spaces of justified text single."""
    text = ""
    for line in lines:
        part = line.strip()
        if _HYPHENATED.search(text) and part[:1].islower():
            text = text[:-1] + part
        else:
            text = f"{text} {part}" if text else part
    return " ".join(text.split())


def _code(lines: list[str]) -> str:
    margin = min(_indent(line) for line in lines if line.strip())
    body = "\n".join(line[margin:].rstrip() for line in lines)
    return f"```\n{body.replace('```', '` ` `')}\n```"


def _text_indent(lines: list[str]) -> int:
    """The indent of the text under the sections (7 for troff's default): the first line after
    the first section's name ("NAME" / "       postqueue - Postfix queue control")."""
    after_section = False
    for line in lines:
        if _at_margin(line):
            after_section = True
        elif after_section and line.strip():
            return _indent(line)
    return 0


def _section_name(line: str) -> str:
    """ "DESCRIPTION": a section's name, set at the margin in capitals; "" for any other line."""
    return line.rstrip() if _at_margin(line) and _SECTION.fullmatch(line.rstrip()) else ""


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _at_margin(line: str) -> bool:
    return bool(line) and not line[0].isspace()
