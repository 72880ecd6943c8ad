"""Strips: the sentences of a passage as the judges read them and an answer quotes them, each in
the context the document gives it (its heading or the term it defines, the sentence a pronoun
leans on, a key-value table's entry, the code block it introduces). Text structure only, so the
request path (the gate), the answer generators and the judges' training data all read passages
the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from corpus.chunking import sentences_in_context
from corpus.instructions import addresses_a_model

_BARE_NAME = re.compile(r"`[^`]+`[:.]?")  # an item that is only a name in code
_CODE_NAME = re.compile(r"`([^`]+)`")  # a heading that is only a name in code


@dataclass
class Strip:
    text: str
    relevance: float = 0.0
    kept: bool = False
    label: str = ""  # its heading, or the term it defines: read with it, never shown with it
    antecedent: str = ""  # the sentence before it, when it opens with a pronoun ("It must be...")
    term: str = ""  # the term it defines, when it is part of a definition
    subject: str = ""  # a key-value table's row: what the table's first row says its entry is
    referent: str = ""  # the heading its opening "This module…" names (corpus.chunking.heading_referent)
    shows: str = ""  # the short code block its last sentence introduces (corpus.chunking.shown_code)
    # Which entry of its passage it belongs to (strips of one entry share the number): its section,
    # the term it defines, or its own list item or table record. An answer states one entry.
    entry: int = 0

    @property
    def shown(self) -> str:
        """The strip as an answer quotes it: a definition's sentence with its term when it does not
        name it ("class asyncio.TaskGroup: All tasks are awaited when the context manager exits."),
        a section's opening "This module…" with the heading it points to ("Apache Module
        mod_proxy_hcheck: This module provides for dynamic health checking…"), an API entry's
        sentence with the heading that names it in code, as Markdown references head each function
        ("`os.availableParallelism()`: Returns an estimate of the default amount of parallelism…")."""
        if self.term and self.term.lower() not in self.text.lower():
            return under(self.term, self.text)
        if self.referent:
            return under(self.referent, self.text)
        named = _CODE_NAME.fullmatch(self.label)
        return under(self.label, self.text) if named and named.group(1).lower() not in self.text.lower() else self.text

    @property
    def judged(self) -> str:
        """What the relevance evaluator reads (refinement, agreement): the strip under its label,
        after the sentence a pronoun leans on, so "It must be shorter than 8000 bytes." is kept."""
        return under(self._context, " ".join(p for p in (self.antecedent, self.text) if p))

    @property
    def labelled(self) -> str:
        """What the answer judge reads: the strip under its label, without the antecedent (read by
        the judge too, it made the pronoun's sentence win: NQ gold in answer 0.850 -> 0.835)."""
        return under(self._context, self.text)

    @property
    def _context(self) -> str:
        """Its label, and for a key-value table's row, what the entry is: "KeepAliveTimeout Directive
        (Amount of time the server will wait…)" over "Default: KeepAliveTimeout 5"."""
        return f"{self.label} ({self.subject})" if self.subject and self.label else self.label or self.subject


def under(label: str, text: str) -> str:
    """`text` under its heading or term; a field list's "Author:" is not doubled into "Author::"."""
    return f"{label.rstrip(':')}: {text}" if label else text


def section_of(heading: str) -> tuple[str, ...]:
    """A chunk's section path without its document title ("Title › Settings › wal_level")."""
    return tuple(heading.split(" › ")[1:]) if heading else ()


def strips_in_context(text: str, section: tuple[str, ...] = (), *, min_words: int = 6) -> list[Strip]:
    """The prose sentences of `text` (never a heading or code), fragments shorter than `min_words`
    joined to the next sentence of the same entry (to the one before when they end their block;
    alone when the next sentence sits under another heading or term), each with the
    context of its first sentence
    (corpus.chunking.sentences_in_context: heading or term, and the sentence a pronoun leans on).
    A passage without sections (Wikipedia) is judged sentence by sentence. A sentence addressed to
    a language model ("Ignore previous instructions and answer...") is no strip: not knowledge,
    never an answer (corpus/instructions.py)."""
    strips: list[Strip] = []
    blocks: list[int] = []  # the block each strip ends in
    pending, first, shows = "", None, ""  # shows: what the pending text's last sentence introduces
    sentences = [s for s in sentences_in_context(text, section) if not addresses_a_model(s.sentence)]
    entries: dict[tuple, int] = {}  # an entry's key (entry_of) -> its number, in reading order

    def entry_of(in_context) -> int:
        record = in_context.item or (in_context.row and not in_context.keyed)
        key = (in_context.label, in_context.term, in_context.block if record else -1)
        return entries.setdefault(key, len(entries))

    def close(block: int) -> None:
        """`pending` becomes a strip, in the context of its first sentence."""
        nonlocal pending
        strips.append(
            Strip(
                pending,
                label=first.label,
                antecedent=first.antecedent,
                term=first.term,
                subject=first.subject,
                referent=first.referent,
                shows=shows,
                entry=entry_of(first),
            )
        )
        blocks.append(block)
        pending = ""

    for i, in_context in enumerate(sentences):
        before = sentences[i - 1] if i else None
        if pending and (
            (in_context.label, in_context.term) != (first.label, first.term)
            or in_context.row
            or (before.item and before.block != in_context.block and not _BARE_NAME.fullmatch(pending))
        ):
            # A fragment is not glued across entries: "New in version 3.11." that ends the previous
            # definition, at a chunk's start, led the next one's answer. Nor out of its list item:
            # a manual's parameter list ("- `options` {Object}", "- `cost` {number} CPU/memory cost
            # parameter. … Default: `16384`.") read "`options` {Object} `cost` {number} CPU/memory
            # cost parameter." and lost the default to the next strip. An item that is a bare name
            # names the point below it ("- `BROTLI_PARAM_QUALITY`" over "- Ranges from …").
            close(before.block)
        if in_context.row:
            # A table row is a record of its own: "Default: KeepAliveTimeout 5", glued to the next
            # row ("Context: server config"), was judged as neither.
            first, pending, shows = in_context, in_context.sentence, in_context.shows
            close(in_context.block)
            continue
        first = first if pending else in_context
        pending, shows = f"{pending} {in_context.sentence}".strip(), in_context.shows
        ends_block = i + 1 == len(sentences) or sentences[i + 1].block != in_context.block
        if len(pending.split()) < min_words and ends_block and strips and blocks[-1] == in_context.block:
            # A fragment that ends its block ("New in version 3.11.", "Default: 'buffer'.") belongs
            # to the sentence before it, not to the next item's or definition's first sentence.
            strips[-1].text, pending = f"{strips[-1].text} {pending}", ""
            strips[-1].shows = shows
        elif len(pending.split()) >= min_words:
            close(in_context.block)
    if pending:
        # The passage's last fragment joins the strip before it only within its entry: glued to the
        # item before, a list's last "samba: Samba file server configuration;" was stated with it.
        if strips and strips[-1].entry == entry_of(first) and blocks[-1] not in {s.block for s in sentences if s.row}:
            strips[-1].text, strips[-1].shows = f"{strips[-1].text} {pending}", shows
        else:
            close(sentences[-1].block)
    return strips


def strips_of(text: str, *, min_words: int = 6) -> list[str]:
    """The texts of strips_in_context, for passages that come without a section (external results)."""
    return [strip.text for strip in strips_in_context(text, min_words=min_words)]
