"""Boxes a manual sets beside its text (tips, notes, sidebars) and the commands typed in its
transcripts are kept; a site's sidebar of links is still navigation."""

from readers.html import html_to_blocks


def blocks(body: str) -> list[str]:
    """The blocks readers.html reads from a page with this <body> markup."""
    return html_to_blocks(f"<html><head><title>Guide</title></head><body>{body}</body></html>")[1].split("\n\n")


def test_a_docbook_sidebar_is_kept_under_its_own_title():
    # DocBook's TIP / NOTE / BACK TO BASICS boxes are <div class="sidebar">: read as navigation, all
    # of them were dropped.
    assert blocks(
        '<div class="section"><h2 class="title">Upgrading</h2><p>Packages are upgraded with apt.</p>'
        '<div class="sidebar"><div class="titlepage"><div><div><p class="title"><strong>'
        '<span class="emphasis"><em>TIP</em></span> Incremental updates</strong></p></div></div></div>'
        '<p>The <code class="command">apt</code> command downloads only the differences. It saves bandwidth.</p>'
        "</div><p>Read the changelog first.</p></div>"
    ) == [
        "## Upgrading",
        "Packages are upgraded with apt.",
        "TIP: Incremental updates",
        ": The apt command downloads only the differences. It saves bandwidth.",
        "Read the changelog first.",
    ]


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


def test_sphinx_admonitions_and_sidebars_are_kept_with_their_titles():
    assert blocks(
        '<div role="main"><h1>Build</h1><p>The build runs twice.</p>'
        '<div class="admonition note"><p class="admonition-title">Note</p><p>Only the owner may run it.</p></div>'
        '<div class="admonition-faster-rebuilds admonition"><p class="admonition-title">Faster rebuilds</p>'
        "<p>Keep the cache between runs.</p></div>"
        '<aside class="sidebar"><p class="sidebar-title">Why two passes</p>'
        "<p>The first pass collects every label that the second one resolves.</p></aside></div>"
    ) == [
        "# Build",
        "The build runs twice.",
        "Note:",
        "Only the owner may run it.",
        "Faster rebuilds",
        ": Keep the cache between runs.",
        "Why two passes",
        ": The first pass collects every label that the second one resolves.",
    ]


def test_a_blockquote_note_and_an_aside_of_prose_are_content():
    # Markdown renders "> **Note**" as a blockquote; an <aside> holding sentences is a box, not chrome.
    assert blocks(
        "<h1>Upgrade</h1><blockquote><p><strong>Note</strong></p>"
        "<p>Back up the database before you upgrade.</p></blockquote>"
        "<aside><p>Upgrades from 1.x need the migration tool, which ships separately.</p></aside>"
    ) == [
        "# Upgrade",
        "Note:",
        "Back up the database before you upgrade.",
        "Upgrades from 1.x need the migration tool, which ships separately.",
    ]


def test_a_sites_sidebar_of_links_is_still_navigation():
    assert blocks(
        '<div id="sidebar"><h3>Guides</h3><ul><li><a href="/install">Install</a></li>'
        '<li><a href="/configure">Configure</a></li><li><a href="/upgrade">Upgrade</a></li></ul></div>'
        '<aside class="sidebar"><h3>On this page</h3><ul><li><a href="#a">Before you start</a></li>'
        '<li><a href="#b">Steps</a></li></ul></aside>'
        '<aside class="topic"><p class="topic-title">Contents</p><ul><li><a href="#c">Steps</a></li></ul></aside>'
        "<h1>Install</h1><p>Run the installer as root.</p>"
    ) == ["# Install", "Run the installer as root."]


def test_a_sphinx_footnote_is_content():
    # docutils sets footnotes in <aside>; a link before the period ("RFC 2822.") still ends a sentence.
    assert blocks(
        '<h1>email.utils</h1><p>Returns the offset.</p><aside class="footnote-list brackets">'
        '<aside class="footnote brackets" id="id2" role="note"><span class="label">[<a href="#id1">1</a>]</span>'
        '<p>The sign of the offset is the opposite of the time module\'s, which follows <a href="#r">RFC 2822</a>.</p>'
        "</aside></aside>"
    )[2:] == ["[1]", "The sign of the offset is the opposite of the time module's, which follows RFC 2822."]


def test_a_section_whose_id_holds_a_navigation_word_is_content():
    # Sphinx makes a section's id from its title: "s-session-cookie-age" and "select-related" read as
    # class names ("cookie", "related") dropped Django's session-cookie settings and select_related().
    assert blocks(
        '<div class="section" id="s-session-cookie-age"><h3>SESSION_COOKIE_AGE</h3>'
        "<p>Default: 1209600 (2 weeks, in seconds)</p></div>"
        '<section id="select-related"><h4>select_related()</h4><p>Returns a QuerySet that follows foreign keys.</p>'
        "</section>"
    ) == [
        "### SESSION_COOKIE_AGE",
        "Default: 1209600 (2 weeks, in seconds)",
        "#### select_related()",
        "Returns a QuerySet that follows foreign keys.",
    ]


def test_an_element_named_for_navigation_by_its_id_is_still_navigation():
    assert blocks(
        '<p>The guide starts here.</p><div id="site-footer"><p>Copyright and contact.</p></div>'
        '<div id="main-nav"><p>Home</p></div>'
    ) == ["The guide starts here."]
