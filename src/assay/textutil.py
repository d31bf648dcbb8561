"""Small text helpers more than one stage needs, defined once: names safe in paths, and text made
safe for each format assay writes.

**One escaping function per format**, each used by every writer of that format:

* :func:`terminal` — a terminal (``term`` reports, ``assay runs``, messages): control characters
  shown as ``\\x1b``-style escapes, so a label or an imported file name can neither clear the
  screen nor set the window title.
* :func:`markdown` / :func:`markdown_code` — Markdown (a table cell, a line, a fenced block).
* :func:`html_text` — HTML text and attribute values.
* :func:`csv_text` — a text cell of the CSV report.
* :func:`xml_text` — XML text and attribute values (JUnit), and OpenMetrics label values.
* :func:`toml_string` — a TOML basic string (``references add``).

What is stored is never changed: these apply only on the way out. JSON output needs none of
them (``json.dumps`` escapes every control character).

Values going *in* are another matter: :func:`control_character` names the control character
that refuses a value reaching a command line or a script (the config schema, Slurm options).
"""

from __future__ import annotations

import html
import re
import unicodedata

_NOT_SLUG = re.compile(r"[^A-Za-z0-9.]+")


def slugify(text: str, *, lower: bool = True, empty: str = "", keep: str = ".") -> str:
    """``text`` as a name safe in paths and ids: each run of characters other than ASCII
    letters, digits and those in ``keep`` (".") becomes one "-", with none at either end;
    lower-case unless ``lower`` is False; ``empty`` when nothing is left ("Open MPI 4.1" ->
    "open-mpi-4.1")."""
    pattern = _NOT_SLUG if keep == "." else re.compile(f"[^A-Za-z0-9{re.escape(keep)}]+")
    slug = pattern.sub("-", text).strip("-")
    return (slug.lower() if lower else slug) or empty


# -- control characters, whatever the format ---------------------------------------------------

# Characters that change how the text around them is shown rather than being shown: C0 and C1
# controls and DEL (ESC starts a terminal's escape sequences; U+009B is a one-byte CSI), the
# Unicode bidirectional overrides and isolates (they reorder what is displayed: "Trojan Source",
# CVE-2021-42574), and lone surrogates (a non-UTF-8 file name read with surrogateescape, which
# no UTF-8 stream can even encode). Newline and tab are the caller's choice (``keep``).
_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_UNSHOWABLE = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}\ud800-\udfff]")


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, keep: str = "") -> str:
    """``text`` with each character that would act instead of being shown (see above) written
    as its Python escape (ESC -> ``\\x1b``, U+202E -> ``\\u202e``), but those in ``keep``."""
    if keep:
        return _UNSHOWABLE.sub(lambda m: m.group() if m.group() in keep else _shown(m), text)
    return _UNSHOWABLE.sub(_shown, text)


def terminal(text: object) -> str:
    """Text for a terminal: escape sequences and other controls shown, never acted on; newlines
    and tabs kept (a message's own lines)."""
    return visible(str(text), keep="\n\t")


# A cell a spreadsheet reads as a formula (OWASP, "CSV Injection"): one starting with these.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_text(text: object) -> str:
    """A CSV text cell: controls shown as in :func:`terminal` (the csv module quotes newlines;
    an ESC would still reach the terminal a report is printed on), and a cell a spreadsheet
    would run as a formula (``=HYPERLINK(...)``, ``+``, ``-``, ``@``, a tab or CR first) kept
    as text with a leading ``'``, as OWASP advises (issue 28). Number cells are not text."""
    shown = visible(str(text), keep="\n\t")
    return "'" + shown if shown.startswith(_FORMULA_START) else shown


def xml_text(text: object) -> str:
    """XML text or an attribute value, for a writer that escapes ``<``, ``&`` and quotes itself
    (ElementTree): the characters XML 1.0 cannot hold at all (C0 controls but tab and
    newline, lone surrogates: a non-UTF-8 node name) and those that act are shown, so the file
    is well-formed (issue 28: a control character in a node name made the JUnit file not XML)."""
    return visible(str(text), keep="\n\t")


def html_text(text: object) -> str:
    """Any data as HTML text or a quoted attribute value: ``<``, ``>``, ``&`` and both quotes as
    entities, controls shown (a bidi override would reorder the page's text too)."""
    return html.escape(visible(str(text), keep="\n\t"), quote=True)


# -- Markdown (CommonMark, with GitHub's tables and strikethrough) -----------------------------

# Entity and numeric character references (CommonMark 2.5): "&amp;" in data must stay five
# characters, so its "&" is escaped; a lone "&" ("RDMA latency & bandwidth") is left as it is.
_ENTITY = re.compile(r"&(?=#[0-9]{1,7};|#[xX][0-9a-fA-F]{1,6};|[A-Za-z][A-Za-z0-9]{0,31};)")
# "<" that opens a raw HTML tag, a comment or declaration, or an autolink.
_TAG_OPEN = re.compile(r"<(?=[A-Za-z/!?])")
# "]" that closes a link's text: "[x](url)", "[x][ref]".
_LINK_CLOSE = re.compile(r"\](?=[(\[])")
# A run of one emphasis / strikethrough delimiter character.
_DELIMS = re.compile(r"\*+|_+|~+")
# What may open a block when it starts a line: ATX heading, block quote, list bullet or
# thematic break, setext underline, fenced code, a link reference definition; "12." / "12)"
# (ordered list) is handled apart.
_BLOCK_START = frozenset("#>-+=*_~`[|")
_ORDERED = re.compile(r"^(\d{1,9})([.)])")


def _is_space(ch: str | None) -> bool:
    return ch is None or ch.isspace()


def _is_punct(ch: str | None) -> bool:
    # CommonMark 0.31: Unicode punctuation = general category P* or S*
    return ch is not None and unicodedata.category(ch)[0] in "PS"


def _delimiter(match: re.Match[str]) -> str:
    """Escape a delimiter run that could open or close emphasis (``*``, ``_``) or
    strikethrough (``~``), by CommonMark's flanking rules (6.2). Runs that can do neither
    ("4 * 5", "osu_latency", "~260 GB/s") are left as written."""
    run, s = match.group(), match.string
    start, end = match.span()
    before = s[start - 1] if start > 0 else None
    after = s[end] if end < len(s) else None
    left = not _is_space(after) and (not _is_punct(after) or _is_space(before) or _is_punct(before))
    right = not _is_space(before) and (
        not _is_punct(before) or _is_space(after) or _is_punct(after)
    )
    ch = run[0]
    if ch == "*":
        # also at either end: the report wraps a best cell in "**", which would pair with it
        risky = left or right or start == 0 or end == len(s)
    elif ch == "_":
        # "_" inside a word never opens or closes; one that can only open needs a closer,
        # and every closer in data is escaped
        risky = right and (not left or _is_punct(after))
    else:
        risky = right  # "~": likewise, only a closer can end a strikethrough
    return "".join("\\" + c for c in run) if risky else run


def markdown(text: object, *, line: bool = False) -> str:
    """Text safe in Markdown, shown as written: in a table cell (the default), or as a whole
    line (``line=True``: a title or a note, where a leading "#", ">", "-", "1." ... would open
    a block). Newlines fold into spaces; backslashes, pipes, backticks and whatever could open
    markup (a tag, an entity, a link, emphasis) are backslash-escaped; controls shown. No HTML
    entities: Markdown is read as text as often as it is rendered."""
    # no Markdown shows a cell's or a line's outer spaces; "**  x**" would not even be bold
    s = " ".join(str(text).splitlines()).strip(" \t").replace("\\", "\\\\")
    s = visible(s, keep="\t")
    s = s.replace("|", "\\|").replace("`", "\\`")
    s = _ENTITY.sub("\\\\&", s)
    s = _TAG_OPEN.sub("\\\\<", s)
    s = _LINK_CLOSE.sub("\\\\]", s)
    s = _DELIMS.sub(_delimiter, s)
    if line:
        ordered = _ORDERED.match(s)
        if ordered:
            s = f"{ordered.group(1)}\\{ordered.group(2)}{s[ordered.end() :]}"
        elif s and s[0] in _BLOCK_START and not s.startswith("\\"):
            s = "\\" + s
        if s.endswith("#"):  # "## title #": a closing sequence would be dropped
            s = s[:-1] + "\\#"
    return s


def markdown_code(text: object) -> str:
    """Text inside a fenced code block: shown as written (no backslash escapes there), but a
    line of backticks cannot close the fence, and controls are shown."""
    return visible(str(text), keep="\n\t").replace("```", "` ` `")


# -- TOML ---------------------------------------------------------------------------------------

_TOML_SHORT = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r", '"': '\\"'}
_TOML_ESCAPE = re.compile('[\x00-\x1f\x7f"\\\\\ud800-\udfff]')


def _toml_char(match: re.Match[str]) -> str:
    ch = match.group()
    if ch == "\\":
        return "\\\\"
    if ch in _TOML_SHORT:
        return _TOML_SHORT[ch]
    if 0xD800 <= ord(ch) <= 0xDFFF:
        # not a Unicode scalar value: TOML cannot hold it; kept visible as its escape's text
        return f"\\\\u{ord(ch):04x}"
    return f"\\u{ord(ch):04x}"


def toml_string(text: object) -> str:
    """``text`` as a TOML basic string: quote, backslash and every control character TOML
    forbids (U+0000–U+001F but tab, and DEL) escaped; any other character written as it is."""
    return '"' + _TOML_ESCAPE.sub(_toml_char, str(text)) + '"'


# -- control characters in values that reach a script or a command line ----------------------

# C0 controls (newline, carriage return, NUL, escape...), DEL and the C1 controls (NEL among
# them): none belongs in a name or an argument, and each can end a line of a script or a file.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def control_character(text: str) -> str | None:
    """The first control character in ``text`` (as ``repr`` shows it, e.g. ``'\\n'``), or
    None. Values that reach a script or a command line are refused when they hold one."""
    m = _CONTROL.search(text)
    return None if m is None else repr(m.group())
