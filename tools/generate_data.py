#!/usr/bin/env python3
"""Deterministic generator for the reviewsd sample datasets.

Writes ``reviews.json`` and ``insights.json`` for one fictional chiropractic
clinic (Riverbend Spine & Wellness, Millbrook, OR) into an output directory::

    python generate_data.py [--out DIR] [--reviews N] [--seed S]
                            [--end-date YYYY-MM-DD] [--years Y]

Defaults: ``--out data --reviews 320 --seed 7 --end-date 2026-11-15
--years 3.5``. The same arguments always produce byte-identical files. Only the
standard library is used; all randomness comes from ``random.Random(seed)``.

Importable API (pure, no I/O)::

    generate(n_reviews, seed, end_date, years) -> (reviews_doc, insights_doc)
    dumps(doc, pretty) -> bytes          (iter_dumps(doc, pretty) yields the same in chunks)
    write_dataset(out_dir, reviews_doc, insights_doc) -> (reviews_path, insights_path)
    main(argv=None) -> int

How reviews and insights are kept in agreement
----------------------------------------------
Every review text is composed from templates *after* its mentions have been
chosen (technicians, services, problems, service areas, topics, aspects with a
sentiment each), and the per-review insight record is built from exactly those
choices. The templates insert each entity through a fixed surface form:

* a technician is always written with their surname ("Dr. Patel",
  "Dr. Maya Patel", "Jürgen Lindqvist", "la Dra. Ramírez"), so a
  case-insensitive search for the surname finds exactly the reviews that list
  that technician;
* a service, problem, service area or topic is always written with its label
  (case-insensitively), and no other template text contains any label, so a
  case-insensitive search for a label finds exactly the reviews listing it;
* each aspect sentence contains its key phrase; ``top_phrases`` are the most
  frequent key phrases for that aspect.

Sentiment conventions
---------------------
* A review's sentiment comes from its rating: 4-5 positive, 3 neutral,
  1-2 negative. Entity mentions (technicians, services, problems, service
  areas, topics) take the sentiment of the review that mentions them.
* Aspect mentions carry their own sentiment (chosen with the review's rating
  as a prior and reflected in the wording of the aspect sentence).
* ``overall_sentiment`` is computed over ALL reviews, including rating-only
  reviews (their rating still expresses a sentiment): positive/neutral/negative
  percentages rounded to one decimal, score = (positive - negative) / count
  rounded to three decimals (all zero when there are no reviews).
* score = round((pos - neg) / mentions, 3); positive_pct =
  round(100 * pos / mentions, 1); both 0 when there are no mentions.
* ``temporal.monthly`` has one entry per calendar month from the earliest to
  the latest review month; ``average_rating`` is rounded to 2 decimals and
  ``sentiment_score`` to 3 (both null for months without reviews).
  ``temporal.trend`` fits a least-squares line through the published monthly
  averages of the last ``window_months`` (12) monthly entries, skipping months
  without reviews (slope 0 with fewer than two points); the slope is rounded to
  4 decimals and the direction is "stable" when |rounded slope| < 0.01.
* ``example_review_ids`` (and FAQ ``review_ids``) are up to three reviews, the
  newest first, preferring reviews whose text carries no deliberately hostile
  content.

Hostile texts
-------------
To exercise escaping in every output format, some review texts deliberately
contain ``]]>``, ``<script>alert(1)</script>``, ``&amp;`` and a bare ``&``,
``<b>bold</b>``, XML-forbidden control characters (U+0001, U+000B, U+001F),
NUL, a lone carriage return, a 5,000+ character text, the noncharacter U+FFFF,
the line/paragraph separators U+2028/U+2029 and a bidi override (U+202E). They
are placed deterministically: for N >= 200 roughly every N/10-th review (at
most every 1000th) carries one of them, cycling through the list, so the
default sample contains each at least once.

FAQ entries are only emitted when at least one review supports them, so tiny
datasets have fewer (or no) FAQ entries.
"""

from __future__ import annotations

import argparse
import base64
import bisect
import datetime as _dt
import gc
import itertools
import json
import math
import os
import random
import sys
import tempfile
import tomllib
from collections import Counter
from pathlib import Path

__all__ = [
    "generate",
    "dumps",
    "iter_dumps",
    "write_dataset",
    "main",
    "BUSINESS",
    "TECHNICIANS",
    "SERVICES",
    "PROBLEMS",
    "SERVICE_AREAS",
    "TOPICS",
    "ASPECTS",
    "HOSTILE_KINDS",
    "PRETTY_MAX_REVIEWS",
]

DEFAULT_OUT = "data"
DEFAULT_REVIEWS = 320
DEFAULT_SEED = 7
DEFAULT_END_DATE = _dt.date(2026, 11, 15)
DEFAULT_YEARS = 3.5
PRETTY_MAX_REVIEWS = 2000
TREND_WINDOW_MONTHS = 12
INSIGHTS_VERSION = 1
MAX_EXAMPLES = 3

# --------------------------------------------------------------------------
# The fictional business
# --------------------------------------------------------------------------

# The taxonomy (services, service areas, problems, topics, aspects: ids, labels and descriptions) is the
# sample's own business.toml, read here rather than copied: the chiropractic preset's taxonomy with the
# clinic's staff, towns and longer service descriptions.
_PROFILE_FILE = Path(__file__).resolve().parent.parent / "data" / "business.toml"
_PROFILE = tomllib.loads(_PROFILE_FILE.read_text("utf-8"))


def _pairs(group: str) -> tuple[tuple[str, str], ...]:
    return tuple((item["id"], item["label"]) for item in _PROFILE[group])


SERVICES = tuple((item["id"], item["label"], item["description"]) for item in _PROFILE["services"])
SERVICE_AREAS = _pairs("service_areas")
PROBLEMS = _pairs("problems")
TOPICS = _pairs("topics")
ASPECTS = _pairs("aspects")

BUSINESS = {
    "id": "riverbend-spine-wellness",
    "name": "Riverbend Spine & Wellness",
    "category": "Chiropractor",
    "description": (
        "Family chiropractic clinic in downtown Millbrook offering spinal adjustments, "
        "massage therapy, spinal decompression, sports injury care, prenatal and pediatric "
        "chiropractic care and posture rehab. Three chiropractors, a licensed massage "
        "therapist and a physical therapist under one roof; most insurance plans accepted."
    ),
    "url": "https://riverbend-spine.example/",
    "telephone": "+1 541-555-0143",
    "address": {
        "street_address": "418 Larkspur Avenue, Suite 2B",
        "locality": "Millbrook",
        "region": "OR",
        "postal_code": "97391",
        "country": "US",
    },
    "geo": {"latitude": 44.6371, "longitude": -123.1047},
    "opening_hours": [
        {"days": ["mo", "we", "fr"], "opens": "08:00", "closes": "18:00"},
        {"days": ["tu", "th"], "opens": "10:00", "closes": "19:30"},
        {"days": ["sa"], "opens": "09:00", "closes": "13:00"},
    ],
    "service_areas": [{"id": id_, "label": label} for id_, label in SERVICE_AREAS],
    "services": [{"id": id_, "label": label, "description": d} for id_, label, d in SERVICES],
}

# (id, name, label, role, first, last, is_doctor, weight, services)
TECHNICIANS = (
    (
        "dr-maya-patel",
        "Dr. Maya Patel",
        "Dr. Maya Patel",
        "Chiropractor (clinic director)",
        "Maya",
        "Patel",
        True,
        34,
        ("spinal-adjustment", "spinal-decompression", "posture-rehab"),
    ),
    (
        "dr-sofia-ramirez",
        "Dr. Sofía Ramírez",
        "Dr. Sofía Ramírez",
        "Chiropractor (prenatal and pediatric)",
        "Sofía",
        "Ramírez",
        True,
        24,
        ("spinal-adjustment", "prenatal-care", "pediatric-care"),
    ),
    (
        "dr-ngozi-okafor",
        "Dr. Ngozi Okafor",
        "Dr. Ngozi Okafor",
        "Chiropractor (sports and rehab)",
        "Ngozi",
        "Okafor",
        True,
        20,
        ("spinal-adjustment", "sports-injury", "spinal-decompression", "pediatric-care"),
    ),
    (
        "jurgen-lindqvist",
        "Jürgen Lindqvist",
        "Jürgen Lindqvist, LMT",
        "Licensed massage therapist",
        "Jürgen",
        "Lindqvist",
        False,
        13,
        ("massage-therapy", "sports-injury"),
    ),
    (
        "chloe-dubois",
        "Chloé Dubois",
        "Chloé Dubois, DPT",
        "Physical therapist",
        "Chloé",
        "Dubois",
        False,
        9,
        ("posture-rehab", "sports-injury"),
    ),
)


SERVICE_WEIGHTS = {
    "spinal-adjustment": 30,
    "massage-therapy": 16,
    "spinal-decompression": 10,
    "sports-injury": 10,
    "prenatal-care": 8,
    "pediatric-care": 7,
    "posture-rehab": 9,
}

SERVICE_PROBLEMS = {
    "spinal-adjustment": ("lower-back-pain", "neck-pain", "headaches", "sciatica"),
    "massage-therapy": ("neck-pain", "lower-back-pain", "headaches"),
    "spinal-decompression": ("sciatica", "lower-back-pain"),
    "sports-injury": ("sports-injury-recovery",),
    "prenatal-care": ("pregnancy-back-pain",),
    "pediatric-care": ("posture",),
    "posture-rehab": ("posture", "neck-pain"),
}

SOURCES = (("google", 58), ("yelp", 20), ("facebook", 12), ("healthgrades", 10))

# --------------------------------------------------------------------------
# Text templates. NOTHING in here may contain an entity label or a technician
# surname except through the {t}/{s}/{p}/{a} placeholders (tests enforce it).
# --------------------------------------------------------------------------

OPENERS = {
    5: (
        "Absolutely the best chiropractic clinic I've been to.",
        "Can't recommend this place enough!",
        "Five stars, no hesitation.",
        "I was nervous about seeing a chiropractor, but this place changed my mind.",
        "Wonderful experience from start to finish.",
        "Honestly, “life-changing” is not too strong a word.",
        "Best decision I made all year.",
        "Such a welcoming clinic.",
    ),
    4: (
        "Very good experience overall.",
        "Solid clinic, would recommend.",
        "Really happy with my care here, with a couple of small gripes.",
        "Good place, knowledgeable people.",
        "Four stars only because nothing is perfect.",
    ),
    3: (
        "Mixed feelings about this place.",
        "It's okay.",
        "Some good, some not so good.",
        "Middle of the road for me.",
    ),
    2: (
        "Not a great experience.",
        "I wanted to like this place.",
        "Disappointing, for the price.",
    ),
    1: (
        "Would not recommend.",
        "Really disappointed.",
        "Save your money.",
        "Worst clinic experience I've had.",
    ),
}

CLOSERS = {
    5: (
        "Thank you so much!",
        "Highly recommend 👍",
        "Grateful 🙏",
        "Five stars all the way ⭐⭐⭐⭐⭐",
        "I’ll be back for sure.",
        "Ten out of ten. 💪",
        "Thank you, team! 😊",
        "Go, you won’t regret it.",
    ),
    4: ("Would recommend.", "I’ll keep going.", "Good people 👍", "Overall a good experience."),
    3: ("Might give it another try.", "Your mileage may vary.", "We'll see how it goes."),
    2: ("Probably won't return.", "Hope they sort things out."),
    1: ("Never again.", "Look elsewhere. 👎", "Very frustrating."),
}

SHORT_TEXTS = {
    5: (
        "Great chiropractor!",
        "Amazing care 🙏",
        "👍👍👍",
        "Love this place ❤️",
        "Best in town.",
        "Très bien — merci!",
        "Top notch.",
    ),
    4: ("Good experience.", "Pretty good 👍", "Helpful staff."),
    3: ("Fine.", "Average."),
    2: ("Meh.", "Not for me."),
    1: ("Terrible.", "Avoid."),
}

# (key phrase, sentence); the phrase occurs in the sentence (case-insensitively)
ASPECT_TEXT = {
    "pain-relief": {
        "positive": (
            ("pain is gone", "After a couple of weeks my pain is gone."),
            ("so much relief", "I felt so much relief walking out the door."),
            ("moving freely", "I'm moving freely again for the first time in months."),
            ("no more pain", "No more pain when I get out of bed in the morning."),
        ),
        "neutral": (
            ("some relief", "I got some relief, although it comes and goes."),
            ("slowly improving", "Things are slowly improving."),
        ),
        "negative": (
            ("no relief", "Honestly I got no relief at all."),
            ("pain came back", "The pain came back within a day every time."),
            ("felt worse", "I actually felt worse after the second session."),
        ),
    },
    "bedside-manner": {
        "positive": (
            ("really listened", "Everyone really listened and never made me feel rushed."),
            ("kind and gentle", "The care was kind and gentle, which matters when you're hurting."),
            ("genuinely cares", "You can tell the whole team genuinely cares."),
        ),
        "neutral": (("professional but brief", "The practitioners were professional but brief."),),
        "negative": (
            ("felt rushed", "I felt rushed and barely got a word in."),
            ("dismissive", "The attitude was dismissive when I asked questions."),
        ),
    },
    "wait-time": {
        "positive": (
            ("no wait", "There was basically no wait — I was in the room right on time."),
            ("on time", "Appointments always start on time."),
        ),
        "neutral": (("short wait", "There's usually a short wait of ten minutes or so."),),
        "negative": (
            ("long wait", "I sat through a long wait, 45 minutes past my appointment time."),
            ("waited forever", "I waited forever in the lobby."),
        ),
    },
    "scheduling": {
        "positive": (
            ("easy to schedule", "It's easy to schedule, even same-day."),
            ("flexible hours", "The flexible hours mean I can come before work."),
        ),
        "neutral": (("book ahead", "You need to book ahead a week or two for evening slots."),),
        "negative": (
            ("rescheduled twice", "They rescheduled twice on me without much notice."),
            ("hard to get an appointment", "It's hard to get an appointment that fits a work schedule."),
        ),
    },
    "billing-insurance": {
        "positive": (
            ("billing was clear", "Billing was clear and the prices were posted up front."),
            ("no surprise bills", "No surprise bills, ever."),
        ),
        "neutral": (("a bit pricey", "It's a bit pricey without a membership, but not out of line."),),
        "negative": (
            ("charged twice", "The billing was a mess — I got charged twice for one appointment."),
            ("surprise bill", "I got a surprise bill months later."),
        ),
    },
    "explanation-of-treatment": {
        "positive": (
            ("explained everything", "They explained everything on the spine model before doing anything."),
            ("clear plan", "I left with a clear plan and stretches to do at home."),
        ),
        "neutral": (
            ("had to ask", "There was some explanation of the treatment, but I had to ask for details."),
        ),
        "negative": (
            ("nobody ever explained", "Nobody ever explained what they were doing or why."),
            ("no plan", "There was no plan, just the same routine every time."),
        ),
    },
    "front-desk": {
        "positive": (
            ("front desk staff are lovely", "The front desk staff are lovely and remember your name."),
            ("friendly front desk", "Friendly front desk, always smiling."),
        ),
        "neutral": (("front desk was fine", "The front desk was fine, nothing special."),),
        "negative": (
            ("rude", "The front desk was rude on the phone."),
            ("forgot to put me in", "The front desk forgot to put me in the system."),
        ),
    },
    "cleanliness": {
        "positive": (
            ("spotless", "The clinic is spotless and the tables are wiped down after every patient."),
            ("clean and calm", "The space is clean and calm."),
        ),
        "neutral": (("clean enough", "The rooms are clean enough, if a bit dated."),),
        "negative": (("dirty", "The treatment room looked dirty and the linens weren't changed."),),
    },
}

ASPECT_WEIGHTS = {
    "positive": {
        "pain-relief": 5,
        "bedside-manner": 4,
        "explanation-of-treatment": 3,
        "front-desk": 2,
        "cleanliness": 1.5,
        "scheduling": 1.5,
        "wait-time": 1.5,
        "billing-insurance": 1,
    },
    "neutral": {
        "pain-relief": 3,
        "bedside-manner": 2,
        "explanation-of-treatment": 2,
        "front-desk": 2,
        "cleanliness": 1,
        "scheduling": 2,
        "wait-time": 3,
        "billing-insurance": 3,
    },
    "negative": {
        "pain-relief": 2,
        "bedside-manner": 2,
        "explanation-of-treatment": 1.5,
        "front-desk": 3,
        "cleanliness": 0.7,
        "scheduling": 3,
        "wait-time": 4,
        "billing-insurance": 4,
    },
}

# probability of (positive, neutral, negative) aspect sentiment per rating
ASPECT_SENTIMENT_P = {5: (0.93, 0.05), 4: (0.75, 0.18), 3: (0.30, 0.35), 2: (0.10, 0.25), 1: (0.05, 0.10)}

TOPIC_TEXT = {
    "first-visit": {
        "positive": (
            "My first visit was thorough: a full history, a posture check and a clear plan.",
            "From the first visit I felt in good hands.",
        ),
        "neutral": ("The first visit is mostly paperwork and an exam.",),
        "negative": ("My first visit felt like a sales pitch for a package.",),
    },
    "insurance-coverage": {
        "positive": (
            "They checked my insurance coverage before I came in, so there were no surprises.",
            "They walked me through my insurance coverage on the phone.",
        ),
        "neutral": ("Call ahead about insurance coverage; it depends on your plan.",),
        "negative": ("Be careful with insurance coverage — they told me I was covered and I wasn't.",),
    },
    "results-after-few-visits": {
        "positive": (
            "I noticed real results after a few visits.",
            "Results after a few visits were better than I expected.",
        ),
        "neutral": ("I started seeing some results after a few visits, though it's not a miracle cure.",),
        "negative": ("I didn't see results after a few visits, so I stopped going.",),
    },
    "family-care": {
        "positive": (
            "This is our go-to for family care — my partner and both kids come here.",
            "Great spot for family care; they are wonderful with my kids.",
        ),
        "neutral": ("We use them for family care, mostly for the kids.",),
        "negative": ("We came for family care, but it didn't work out for us.",),
    },
    "online-booking": {
        "positive": (
            "Online booking is painless and reminders come by text.",
            "Love the online booking, I can grab a slot at midnight.",
        ),
        "neutral": ("Online booking works, though the app is a bit clunky.",),
        "negative": ("Online booking showed slots that didn't actually exist.",),
    },
}
TOPIC_P = {
    "first-visit": 0.11,
    "insurance-coverage": 0.07,
    "results-after-few-visits": 0.09,
    "family-care": 0.04,
    "online-booking": 0.05,
}

VISIT_TEMPLATES = {
    "pst": (
        "I came in for {p} and {t} recommended {s}.",
        "{t} treated my {p} with {s}.",
        "I needed help with {p}, so I booked {s} with {t}.",
        "{t} has been doing {s} to help with my {p}.",
    ),
    "pt": (
        "I came in for {p} and saw {t}.",
        "{t} has been helping me with {p} for a few months now.",
        "I saw {t} for help with {p}.",
    ),
    "st": ("I had {s} with {t}.", "I've been seeing {t} for {s}.", "{t} handled my {s}."),
    "ps": ("I came in for {p} and started {s}.", "I started {s} because of my {p}.", "I tried {s} for {p}."),
    "p": ("I came in for {p}.", "I needed help with {p}.", "I was referred here for {p}."),
    "s": (
        "I came in for {s}.",
        "I booked {s} after a friend recommended it.",
        "This was my third round of {s}.",
    ),
    "t": ("I saw {t}.", "My appointment was with {t}.", "I've been seeing {t} for a while."),
}
SECOND_TECH = ("I also had a session with {t}.", "{t} covered one of my appointments too.")
SECOND_SERVICE = ("Later I added {s}.", "They also suggested {s}.")
TECH_PRAISE = (
    "{t} is wonderful.",
    "Can't say enough good things about {t}.",
    "{t} is a gem.",
    "Thank you, {t}!",
)
TECH_CRITICISM = ("{t} seemed distracted the whole time.", "I won't be going back to {t}.")
AREA_TEXT = {
    "positive": (
        "Worth the drive from {a}.",
        "Easily the best chiropractor near {a}.",
        "I live in {a}, so the location is convenient.",
    ),
    "neutral": ("I live in {a}, so the location is convenient.", "It's the closest clinic to {a}."),
    "negative": ("It's the closest clinic to {a}, which is the only reason I tried it.",),
}
PARKING_TEXT = {
    "positive": "Parking is easy, there's a lot right behind the building.",
    "neutral": "Street parking only, so leave a few extra minutes.",
    "negative": "Parking is a nightmare at rush hour.",
}

# Spanish reviews: (text, technician index or None, aspects). No labels inside.
SPANISH = (
    (
        "¡Excelente atención! La Dra. {last} es muy profesional y amable. 🙏",
        True,
        (("bedside-manner", "positive"),),
    ),
    (
        "Muy buena experiencia. Casi no tuve que esperar y el personal de recepción es muy atento.",
        False,
        (("wait-time", "positive"), ("front-desk", "positive")),
    ),
    (
        "La Dra. {last} me explicó todo con mucha paciencia. ¡Súper recomendado! 👍",
        True,
        (("explanation-of-treatment", "positive"),),
    ),
    (
        "Me siento mucho mejor, ya puedo dormir sin dolor. Gracias a todo el equipo, ¡mil gracias!",
        False,
        (("pain-relief", "positive"),),
    ),
)
SPANISH_TECHS = ("dr-sofia-ramirez", "dr-sofia-ramirez", "dr-maya-patel", "dr-ngozi-okafor")

FIRST_NAMES = (
    "Jessica",
    "Michael",
    "Ashley",
    "Brandon",
    "Emily",
    "Tyler",
    "Sarah",
    "Kevin",
    "Megan",
    "Chris",
    "Lauren",
    "Jordan",
    "Rachel",
    "Derek",
    "Olivia",
    "Marcus",
    "Hannah",
    "Ethan",
    "Priya",
    "Daniel",
    "Grace",
    "Luis",
    "Amanda",
    "Noah",
    "Kayla",
    "Sam",
    "Tanya",
    "Ben",
    "José",
    "Zoë",
    "Renée",
    "Björn",
    "Łukasz",
    "Siobhán",
    "Chloë",
    "André",
    "Mónica",
    "Søren",
    "Hiroshi",
    "Aoife",
    "Nguyễn",
    "Françoise",
    "Dmitri",
    "Leilani",
    "Carmen",
)
LAST_NAMES = (
    "Miller",
    "Johnson",
    "Nguyen",
    "García",
    "Thompson",
    "O'Brien",
    "Schäfer",
    "Kim",
    "Hernández",
    "Walker",
    "Brooks",
    "Lindgren",
    "Müller",
    "Novák",
    "Chen",
    "Reyes",
    "Fitzgerald",
    "Yamamoto",
    "Ólafsson",
    "Dąbrowski",
    "Carter",
    "Moreau",
    "Hughes",
)

OWNER_REPLIES = {
    "positive": (
        "Thank you, {first}! We're so glad you're feeling better. See you at your next visit.",
        "Thanks so much for the kind words, {first}. We'll share them with the whole team!",
        "We appreciate you taking the time to review us, {first} — thank you for trusting us with your care.",
        "¡Muchas gracias, {first}! It's a joy to have you with us.",
    ),
    "neutral": (
        "Thanks for the honest feedback, {first}. Please call the office so we can make your next visit "
        "better.",
        "We appreciate the review, {first}. Our practice manager would love to hear more — (541) 555-0143.",
    ),
    "negative": (
        "{first}, we're sorry your experience fell short. Please call our practice manager at (541) 555-0143 "
        "so we can make it right.",
        "We're sorry to hear this, {first}. We've shared your feedback with the team and would welcome the "
        "chance to talk.",
        "Thank you for letting us know, {first}. This isn't the standard we hold ourselves to; please reach "
        "out directly.",
    ),
}

HOSTILE_KINDS = (
    "cdata_end",
    "script",
    "amp",
    "bold",
    "control_chars",
    "nul",
    "lone_cr",
    "long_text",
    "noncharacter",
    "separators",
)
HOSTILE_LONG_MIN = 5200

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()
_MS_PER_DAY = 86_400_000

_TECH_BY_ID = {t[0]: t for t in TECHNICIANS}
_SERVICE_LABEL = {id_: label for id_, label, _ in SERVICES}
# how templates write a service: its label, lower-cased (plural for adjustments)
_SERVICE_TEXT = {id_: label.lower() for id_, label, _ in SERVICES}
_SERVICE_TEXT["spinal-adjustment"] = "spinal adjustments"
_PROBLEM_LABEL = dict(PROBLEMS)
_AREA_LABEL = dict(SERVICE_AREAS)
_TECHS_FOR_SERVICE = {sid: tuple(t[0] for t in TECHNICIANS if sid in t[8]) for sid, _, _ in SERVICES}


# --------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------

_CROCKFORD_PAIRS = tuple(a + b for a in _CROCKFORD for b in _CROCKFORD)  # 10-bit chunks


def _ulid(ms: int, rand80: int) -> str:
    """Crockford base32 of the 128-bit value (48-bit ms timestamp, 80 random bits)."""
    v = (ms << 80) | rand80  # < 2**128, written as 26 digits = 13 pairs (130 bits)
    t = _CROCKFORD_PAIRS
    return "".join(
        [
            t[(v >> 120) & 1023],
            t[(v >> 110) & 1023],
            t[(v >> 100) & 1023],
            t[(v >> 90) & 1023],
            t[(v >> 80) & 1023],
            t[(v >> 70) & 1023],
            t[(v >> 60) & 1023],
            t[(v >> 50) & 1023],
            t[(v >> 40) & 1023],
            t[(v >> 30) & 1023],
            t[(v >> 20) & 1023],
            t[(v >> 10) & 1023],
            t[v & 1023],
        ]
    )


def _sentiment_of_rating(rating: int) -> str:
    if rating >= 4:
        return "positive"
    if rating == 3:
        return "neutral"
    return "negative"


def _pick(rng: random.Random, seq):
    """Uniform choice (cheaper than Random.choice; deterministic for a seed)."""
    return seq[int(rng.random() * len(seq))]


class _Chooser:
    """Weighted choice over fixed items via cumulative weights and bisect."""

    __slots__ = ("items", "cum", "total")

    def __init__(self, items, weights):
        self.items = tuple(items)
        self.cum = list(itertools.accumulate(weights))
        self.total = self.cum[-1]

    def __call__(self, rng: random.Random):
        i = bisect.bisect_right(self.cum, rng.random() * self.total)
        return self.items[min(i, len(self.items) - 1)]


def _weighted(rng: random.Random, items, weights):
    total = sum(weights)
    r = rng.random() * total
    acc = 0.0
    for item, w in zip(items, weights):
        acc += w
        if r < acc:
            return item
    return items[-1]


def _weighted_sample(rng: random.Random, weights: dict, k: int) -> list:
    pool = dict(weights)
    chosen = []
    for _ in range(min(k, len(pool))):
        keys = list(pool)
        pick = _weighted(rng, keys, [pool[x] for x in keys])
        chosen.append(pick)
        del pool[pick]
    return chosen


def _cap(sentence: str) -> str:
    return sentence[:1].upper() + sentence[1:]


def _token(rng: random.Random, n: int) -> str:
    """n random URL-safe base64 characters (n a multiple of 4)."""
    raw = rng.getrandbits(6 * n).to_bytes(6 * n // 8, "big")
    return base64.urlsafe_b64encode(raw).decode("ascii")


def _score(pos: int, neg: int, total: int) -> float:
    return round((pos - neg) / total, 3) if total else 0


def _pct(part: int, total: int) -> float:
    return round(100 * part / total, 1) if total else 0


# --------------------------------------------------------------------------
# One review
# --------------------------------------------------------------------------


class _Draft:
    """A review under construction plus the choices its text was built from."""

    __slots__ = (
        "date",
        "rid",
        "rating",
        "sentences",
        "sep",
        "text",
        "techs",
        "services",
        "problems",
        "areas",
        "topics",
        "aspects",
        "parking",
        "hostile",
        "spanish",
        "author",
        "source",
        "source_url",
        "avatar",
        "reply",
        "verified",
        "pos_sorted",
    )

    def __init__(self):
        self.sentences = []
        self.sep = " "
        self.text = None
        self.techs = []
        self.services = []
        self.problems = []
        self.areas = []
        self.topics = []
        self.aspects = []
        self.parking = None
        self.hostile = None
        self.spanish = False
        self.reply = None


def _tech_ref(rng: random.Random, tid: str) -> str:
    t = _TECH_BY_ID[tid]
    first, last, doctor = t[4], t[5], t[6]
    if doctor:
        return f"Dr. {first} {last}" if rng.random() < 0.35 else f"Dr. {last}"
    return f"{first} {last}"


_ALL_PROBLEMS = tuple(p for p, _ in PROBLEMS)
_TECH_PROBLEMS = {
    t[0]: tuple(p for p in _ALL_PROBLEMS if any(p in SERVICE_PROBLEMS[s] for s in t[8])) for t in TECHNICIANS
}
_CHOOSE_SERVICE = _Chooser(SERVICE_WEIGHTS, SERVICE_WEIGHTS.values())
_CHOOSE_TECH = _Chooser([t[0] for t in TECHNICIANS], [t[7] for t in TECHNICIANS])
_CHOOSE_SOURCE = _Chooser([s for s, _ in SOURCES], [w for _, w in SOURCES])
_N_ASPECTS_POSITIVE = _Chooser((0, 1, 2, 3), (0.2, 0.4, 0.3, 0.1))
_N_ASPECTS_OTHER = _Chooser((1, 2, 3), (0.35, 0.45, 0.2))


def _tech_short(tid: str) -> str:
    t = _TECH_BY_ID[tid]
    return f"Dr. {t[5]}" if t[6] else f"{t[4]} {t[5]}"


def _compose_english(rng: random.Random, d: _Draft) -> None:
    rating = d.rating
    sent = _sentiment_of_rating(rating)
    if rng.random() < 0.14:
        d.sentences = [_pick(rng, SHORT_TEXTS[rating])]
        return

    # --- choose what the review talks about
    services = []
    if rng.random() < 0.62:
        services.append(_CHOOSE_SERVICE(rng))
        if rng.random() < 0.08:
            other = _CHOOSE_SERVICE(rng)
            if other not in services:
                services.append(other)
    techs = []
    if services and rng.random() < 0.72:
        techs.append(_pick(rng, _TECHS_FOR_SERVICE[services[0]]))
    elif not services and rng.random() < 0.55:
        techs.append(_CHOOSE_TECH(rng))
    if techs and rng.random() < 0.09:
        other = _CHOOSE_TECH(rng)
        if other not in techs:
            techs.append(other)
    problems = []
    if rng.random() < 0.6:
        if services:
            pool = SERVICE_PROBLEMS[services[0]]
        elif techs:
            pool = _TECH_PROBLEMS[techs[0]]
        else:
            pool = _ALL_PROBLEMS
        problems.append(_pick(rng, pool))
        if rng.random() < 0.1:
            other = _pick(rng, [p for p, _ in PROBLEMS])
            if other not in problems:
                problems.append(other)
    areas = [_pick(rng, SERVICE_AREAS)[0]] if rng.random() < 0.2 else []
    topics = []
    for tid, p in TOPIC_P.items():
        if tid == "family-care" and "pediatric-care" in services:
            p = 0.45
        if len(topics) < 2 and rng.random() < p:
            topics.append(tid)
    if sent == "positive":
        n_aspects = _N_ASPECTS_POSITIVE(rng)
    else:
        n_aspects = _N_ASPECTS_OTHER(rng)
    aspect_ids = _weighted_sample(rng, ASPECT_WEIGHTS[sent], n_aspects)
    p_pos, p_neu = ASPECT_SENTIMENT_P[rating]
    aspects = []
    for aid in aspect_ids:
        r = rng.random()
        aspects.append((aid, "positive" if r < p_pos else "neutral" if r < p_pos + p_neu else "negative"))
    parking = None
    if rng.random() < 0.06:
        parking = sent

    # --- write it
    out = []
    if rng.random() < 0.8:
        out.append(_pick(rng, OPENERS[rating]))
    refs = {tid: _tech_ref(rng, tid) for tid in techs}
    slots = ""
    values = {}
    if problems:
        slots += "p"
        values["p"] = " and ".join(_PROBLEM_LABEL[p].lower() for p in problems)
    if services:
        slots += "s"
        values["s"] = _SERVICE_TEXT[services[0]]
    if techs:
        slots += "t"
        values["t"] = refs[techs[0]]
    if slots:
        out.append(_cap(_pick(rng, VISIT_TEMPLATES[slots]).format(**values)))
    if len(techs) > 1:
        out.append(_cap(_pick(rng, SECOND_TECH).format(t=refs[techs[1]])))
    if len(services) > 1:
        out.append(_pick(rng, SECOND_SERVICE).format(s=_SERVICE_TEXT[services[1]]))
    if techs and sent == "positive" and rng.random() < 0.45:
        out.append(_pick(rng, TECH_PRAISE).format(t=_tech_short(techs[0])))
    elif techs and sent == "negative" and rng.random() < 0.4:
        out.append(_pick(rng, TECH_CRITICISM).format(t=_tech_short(techs[0])))
    middle = []
    phrases = []
    for aid, s in aspects:
        phrase, sentence = _pick(rng, ASPECT_TEXT[aid][s])
        middle.append(sentence)
        phrases.append(phrase)
    for tid in topics:
        middle.append(_pick(rng, TOPIC_TEXT[tid][sent]))
    if parking:
        middle.append(PARKING_TEXT[parking])
    rng.shuffle(middle)
    out.extend(middle)
    for aid in areas:
        out.append(_pick(rng, AREA_TEXT[sent]).format(a=_AREA_LABEL[aid]))
    if rng.random() < 0.6:
        out.append(_pick(rng, CLOSERS[rating]))
    if not out:
        out.append(_pick(rng, SHORT_TEXTS[rating]))

    d.sentences = out
    d.sep = "\n\n" if len(out) > 4 and rng.random() < 0.12 else " "
    d.techs, d.services, d.problems, d.areas, d.topics = techs, services, problems, areas, topics
    d.aspects = [(aid, s, ph) for (aid, s), ph in zip(aspects, phrases)]
    d.parking = parking


def _compose_spanish(rng: random.Random, d: _Draft) -> None:
    text, has_tech, aspects = _pick(rng, SPANISH)
    if has_tech:
        tid = _pick(rng, SPANISH_TECHS)
        text = text.format(last=_TECH_BY_ID[tid][5])
        d.techs = [tid]
    d.sentences = [text]
    d.spanish = True
    d.aspects = [(aid, s, None) for aid, s in aspects]


def _apply_hostile(kind: str, d: _Draft) -> str:
    base = d.sep.join(d.sentences)
    if kind == "cdata_end":
        return base + " My notes said “]]> <![CDATA[” for some reason, ignore that."
    if kind == "script":
        return "Pasted from my phone: <script>alert(1)</script> " + base
    if kind == "amp":
        return base + " P.S. care &amp; kindness & a great team & fair prices."
    if kind == "bold":
        return "<b>bold</b> statement: " + base + " <i>Really.</i>"
    if kind == "control_chars":
        return base + " (copied from my notes app\u0001\u000b\u001f, sorry for the odd characters)"
    if kind == "nul":
        return base + "\u0000"
    if kind == "lone_cr":
        return "\r".join(d.sentences) + "\rEdited: still going strong."
    if kind == "long_text":
        parts = [base, "\n\nMy recovery diary, for anyone wondering what to expect:"]
        size = sum(len(p) for p in parts)
        week = 1
        while size < HOSTILE_LONG_MIN:
            line = (
                f"\nWeek {week}: a little looser every morning, I kept up with the "
                f"stretches they gave me and slept better than the week before."
            )
            parts.append(line)
            size += len(line)
            week += 1
        return "".join(parts)
    if kind == "noncharacter":
        return base + " \uffff"
    if kind == "separators":
        return base + "\u2028Line two.\u2029Paragraph two. \u202eesrever"
    raise ValueError(kind)


def _hostile_kind(index: int, n: int):
    """Deterministic placement of hostile texts (see the module docstring)."""
    k = len(HOSTILE_KINDS)
    if n < 20 * k:
        return None
    stride = min(n // k, 1000)
    if index % stride != stride // 2:
        return None
    return HOSTILE_KINDS[(index // stride) % k]


def _author(rng: random.Random) -> tuple[str, str]:
    first = _pick(rng, FIRST_NAMES)
    r = rng.random()
    if r < 0.55:
        return f"{first} {_pick(rng, LAST_NAMES)[0]}.", first
    if r < 0.9:
        return f"{first} {_pick(rng, LAST_NAMES)}", first
    return first, first


def _source_bits(rng: random.Random, source: str):
    url = None
    if rng.random() >= 0.08:
        if source == "google":
            url = f"https://www.google.com/maps/contrib/1{rng.randrange(10**19, 10**20)}/reviews"
        elif source == "yelp":
            url = "https://www.yelp.com/biz/riverbend-spine-and-wellness-millbrook?hrid=" + _token(rng, 24)
        elif source == "facebook":
            url = f"https://www.facebook.com/riverbendspine/posts/{rng.randrange(10**15, 10**16)}"
        else:
            url = (
                "https://www.healthgrades.com/group-directory/or-oregon/millbrook/"
                f"riverbend-spine-wellness-{rng.getrandbits(24):06x}"
            )
    avatar = None
    if source != "healthgrades" and rng.random() < 0.62:
        if source == "google":
            avatar = f"https://lh3.googleusercontent.com/a/{_token(rng, 28)}=s120-c"
        elif source == "yelp":
            avatar = f"https://s3-media0.fl.yelpcdn.com/photo/{_token(rng, 24)}/60s.jpg"
        else:
            avatar = (
                f"https://scontent.xx.fbcdn.net/v/t1.30497-1/p100x100/{rng.randrange(10**8, 10**9)}_n.jpg"
            )
    return url, avatar


# --------------------------------------------------------------------------
# The datasets
# --------------------------------------------------------------------------


def _draft_reviews(n: int, rng: random.Random, end_date: _dt.date, years: float) -> list:
    span = max(1, int(round(years * 365.25)))
    start_ord = end_date.toordinal() - (span - 1)
    drafts = []
    used_ids = set()
    dates = []
    for i in range(n):
        d = _Draft()
        # --- date: more reviews in recent years, some clustered days
        if i == 0 and n >= 2:
            offset = 0
        elif (i == 1 and n >= 2) or n == 1:
            offset = span - 1
        elif dates and rng.random() < 0.1:
            offset = dates[-1]  # several reviews on the same day
        else:
            # density rising linearly to 4x at the end: inverse CDF of f(u) ~ 1 + 3u
            # (sqrt is correctly rounded everywhere, so this is portable)
            u = (math.sqrt(1.0 + 15.0 * rng.random()) - 1.0) / 3.0
            offset = min(span - 1, int(u * span))
        dates.append(offset)
        ordinal = start_ord + offset
        d.date = _dt.date.fromordinal(ordinal)
        frac = offset / span
        # --- rating: mostly 4-5, a slight improvement over time
        w5 = 68 + 8 * frac
        d.rating = _weighted(rng, (5, 4, 3, 2, 1), (w5, 16, 5, 3, 4.5 - 1.5 * frac))
        # --- id: ULID from the date at a time of day + 80 random bits
        ms = (ordinal - _EPOCH_ORDINAL) * _MS_PER_DAY + rng.randrange(7 * 3_600_000, 23 * 3_600_000)
        rid = _ulid(ms, rng.getrandbits(80))
        while rid in used_ids:  # practically never
            rid = _ulid(ms, rng.getrandbits(80))
        used_ids.add(rid)
        d.rid = rid
        # --- text
        hostile = _hostile_kind(i, n)
        if hostile is None and rng.random() < 0.08:
            pass  # rating-only review
        elif hostile is None and d.rating >= 4 and rng.random() < 0.015:
            _compose_spanish(rng, d)
            d.text = d.sentences[0]
        else:
            _compose_english(rng, d)
            if hostile:
                d.hostile = hostile
                d.text = _apply_hostile(hostile, d)
            else:
                d.text = d.sep.join(d.sentences)
        # --- metadata
        d.author, first = _author(rng)
        d.source = _CHOOSE_SOURCE(rng)
        d.source_url, d.avatar = _source_bits(rng, d.source)
        d.verified = rng.random() < 0.9
        sent = _sentiment_of_rating(d.rating)
        p_reply = {"positive": 0.25, "neutral": 0.5, "negative": 0.8}[sent]
        if rng.random() < p_reply:
            reply_ord = min(end_date.toordinal(), ordinal + rng.randrange(0, 11))
            d.reply = {
                "text": _pick(rng, OWNER_REPLIES[sent]).format(first=first),
                "date": _dt.date.fromordinal(reply_ord).isoformat(),
            }
        drafts.append(d)
    # newest first: date descending, then id descending (ids are fixed-width)
    drafts.sort(key=lambda x: (x.date, x.rid), reverse=True)
    for i, d in enumerate(drafts):
        d.pos_sorted = i
    return drafts


def _review_json(d: _Draft) -> dict:
    return {
        "id": d.rid,
        "author": d.author,
        "author_avatar_url": d.avatar,
        "rating": d.rating,
        "date": d.date.isoformat(),
        "text": d.text,
        "source": d.source,
        "source_url": d.source_url,
        "owner_reply": d.reply,
        "verified": d.verified,
    }


def _aggregate(drafts: list) -> dict:
    dist = Counter(d.rating for d in drafts)
    n = len(drafts)
    return {
        "rating_value": round(sum(d.rating for d in drafts) / n, 2) if n else 0,
        "review_count": n,
        "best_rating": 5,
        "worst_rating": 1,
        "distribution": {str(k): dist.get(k, 0) for k in range(1, 6)},
    }


def _pick_examples(drafts_in_order: list) -> list:
    """Up to MAX_EXAMPLES ids, newest first, preferring non-hostile texts."""
    clean = [d for d in drafts_in_order if d.hostile is None]
    picked = clean[:MAX_EXAMPLES]
    if len(picked) < MAX_EXAMPLES:
        picked += [d for d in drafts_in_order if d.hostile is not None][: MAX_EXAMPLES - len(picked)]
        picked.sort(key=lambda d: d.pos_sorted)
    return [d.rid for d in picked]


class _Tally:
    __slots__ = ("pos", "neu", "neg", "reviews", "phrases")

    def __init__(self):
        self.pos = self.neu = self.neg = 0
        self.reviews = []
        self.phrases = Counter()

    def add(self, d, sentiment):
        if sentiment == "positive":
            self.pos += 1
        elif sentiment == "neutral":
            self.neu += 1
        else:
            self.neg += 1
        self.reviews.append(d)

    @property
    def total(self):
        return self.pos + self.neu + self.neg

    def counts(self) -> dict:
        return {
            "mention_count": self.total,
            "positive_count": self.pos,
            "neutral_count": self.neu,
            "negative_count": self.neg,
        }


def _month_key(date: _dt.date) -> tuple:
    return date.year, date.month


def _temporal(drafts: list) -> dict:
    if not drafts:
        return {
            "monthly": [],
            "trend": {"direction": "stable", "slope_per_month": 0.0, "window_months": TREND_WINDOW_MONTHS},
        }
    by_month = {}
    for d in drafts:
        by_month.setdefault(_month_key(d.date), []).append(d)
    first = min(by_month)
    last = max(by_month)
    monthly = []
    y, m = first
    while (y, m) <= last:
        ds = by_month.get((y, m), [])
        if ds:
            pos = sum(1 for d in ds if d.rating >= 4)
            neg = sum(1 for d in ds if d.rating <= 2)
            avg = round(sum(d.rating for d in ds) / len(ds), 2)
            score = _score(pos, neg, len(ds))
        else:
            avg = score = None
        monthly.append(
            {
                "month": f"{y:04d}-{m:02d}",
                "review_count": len(ds),
                "average_rating": avg,
                "sentiment_score": score,
            }
        )
        m += 1
        if m == 13:
            y, m = y + 1, 1
    window = monthly[-TREND_WINDOW_MONTHS:]
    pts = [(i, e["average_rating"]) for i, e in enumerate(window) if e["average_rating"] is not None]
    slope = 0.0
    if len(pts) >= 2:
        mx = sum(x for x, _ in pts) / len(pts)
        my = sum(v for _, v in pts) / len(pts)
        sxx = sum((x - mx) ** 2 for x, _ in pts)
        if sxx:
            slope = sum((x - mx) * (v - my) for x, v in pts) / sxx
    slope = round(slope, 4)
    if slope == 0:
        slope = 0.0  # no "-0.0"
    direction = "stable" if abs(slope) < 0.01 else ("improving" if slope > 0 else "declining")
    return {
        "monthly": monthly,
        "trend": {"direction": direction, "slope_per_month": slope, "window_months": TREND_WINDOW_MONTHS},
    }


def _excerpt(d: _Draft, limit: int = 200) -> str:
    out = d.sentences[0]
    for s in d.sentences[1:]:
        if len(out) + len(d.sep) + len(s) > limit:
            break
        out += d.sep + s
    return out


def _pull_quote(drafts: list):
    def clean_positive(d, min_rating):
        return d.text is not None and d.hostile is None and not d.spanish and d.rating >= min_rating

    for cond in (
        lambda d: (
            clean_positive(d, 5)
            and d.techs
            and any(a == "pain-relief" and s == "positive" for a, s, _ in d.aspects)
            and len(d.sentences) >= 3
            and d.sep == " "
        ),
        lambda d: clean_positive(d, 5) and len(d.sentences) >= 2,
        lambda d: clean_positive(d, 4),
    ):
        for d in drafts:
            if cond(d):
                return {"text": _excerpt(d), "review_id": d.rid}
    return None


def _join_labels(labels: list) -> str:
    if len(labels) <= 1:
        return "".join(labels)
    return ", ".join(labels[:-1]) + " and " + labels[-1]


def _pos_share(t: _Tally) -> str:
    return f"{_pct(t.pos, t.total):g}%"


def _faq(drafts, topic_t, service_t, problem_t, aspect_t, parking_reviews) -> list:
    faq = []

    ins = topic_t["insurance-coverage"]
    if ins.total:
        neg_bits = ins.neg + ins.neu
        answer = (
            f"Most plans can be billed. {ins.total} review(s) discuss insurance coverage and "
            f"{_pos_share(ins)} of them are positive: patients say the front desk checks "
            f"benefits before the first appointment."
        )
        if neg_bits:
            answer += f" {neg_bits} reviewer(s) advise calling ahead, because coverage depends on the plan."
        bill = aspect_t["billing-insurance"]
        if bill.total:
            answer += f" Billing itself is mentioned {bill.total} time(s), {_pos_share(bill)} favourably."
        faq.append(
            {
                "question": "Do they accept insurance?",
                "answer": answer,
                "review_ids": _pick_examples(ins.reviews),
            }
        )

    fv = topic_t["first-visit"]
    if fv.total:
        answer = (
            f"Expect a full history and exam. {fv.total} review(s) describe the first visit; "
            f"{_pos_share(fv)} are positive, mentioning a thorough intake and a clear plan."
        )
        if fv.neg:
            answer += f" {fv.neg} felt it leaned towards selling a treatment package."
        faq.append(
            {
                "question": "What happens at the first visit?",
                "answer": answer,
                "review_ids": _pick_examples(fv.reviews),
            }
        )

    rs = topic_t["results-after-few-visits"]
    if rs.total:
        answer = (
            f"It varies, but {rs.pos} of the {rs.total} review(s) that talk about results "
            f"after a few visits report real improvement within the first handful of "
            f"sessions."
        )
        if rs.neg or rs.neu:
            answer += f" {rs.neg + rs.neu} saw slower or no progress."
        faq.append(
            {
                "question": "How many sessions does it take to feel better?",
                "answer": answer,
                "review_ids": _pick_examples(rs.reviews),
            }
        )

    pre = service_t["prenatal-care"]
    preg = problem_t["pregnancy-back-pain"]
    prenatal_reviews = sorted({*pre.reviews, *preg.reviews}, key=lambda d: d.pos_sorted)
    if prenatal_reviews:
        pos = sum(1 for d in prenatal_reviews if d.rating >= 4)
        answer = (
            f"The clinic offers prenatal chiropractic care with low-force techniques. "
            f"{len(prenatal_reviews)} review(s) from expecting patients mention it or "
            f"pregnancy back pain, and {pos} of them are positive."
        )
        faq.append(
            {
                "question": "Is chiropractic care safe during pregnancy?",
                "answer": answer,
                "review_ids": _pick_examples(prenatal_reviews),
            }
        )

    ped = service_t["pediatric-care"]
    fam = topic_t["family-care"]
    kids_reviews = sorted({*ped.reviews, *fam.reviews}, key=lambda d: d.pos_sorted)
    if kids_reviews:
        pos = sum(1 for d in kids_reviews if d.rating >= 4)
        answer = (
            f"Yes. {len(kids_reviews)} review(s) mention pediatric chiropractic care or "
            f"bringing the whole family, and {pos} of them are positive."
        )
        faq.append(
            {
                "question": "Do they treat children?",
                "answer": answer,
                "review_ids": _pick_examples(kids_reviews),
            }
        )

    if parking_reviews:
        easy = sum(1 for d in parking_reviews if d.parking == "positive")
        hard = sum(1 for d in parking_reviews if d.parking == "negative")
        answer = (
            f"{len(parking_reviews)} review(s) mention parking: {easy} say it is easy thanks "
            f"to the lot behind the building, {len(parking_reviews) - easy - hard} note "
            f"street parking only, and {hard} found it difficult at rush hour."
        )
        faq.append(
            {"question": "Is there parking?", "answer": answer, "review_ids": _pick_examples(parking_reviews)}
        )
    return faq[:6]


def _summary(drafts, agg, aspect_t, tech_t, service_t, trend) -> str:
    n = len(drafts)
    if not n:
        return f"{BUSINESS['name']} has no published reviews yet, so there is nothing to summarise."
    first, last = drafts[-1].date, drafts[0].date
    src = Counter(d.source for d in drafts)
    src_names = {"google": "Google", "yelp": "Yelp", "facebook": "Facebook", "healthgrades": "Healthgrades"}
    sources = _join_labels([src_names.get(s, s) for s, _ in src.most_common()])
    parts = [
        f"{BUSINESS['name']} in {BUSINESS['address']['locality']}, {BUSINESS['address']['region']} "
        f"holds a {agg['rating_value']:g}-star average across {n} review{'s' if n != 1 else ''} "
        f"published on {sources} between {first.strftime('%B %Y')} and {last.strftime('%B %Y')}."
    ]
    label = dict(ASPECTS)
    praised = sorted((a for a in aspect_t if aspect_t[a].pos), key=lambda a: -aspect_t[a].pos)[:2]
    if praised:
        parts.append(f"Patients most often praise {_join_labels([label[a].lower() for a in praised])}.")
    techs = sorted((t for t in tech_t if tech_t[t].total), key=lambda t: -tech_t[t].total)
    if techs:
        t = techs[0]
        parts.append(
            f"{_TECH_BY_ID[t][1]} is the practitioner named most often "
            f"({tech_t[t].total} review{'s' if tech_t[t].total != 1 else ''}, "
            f"{_pos_share(tech_t[t])} positive)."
        )
    svcs = sorted((s for s in service_t if service_t[s].total), key=lambda s: -service_t[s].total)
    if svcs:
        labels = [_SERVICE_LABEL[s].lower() for s in svcs[:2]]
        parts.append(
            f"The most-discussed service{'s are' if len(labels) > 1 else ' is'} {_join_labels(labels)}."
        )
    criticised = sorted((a for a in aspect_t if aspect_t[a].neg), key=lambda a: -aspect_t[a].neg)[:2]
    if criticised:
        parts.append(
            f"Complaints, when they come, concern {_join_labels([label[a].lower() for a in criticised])}."
        )
    if trend["direction"] == "stable":
        parts.append("Over the last twelve months the average rating has held steady.")
    else:
        parts.append(f"Over the last twelve months the average rating has been {trend['direction']}.")
    return " ".join(parts)


def _insights(drafts: list, end_date: _dt.date, agg: dict) -> dict:
    aspect_t = {a: _Tally() for a, _ in ASPECTS}
    tech_t = {t[0]: _Tally() for t in TECHNICIANS}
    service_t = {s: _Tally() for s, _, _ in SERVICES}
    problem_t = {p: _Tally() for p, _ in PROBLEMS}
    area_t = {a: _Tally() for a, _ in SERVICE_AREAS}
    topic_t = {t: _Tally() for t, _ in TOPICS}
    per_review = {}
    parking_reviews = []
    pos_total = neu_total = neg_total = 0
    for d in drafts:
        sent = _sentiment_of_rating(d.rating)
        if sent == "positive":
            pos_total += 1
        elif sent == "neutral":
            neu_total += 1
        else:
            neg_total += 1
        for aid, s, phrase in d.aspects:
            t = aspect_t[aid]
            t.add(d, s)
            if phrase:
                t.phrases[phrase] += 1
        for ids, table in (
            (d.techs, tech_t),
            (d.services, service_t),
            (d.problems, problem_t),
            (d.areas, area_t),
            (d.topics, topic_t),
        ):
            for x in ids:
                table[x].add(d, sent)
        if d.parking:
            parking_reviews.append(d)
        per_review[d.rid] = {
            "aspects": [{"id": aid, "sentiment": s} for aid, s, _ in d.aspects],
            "technicians": list(d.techs),
            "services": list(d.services),
            "problems": list(d.problems),
            "service_areas": list(d.areas),
            "topics": list(d.topics),
        }

    def entity(eid, label, t):
        rec = {"id": eid, "label": label}
        rec.update(t.counts())
        rec["score"] = _score(t.pos, t.neg, t.total)
        rec["example_review_ids"] = _pick_examples(t.reviews)
        return rec

    aspects = []
    for aid, label in ASPECTS:
        t = aspect_t[aid]
        rec = {"id": aid, "label": label}
        rec.update(t.counts())
        rec["positive_pct"] = _pct(t.pos, t.total)
        rec["score"] = _score(t.pos, t.neg, t.total)
        rec["top_phrases"] = [p for p, _ in t.phrases.most_common(5)]
        rec["example_review_ids"] = _pick_examples(t.reviews)
        aspects.append(rec)

    technicians = []
    for tid, name, label, role, *_ in TECHNICIANS:
        t = tech_t[tid]
        rec = {"id": tid, "name": name, "label": label, "role": role}
        rec.update(t.counts())
        rec["score"] = _score(t.pos, t.neg, t.total)
        rec["example_review_ids"] = _pick_examples(t.reviews)
        technicians.append(rec)

    n = len(drafts)
    temporal = _temporal(drafts)
    return {
        "version": INSIGHTS_VERSION,
        "generated_at": f"{end_date.isoformat()}T06:30:00Z",
        "model": f"reviewsd-sample-aspects-{end_date.year:04d}.{end_date.month:02d}",
        "review_count": n,
        "date_range": {
            "earliest": drafts[-1].date.isoformat() if n else None,
            "latest": drafts[0].date.isoformat() if n else None,
        },
        "overall_sentiment": {
            "score": _score(pos_total, neg_total, n),
            "positive_pct": _pct(pos_total, n),
            "neutral_pct": _pct(neu_total, n),
            "negative_pct": _pct(neg_total, n),
        },
        "aspects": aspects,
        "entities": {
            "technicians": technicians,
            "services": [entity(id_, label, service_t[id_]) for id_, label, _ in SERVICES],
            "problems": [entity(id_, label, problem_t[id_]) for id_, label in PROBLEMS],
            "service_areas": [entity(id_, label, area_t[id_]) for id_, label in SERVICE_AREAS],
        },
        "topics": [entity(id_, label, topic_t[id_]) for id_, label in TOPICS],
        "temporal": temporal,
        "per_review": per_review,
        "faq": _faq(drafts, topic_t, service_t, problem_t, aspect_t, parking_reviews),
        "summary": _summary(drafts, agg, aspect_t, tech_t, service_t, temporal["trend"]),
        "pull_quote": _pull_quote(drafts),
    }


def generate(n_reviews: int, seed: int, end_date: _dt.date, years: float) -> tuple[dict, dict]:
    """Build (reviews_doc, insights_doc) in memory. Pure and deterministic."""
    if n_reviews < 0:
        raise ValueError("n_reviews must be >= 0")
    if not years > 0:
        raise ValueError("years must be > 0")
    if end_date.year < 1971:
        raise ValueError("end_date must be after 1970")
    rng = random.Random(seed)
    # Millions of small, acyclic objects: cyclic GC passes only cost time here.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        drafts = _draft_reviews(n_reviews, rng, end_date, years)
        agg = _aggregate(drafts)
        reviews_doc = {
            "business": json.loads(json.dumps(BUSINESS)),  # a private deep copy
            "aggregate_rating": agg,
            "generated_at": f"{end_date.isoformat()}T06:00:00Z",
            "reviews": [_review_json(d) for d in drafts],
        }
        insights_doc = _insights(drafts, end_date, agg)
    finally:
        if gc_was_enabled:
            gc.enable()
    return reviews_doc, insights_doc


# --------------------------------------------------------------------------
# Files and command line
# --------------------------------------------------------------------------

_COMPACT = {"ensure_ascii": False, "separators": (",", ":")}
_STREAM_CHUNK = 1000


def _iter_compact(doc: dict):
    """Yield UTF-8 chunks equal to json.dumps(doc, **_COMPACT).

    Large top-level arrays/objects (reviews, per_review) are serialised a chunk
    at a time: one json.dumps of a huge document with non-ASCII content builds a
    single UCS-4 string four times the file size, which is slow and wasteful.
    """
    dumps_ = json.dumps
    yield b"{"
    for n, (key, value) in enumerate(doc.items()):
        head = dumps_(key, **_COMPACT) + ":"
        yield (("," + head) if n else head).encode("utf-8")
        if isinstance(value, list) and len(value) > _STREAM_CHUNK:
            yield b"["
            for start in range(0, len(value), _STREAM_CHUNK):
                part = dumps_(value[start : start + _STREAM_CHUNK], **_COMPACT)[1:-1]
                yield (("," + part) if start else part).encode("utf-8")
            yield b"]"
        elif isinstance(value, dict) and len(value) > _STREAM_CHUNK:
            items = list(value.items())
            yield b"{"
            for start in range(0, len(items), _STREAM_CHUNK):
                part = dumps_(dict(items[start : start + _STREAM_CHUNK]), **_COMPACT)[1:-1]
                yield (("," + part) if start else part).encode("utf-8")
            yield b"}"
        else:
            yield dumps_(value, **_COMPACT).encode("utf-8")
    yield b"}\n"


def iter_dumps(doc: dict, pretty: bool):
    """Yield the serialised document as UTF-8 byte chunks (see dumps)."""
    if pretty:
        yield (json.dumps(doc, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
    else:
        yield from _iter_compact(doc)


def dumps(doc: dict, pretty: bool) -> bytes:
    """Serialise like the written files: indent=2 when pretty, else compact.

    Either way the result is json.dumps(doc, ensure_ascii=False, ...) plus a
    trailing newline, encoded as UTF-8.
    """
    return b"".join(iter_dumps(doc, pretty))


def _write_atomic(path: str, chunks) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            for chunk in chunks:
                fh.write(chunk)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_dataset(out_dir: str, reviews_doc: dict, insights_doc: dict) -> tuple[str, str]:
    """Write reviews.json and insights.json atomically into out_dir."""
    os.makedirs(out_dir, exist_ok=True)
    pretty = len(reviews_doc["reviews"]) <= PRETTY_MAX_REVIEWS
    reviews_path = os.path.join(out_dir, "reviews.json")
    insights_path = os.path.join(out_dir, "insights.json")
    _write_atomic(reviews_path, iter_dumps(reviews_doc, pretty))
    _write_atomic(insights_path, iter_dumps(insights_doc, pretty))
    return reviews_path, insights_path


def _parse_date(value: str) -> _dt.date:
    try:
        return _dt.date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a YYYY-MM-DD date: {value!r}") from None


def _non_negative_int(value: str) -> int:
    n = int(value)
    if n < 0:
        raise argparse.ArgumentTypeError("must be >= 0")
    return n


def _positive_float(value: str) -> float:
    f = float(value)
    if not (f > 0 and math.isfinite(f)):
        raise argparse.ArgumentTypeError("must be a positive number")
    return f


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=DEFAULT_OUT, help="output directory (default: data)")
    parser.add_argument(
        "--reviews", type=_non_negative_int, default=DEFAULT_REVIEWS, help="number of reviews (default: 320)"
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="random seed (default: 7)")
    parser.add_argument(
        "--end-date",
        type=_parse_date,
        default=DEFAULT_END_DATE,
        help="date of the newest review, YYYY-MM-DD (default: 2026-11-15)",
    )
    parser.add_argument(
        "--years",
        type=_positive_float,
        default=DEFAULT_YEARS,
        help="length of the review window in years (default: 3.5)",
    )
    args = parser.parse_args(argv)
    reviews_doc, insights_doc = generate(args.reviews, args.seed, args.end_date, args.years)
    paths = write_dataset(args.out, reviews_doc, insights_doc)
    for p in paths:
        print(f"wrote {p} ({os.path.getsize(p):,} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
