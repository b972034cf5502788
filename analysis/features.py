"""What the trained model sees of a sentence: tokens, negation scope, clauses, and the feature names of
aspect detection, mention polarity and staff references (pure; training and `analyze` share it)."""

from __future__ import annotations

from typing import Iterable, NamedTuple, Sequence

from ..reviews.words import fold
from .lexicon import CONTRASTS, Scorer, compound

NEGATORS = frozenset(
    {"not", "no", "never", "nothing", "nobody", "none", "neither", "nor", "without", "hardly", "barely"}
)
# Where a negation's scope ends: punctuation, a contrast, or a sentence's end.
SCOPE_ENDS = frozenset({",", ";", "!", "?", *CONTRASTS})
CLAUSE_ENDS = frozenset({",", ";", *CONTRASTS})
NEGATION_REACH = 6  # tokens a negation reaches at most
SENTENCE_WEIGHT = 0.5  # the sentence's n-grams beside the clause's, for a mention's polarity
OTHER_CLAUSES_WEIGHT = 0.25  # ... for an aspect whose clause is not the whole sentence
STARS_WEIGHT = 0.5  # the review's stars: one feature among many (at 0, polarity drops 9 points on the corpus)
# Emoji carry sentiment that folding (ASCII only) would drop: each becomes a token of its own.
EMOJI = {
    **{c: "<emo+>" for c in "😀😃😄😁😊☺🙂😍🥰😘👍👌🙌👏💯❤💕💖💗💙💚💛🔥⭐🌟✨🎉😋🤩😎🙏"},
    **{c: "<emo->" for c in "😞😠😡🤬😤😒🙄😩😫😢😭👎💩🤮🤢😕☹🙁😬😑😐"},
}
# "She's" and "he'll" are one token each: without their contractions, "Maria brought our menus. She's a
# gem." was no mention of Maria (people polarity on the corpus, 5-fold: +0.001 alone, +0.002 with the
# pronoun's reach cut to the next sentence, analysis/review.py StaffBefore).
# Each pronoun's person, matched against the pronouns business.toml may give a staff member (StaffBefore).
PRONOUN_PERSON = {
    **dict.fromkeys(("he", "him", "his", "he's", "he'll", "he'd"), "he"),
    **dict.fromkeys(("she", "her", "hers", "she's", "she'll", "she'd"), "she"),
}
PRONOUNS = frozenset(PRONOUN_PERSON)
# Words that say nothing of how a customer judges what they talk about. A mention's polarity reads them only
# in pairs ("not a", "at all"): alone they learnt the corpus's narration ("and", "a" and "at" near a mention
# weighed toward neutral, so "I left with a clear plan." read as a plain one). On the corpus a wash (5-fold,
# 11,514 reviews: aspect and people polarity within 0.002 either way); the bundled sample's aspect polarity
# 0.874 -> 0.899; --explain's reasons are words that judge.
FUNCTION_WORDS = frozenset(
    """a an the and or at in on of to for with i my me we our us it its this that is was were be been am
    are so as by from""".split()
)
# A staff member's name, as the model reads it: the name a mention is about is "<self>", any other staff name
# "<staff>", so "<self> brought the menus" is one feature whichever server brought them. On the corpus (5-fold
# CV by review), people polarity 0.852 with the names as words, 0.857 with them replaced.
SELF = "<self>"
STAFF = "<staff>"
POSSESSIVES = frozenset({"my", "our", "his", "her", "their", "your"})
# Words that make a following first name someone the customer knows, not staff ("my friend Tom").
RELATIONS = frozenset(
    """friend friends buddy pal husband wife son daughter kid kids brother sister mom mum mother dad father
    boyfriend girlfriend partner fiance fiancee cousin uncle aunt nephew niece grandma grandpa grandmother
    grandfather neighbor neighbour coworker colleague boss roommate baby toddler dog cat named called
    date team guest guests""".split()
)


def tokens_of(text: str, folded: Sequence[str]) -> list[str]:
    """The folded tokens with numbers as <n>, and a token for each emoji in the raw text."""
    tokens = ["<n>" if token.isdigit() else token for token in folded]
    if not text.isascii():
        tokens += [EMOJI[c] for c in text if c in EMOJI]
    return tokens


def names_replaced(
    tokens: Sequence[str], names: Iterable[tuple[int, int]], own: tuple[int, int] | None = None
) -> list[str]:
    """The tokens with each staff name (its first and last token positions in `names`) as "<staff>", and the
    name the mention is about (`own`: a name or a "he"/"she") as "<self>"."""
    replaced = list(tokens)
    for first, last in names:
        replaced[first : last + 1] = [STAFF] * (last + 1 - first)
    if own is not None:
        replaced[own[0] : own[1] + 1] = [SELF] * (own[1] + 1 - own[0])
    return replaced


def negation_marked(tokens: Sequence[str]) -> list[str]:
    """Tokens inside a negation's scope get the prefix "not_" ("not very good" -> not, not_very, not_good)."""
    marked, left = [], 0
    for token in tokens:
        if token in SCOPE_ENDS:
            left = 0
            marked.append(token)
        elif token in NEGATORS or token.endswith("n't"):
            left = NEGATION_REACH
            marked.append(token)
        elif left:
            left -= 1
            marked.append("not_" + token)
        else:
            marked.append(token)
    return marked


def ngrams(
    prefix: str, tokens: Sequence[str], only_in_pairs: frozenset[str] = frozenset(), longest: int = 2
) -> list[str]:
    """Unigrams and bigrams (and trigrams when `longest` is 3), named with a prefix saying where they come
    from; the words in `only_in_pairs` give no unigram."""
    found = [f"{prefix}{t}" for t in tokens if t not in only_in_pairs]
    found += [f"{prefix}{a} {b}" for a, b in zip(tokens, tokens[1:])]
    if longest >= 3:
        found += [f"{prefix}{a} {b} {c}" for a, b, c in zip(tokens, tokens[1:], tokens[2:])]
    return found


def stem(token: str) -> str:
    """A crude stem, so that "waited", "waiting" and "waits" share a feature."""
    for suffix in ("ing", "ed", "es", "s", "ly"):
        if token.endswith(suffix) and len(token) - len(suffix) >= 3:
            return token[: -len(suffix)]
    return token


def detection_features(
    tokens: Sequence[str], term_hits: Iterable[str], context: Sequence[str] = ()
) -> list[str]:
    """A sentence's features for the aspect heads: its n-grams and stems, the aspects whose terms it
    holds, and `context` (staff_context)."""
    features = ngrams("w:", tokens) + [f"term:{aspect}" for aspect in sorted(set(term_hits))]
    return features + [f"st:{stem(t)}" for t in tokens] + list(context)


def pronoun_index(tokens: Sequence[str]) -> int | None:
    """Where a sentence first says "he", "she" (or him, her, his, hers); None if it does not."""
    for index, token in enumerate(tokens):
        if token in PRONOUNS:
            return index
    return None


def role_words(role: str) -> tuple[str, ...]:
    """The words of a staff member's role as features name them ("Dental Hygienist": dental, hygienist)."""
    return tuple(w for w in fold(role).split() if len(w) > 2 and w.isalpha())


def staff_context(
    named: Sequence[Sequence[str]], earlier: Sequence[Sequence[str]], tokens: Sequence[str]
) -> list[str]:
    """What a sentence's staff say about its aspect: the role words of the staff it names ("Bree mixed up
    my appointment": Bree is the receptionist), else, when it says "he" or "she", of the staff the last
    sentence naming any named (`earlier`)."""
    if named:
        return sorted({f"role:{w}" for words in named for w in words})
    if earlier and pronoun_index(tokens) is not None:
        return sorted({f"prole:{w}" for words in earlier for w in words})
    return []


def clause_bounds(tokens: Sequence[str], first: int, last: int) -> tuple[int, int]:
    """[start, end) of the clause holding tokens first..last (between commas, semicolons, contrasts)."""
    start = first
    while start > 0 and tokens[start - 1] not in CLAUSE_ENDS:
        start -= 1
    end = last + 1
    while end < len(tokens) and tokens[end] not in CLAUSE_ENDS:
        end += 1
    return start, end


class Clause(NamedTuple):
    """The words read for a mention, [start, end), and where they turn at a contrast after the mention
    (the "but" of "Gretchen is talented, but she is always late"; None when they do not)."""

    start: int
    end: int
    turn: int | None = None


def _through_contrast(tokens: Sequence[str], end: int, others: frozenset[int]) -> tuple[int, int | None]:
    """Where a mention's clause ends, and the contrast it ran on through: through a contrast, with or without
    a comma before it, when the clause after it names nothing else ("kind but rushed", "kind, but rushed":
    the clause after "but" decides, and it is about the same aspect or person). Measured when only "kind
    but rushed" ran on: on the bundled sample, aspect polarity 0.920 without, 0.928 with, people 0.851 and
    0.863; on the corpus 0.883 and 0.884, people 0.867 both."""
    turn = end + 1 if end + 1 < len(tokens) and tokens[end] in (",", ";") else end
    if turn + 1 < len(tokens) and tokens[turn] in CONTRASTS:
        next_start, next_end = clause_bounds(tokens, turn + 1, turn + 1)
        if not any(next_start <= i < next_end for i in others):
            return next_end, turn
    return end, None


def mention_clause(
    tokens: Sequence[str], span: tuple[int, int] | None, others: frozenset[int] = frozenset()
) -> Clause:
    """The words read for a mention: its clause, through a contrast when the next clause names nothing
    else; the whole sentence when no word names it."""
    if span is None:
        return Clause(0, len(tokens))
    start, end = clause_bounds(tokens, *span)
    return Clause(start, *_through_contrast(tokens, end, others))


def _sign(score: float) -> str:
    return "+" if score >= 0.05 else ("-" if score <= -0.05 else "0")


def polarity_features(
    tokens: Sequence[str],
    lexicon: Sequence[float],
    span: tuple[int, int] | None,
    kind: str,
    stars: int,
    about: str = "",
    others: frozenset[int] = frozenset(),
) -> dict[str, float]:
    """A mention's features: the clause around it (or the whole sentence when nothing names it) and the
    sentence, as n-grams with negation marked; where it stands against a contrast; the lexicon's scores of
    clause and sentence; the review's stars. `kind` is "aspect" or "person"; `lexicon` is each token's
    valence (lexicon.Scorer.contributions); `about` is the preset aspect's id, if it is one; `others`, the
    positions of the first words of the other records the sentence names."""
    start, end, turn = mention_clause(tokens, span, others)
    marked = negation_marked(tokens)
    # The clause's n-grams are named by the kind of mention: the same words can judge an aspect and only
    # narrate about a person ("Dr. Kim handled my care."). People polarity on the bundled sample: 0.821
    # shared, 0.845 apart; on the corpus within 0.004 either way.
    clause_prefix = "pc:" if kind == "person" else "ac:"
    # Read through a contrast, the clause after it decides ("Gretchen is talented, but she is always
    # late."), as the guideline has it; the words before it count under names of their own. On the corpus,
    # people read the opposite way of their label 248 -> 222 times; people polarity 0.849 -> 0.850.
    judged = start if turn is None else turn + 1
    # A person's words are read three at a time as well: what someone did is told in a phrase more than a
    # word ("stayed past closing", "never rang back"). People polarity per mention on the corpus (5-fold by
    # review, 31,074 reviews, bench/polarity_mentions.py): 0.8703 -> 0.8755, aspects the same; four words at
    # a time as well, 0.8747 (docs/analysis.md).
    longest = 3 if kind == "person" else 2
    clause_ngrams = ngrams(clause_prefix, marked[judged:end], FUNCTION_WORDS, longest)
    features: dict[str, float] = dict.fromkeys(clause_ngrams, 1.0)
    if turn is not None:
        features.update(dict.fromkeys(ngrams("pre:", marked[start:turn], FUNCTION_WORDS), 1.0))
        features["turned"] = 1.0
    # The rest of the sentence counts less for an aspect named in a clause of its own: "The croissants are
    # gorgeous but the line is a joke." praises the food (aspect polarity on the corpus 0.874 at 0.5, 0.875 at
    # 0.25; a person's sentence keeps 0.5: "Marcus was sweet but forgot us." is about Marcus throughout).
    sentence_weight = SENTENCE_WEIGHT
    if kind == "aspect" and span and (start > 0 or end < len(tokens)):
        sentence_weight = OTHER_CLAUSES_WEIGHT
    features.update(dict.fromkeys(ngrams("s:", marked, FUNCTION_WORDS, longest), sentence_weight))
    # The same word can praise one aspect and fault another ("cheap" prices, "cheap" chairs; "hot" food, a
    # "hot" room): the clause's words once more, named by the aspect (aspect polarity on the corpus 0.875
    # without, 0.881 with).
    if about and kind == "aspect":
        for token in marked[start:end]:
            if token not in FUNCTION_WORDS:
                features[f"aw:{about}:{token}"] = 1.0
    if span:
        before, after = tokens[: span[0]], tokens[span[1] + 1 :]
        if any(t in CONTRASTS for t in before):
            features["after-contrast"] = 1.0
        if any(t in CONTRASTS for t in after):
            features["before-contrast"] = 1.0
    else:
        features["no-span"] = 1.0
    clause_score = compound(sum(lexicon[judged:end]), tokens[judged:end].count("!"))
    sentence_score = compound(sum(lexicon), tokens.count("!"))
    features["lex:clause"] = clause_score
    features["lex:sentence"] = sentence_score
    features[f"lex:clause{_sign(clause_score)}"] = 1.0
    for value in lexicon[judged:end]:  # how many lexicon words lean each way, whichever the words
        if abs(value) >= 0.5:
            key = "lex:word+" if value > 0 else "lex:word-"
            features[key] = features.get(key, 0.0) + 1.0
    features[f"stars:{stars}"] = STARS_WEIGHT
    features[f"stars:{stars}|{kind}"] = STARS_WEIGHT
    features[f"kind:{kind}"] = 1.0
    if "?" in tokens:
        features["question"] = 1.0
    return features


def staff_reference_features(tokens: Sequence[str], first: int, last: int, full_name: bool) -> list[str]:
    """A staff member's name found in a sentence: the words around it, for whether it means them."""
    features = ["full-name" if full_name else "short-name"]
    before = tokens[max(0, first - 3) : first]
    for distance, token in enumerate(reversed(before), 1):
        features.append(f"b{distance}:{token}")
        if token in POSSESSIVES:
            features.append("possessive-before")
        if token in RELATIONS:
            features.append("relation-before")
    for distance, token in enumerate(tokens[last + 1 : last + 3], 1):
        features.append(f"a{distance}:{token}")
    if first == 0:
        features.append("sentence-start")
    return features


def lexicon_values(scorer: Scorer, folded_tokens: Sequence[str]) -> list[float]:
    return scorer.contributions(folded_tokens)
