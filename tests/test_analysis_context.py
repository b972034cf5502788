"""What the model reads beyond a sentence's own words: the roles of the staff it names (or that "he" or
"she" refers to), a staff member's "he"/"she" in the next sentence, the term bar below which a head
overrules a preset term, and the clause's words named by their aspect."""

from __future__ import annotations

import sys
from pathlib import Path

from test_analysis_model import restaurant, review

from reviewsd_app.analysis.batch import analyse_reviews, staff_roles
from reviewsd_app.analysis.explain import _reasons, describe, format_explanation
from reviewsd_app.analysis.features import (
    mention_clause,
    negation_marked,
    polarity_features,
    role_words,
    staff_context,
)
from reviewsd_app.analysis.lexicon import Scorer
from reviewsd_app.analysis.matcher import Matcher
from reviewsd_app.analysis.model import CLASSES, Model, Polarity
from reviewsd_app.analysis.review import STAFF_GROUP, Mention, other_names, score_sentence
from reviewsd_app.authoring.presets import render_preset
from reviewsd_app.authoring.profile import parse_profile

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import train_model  # noqa: E402

DENTAL_STAFF = """
[[practitioners]]
id = "bree-tolliver"
name = "Bree Tolliver"
role = "Receptionist"
aliases = ["Bree"]
[[practitioners]]
id = "dr-kim"
name = "Dr. Ana Kim"
role = "Dentist"
"""


def dental():
    return parse_profile(render_preset("dental") + DENTAL_STAFF)


def tiny_model(
    detect_weights: dict,
    heads=("drinks", "front-desk"),
    term_bar: float | None = None,
    phrase_bar: float | None = None,
    bias: float = -8.0,
) -> Model:
    """A model whose heads say no unless a listed feature says yes (each head's probability with no feature:
    from `bias`); polarity always neutral; staff names always mean staff."""
    detect = {
        "heads": list(heads),
        "bias": [bias] * len(heads),
        "threshold": 0.5,
        "weights": {f: [heads.index(h), w] for f, (h, w) in detect_weights.items()},
    }
    if term_bar is not None:
        detect["term_bar"] = term_bar
    if phrase_bar is not None:
        detect["phrase_bar"] = phrase_bar
    return Model(
        {
            "info": {},
            "detect": detect,
            "polarity": {"classes": list(CLASSES), "bias": [0.0, 1.0, 0.0], "weights": {}},
            "staff": {"bias": 3.0, "weights": {}},
        }
    )


def found(analysis, group: str = "aspects") -> list[tuple[int, str]]:
    return [(m.sentence, m.id) for m in analysis.found if m.group == group]


def test_role_words_and_the_context_they_give():
    assert role_words("Dental Hygienist") == ("dental", "hygienist")
    assert role_words("Chiropractor (clinic director)") == ("chiropractor", "clinic", "director")
    assert role_words("") == ()
    named = [("receptionist",)]
    assert staff_context(named, [], ["bree", "mixed", "it", "up"]) == ["role:receptionist"]
    # no name: "she" or "he" points at the staff the last sentence naming any named
    assert staff_context([], named, ["she", "sighed"]) == ["prole:receptionist"]
    assert staff_context([], named, ["the", "crown", "fits"]) == []
    assert staff_context([], [], ["she", "sighed"]) == []


def test_a_staff_members_role_tells_the_heads_what_the_sentence_is_about():
    """ "Bree mixed up my appointment." is about the front desk because Bree is the receptionist: the head
    reads the role of the staff a sentence names, and of the staff its "she" refers to."""
    says_front_desk = ("front-desk", 16.0)
    model = tiny_model({"role:receptionist": says_front_desk, "prole:receptionist": says_front_desk})
    text = "Bree mixed up my appointment. She sighed at me. The crown fits well."
    [analysis] = analyse_reviews([review(1, 2, text)], dental(), model)
    assert (0, "front-desk") in found(analysis)
    assert (1, "front-desk") in found(analysis)
    assert (2, "front-desk") not in found(analysis)
    # a dentist named: no receptionist role, no front-desk
    [analysis] = analyse_reviews([review(2, 2, "Dr. Kim mixed up my appointment.")], dental(), model)
    assert (0, "front-desk") not in found(analysis)
    roles = staff_roles(dental())
    assert roles["bree-tolliver"] == ("receptionist",) and roles["dr-kim"] == ("dentist",)


def test_a_preset_term_the_head_overrules_is_no_mention():
    """ "Nobody refilled our drinks." names a drinks term but judges the service: below the term bar the
    head overrules the term. A model file from before the bar (no "term_bar") keeps every term."""
    text = "Nobody refilled our drinks."
    [analysis] = analyse_reviews([review(1, 2, text)], restaurant(), tiny_model({}, term_bar=0.05))
    assert (0, "drinks") not in found(analysis)
    [analysis] = analyse_reviews([review(1, 2, text)], restaurant(), tiny_model({}))
    assert [(m.id, m.found_by) for m in analysis.found] == [("drinks", "term 'drinks'")]
    # a head that is sure enough keeps it, found by the model
    sure = tiny_model({"w:refilled": ("drinks", 16.0)}, term_bar=0.05)
    [analysis] = analyse_reviews([review(1, 2, text)], restaurant(), sure)
    assert [m.found_by for m in analysis.found if m.id == "drinks"] == ["model, 100% sure"]


def test_a_phrase_term_counts_down_to_the_phrase_bar_a_word_term_to_the_term_bar():
    """ "The wine list was long." names drinks by a phrase: with the head at 12% (bias -2), under the term
    bar of 20% but over a phrase bar of 5%, it counts; the word term "drinks" at 12% does not. A model file
    without a phrase bar (before 3.1) holds phrases to the term bar."""
    model = tiny_model({}, term_bar=0.2, phrase_bar=0.05, bias=-2.0)
    [analysis] = analyse_reviews([review(1, 4, "The wine list was long.")], restaurant(), model)
    assert [(m.id, m.found_by) for m in analysis.found] == [("drinks", "term 'wine list'")]
    [analysis] = analyse_reviews([review(1, 4, "The drinks were fine.")], restaurant(), model)
    assert (0, "drinks") not in found(analysis)
    assert tiny_model({}, term_bar=0.2).phrase_bar == 0.2


def test_he_or_she_after_a_named_staff_member_counts_for_them_as_the_name_does_and_is_never_quoted():
    text = "Maria brought our menus. She was wonderful, so warm and attentive all night."
    [analysis] = analyse_reviews([review(1, 5, text)], restaurant())
    people = [m for m in analysis.found if m.group == "technicians"]
    assert [(m.sentence, m.id, m.by_pronoun) for m in people] == [
        (0, "maria-santos", False),
        (1, "maria-santos", True),
    ]
    assert people[1].weight == 1.0 and people[1].span == (0, 0)
    assert "'she' after the sentence naming them" in people[1].found_by
    assert analysis.mentions["technicians"]["maria-santos"].sentiment == "positive"
    quoted = analysis.quotes.get(("technicians", "maria-santos", "positive"), (0, ""))[1]
    assert quoted != "She was wonderful, so warm and attentive all night."


def test_a_praise_and_a_complaint_the_model_is_sure_of_tie_as_the_labels_count_them():
    """Each mention counts 1, as the labels count it: a praise by name and a complaint by "she" are mixed, not
    the name's side (a "he" or "she" counted half until 3.5); two sentences surely about the food tie too,
    where weighing each by its head's probability (0.997 against 1.0) gave the food to the complaint."""
    for text in (
        "Maria was lovely and so warm all night. She forgot our drinks twice and never came back to check.",
        "Maria forgot our drinks twice. She was lovely about it, to be fair.",
    ):
        [analysis] = analyse_reviews([review(1, 3, text)], restaurant())
        sentiments = [m.polarity.sentiment for m in analysis.found if m.group == "technicians"]
        assert sorted(sentiments) == ["negative", "positive"], text
        assert analysis.mentions["technicians"]["maria-santos"].sentiment == "neutral", text
    for text in (
        "The pasta was delicious. The steak was overcooked and bland.",
        "The steak was overcooked and bland. The pasta was delicious.",
    ):
        [analysis] = analyse_reviews([review(1, 3, text)], restaurant())
        food = [m for m in analysis.found if m.id == "food"]
        assert sorted(m.polarity.sentiment for m in food) == ["negative", "positive"], text
        assert analysis.mentions["aspects"]["food"].sentiment == "neutral", text


def test_a_mention_the_model_is_unsure_of_counts_half():
    praise = Polarity("positive", 0.99, (), 0.99)
    weights = {}
    for head_probability in (1.0, 0.75, 0.74, 0.3):
        mention = Mention("aspects", "food", 0, "model", None, praise, sure=head_probability)
        weights[head_probability] = mention.weight
    assert weights == {1.0: 1.0, 0.75: 1.0, 0.74: 0.5, 0.3: 0.5}


def test_a_contracted_he_or_she_is_a_pronoun_too():
    """ "She's" is one token: before it was read as a pronoun, it was no mention of Maria at all."""
    text = "Maria brought our menus. She's a gem, so warm and attentive all night."
    [analysis] = analyse_reviews([review(1, 5, text)], restaurant())
    people = [(m.sentence, m.id, m.by_pronoun) for m in analysis.found if m.group == "technicians"]
    assert people == [(0, "maria-santos", False), (1, "maria-santos", True)]
    assert "'she's' after the sentence naming them" in analysis.found[-1].found_by


def test_he_or_she_counts_only_in_the_sentence_right_after_the_name():
    """The guideline labels a pronoun only right after the name: two sentences on it is nobody's mention
    (it had counted for Maria until another sentence named staff)."""
    text = "Maria brought our menus. The soup was cold. She was rude to my mother."
    [analysis] = analyse_reviews([review(1, 2, text)], restaurant())
    assert [m.sentence for m in analysis.found if m.group == "technicians"] == [0]


def test_he_or_she_after_two_staff_members_counts_for_neither():
    text = "Maria and Tom looked after us. She was rude to my mother."
    [analysis] = analyse_reviews([review(1, 2, text)], restaurant())
    assert not [m for m in analysis.found if m.by_pronoun]


def restaurant_pronouns(maria: str, tom: str):
    """The restaurant's Maria and Tom, with the pronouns business.toml gives them ("" for none)."""
    staff = ""
    for staff_id, name, pronouns in (
        ("maria-santos", "Maria Santos", maria),
        ("tom-becker", "Tom Becker", tom),
    ):
        staff += f'[[practitioners]]\nid = "{staff_id}"\nname = "{name}"\naliases = ["{name.split()[0]}"]\n'
        staff += f'pronouns = "{pronouns}"\n' if pronouns else ""
    return parse_profile(render_preset("restaurant") + staff)


def pronoun_mentions(text: str, profile) -> list[tuple[int, str]]:
    [analysis] = analyse_reviews([review(1, 2, text)], profile)
    return [(m.sentence, m.id) for m in analysis.found if m.by_pronoun]


def test_after_two_staff_members_he_or_she_counts_for_the_one_business_toml_gives_it():
    """[[practitioners]] pronouns: of the staff the sentence before named, the one given that pronoun, if
    only one is; given to both, or to neither, nobody."""
    two = "Maria and Tom looked after us. She was rude to my mother."
    assert pronoun_mentions(two, restaurant_pronouns("she/her", "he")) == [(1, "maria-santos")]
    assert pronoun_mentions(two.replace("She", "He"), restaurant_pronouns("she", "he/him")) == [
        (1, "tom-becker")
    ]
    assert pronoun_mentions(two, restaurant_pronouns("she", "she")) == []
    assert pronoun_mentions(two, restaurant_pronouns("she", "")) == [(1, "maria-santos")]
    assert pronoun_mentions(two, restaurant_pronouns("", "he")) == []


def test_he_or_she_after_one_staff_member_given_other_pronouns_is_not_them():
    """ "Tom brought our menus. She was rude to my mother.": with Tom given "he" (or "they"), "she" is not
    Tom (with none given, she is: the guideline's reading of a pronoun right after a name)."""
    text = "Tom brought our menus. She was rude to my mother."
    assert pronoun_mentions(text, restaurant_pronouns("", "he")) == []
    assert pronoun_mentions(text, restaurant_pronouns("", "they/them")) == []
    assert pronoun_mentions(text, restaurant_pronouns("", "")) == [(1, "tom-becker")]
    assert pronoun_mentions(text.replace("She", "He"), restaurant_pronouns("", "he")) == [(1, "tom-becker")]


def test_a_pronoun_sentence_is_trained_on_the_pronoun_as_the_staff_members_span():
    staff = [{"name": "Maria Santos", "role": "Server", "aliases": ["Maria"]}]
    sentences = [
        {"text": "Maria brought our menus.", "aspects": {}, "people": {"Maria Santos": "neutral"}},
        {"text": "She was wonderful.", "aspects": {}, "people": {"Maria Santos": "positive"}},
    ]
    corpus_review = {"trade": "restaurant", "staff": staff, "rating": 5, "sentences": sentences}
    found_examples = train_model.examples([corpus_review])
    person_rows = [features for _, features, _ in found_examples.polarity if "kind:person" in features]
    assert "pc:<self>" in person_rows[1] and "no-span" not in person_rows[1]
    role_rows = [features for _, _, features, _ in found_examples.detection]
    assert "role:server" in role_rows[0] and "prole:server" in role_rows[1]


def test_staff_names_are_read_as_whose_they_are_not_as_words():
    """A mention's own name is "<self>" and any other staff name "<staff>", for the heads and the polarity
    model alike, in training and in analyze: "<self> brought our menus" is learnt once for every server."""
    staff = [
        {"name": "Maria Santos", "role": "Server", "aliases": ["Maria"]},
        {"name": "Tom Becker", "role": "Chef", "aliases": ["Tom"]},
    ]
    sentences = [
        {"text": "Maria brought the soup Tom made.", "aspects": {"food": "neutral"}, "people": {}},
        {
            "text": "Maria was lovely.",
            "aspects": {"service": "positive"},
            "people": {"Maria Santos": "positive"},
        },
    ]
    corpus_review = {"trade": "restaurant", "staff": staff, "rating": 5, "sentences": sentences}
    found_examples = train_model.examples([corpus_review])
    heads_row = found_examples.detection[0][2]
    assert "w:<staff> brought" in heads_row and "w:<staff>" in heads_row
    assert not any("maria" in feature or "tom" in feature for feature in heads_row)
    aspect_row, _, person_row = [features for _, features, _ in found_examples.polarity]
    assert "ac:the soup" in aspect_row and "s:<staff> made" in aspect_row
    assert "pc:<self> was" in person_row and not any("maria" in feature for feature in person_row)
    assert describe("pc:<self> was", 1.0) == '"(their name) was" near it'
    model = tiny_model({})
    weights = {"s:<self> was": [0.0, 0.0, 1.0], "s:<staff> was": [0.0, 0.0, 2.0], "s:tom": [3.0, 0.0, 0.0]}
    model.polarity_weights.update(weights)
    [analysis] = analyse_reviews(
        [review(1, 3, "Tom was great, Maria was rude.")], restaurant(), model, reasons=9
    )
    read = {m.id: {feature for feature, _, _ in m.polarity.reasons} for m in analysis.found}
    assert read["tom-becker"] == read["maria-santos"] == {"s:<self> was", "s:<staff> was"}


def one_review_each(
    sentences: list[tuple[float, bool, bool]], phrase: bool = False
) -> list[tuple[float, bool, bool, bool, tuple[int, str]]]:
    """Scored sentences as the trainer makes them, each in a review of its own; `phrase`: their term is a
    phrase of two or more words."""
    scored = []
    for number, (probability, labelled, names_term) in enumerate(sentences):
        scored.append((probability, labelled, names_term, phrase and names_term, (number, "food")))
    return scored


def test_the_trainer_lets_heads_overrule_terms_only_when_that_scores_better():
    noisy_terms = [(0.01, False, True)] * 30 + [(0.9, True, True)] * 10 + [(0.9, True, False)] * 10
    assert train_model._detection_bars(one_review_each(noisy_terms))[1] > 0
    reliable_terms = [(0.01, True, True)] * 30 + [(0.9, True, False)] * 10 + [(0.01, False, False)] * 10
    assert train_model._detection_bars(one_review_each(reliable_terms))[1] == 0


def test_the_detection_bars_are_chosen_for_what_the_insights_count_a_review_mentioning_an_aspect():
    """A weak second sentence about an aspect the review already names surely adds nothing to the insights,
    while a weak sentence alone is a false mention: per sentence 0.35 would pass, per review it does not."""
    scored = []
    for index in range(20):
        scored += [(0.9, True, False, False, (index, "food")), (0.35, True, False, False, (index, "food"))]
    scored += [(0.35, False, False, False, (100 + index, "food")) for index in range(10)]
    assert train_model._detection_bars(scored)[0] > 0.35
    assert train_model._detection_bars(one_review_each([s[:3] for s in scored]))[0] <= 0.35


def test_a_phrase_term_gets_the_lowest_bar_the_data_cannot_tell_from_the_best():
    """Words as terms are noisy, so the term bar rises. Phrases labelled wherever the head doubts them get
    the bar 0; phrases as noisy as the words keep the term bar; phrases the head is always sure of change
    nothing whatever their bar, so the lowest is taken."""
    noisy = [(0.01, False, True)] * 30 + [(0.9, True, True)] * 10 + [(0.9, True, False)] * 10
    term_bar = train_model._detection_bars(one_review_each(noisy))[1]
    assert term_bar > 0

    def words_and_phrases(phrases: list[tuple[float, bool, bool]]) -> list:
        more = [(*s[:4], (1000 + n, "food")) for n, s in enumerate(one_review_each(phrases, phrase=True))]
        return one_review_each(noisy) + more

    assert train_model._detection_bars(words_and_phrases([(0.01, True, True)] * 5))[1:] == (term_bar, 0.0)
    assert train_model._detection_bars(words_and_phrases(noisy))[1:] == (term_bar, term_bar)
    assert train_model._detection_bars(words_and_phrases([(0.9, True, True)] * 5))[1:] == (term_bar, 0.0)


def test_the_clause_words_are_named_by_their_aspect_and_explained_as_plain_words():
    tokens = ["the", "soup", "was", "cold"]
    features = polarity_features(tokens, [0.0] * 4, (1, 1), "aspect", 2, "food")
    assert features["aw:food:cold"] == 1.0 and features["ac:cold"] == 1.0
    assert not any(f.startswith("aw:") for f in polarity_features(tokens, [0.0] * 4, (1, 1), "person", 2))
    assert describe("aw:food:cold", 1.0) == describe("ac:cold", 1.0) == '"cold" near it'


def test_a_mentions_polarity_reads_function_words_only_in_pairs():
    """ "and", "a", "at" alone learnt the corpus's narration and were an owner's reasons in --explain
    ("and" near it, +1.1, toward neutral); in pairs ("a clear", "not a") they still count."""
    tokens = ["i", "left", "with", "a", "clear", "plan", "and", "stretches", "to", "do", "at", "home"]
    features = polarity_features(tokens, [0.0] * len(tokens), (5, 5), "aspect", 5, "explanation-of-treatment")
    for word in ("i", "with", "a", "and", "to", "at"):
        assert f"ac:{word}" not in features and f"s:{word}" not in features
        assert f"aw:explanation-of-treatment:{word}" not in features
    assert {"ac:clear", "ac:a clear", "s:plan and", "aw:explanation-of-treatment:clear"} <= set(features)
    negated = polarity_features(["not", "a", "fan"], [0.0] * 3, None, "aspect", 2)
    assert {"ac:not not_a", "ac:not_a not_fan", "ac:not_fan"} <= set(negated)


def test_a_persons_words_are_read_three_at_a_time_and_an_aspects_two():
    """What a staff member did is told in a phrase ("never rang back", "stayed past closing"): a person's
    clause and sentence give word triples as well; an aspect's give pairs at most, and describe() reads a
    triple as words."""
    tokens = ["<self>", "never", "rang", "back", "after", "the", "visit"]
    marked = negation_marked(tokens)
    person = polarity_features(tokens, [0.0] * len(tokens), (0, 0), "person", 5)
    clause_triple, sentence_triple = " ".join(marked[1:4]), " ".join(marked[0:3])
    assert {f"pc:{clause_triple}", f"s:{sentence_triple}"} <= set(person)
    aspect = polarity_features(tokens, [0.0] * len(tokens), (6, 6), "aspect", 5, "wait-time")
    assert not [f for f in aspect if f.startswith(("ac:", "s:")) and f.count(" ") == 2]
    assert describe("pc:never not_rang not_back", 1.0) == '"never rang back" after a negation near it'


def test_a_mentions_clause_runs_through_a_but_when_the_next_clause_names_nothing_else():
    """ "The practitioners were professional but brief": the clause after "but" decides, and it is about the
    same aspect; in "the food was good but the wait was long" it is about another."""
    tokens = "the practitioners were professional but brief".split()
    features = polarity_features(tokens, [0.0] * len(tokens), (1, 1), "aspect", 4, "bedside-manner")
    assert "ac:brief" in features and "turned" in features
    tokens = "the food was good but the wait was long".split()
    others = frozenset({6})  # "wait" names wait-time
    features = polarity_features(tokens, [0.0] * len(tokens), (1, 1), "aspect", 4, "food", others)
    assert "ac:good" in features and "ac:long" not in features
    # a person's too: "Marco was sweet but forgot us."
    tokens = "marco was sweet but forgot us".split()
    assert "pc:forgot" in polarity_features(tokens, [0.0] * len(tokens), (0, 0), "person", 3)


def test_the_clause_after_a_contrast_decides_and_the_words_before_it_count_apart():
    """The guideline: "Gretchen is talented, but she is always late." is negative for Gretchen. The clause
    read runs through the contrast, with a comma before it or not; the words after it are the clause's,
    those before it count under "pre:", and the lexicon reads only the words after it."""
    for text in ("gretchen is talented , but she is always late", "gretchen is talented but she is late"):
        tokens = text.split()
        lexicon = [1.5 if token == "talented" else (-1.0 if token == "late" else 0.0) for token in tokens]
        start, end, turn = mention_clause(tokens, (0, 0))
        assert (start, end) == (0, len(tokens))
        assert tokens[turn] == "but"
        features = polarity_features(tokens, lexicon, (0, 0), "person", 4)
        assert {"pc:late", "pc:she is", "pre:talented", "turned"} <= set(features)
        assert "pc:talented" not in features and not any(f.startswith("pc:but") for f in features)
        assert features["lex:clause"] < 0 < features["lex:sentence"]
    # a comma alone is no turn, and neither is a "but" before the mention
    tokens = "gretchen is talented , and she is always early".split()
    assert mention_clause(tokens, (0, 0)) == (0, 3, None)
    tokens = "small place but gretchen is talented".split()
    assert mention_clause(tokens, (3, 3)) == (3, 6, None)
    assert describe("pre:talented", 1.0) == '"talented" before the "but"'


def test_for_a_staff_member_only_other_staff_end_the_clause_at_a_contrast():
    """ "Maria was a sweetheart, but the pasta she brought was cold.": the pasta (food) is still about
    Maria; another staff member's name after the "but" is about them."""
    matcher, scorer = Matcher(restaurant()), Scorer.for_overrides({})
    sentence = score_sentence("Maria was a sweetheart, but the pasta she brought was cold.", matcher, scorer)
    assert [m.id for m in sentence.matches] == ["maria-santos", "food"]
    assert other_names(sentence, "maria-santos", STAFF_GROUP) == frozenset()
    assert other_names(sentence, "food", "aspects") == {0}
    sentence = score_sentence("Maria was a sweetheart, but Tom was rude.", matcher, scorer)
    assert other_names(sentence, "maria-santos", STAFF_GROUP) == {6}


def test_explain_shows_the_clause_after_the_contrast_and_what_came_before_it():
    [analysis] = analyse_reviews(
        [review(1, 3, "Maria is sweet, but she never came back to check on us.")], restaurant(), reasons=4
    )
    explained = format_explanation(analysis)
    assert "technicians maria-santos: negative" in explained
    read = "read: 'she never came back to check on us', after 'but'; before it: 'maria is sweet')"
    assert read in explained


def test_explain_says_1_star_not_1_stars():
    [analysis] = analyse_reviews([review(1, 1, "Maria was rude.")], restaurant(), reasons=4)
    explained = format_explanation(analysis)
    assert explained.startswith(f"review {analysis.review['id']}: 1 star, ") and "1 stars" not in explained


def test_explain_names_a_punctuation_mark_that_weighed_alone():
    """The sample's 1-star "I needed help with pregnancy back pain, so I booked ..." gave '"," near it
    (+1.2)' as its first reason: a stray quote to an owner. A mark alone is named; in a pair it is shown."""
    assert describe("ac:,", 1.0) == "a comma near it"
    assert describe("s:!", 1.0) == "an exclamation mark in the sentence"
    assert describe("pc:?", 1.0) == "a question mark near it"
    assert describe("ac:not_$", 1.0) == "a dollar sign after a negation near it"
    assert describe("s:, so", 1.0) == '", so" in the sentence'
    assert describe("ac:$ <n>", 1.0) == '"$ a number" near it'


def test_explain_says_when_a_review_counts_for_nothing():
    """A review without text (or naming nothing) ended on "counted in insights.json (...):" and no line."""
    for text in (None, "Would come again."):
        [analysis] = analyse_reviews([review(1, 4, text)], restaurant(), reasons=4)
        explained = format_explanation(analysis)
        assert explained.endswith(
            "neutral on a tie):\n  nothing: it mentions no aspect, person, service, problem, area or topic\n"
        )


def test_explain_names_the_contrast_word_the_clause_turned_at():
    """The words before a "though" are said to come before the "though", not a "but"."""
    [analysis] = analyse_reviews(
        [review(1, 3, "Maria is sweet, though she never came back to check on us.")], restaurant(), reasons=40
    )
    explained = format_explanation(analysis)
    assert "after 'though'; before it: 'maria is sweet'" in explained
    assert 'before the "though"' in explained and 'before the "but"' not in explained
    assert describe("turned", 1.0, "however") == 'a "however" after it: the words after the "however" decide'


def test_a_reasons_push_is_against_the_runner_up_so_five_stars_never_argue_for_neutral():
    """Against the mean of the other two sentiments, a happy review's 5 stars (far from negative) showed in
    --explain as a reason for a neutral reading (229 of the bundled sample's 1,424 mentions); against the
    runner-up, positive, they are a reason against it, and the pushes add up to the winner's log-odds over
    the runner-up."""
    model = tiny_model({})
    weights = {"stars:5": [-3.0, 0.0, 1.0], "ac:at home": [0.0, 2.0, 0.0], "ac:clear": [-1.0, 0.0, 0.5]}
    model.polarity_weights.update(weights)
    polarity = model.polarity({"stars:5": 1.0, "ac:at home": 1.0, "ac:clear": 1.0}, reasons=9)
    assert polarity.sentiment == "neutral"
    assert {feature: push for feature, _, push in polarity.reasons} == {
        "ac:at home": 2.0,
        "stars:5": -1.0,
        "ac:clear": -0.5,
    }


def test_explain_lists_reasons_strongest_first_after_summing_the_stars_two_features():
    """The stars are two features (alone, and for aspects or people) and one reason: summed, they can lead
    the list, where they stood last (the bundled sample: "the review's 4 stars (+1.9)" after a +1.2)."""
    reasons = (
        ("lex:sentence", 0.8, 1.8),
        ("ac:great", 1.0, 1.2),
        ("stars:4", 0.5, 1.0),
        ("stars:4|aspect", 0.5, 0.9),
    )
    mention = Mention("aspects", "food", 0, "model", None, Polarity("positive", 0.99, reasons))
    assert _reasons(mention, "but", frozenset()) == (
        "the review's 4 stars (+1.9); the sentiment lexicon's score of the sentence at +0.80 (+1.8); "
        '"great" near it (+1.2)'
    )


def test_explain_says_an_aspects_own_word_before_the_contrast_stands_before_it():
    """The clause's words named by the aspect ("aw:price:steep") were all said to be "near it", even where
    the clause read turned at a "but" and the word stood before it: "steep" near it, where the words read
    were 'not out of line'."""
    [analysis] = analyse_reviews(
        [review(1, 3, "The prices are steep, but not out of line.")], restaurant(), reasons=40
    )
    explained = format_explanation(analysis)
    assert "read: 'not out of line', after 'but'; before it: 'the prices are steep')" in explained
    assert '"steep" before the "but"' in explained and '"steep" near it' not in explained
    assert describe("aw:price:steep", 1.0, "though", frozenset({"steep"})) == '"steep" before the "though"'
    assert describe("aw:price:not_steep", 1.0, "but", frozenset({"steep"})) == (
        '"steep" after a negation before the "but"'
    )
    assert describe("aw:price:steep", 1.0) == '"steep" near it'


def polarity_only(bias: list[float], weights: dict, scores: str | None = None) -> Model:
    polarity: dict = {"classes": list(CLASSES), "bias": bias, "weights": weights}
    if scores is not None:
        polarity["scores"] = scores
    detect = {"heads": [], "bias": [], "threshold": 0.5, "weights": {}}
    return Model({"info": {}, "detect": detect, "polarity": polarity, "staff": {"bias": 3.0, "weights": {}}})


def test_a_one_vs_rest_models_probabilities_are_its_sigmoids_shared_out():
    # Model 3.3 scores each sentiment with a binary model of its own, each score its own log-odds: a
    # sentiment's probability is its sigmoid over the sum of the three. Models before 3.3 (no "scores") are
    # one multinomial model: a softmax of the same scores.
    weights = {"stars:5": [0.0, 0.0, 2.0]}
    features = {"ac:fine": 1.0, "stars:5": 0.5}  # neutral 1.0 from its bias, positive 1.0 from the stars
    one_vs_rest = polarity_only([0.0, 1.0, 0.0], weights, "one-vs-rest").polarity(features)
    multinomial = polarity_only([0.0, 1.0, 0.0], weights).polarity(features)
    assert one_vs_rest.sentiment == multinomial.sentiment == "neutral"  # a tie goes to the first
    assert round(one_vs_rest.confidence, 3) == 0.373  # sigmoid(1) / (2 sigmoid(1) + sigmoid(0))
    assert round(multinomial.confidence, 3) == 0.422  # e / (2e + 1)
    # from the words alone, the stars left out: neutral 1.0, the others 0.0
    assert round(one_vs_rest.words_confidence, 3) == 0.422  # sigmoid(1) / (sigmoid(1) + 2 sigmoid(0))
    assert round(multinomial.words_confidence, 3) == 0.576  # e / (e + 2)
