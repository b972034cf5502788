"""Text folded to plain lower-case words, as the ranked search and the analysis both compare it."""

from __future__ import annotations

import re
import unicodedata

_QUOTES = str.maketrans({"’": "'", "‘": "'", "`": "'", "´": "'", "–": " ", "—": " ", "-": " ", "/": " "})
_NOT_TOKEN = re.compile(r"[^a-z0-9',;!?$]+")
_PUNCT = re.compile(r"([,;!?$])")
_EDGE_APOSTROPHES = re.compile(r"(?<![a-z0-9])'|'(?![a-z0-9])")


def fold(text: str) -> str:
    """Lower case, accents and punctuation gone, single spaces: "Ramírez's, 5/5!" -> "ramirez's , 5 5 !".

    The characters , ; ! ? $ stay as tokens of their own: clause breaks, emphasis, and price."""
    text = text.casefold().translate(_QUOTES)
    if not text.isascii():  # most review text is ASCII: skip the decomposition there (a third of the time)
        text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    text = _EDGE_APOSTROPHES.sub(" ", _NOT_TOKEN.sub(" ", text))
    return " ".join(_PUNCT.sub(r" \1 ", text).split())
