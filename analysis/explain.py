"""What `analyze --explain REVIEW_ID` prints: per sentence, each mention found, the clause read, the
sentiment and how sure, and the features that weighed most, in plain words (pure)."""

from __future__ import annotations

from .english import plural
from .features import mention_clause
from .review import Mention, ReviewAnalysis, ScoredSentence, other_names

NAMED = {
    "after-contrast": 'it comes after a "but" (or although, though, however)',
    "before-contrast": 'it comes before a "but" (what follows usually weighs more)',
    "no-span": "no word names it: the whole sentence was read",
    "question": "the sentence is a question",
    "kind:aspect": "how mentions of a topic usually lean (a base rate)",
    "kind:person": "how mentions of staff usually lean (a base rate)",
}
SIGNS = {"+": "positive", "-": "negative", "0": "neutral"}
EMOJI_WORDS = {
    "<emo+>": "a happy emoji",
    "<emo->": "an unhappy emoji",
    "<n>": "a number",
    "<self>": "(their name)",
    "<staff>": "(a staff name)",
}
# A punctuation mark alone, named: '"," near it' read to owners as a stray quote, not a reason.
PUNCTUATION_WORDS = {
    ",": "a comma",
    ";": "a semicolon",
    "!": "an exclamation mark",
    "?": "a question mark",
    "$": "a dollar sign",
}


def _words(ngram: str) -> str:
    """A feature's words as the owner wrote them: "not_good" is "good" after a negation; a punctuation
    mark alone by its name ("a comma")."""
    mark = ngram.removeprefix("not_")
    if mark in PUNCTUATION_WORDS:
        named = PUNCTUATION_WORDS[mark]
        return f"{named} after a negation" if mark != ngram else named
    words, negated = [], False
    for word in ngram.split(" "):
        if word.startswith("not_"):
            negated, word = True, word[4:]
        words.append(EMOJI_WORDS.get(word, word))
    text = f'"{" ".join(words)}"'
    return f"{text} after a negation" if negated else text


def describe(feature: str, value: float, contrast: str = "but", before: frozenset[str] = frozenset()) -> str:
    """One feature, in words a business owner can check against the sentence; `contrast` is the word the
    mention's clause turned at ("but", "though", "however"...), if it did, and `before` the words that stand
    only before it."""
    if feature == "turned":
        return f'a "{contrast}" after it: the words after the "{contrast}" decide'
    if feature in NAMED:
        return NAMED[feature]
    if feature.startswith(("ac:", "pc:")):  # the clause's words, for an aspect or for a person
        return f"{_words(feature[3:])} near it"
    if feature.startswith("pre:"):  # read through a contrast: the words before it
        return f'{_words(feature[4:])} before the "{contrast}"'
    if feature.startswith("aw:"):  # the clause's words for one aspect ("aw:food:cold"): the same reason
        word = feature.split(":", 2)[2]
        if word.removeprefix("not_") in before:  # read across the contrast: say where it stands
            return f'{_words(word)} before the "{contrast}"'
        return f"{_words(word)} near it"
    if feature.startswith("s:"):
        return f"{_words(feature[2:])} in the sentence"
    if feature in ("lex:clause", "lex:sentence"):
        where = "the words near it" if feature == "lex:clause" else "the sentence"
        return f"the sentiment lexicon's score of {where} at {value:+.2f}"
    if feature in ("lex:word+", "lex:word-"):
        return f"{value:g} word{'' if value == 1 else 's'} near it the lexicon reads as {SIGNS[feature[-1]]}"
    if feature.startswith("lex:"):  # lex:clause+, lex:sentence-
        where = "the words near it" if feature.startswith("lex:clause") else "the sentence"
        return f"the lexicon reads {where} as {SIGNS[feature[-1]]}"
    if feature.startswith("stars:"):
        stars = feature[6:].split("|")[0]
        return f"the review's {stars} star{'' if stars == '1' else 's'}"
    return feature


def _reasons(mention: Mention, contrast: str, before: frozenset[str]) -> str:
    pushes: dict[str, float] = {}  # the stars are two features (alone, and for aspects or people): one reason
    for feature, value, push in mention.polarity.reasons:
        words = describe(feature, value, contrast, before)
        pushes[words] = pushes.get(words, 0.0) + push
    strongest_first = sorted(pushes.items(), key=lambda item: -abs(item[1]))  # the stars summed may lead
    toward = [f"{words} ({p:+.1f})" for words, p in strongest_first if p > 0]
    against = [f"{words} ({p:+.1f})" for words, p in strongest_first if p < 0]
    text = "; ".join(toward) or "nothing in particular"
    return text + (f"; against it: {'; '.join(against)}" if against else "")


def _clause(sentence: ScoredSentence, mention: Mention) -> tuple[str, str, frozenset[str]]:
    """The words read for a mention, the contrast word its clause turned at ("but" if none), and the words
    that stand only before that contrast."""
    if mention.span is None:
        return "the whole sentence", "but", frozenset()
    tokens = sentence.folded.tokens
    start, end, turn = mention_clause(tokens, mention.span, other_names(sentence, mention.id, mention.group))
    if turn is None:
        return repr(" ".join(tokens[start:end])), "but", frozenset()
    decided = " ".join(tokens[turn + 1 : end])
    before = " ".join(tokens[start:turn]).rstrip(" ,;")
    only_before = frozenset(tokens[start:turn]) - frozenset(tokens[turn + 1 : end])
    return f"{decided!r}, after {tokens[turn]!r}; before it: {before!r}", tokens[turn], only_before


def format_explanation(analysis: ReviewAnalysis) -> str:
    review = analysis.review
    lines = [
        f"review {review['id']}: {plural(review['rating'], 'star')}, {review['date']}, {review['source']}"
    ]
    if not analysis.sentences:
        lines.append("  no text: the stars alone give the review's sentiment; no mentions")
    for number, sentence in enumerate(analysis.sentences):
        lines.append(f"sentence {number + 1}: {sentence.text!r}")
        for mention in analysis.found:
            if mention.sentence != number:
                continue
            polarity = mention.polarity
            clause, contrast, before = _clause(sentence, mention)
            lines.append(
                f"  {mention.group} {mention.id}: {polarity.sentiment}, {polarity.confidence:.0%} sure "
                f"(found by {mention.found_by}; read: {clause})"
            )
            lines.append(f"    because of: {_reasons(mention, contrast, before)}")
        for where, match, probability in analysis.rejected:
            if where == number:
                lines.append(
                    f"  {match.term!r} is read as someone else, not {match.id} "
                    f"({probability:.0%} likely to be them: the words around the name)"
                )
    lines.append(
        f"review sentiment: {analysis.sentiment} (score {analysis.score:+.3f}: stars "
        f"{(review['rating'] - 3) / 2:+.2f}, text {analysis.text_score:+.3f})"
    )
    lines.append("counted in insights.json (a record's mentions in one review: the heavier of positive and")
    lines.append("negative, each counting 1, a half if the model is unsure of it; neutral on a tie):")
    for group, decisions in analysis.mentions.items():
        for record_id, decision in decisions.items():
            lines.append(f"  {group} {record_id}: {decision.sentiment} ({decision.rule})")
    if not any(analysis.mentions.values()):
        lines.append("  nothing: it mentions no aspect, person, service, problem, area or topic")
    else:
        group, record_id = next((g, r) for g, d in analysis.mentions.items() for r in d)
        lines.append(
            "to correct one: add to business.toml [[corrections]] with "
            f'review_id = "{review["id"]}", group = "{group}", id = "{record_id}" and sentiment = "..." '
            "(or suppress = true)"
        )
    return "\n".join(lines) + "\n"
