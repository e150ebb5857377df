"""A report as a list of blocks, rendered as Markdown (report.md, the job summary) or self-contained HTML.

Blocks: ``("h1", text)``, ``("h2", text, anchor)``, ``("p", text)``, ``("table", header, rows)``,
``("img", title, path)``, ``("details", summary, blocks)`` (folded detail), ``("toc", [(text, anchor)])``.
A table cell is a string, ``(text, css class)`` or a ``Link``; a paragraph may be a list of strings and Links.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path
from typing import NamedTuple

from harness.report.record_text import fmt  # noqa: F401  (the terminal's cells read it here)


class Link(NamedTuple):
    text: str
    href: str
    html_href: str | None = None  # where report.html's link goes, when not where report.md's does (its .html twin)


def _text(cell) -> str:
    return cell.text if isinstance(cell, Link) else cell[0] if isinstance(cell, tuple) else str(cell)


# ---- Markdown ---------------------------------------------------------------------------------------


def md_escape(text, alt: bool = False) -> str:
    """Text from a name, note, reason or setting, safe in Markdown that renders HTML (GitHub, a CI job summary): it
    shows as written and never becomes markup that fetches or links anything.

    ``&`` and ``<`` as entities, so no tag, comment, autolink or entity of its own renders; a backslash doubled and the
    ``]`` of ``](`` and ``][``, the ``[`` of ``![`` and the ``]`` that closes a label at a line's start before ``:``
    backslash-escaped, so no link, image or link definition forms (an interval "[0.3, 0.5]" and "B13 [llama]: …" stay
    as written); the ``:`` of ``://`` and the ``.`` of ``www.`` as
    entities, so no bare address becomes a link (GitHub's autolinks); an ``@`` before a name followed by an empty
    ``<wbr>`` (a word-break opportunity, which shows nothing), so no e-mail address (``name@host.tld``, ``mailto:``,
    ``xmpp:``) or ``@mention`` becomes a link: GitHub's renderer (cmark-gfm) decodes entities and escapes before it
    looks for addresses, so only markup between the ``@`` and the host stops it. ``alt``: the text of an image's
    alt (a figure's title), which renders as plain text, links nothing, and would show the ``<wbr>``: left out there.
    A ``>`` opens nothing without a ``<``: it stays as it is, so "A -> B" and ">= 0.87" read the same in the raw
    file. The suite's own links are ``Link`` cells and image blocks, never escaped text."""
    text = str(text).replace("&", "&amp;").replace("<", "&lt;").replace("\\", "\\\\")
    text = _LINK_BRACKET.sub(r"\\]", text).replace("![", "!\\[")
    text = _DEFINITION.sub(lambda m: m.group(1) + "\\]:", text)
    text = _NO_AUTOLINK.sub(lambda m: m.group(0).replace(":", "&#58;").replace(".", "&#46;"), text)
    return text if alt else _AT_NAME.sub("@<wbr>", text)


#: the ``]`` that closes a link's text before its ``(url)`` or ``[ref]``
_LINK_BRACKET = re.compile(r"\](?=[(\[])")
#: a link definition's label (``[ref]: url``): a ``[`` at a line's start (after up to three spaces), then ``]:``
_DEFINITION = re.compile(r"^( {0,3}\[[^\]]*)\]:", re.MULTILINE)
#: the starts of what GitHub's Markdown links without brackets: ``scheme://`` and ``www.``
_NO_AUTOLINK = re.compile(r"://|(?i:\bwww)\.")
#: an ``@`` that starts a host or a user name: what GitHub links as an e-mail address or a mention
_AT_NAME = re.compile(r"@(?=[\w.+-])")


def _md_href(href: str) -> str:
    """A link target the suite wrote (a relative path or an anchor), safe inside ``(...)``."""
    return (
        str(href).replace("&", "&amp;").replace("<", "%3C").replace(" ", "%20").replace("(", "%28").replace(")", "%29")
    )


def _md_inline(c) -> str:
    if isinstance(c, list):
        return "".join(_md_inline(x) for x in c)
    if isinstance(c, Link):
        return f"[{md_escape(c.text)}]({_md_href(c.href)})"
    return md_escape(_text(c))


def to_markdown(blocks: list, base: Path) -> str:
    """The blocks as Markdown; every text (cells, paragraphs, headings, captions, summaries) HTML-escaped, as the
    HTML report's: only the anchors and the details folds are the renderer's own HTML."""
    cell = lambda c: _md_inline(c).replace("|", "\\|").replace("\n", " ")
    out = []
    for b in blocks:
        kind = b[0]
        if kind == "table":
            out += ["| " + " | ".join(cell(c) for c in b[1]) + " |", "|" + "---|" * len(b[1])]
            out += ["| " + " | ".join(cell(c) for c in row) + " |" for row in b[2]] + [""]
        elif kind == "img":
            out += [f"![{md_escape(b[1], alt=True)}]({_md_href(b[2].relative_to(base).as_posix())})", ""]
        elif kind == "details":
            out += [f"<details><summary>{html.escape(b[1])}</summary>", "", to_markdown(b[2], base), "</details>", ""]
        elif kind == "toc":
            out += [f"- [{md_escape(text)}](#{_md_href(anchor)})" for text, anchor in b[1]] + [""]
        elif kind == "h2":
            title = md_escape(b[1]).replace("\n", " ")
            out += [f'<a id="{html.escape(b[2])}"></a>', "", f"## {title}", ""] if len(b) > 2 else [f"## {title}", ""]
        else:
            out += [{"h1": "# ", "p": ""}[kind] + _md_inline(b[1]), ""]
    return "\n".join(out)


# ---- HTML ---------------------------------------------------------------------------------------------

#: The page's style; its last two lines keep the title, the totals and the whole claims × models matrix on the first
#: screen (tests/test_report_browser.py).
CSS = """body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#222;max-width:1400px}
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:12px}th,td{border:1px solid #ccc;padding:3px 6px;
text-align:left;vertical-align:top}th{background:#f0f0f0;position:sticky;top:0}td.held{background:#e6f4e6}
td.not{background:#fbe3e3}td.skip{color:#777}td.stale{background:#fff3cd}td.unstable{background:#efe3f7}td.error{background:#e0e0e0;
font-weight:bold}td.changed{box-shadow:inset 4px 0 0 #b00000}td.changed strong{color:#b00000}figure{margin:1em 0;display:inline-block;vertical-align:top}img{max-width:100%}
figcaption{font-size:12px;color:#555}details{margin:.3em 0 1em}summary{cursor:pointer;color:#245}
h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em}nav ul{columns:3;font-size:13px}
h1{font-size:1.6em;margin:.2em 0 .5em}h2#matrix{margin-top:.8em}h2#matrix+table td,h2#matrix+table th{padding:1px 5px;line-height:1.25}
h2#matrix+table td:last-child{max-width:15em}"""


def _html_inline(c) -> str:
    if isinstance(c, list):
        return "".join(_html_inline(x) for x in c)
    if isinstance(c, Link):
        return f'<a href="{html.escape(c.html_href or c.href)}">{html.escape(c.text)}</a>'
    return re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", html.escape(_text(c)))  # markdown's bold, as there


def _html_blocks(blocks: list) -> list[str]:
    e = html.escape
    cell = lambda tag, c: (
        f'<{tag} class="{c[1]}">{_html_inline(c[0])}</{tag}>'
        if isinstance(c, tuple) and not isinstance(c, Link) and c[1]
        else f"<{tag}>{_html_inline(c)}</{tag}>"
    )
    body = []
    for b in blocks:
        kind = b[0]
        if kind == "table":
            body.append(
                "<table><tr>"
                + "".join(cell("th", c) for c in b[1])
                + "</tr>"
                + "".join("<tr>" + "".join(cell("td", c) for c in row) + "</tr>" for row in b[2])
                + "</table>"
            )
        elif kind == "img":
            data = base64.b64encode(b[2].read_bytes()).decode("ascii")
            body.append(
                f'<figure><img alt="{e(b[1])}" src="data:image/png;base64,{data}">'
                f"<figcaption>{e(b[1])}</figcaption></figure>"
            )
        elif kind == "details":
            body.append(f"<details><summary>{e(b[1])}</summary>" + "\n".join(_html_blocks(b[2])) + "</details>")
        elif kind == "toc":
            body.append(
                "<nav><ul>" + "".join(f'<li><a href="#{e(a)}">{e(t)}</a></li>' for t, a in b[1]) + "</ul></nav>"
            )
        elif kind == "h2" and len(b) > 2:
            body.append(f'<h2 id="{e(b[2])}">{e(b[1])}</h2>')
        else:
            body.append(f"<{kind}>{_html_inline(b[1])}</{kind}>")
    return body


def to_html(blocks: list) -> str:
    title = html.escape(_text(blocks[0][1])) if blocks else "Claims report"
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        f"<style>{CSS}</style></head><body>\n" + "\n".join(_html_blocks(blocks)) + "\n</body></html>\n"
    )
