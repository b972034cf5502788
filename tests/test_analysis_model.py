"""The trained model in `analyze`: the owner's examples from issue 35, publishing with care ([publish], quotes
above the confidence bar, minimum counts and margins), and the model as shipped data."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reviewsd_app.analysis import compose, quotes
from reviewsd_app.analysis.batch import analyse_reviews
from reviewsd_app.analysis.model import MODEL_FILE, Polarity, shipped_model
from reviewsd_app.analysis.review import Mention, aggregate_mentions
from reviewsd_app.analysis.run import build_insights
from reviewsd_app.authoring.presets import render_preset
from reviewsd_app.authoring.profile import load_profile, parse_profile
from reviewsd_app.authoring.schemas import schema_errors
from reviewsd_app.ingest.merge import aggregate_rating
from reviewsd_app.ingest.records import review_id

ROOT = Path(__file__).resolve().parent.parent
NOW = "2026-11-20T00:00:00Z"
STAFF = """
[[practitioners]]
id = "maria-santos"
name = "Maria Santos"
role = "Server"
aliases = ["Maria"]
[[practitioners]]
id = "tom-becker"
name = "Tom Becker"
role = "Chef"
aliases = ["Tom"]
"""


def restaurant(extra: str = ""):
    return parse_profile(render_preset("restaurant") + STAFF + extra)


def review(number: int, rating: int, text: str, month: int = 5) -> dict:
    return {
        "id": review_id("test", str(number)),
        "author": f"Author {number}",
        "author_avatar_url": None,
        "rating": rating,
        "date": f"2026-{month:02d}-01",
        "text": text,
        "source": "google",
        "source_url": None,
        "owner_reply": None,
        "verified": False,
    }


def insights(reviews: list[dict], profile) -> dict:
    doc = {
        "business": {**profile.business_block(), "name": "Osteria"},
        "aggregate_rating": aggregate_rating(reviews),
        "generated_at": NOW,
        "reviews": reviews,
    }
    result = build_insights(doc, profile, NOW)
    assert schema_errors("insights.schema.json", result) == []
    return result


def decided(text: str, rating: int) -> dict[str, dict[str, str]]:
    [analysis] = analyse_reviews([review(1, rating, text)], restaurant())
    return {group: {k: d.sentiment for k, d in found.items()} for group, found in analysis.mentions.items()}


# The owner's examples (issue 35): each came out wrong with the lexicon method.
def test_a_simile_with_like_and_a_price_are_not_praise():
    found = decided("$18 for a glass of Barolo that was poured like a tasting sample?", 2)
    assert found == {"aspects": {"drinks": "negative", "price": "negative"}}


def test_a_wait_to_be_greeted_is_a_complaint_about_service():
    assert decided("Waited 25 minutes to be greeted.", 1) == {"aspects": {"service": "negative"}}


def test_contrast_gives_each_aspect_its_own_side():
    found = decided("Good food but I'm not paying $14 for a cocktail that's mostly ice.", 3)
    assert found == {"aspects": {"food": "positive", "drinks": "negative", "price": "negative"}}


def test_a_fault_after_a_comma_and_but_decides_for_the_person():
    """The guideline: the clause after "but" decides. Model 2.4 read only "Maria is sweet" here (a comma
    before "but" ended the clause) and called her praised."""
    found = decided("Maria is sweet, but she never came back to check on us.", 3)
    assert found["technicians"] == {"maria-santos": "negative"}


def test_a_party_of_four_says_nothing():
    assert decided("Came in with a party of 4 on a Friday.", 5) == {}


def test_sarcasm_in_a_one_star_review_is_read_as_meant():
    assert decided("Great service, if you enjoy being ignored.", 1) == {"aspects": {"service": "negative"}}


def test_a_friend_who_shares_a_staff_name_is_not_staff():
    assert "technicians" not in decided("My friend Tom ordered the risotto and loved it.", 4)
    assert decided("Tom's pasta was the best I've had in years.", 5)["technicians"] == {
        "tom-becker": "positive"
    }


PRAISE = [
    "Maria was wonderful all night.",
    "Our server Maria was lovely and quick.",
    "Maria remembered our order from last time.",
    "Maria made great wine suggestions.",
    "Maria was so friendly to the kids.",
    "Ask for Maria, she is the best.",
    "Maria checked on us at just the right moments.",
]


def clinic_aspects(text: str, rating: int) -> dict[str, str]:
    """The aspects analyze finds in a one-sentence review with the bundled sample's business.toml."""
    [analysis] = analyse_reviews([review(1, rating, text)], load_profile(ROOT / "data"))
    return {aspect: decision.sentiment for aspect, decision in analysis.mentions.get("aspects", {}).items()}


def test_what_a_patient_hoped_for_or_when_they_came_is_no_aspect():
    # Model 2.7 read the first as pain relief (92% sure), the second as scheduling, and the third as
    # pain relief beside bedside manner: a reason for a visit, a date, general praise of a massage
    # therapist. Corpus round 13 was written for such sentences (none of these is in it).
    assert clinic_aspects("I was hoping for some relief from my sciatica.", 5) == {}
    assert clinic_aspects("My first appointment was on a Tuesday in March.", 5) == {}
    assert clinic_aspects("Jürgen is the best.", 5) == {"bedside-manner": "positive"}


def test_a_server_praised_in_every_mention_is_shown_all_positive():
    reviews = [review(n, 5 if n % 2 else 3, text) for n, text in enumerate(PRAISE)]
    [maria] = [
        t for t in insights(reviews, restaurant())["entities"]["technicians"] if t["id"] == "maria-santos"
    ]
    assert (maria["mention_count"], maria["positive_count"]) == (7, 7)


VALUE_GOOD = [
    "Great value for the portion size.",
    "Very reasonable prices for food this good.",
    "A fair price for a lovely dinner.",
    "Cheap and cheerful, we'll be back.",
    "The prices are a bargain at lunch.",
]
# Read against what they say by the model trained on corpus rounds 1 to 6 (docs/analysis.md, known failure
# modes: in the corpus "the prices" mostly opens a complaint and "what a bargain" is sarcastic; the
# sarcasm is read as meant beside 1 star, not beside 2). The property test below still generates them.
MISREAD = {"The prices are a bargain at lunch.", "Great service, if you enjoy being ignored."}
VALUE_BAD = [
    "Way overpriced for what you get.",
    "$34 for a plate of pasta is too much.",
    "Too expensive for such small portions.",
    "The prices have gone up and the portions went down.",
    "Not worth the money.",
    "The bill was outrageous.",
    "Overpriced cocktails.",
    "Ridiculous prices for frozen fish.",
    "I can't justify these prices.",
    "Pricey for what it is.",
    "$16 for a salad with no dressing is a rip-off.",
]


def test_the_value_faq_counts_the_right_way_round_and_quotes_each_side():
    reviews = [review(n, 4, text) for n, text in enumerate(VALUE_GOOD)]
    reviews += [review(100 + n, 2, text) for n, text in enumerate(VALUE_BAD)]
    faq = {entry["question"]: entry for entry in insights(reviews, restaurant())["faq"]}
    answer = faq["Is it good value?"]["answer"]
    # The owner's complaint was the counts the wrong way round (11 positive, 5 negative). One of the 16 may
    # be misread (MISREAD), never the balance.
    counts = re.match(r"16 reviews mention price: (\d+) positive, (\d+) neutral, (\d+) negative\.", answer)
    assert counts, answer
    positive, neutral, negative = map(int, counts.groups())
    assert positive + neutral + negative == 16 and positive >= 4 and negative >= 10
    first, second = answer.split("A negative review said: “")[1].split("” A positive review said: “")
    assert first in VALUE_BAD and second.rstrip("”") in VALUE_GOOD


def test_the_faq_and_summary_of_one_review_in_one_month_read_as_english():
    doc = insights([review(1, 5, "Great pasta.")], restaurant())
    faq = {entry["question"]: entry["answer"] for entry in doc["faq"]}
    assert faq["How is the food?"].startswith("1 review mentions food: 1 positive, 0 neutral")
    assert faq["How do customers rate Osteria?"] == (
        "1 review averages 5.0 of 5 stars; 1 (100%) gives 4 or 5 stars and 0 (0%) give 1 or 2."
    )
    assert doc["summary"].startswith("1 review in May 2026, averaging 5.0 of 5 stars;")
    two_months = insights([review(1, 5, "Great pasta."), review(2, 4, "Good.", month=6)], restaurant())
    assert two_months["summary"].startswith("2 reviews from May 2026 to June 2026, averaging 4.5")


def test_a_trend_is_put_into_words_only_from_three_months_with_reviews():
    """Three reviews in two months are no trend: the summary does not call the ratings "declining" (the data
    keep the fitted slope; get_rating_trend and insights.json still carry it)."""
    two_months = [review(1, 5, "Great pasta."), review(2, 5, "Lovely."), review(3, 1, "Cold food.", month=7)]
    doc = insights(two_months, restaurant())
    assert doc["temporal"]["trend"]["direction"] == "declining"
    assert "Ratings over the last" not in doc["summary"]
    three_months = two_months + [review(4, 1, "Rude staff.", month=8)]
    doc = insights(three_months, restaurant())
    assert "Ratings over the last 12 months: declining (" in doc["summary"]


def test_most_criticised_and_most_praised_need_a_count_and_a_margin():
    complaints = [
        "The service was painfully slow.",
        "Our waiter ignored us for half an hour.",
        "Service was rude and careless.",
        "We had to flag someone down for every single thing.",
    ]
    reviews = [review(n, 2, text) for n, text in enumerate(complaints)]
    reviews.append(review(50, 2, "The soup was cold."))
    summary = insights(reviews, restaurant())["summary"]
    # the rule under test is the count and the margin, whichever of the four the model reads as complaints
    read = [a.mentions.get("aspects", {}).get("service") for a in analyse_reviews(reviews, restaurant())]
    negative = sum(1 for decision in read if decision is not None and decision.sentiment == "negative")
    assert negative >= 3 and f"Most criticised: service ({negative} negative mentions)." in summary
    assert "Most criticised" not in insights(reviews[:2] + reviews[-1:], restaurant())["summary"]
    assert "Most praised" not in summary


def test_publish_switches_leave_people_and_trend_out():
    reviews = [review(n, 5, text, month=1 + n) for n, text in enumerate(PRAISE)]
    shown = insights(reviews, restaurant())
    assert shown["entities"]["technicians"] and shown["temporal"]["trend"] is not None
    assert "Most named: Maria Santos" in shown["summary"] and "Ratings over the last" in shown["summary"]
    assert shown["people_label"] == "Staff"
    hidden = insights(reviews, restaurant("[publish]\npeople = false\ntrend = false\n"))
    assert hidden["entities"]["technicians"] == [] and hidden["temporal"]["trend"] is None
    assert all(
        entry["technicians"] == [] and "sentiments" not in entry for entry in hidden["per_review"].values()
    )
    assert "Most named" not in hidden["summary"] and "Ratings over" not in hidden["summary"]
    named = insights(reviews, restaurant('[publish]\npeople_label = "Team"\n'))
    assert named["people_label"] == "Team"


def test_most_named_says_the_negative_share_beside_the_positive():
    """Staff are named in plain narration as often as in praise: "57% positive" alone read as lukewarm for a
    practitioner with one complaint in 54 reviews (the bundled sample's Dr. Maya Patel)."""
    reviews = [review(n, 5, text, month=1 + n) for n, text in enumerate(PRAISE)]
    reviews += [review(20 + n, 4, "Maria brought the menus and took our order.") for n in range(3)]
    reviews.append(review(30, 2, "Maria forgot our drinks twice."))
    doc = insights(reviews, restaurant())
    [maria] = [e for e in doc["entities"]["technicians"] if e["id"] == "maria-santos"]
    count = maria["mention_count"]
    positive = round(100 * maria["positive_count"] / count)
    negative = round(100 * maria["negative_count"] / count)
    assert maria["negative_count"] >= 1 and maria["neutral_count"] >= 1
    assert (
        f"Most named: Maria Santos ({count} reviews, {positive}% positive, {negative}% negative)."
        in doc["summary"]
    )


def test_most_mentioned_gives_a_share_only_from_three_mentions():
    """As the pages show shares: "billing and insurance (1, 0% positive)" put one complaint into words
    (the README's two-review Takeout example)."""
    reviews = [review(1, 2, "The prices were far too high.")]
    reviews += [review(2 + n, 5, "The pasta was delicious.", month=2 + n) for n in range(3)]
    doc = insights(reviews, restaurant())
    [food] = [a for a in doc["aspects"] if a["id"] == "food"]
    [price] = [a for a in doc["aspects"] if a["id"] == "price"]
    assert price["mention_count"] == 1 and food["mention_count"] >= 3
    assert "price (1)" in doc["summary"] and "(1, " not in doc["summary"]
    assert f"food ({food['mention_count']}, {food['positive_pct']:g}% positive)" in doc["summary"]


def test_with_people_unpublished_no_quote_names_a_staff_member():
    """[publish] people = false: the FAQ and the pull quote pick sentences that name no staff, so that the
    insights' own choice of words never singles one out (the reviews themselves stay as written)."""
    reviews = [
        review(
            1,
            5,
            "Maria looked after us and the service was wonderful, so warm and attentive all night.",
            month=6,
        ),
        review(2, 5, "The service was wonderful and so attentive, the best we have had in this town."),
    ]
    shown = insights(reviews, restaurant())
    hidden = insights(reviews, restaurant("[publish]\npeople = false\n"))
    service = {entry["question"]: entry["answer"] for entry in shown["faq"]}["How is the service?"]
    assert "Maria" in service
    service = {entry["question"]: entry["answer"] for entry in hidden["faq"]}["How is the service?"]
    assert "Maria" not in service and "The service was wonderful and so attentive" in service
    praised = [review(3, 5, "Maria was wonderful, so warm and attentive, the best server we have ever had.")]
    assert "Maria" in insights(praised, restaurant())["pull_quote"]["text"]
    assert insights(praised, restaurant("[publish]\npeople = false\n"))["pull_quote"] is None


def test_the_model_is_shipped_data_applied_without_training_libraries():
    # a few MB at most: 4.92 MB at 3.13 (47,394 reviews; weights kept to two decimals since 3.8)
    assert (ROOT / "analysis" / MODEL_FILE).stat().st_size < 6_000_000
    assert shipped_model().heads and shipped_model().classes == ("negative", "neutral", "positive")
    code = (
        "import sys; from reviewsd_app.analysis.batch import analyse_reviews; "
        "from reviewsd_app.authoring.profile import Profile; "
        "analyse_reviews([{'id': 'a', 'rating': 5, 'date': '2026-01-01', 'text': 'Great.'}], Profile()); "
        "print(sorted(m for m in ('sklearn', 'numpy', 'scipy') if m in sys.modules))"
    )
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert ran.stdout.strip() == "[]", ran.stderr


# Generated reviews for the property: sentences whose sentiment about one aspect is known.
SENTENCES = {
    ("price", "positive"): VALUE_GOOD,
    ("price", "negative"): VALUE_BAD,
    ("service", "positive"): [
        "The service was warm and attentive.",
        "Our waiter was fantastic.",
        "Service was quick and friendly.",
    ],
    ("service", "negative"): [
        "The service was painfully slow.",
        "Waited 25 minutes to be greeted.",
        "Great service, if you enjoy being ignored.",
    ],
    ("food", "positive"): ["The lamb was perfect.", "Best tacos in town."],
    ("food", "negative"): ["The soup was cold.", "The fish tasted old."],
}
STARS = {"positive": (4, 5), "negative": (1, 2)}
SARCASM = {"Great service, if you enjoy being ignored."}
SENTENCE_KEYS = sorted(SENTENCES)


def test_every_generated_sentence_is_read_as_written():
    for (aspect, sentiment), texts in SENTENCES.items():
        for text in texts:
            if text in MISREAD:
                continue
            for rating in STARS[sentiment]:
                assert decided(text, rating)["aspects"][aspect] == sentiment, (text, rating)


@st.composite
def generated_reviews(draw):
    reviews = []
    for number in range(draw(st.integers(1, 12))):
        picks = draw(st.lists(st.sampled_from(SENTENCE_KEYS), min_size=1, max_size=3))
        sentiment = picks[0][1]
        rating = draw(st.sampled_from(STARS[sentiment]))
        texts = [draw(st.sampled_from(SENTENCES[key])) for key in picks]
        if sentiment == "positive":  # sarcasm reads as meant only beside the stars that show it
            texts = [text for text in texts if text not in SARCASM] or [SENTENCES[picks[0]][0]]
        reviews.append(review(number, rating, " ".join(texts), month=draw(st.integers(1, 12))))
    return reviews


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(generated_reviews())
def test_no_faq_or_summary_quote_goes_against_what_the_sentence_says(reviews):
    written = {text: key for key, texts in SENTENCES.items() for text in texts}
    doc = insights(reviews, restaurant())
    for entry in doc["faq"][1:]:
        for part in entry["answer"].split(" A ")[1:]:
            sentiment, text = part.split(" review said: “")
            assert written[text.rstrip("”")][1] == sentiment, entry["answer"]  # its aspect may be another too
    if doc["pull_quote"]:
        assert written[doc["pull_quote"]["text"]][1] == "positive"


def test_the_confidence_bar_is_stated_and_applied():
    assert 0.5 < quotes.QUOTE_CONFIDENCE < 1
    analyses = analyse_reviews([review(1, 3, "The prices were fine, I guess.")], restaurant())
    unsure = [m for m in analyses[0].found if m.polarity.confidence < quotes.QUOTE_CONFIDENCE]
    keys = [(m.group, m.id) for m in unsure]
    assert all(
        compose._quote_for(analyses, [key], s) is None for key in keys for s in ("positive", "negative")
    )


def test_a_business_toml_larger_or_deeper_than_any_real_one_is_refused_in_one_line():
    import pytest

    from reviewsd_app.authoring.profile import ProfileError

    for text, message in (
        ("# x\n" * 300_000, "larger than any business profile needs"),
        ("a" + ".a" * 40_000 + " = 1\n", "line 1: a key of more than 8 dotted parts"),
        ('"a".' * 20 + "b = 1\n", "a key of more than 8 dotted parts"),
        ("a = " + "[" * 5000 + "]" * 5000, "nested deeper than any business profile needs"),
        ("a = " + "{b = " * 3000 + "1" + "}" * 3000, "nested deeper than any business profile needs"),
    ):
        with pytest.raises(ProfileError, match=message) as raised:
            parse_profile(text)
        assert "\n" not in str(raised.value)
    assert parse_profile(
        render_preset("restaurant") + '\n[publish]\npeople_label = "Dr. A. B. C. D. E. F."\n'
    )


def test_sentences_split_the_same_way_at_any_length():
    from reviewsd_app.analysis.text import split_sentences

    assert split_sentences("Dr. Patel was great.\t\tThe wait, short.\n\nNo. Dr. A. Smith?") == [
        "Dr. Patel was great.",
        "The wait, short.",
        "No.",
        "Dr. A. Smith?",
    ]
    assert split_sentences("Dr. " * 5000) == [("Dr. " * 5000).strip()]
    assert split_sentences("\t" * 20_000 + "ok") == ["ok"]
    assert split_sentences('"' * 20_000 + " ok") == ['"' * 20_000 + " ok"]
    assert split_sentences("😂 " * 10_000) == [("😂 " * 10_000).strip()]


def test_a_sentence_ends_after_a_closing_quote_or_an_emoji_as_its_labels_end_it():
    """Split only after . ! ? …, 1,145 pairs of the corpus's labelled sentences were one: 'Parisa now says it
    was a "system error." Dr. Zielonka's treatment was good' read the praise for Parisa."""
    from reviewsd_app.analysis.text import split_sentences

    cases = {
        'Parisa now says it was a "system error." Dr. Zielonka\'s treatment was good.': [
            'Parisa now says it was a "system error."',
            "Dr. Zielonka's treatment was good.",
        ],
        "She called it 'normal soreness.' It was not. (Ask for Dr. Lee.) He listens.": [
            "She called it 'normal soreness.'",
            "It was not.",
            "(Ask for Dr. Lee.)",
            "He listens.",
        ],
        "Lucía is the reason this place runs 😂 She remembers everybody.": [
            "Lucía is the reason this place runs 😂",
            "She remembers everybody.",
        ],
        "Jordan is the sweetest!! 😊 And Dr. Rob is great 👍": [
            "Jordan is the sweetest!! 😊",
            "And Dr. Rob is great 👍",
        ],
        "Tacos 😍 and the salsa 😍": ["Tacos 😍 and the salsa 😍"],
        "I called at 5:40 a.m. and Hanh had me in by 6. Open at 5 a.m. Then closed.": [
            "I called at 5:40 a.m. and Hanh had me in by 6.",
            "Open at 5 a.m.",
            "Then closed.",
        ],
        'An automated "how did we do?" email. My friend Hana (not the one who works here!) came too.': [
            'An automated "how did we do?" email.',
            "My friend Hana (not the one who works here!) came too.",
        ],
        "The replacement came out... also well-done. So am I. Great. will go back": [
            "The replacement came out... also well-done.",
            "So am I.",
            "Great.",
            "will go back",
        ],
    }
    for text, sentences in cases.items():
        assert split_sentences(text) == sentences, text


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=list("aAbDrmp.!?…\"')]😂😊 \t\n"), max_size=60))
def test_splitting_loses_and_adds_nothing(text):
    """Whatever the text, its sentences hold its characters but whitespace, in order, each stripped and
    none empty; and a sentence ends only after . ! ? …, a closing quote or bracket, or an emoji."""
    from reviewsd_app.analysis.text import split_sentences

    sentences = split_sentences(text)
    assert "".join("".join(s.split()) for s in sentences) == "".join(text.split())
    assert all(s and s == s.strip() for s in sentences)
    for line in text.split("\n"):
        line_sentences = split_sentences(line)
        assert all(s[-1] in ".!?…\"')]😂😊" for s in line_sentences[:-1]), line_sentences


def test_a_sentence_the_lexicon_reads_the_other_way_is_no_quote():
    """The model can be sure and wrong; a public quote needs the lexicon not to lean the other way."""
    profile = restaurant()
    [analysis] = analyse_reviews([review(1, 4, "The prices are a bargain at lunch.")], profile)
    [sentence] = analysis.sentences
    assert sentence.score > 0.05  # VADER reads "bargain" as praise
    sure_and_wrong = Polarity("negative", 0.99, (), 0.99)
    found = [Mention("aspects", "price", 0, "model", None, sure_and_wrong)]
    assert quotes.best_quotes(analysis.sentences, found) == {}
    found = [Mention("aspects", "price", 0, "model", None, Polarity("positive", 0.99, (), 0.99))]
    best = {("aspects", "price", "positive"): (0.99, sentence.text)}
    assert quotes.best_quotes(analysis.sentences, found) == best


def test_a_sentence_the_model_is_unsure_is_about_the_record_is_no_quote():
    """A quote needs the model sure the sentence is about the record too, not only of its sentiment: "I
    needed help with neck pain." was quotable as praise of pain relief (found at 35%, rated positive
    surely)."""
    [analysis] = analyse_reviews([review(1, 5, "The prices are a bargain at lunch.")], restaurant())
    praise = Polarity("positive", 0.99, (), 0.99)
    for head_probability, quoted in ((0.35, False), (0.5, False), (0.9, True), (1.0, True)):
        found = [Mention("aspects", "price", 0, "model", None, praise, sure=head_probability)]
        assert bool(quotes.best_quotes(analysis.sentences, found)) is quoted, head_probability


def test_a_sentence_with_a_contrast_is_no_quote():
    """A quote speaks for one side, and "but", "though", "however" hold both: "It's a bit pricey without a
    membership, but not out of line." was quoted as a negative review's words."""
    sure = Polarity("positive", 0.99, (), 0.99)
    for text, quoted in (
        ("The prices are fair.", True),
        ("The prices are fair, but the portions are small.", False),
        ("The prices are fair, though the room is loud.", False),
        ("However, the prices are fair.", False),
    ):
        [analysis] = analyse_reviews([review(1, 5, text)], restaurant())
        found = [Mention("aspects", "price", 0, "model", None, sure)]
        assert bool(quotes.best_quotes(analysis.sentences, found)) is quoted, text


def test_a_mention_the_model_is_unsure_of_weighs_less_than_one_it_is_sure_of():
    """A record's mentions in a review are weighed by how sure the model is they are there: a sentence it
    barely reads as about the record no longer ties with one it is sure of (which made it neutral)."""
    assert aggregate_mentions(["positive", "negative"], [0.9, 0.5]) == "positive"
    assert aggregate_mentions(["positive", "negative"], [0.35, 0.8]) == "negative"
    assert aggregate_mentions(["positive", "negative"]) == "neutral"  # labels: each weighs 1
    assert aggregate_mentions(["positive", "neutral", "negative"], [0.5, 1.0, 0.5]) == "neutral"
    assert aggregate_mentions(["neutral", "neutral"], [0.9, 0.9]) == "neutral"
