"""Text from the data made fit to show: no character HTML calls an error, and names that cannot turn the
text around them right to left.

Review text, names and replies are whatever a platform exported. The HTML standard makes NUL, the C0 and
C1 controls (but tab, line feed, form feed and carriage return) and the noncharacters parse errors
("control-character-in-input-stream", "noncharacter-in-input-stream"), so they are removed wherever text
goes into a page; the feeds remove what XML forbids. A name is shown inside other text (a page's <title>,
a feed item's title), where `<bdi>` cannot go: it is wrapped in FIRST STRONG ISOLATE ... POP DIRECTIONAL
ISOLATE (Unicode's bidi algorithm, X5c and X6a: whatever overrides or embeddings the name opens end at
that PDI), after removing the isolate controls of its own that could close the wrapper early.
"""

from __future__ import annotations

import re
import unicodedata

_NOT_IN_HTML = re.compile(
    "[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufdd0-\ufdef"
    + "".join(f"{chr(plane + 0xFFFE)}{chr(plane + 0xFFFF)}" for plane in range(0, 0x110000, 0x10000))
    + "]"
)
_ISOLATE_CONTROLS = re.compile("[\u2066-\u2069]")
FIRST_STRONG_ISOLATE, POP_DIRECTIONAL_ISOLATE = "\u2068", "\u2069"
# Bidi classes that turn text right to left or open an embedding or override (the isolates are removed).
_TURNING = frozenset({"R", "AL", "RLE", "RLO", "LRE", "LRO", "PDF"})


def printable(text: str) -> str:
    """`text` without the characters an HTML parser reports as errors."""
    return _NOT_IN_HTML.sub("", text)


def isolated(name: str) -> str:
    """`name`, printable, as a directional isolate to put inside other text; as it is when nothing in it
    could change the direction of the text around it (most names: titles stay as they were)."""
    inner = _ISOLATE_CONTROLS.sub("", printable(name))
    if not any(unicodedata.bidirectional(character) in _TURNING for character in inner):
        return inner
    return FIRST_STRONG_ISOLATE + inner + POP_DIRECTIONAL_ISOLATE
