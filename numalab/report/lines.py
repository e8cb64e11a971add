"""The one rule for the lines a report reader takes as part of a table, and the form of its
refusals (a ``NumalabValueError`` naming the line of the text)."""

from __future__ import annotations

import re
import unicodedata

from ..errors import NumalabValueError

#: characters no table line holds: controls (but tab), format characters (zero-width
#: spaces, direction marks, BOM) and the line/paragraph separators, which str.split() and the
#: readers' patterns would otherwise take for spaces or for part of a name
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")


def _bad_char(line: str):
    """The first character of ``line`` no report table holds, or None."""
    m = _CONTROL.search(line)
    if m:
        return m.group(0)
    if not line.isascii():
        for ch in line:
            if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp") or (ch.isspace() and ch != " "
                                                                                            and ch != "\t"):
                return ch
    return None


def _check_line(lineno: int, line: str, what: str = "table line") -> str:
    """The one rule for a line a reader takes as part of a table: it holds no control or
    invisible character (refused naming the line and the character)."""
    ch = _bad_char(line)
    if ch is not None:
        name = unicodedata.name(ch, "") or "control character"
        raise _err(lineno, f"{what} {line[:80]!r} holds the character U+{ord(ch):04X} ({name.lower()}); "
                           "a report table holds printable characters, spaces and tabs only")
    return line


def _err(lineno: int, msg: str) -> NumalabValueError:
    """A reader's refusal: one line naming the line of the text (at most 400 characters, however
    long the line it quotes)."""
    msg = " ".join(msg.split()) if "\n" in msg else msg
    return NumalabValueError(f"line {lineno}: {msg if len(msg) <= 400 else msg[:397] + '...'}")
