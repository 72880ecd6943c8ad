"""Boxes a manual sets beside its text (tips, notes, sidebars) and the commands typed in its
transcripts are kept; a site's sidebar of links is still navigation."""

from corpus.html import html_to_blocks


def blocks(body: str) -> list[str]:
    """The blocks corpus.html reads from a page with this <body> markup."""
    return html_to_blocks(f"<html><head><title>Guide</title></head><body>{body}</body></html>")[1].split("\n\n")


def test_a_transcript_keeps_the_commands_typed_with_their_prompts():
    # DocBook sets a typed command in <strong class="userinput"> between the output's <code>s: read
    # as one example in several <code> flavours, only "$ " was kept.
    assert blocks(
        "<h1>Backports</h1><p>Install from backports.</p>"
        '<pre class="screen"><code class="computeroutput">$ </code><strong class="userinput"><code>'
        "sudo apt-get install -t bullseye-backports package</code></strong>\n"
        '<code class="computeroutput">Reading package lists... Done\n$ </code>'
        '<strong class="userinput"><code>apt-cache policy package</code></strong>\n</pre>'
    )[2:] == [
        "```\n$ sudo apt-get install -t bullseye-backports package\nReading package lists... Done\n"
        "$ apt-cache policy package\n```"
    ]
