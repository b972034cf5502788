"""The starter business.toml files `reviewsd init --preset NAME` writes: one aspect taxonomy per trade."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence

from .profile import PROFILE_FILE, parse_profile


def _labelled(rows: Sequence[tuple[str, str, Sequence[str]]], key: str = "terms") -> list[dict[str, Any]]:
    return [{"id": row_id, "label": label, key: list(terms)} for row_id, label, terms in rows]


# The bundled sample's taxonomy (tools/generate_data.py): practitioners, services, areas, problems, topics.
_CHIRO_ASPECTS = _labelled(
    [
        (
            "pain-relief",
            "Pain relief",
            [
                "pain relief",
                "relief",
                "pain is gone",
                "no more pain",
                "pain free",
                "moving freely",
                "pain came back",
                "felt worse",
                "feel better",
                "feeling better",
                "slowly improving",
                "improvement",
                "sin dolor",
                "mucho mejor",
            ],
        ),
        (
            "bedside-manner",
            "Bedside manner",
            [
                "bedside manner",
                "listened",
                "kind and gentle",
                "genuinely cares",
                "caring",
                "felt rushed",
                "dismissive",
                "attitude",
                "amable",
                "profesional",
            ],
        ),
        ("wait-time", "Wait time", ["wait", "waited", "waiting", "wait time", "on time", "esperar"]),
        (
            "scheduling",
            "Scheduling",
            [
                "schedule",
                "scheduling",
                "rescheduled",
                "book ahead",
                "flexible hours",
                "same-day",
                "hard to get an appointment",
            ],
        ),
        (
            "billing-insurance",
            "Billing and insurance",
            ["billing", "bill", "bills", "charged", "pricey", "prices", "copay"],
        ),
        (
            "explanation-of-treatment",
            "Explanation of treatment",
            ["explained", "explain", "explanation", "clear plan", "no plan", "explicó"],
        ),
        ("front-desk", "Front desk", ["front desk", "receptionist", "reception", "recepción"]),
        ("cleanliness", "Cleanliness", ["clean", "spotless", "dirty", "tidy", "linens", "hygiene"]),
    ]
)
_CHIROPRACTIC = {
    "category": "Chiropractor",
    "practitioners": [
        {
            "id": "dr-maya-patel",
            "name": "Dr. Maya Patel",
            "role": "Chiropractor (clinic director)",
            "aliases": [],
        },
        {
            "id": "dr-sofia-ramirez",
            "name": "Dr. Sofía Ramírez",
            "role": "Chiropractor (prenatal and pediatric)",
            "aliases": ["Dra. Ramírez"],
        },
        {
            "id": "dr-ngozi-okafor",
            "name": "Dr. Ngozi Okafor",
            "role": "Chiropractor (sports and rehab)",
            "aliases": [],
        },
        {
            "id": "jurgen-lindqvist",
            "name": "Jürgen Lindqvist",
            "label": "Jürgen Lindqvist, LMT",
            "role": "Licensed massage therapist",
            "aliases": [],
        },
        {
            "id": "chloe-dubois",
            "name": "Chloé Dubois",
            "label": "Chloé Dubois, DPT",
            "role": "Physical therapist",
            "aliases": [],
        },
    ],
    "services": [
        {
            "id": "spinal-adjustment",
            "label": "Spinal adjustment",
            "description": "Chiropractic adjustments.",
            "aliases": [],
        },
        {
            "id": "massage-therapy",
            "label": "Massage therapy",
            "description": "Therapeutic massage.",
            "aliases": [],
        },
        {
            "id": "spinal-decompression",
            "label": "Spinal decompression",
            "description": "Table-based traction.",
            "aliases": [],
        },
        {
            "id": "sports-injury",
            "label": "Sports injury care",
            "description": "Return-to-play rehab.",
            "aliases": [],
        },
        {
            "id": "prenatal-care",
            "label": "Prenatal chiropractic care",
            "description": "Care in pregnancy.",
            "aliases": [],
        },
        {
            "id": "pediatric-care",
            "label": "Pediatric chiropractic care",
            "description": "Gentle care for children.",
            "aliases": [],
        },
        {
            "id": "posture-rehab",
            "label": "Posture rehab",
            "description": "Corrective exercise.",
            "aliases": [],
        },
    ],
    "service_areas": _labelled(
        [
            (slug, label, [])
            for slug, label in (
                ("millbrook", "Millbrook"),
                ("ashford-heights", "Ashford Heights"),
                ("fernhill", "Fernhill"),
                ("alder-grove", "Alder Grove"),
                ("kestrel-point", "Kestrel Point"),
                ("quarry-hill", "Quarry Hill"),
            )
        ],
        "aliases",
    ),
    "aspects": _CHIRO_ASPECTS,
    "problems": _labelled(
        [
            ("lower-back-pain", "Lower back pain", []),
            ("neck-pain", "Neck pain", []),
            ("sciatica", "Sciatica", []),
            ("headaches", "Headaches", []),
            ("sports-injury-recovery", "Sports injury recovery", []),
            ("pregnancy-back-pain", "Pregnancy back pain", []),
            ("posture", "Poor posture", []),
        ]
    ),
    "topics": _labelled(
        [
            ("first-visit", "First visit", []),
            ("insurance-coverage", "Insurance coverage", []),
            ("results-after-few-visits", "Results after a few visits", []),
            ("family-care", "Family care", []),
            ("online-booking", "Online booking", []),
        ]
    ),
    "faq": [
        {"question": "Does the treatment relieve pain?", "about": ["pain-relief"]},
        {"question": "How long do you wait for an appointment?", "about": ["wait-time", "scheduling"]},
        {"question": "Is billing clear?", "about": ["billing-insurance", "insurance-coverage"]},
    ],
    "sentiment_overrides": {
        "no more pain": 2.5,
        "pain is gone": 2.5,
        "pain came back": -2.0,
        "felt worse": -2.0,
        "no relief": -2.0,
        "sin dolor": 2.0,
        "mucho mejor": 2.0,
        "on time": 1.5,
        "no wait": 1.5,
        "long wait": -1.5,
        "waited forever": -2.0,
        "surprise bill": -1.5,
        "charged twice": -2.0,
        "no surprise bills": 1.5,
        "rescheduled twice": -1.5,
        "nobody ever explained": -2.0,
        "no plan": -1.5,
        "felt rushed": -1.5,
        "spotless": 2.0,
        "pricey": -1.0,
        "listened": 1.5,
        "dismissive": -2.0,
    },
}

_DENTAL = {
    "category": "Dentist",
    "practitioners": [{"id": "dr-first-last", "name": "Dr. First Last", "role": "Dentist", "aliases": []}],
    "services": [
        {"id": "cleaning", "label": "Cleaning", "description": "", "aliases": ["hygiene visit"]},
        {"id": "fillings", "label": "Fillings", "description": "", "aliases": ["filling", "cavity"]},
        {"id": "crowns", "label": "Crowns", "description": "", "aliases": ["crown"]},
        {"id": "root-canal", "label": "Root canal", "description": "", "aliases": []},
        {"id": "whitening", "label": "Whitening", "description": "", "aliases": []},
        {"id": "implants", "label": "Implants", "description": "", "aliases": ["implant"]},
    ],
    "aspects": _labelled(
        [
            (
                "pain-comfort",
                "Pain and comfort",
                ["painless", "pain", "hurt", "gentle", "numb", "comfortable", "anxiety", "nervous"],
            ),
            (
                "bedside-manner",
                "Bedside manner",
                [
                    "bedside manner",
                    "listened",
                    "caring",
                    "friendly",
                    "patient with",
                    "rushed",
                    "rude",
                    "dismissive",
                ],
            ),
            ("wait-time", "Wait time", ["wait", "waited", "waiting", "on time", "late"]),
            (
                "scheduling",
                "Scheduling",
                ["schedule", "scheduling", "appointment", "rescheduled", "same day"],
            ),
            (
                "billing-insurance",
                "Billing and insurance",
                ["billing", "bill", "charged", "insurance", "price", "expensive", "cost", "affordable"],
            ),
            (
                "explanation-of-treatment",
                "Explanation of treatment",
                ["explained", "explain", "explanation", "treatment plan", "options"],
            ),
            ("front-desk", "Front desk", ["front desk", "receptionist", "reception", "office staff"]),
            ("cleanliness", "Cleanliness", ["clean", "spotless", "dirty", "sterile", "hygienic"]),
            ("hygienist", "Hygienist", ["hygienist"]),
        ]
    ),
    "topics": _labelled(
        [
            ("first-visit", "First visit", ["new patient"]),
            ("kids", "Kids", ["kids", "children"]),
            ("emergency", "Emergency visit", ["emergency"]),
        ]
    ),
    "problems": _labelled(
        [
            ("toothache", "Toothache", ["tooth pain"]),
            ("broken-tooth", "Broken tooth", ["chipped tooth", "cracked tooth"]),
        ]
    ),
    "faq": [
        {"question": "Is treatment painful?", "about": ["pain-comfort"]},
        {"question": "Is billing clear?", "about": ["billing-insurance"]},
    ],
    "sentiment_overrides": {"painless": 2.0, "didn't feel a thing": 2.5, "no pain": 2.0},
}

_RESTAURANT = {
    "category": "Restaurant",
    "practitioners": [],
    "services": [
        {"id": "dine-in", "label": "Dine-in", "description": "", "aliases": []},
        {
            "id": "takeout",
            "label": "Takeout",
            "description": "",
            "aliases": ["take out", "take-away", "to go"],
        },
        {"id": "delivery", "label": "Delivery", "description": "", "aliases": []},
        {"id": "catering", "label": "Catering", "description": "", "aliases": []},
    ],
    "aspects": _labelled(
        [
            (
                "food",
                "Food",
                [
                    "food",
                    "dish",
                    "dishes",
                    "meal",
                    "menu",
                    "taste",
                    "tasty",
                    "flavor",
                    "flavour",
                    "delicious",
                    "fresh",
                    "portion",
                    "portions",
                    "pizza",
                    "pasta",
                    "sushi",
                    "fish",
                    "chicken",
                    "steak",
                    "beef",
                    "pork",
                    "lamb",
                    "salad",
                    "soup",
                    "dessert",
                    "desserts",
                    "appetizer",
                    "appetizers",
                    "entree",
                    "entrees",
                    "bread",
                    "rice",
                    "noodles",
                    "burger",
                    "sandwich",
                    "cheese",
                    "sauce",
                    "seafood",
                    "shrimp",
                    "lobster",
                    "tuna",
                    "salmon",
                    "roll",
                    "rolls",
                    "dumplings",
                    "tapas",
                    "cooked",
                    "chef",
                    "cuisine",
                    "spicy",
                    "bland",
                    "special",
                    "specials",
                    "brunch",
                    "lunch",
                    "dinner",
                    "breakfast",
                    "eat",
                    "ate",
                    "eggs",
                    "duck",
                    "crust",
                    "toppings",
                    "fries",
                    "tacos",
                    "curry",
                    "bagel",
                    "bagels",
                    "cake",
                ],
            ),
            (
                "drinks",
                "Drinks",
                [
                    "drink",
                    "drinks",
                    "wine",
                    "wines",
                    "beer",
                    "beers",
                    "cocktail",
                    "cocktails",
                    "coffee",
                    "tea",
                    "sake",
                    "martini",
                    "margarita",
                    "bar",
                    "bartender",
                    "wine list",
                ],
            ),
            (
                "service",
                "Service",
                [
                    "service",
                    "staff",
                    "waiter",
                    "waiters",
                    "waitress",
                    "waitstaff",
                    "server",
                    "servers",
                    "host",
                    "hostess",
                    "manager",
                    "owner",
                    "served",
                    "attentive",
                    "rude",
                    "friendly",
                    "wait",
                    "waited",
                    "waiting",
                    "seated",
                    "reservation",
                    "reservations",
                    "polite",
                    "helpful",
                    "slow",
                    "prompt",
                    "welcoming",
                    "treated",
                ],
            ),
            (
                "ambience",
                "Ambience",
                [
                    "ambience",
                    "ambiance",
                    "atmosphere",
                    "decor",
                    "music",
                    "noisy",
                    "loud",
                    "cozy",
                    "romantic",
                    "crowded",
                    "space",
                    "room",
                    "setting",
                    "vibe",
                    "interior",
                    "lighting",
                    "quiet",
                    "seating",
                    "tables",
                    "place is",
                    "garden",
                    "view",
                ],
            ),
            (
                "price",
                "Price",
                [
                    "price",
                    "prices",
                    "priced",
                    "pricey",
                    "expensive",
                    "cheap",
                    "value",
                    "worth",
                    "cost",
                    "affordable",
                    "overpriced",
                    "bill",
                    "money",
                    "dollars",
                    "$",
                ],
            ),
            (
                "location",
                "Location",
                [
                    "location",
                    "located",
                    "neighborhood",
                    "parking",
                    "find",
                    "street",
                    "downtown",
                    "close to",
                    "near",
                ],
            ),
        ]
    ),
    "topics": _labelled(
        [
            ("vegetarian", "Vegetarian options", ["vegetarian", "vegan"]),
            ("brunch", "Brunch", []),
            ("date-night", "Date night", ["date"]),
        ]
    ),
    "faq": [
        {"question": "How is the food?", "about": ["food"]},
        {"question": "Is it good value?", "about": ["price"]},
        {"question": "How is the service?", "about": ["service"]},
    ],
    "sentiment_overrides": {
        "to die for": 3.0,
        "melt in your mouth": 2.5,
        "never again": -2.5,
        "go back": 1.0,
        "overpriced": -2.0,
        "rip off": -2.5,
        "slow": -1.2,
        "cold food": -1.5,
        "fresh": 1.5,
        "authentic": 1.2,
    },
}

_HOME_SERVICES = {
    "category": "Home services",
    "practitioners": [{"id": "first-last", "name": "First Last", "role": "Technician", "aliases": []}],
    "services": [
        {"id": "repair", "label": "Repair", "description": "", "aliases": ["fix", "fixed"]},
        {"id": "installation", "label": "Installation", "description": "", "aliases": ["installed"]},
        {"id": "maintenance", "label": "Maintenance", "description": "", "aliases": ["tune-up"]},
        {"id": "emergency-call", "label": "Emergency call-out", "description": "", "aliases": ["emergency"]},
    ],
    "aspects": _labelled(
        [
            (
                "punctuality",
                "Punctuality",
                ["on time", "late", "showed up", "arrived", "punctual", "no-show"],
            ),
            (
                "quality-of-work",
                "Quality of work",
                [
                    "quality",
                    "workmanship",
                    "job",
                    "work",
                    "repair",
                    "fixed",
                    "done right",
                    "thorough",
                    "sloppy",
                ],
            ),
            (
                "communication",
                "Communication",
                [
                    "communication",
                    "communicated",
                    "explained",
                    "called",
                    "texted",
                    "responsive",
                    "kept me informed",
                    "update",
                ],
            ),
            (
                "price",
                "Price",
                [
                    "price",
                    "quote",
                    "estimate",
                    "expensive",
                    "affordable",
                    "fair",
                    "charged",
                    "cost",
                    "invoice",
                ],
            ),
            (
                "professionalism",
                "Professionalism",
                ["professional", "courteous", "polite", "respectful", "rude", "friendly"],
            ),
            ("cleanliness", "Cleanliness", ["clean", "cleaned up", "mess", "tidy", "shoe covers"]),
            ("scheduling", "Scheduling", ["schedule", "scheduling", "appointment", "same day", "booked"]),
        ]
    ),
    "topics": _labelled([("warranty", "Warranty", ["guarantee"]), ("emergency", "Emergency", ["urgent"])]),
    "faq": [
        {"question": "Do they show up on time?", "about": ["punctuality"]},
        {"question": "Are the prices fair?", "about": ["price"]},
    ],
    "sentiment_overrides": {"showed up on time": 2.0, "no-show": -2.5, "cleaned up": 1.5, "fair price": 2.0},
}

PRESETS: dict[str, Mapping[str, Any]] = {
    "chiropractic": _CHIROPRACTIC,
    "dental": _DENTAL,
    "restaurant": _RESTAURANT,
    "home-services": _HOME_SERVICES,
}

_HEADER = """\
# business.toml: your business and what `reviewsd analyze` looks for in its reviews.
# Written by `reviewsd init --preset {preset}`. Edit it, then run `reviewsd import FILE...` and
# `reviewsd analyze`. Every key: docs/analysis.md. Terms and aliases match whole words, ignoring
# case and accents.

# IANA time zone: review timestamps become dates here.
time_zone = "America/New_York"
# How imported authors are shown: "first-initial" (Jane D.), "first" (Jane) or "full".
author_display = "first-initial"
# insights.json's version: bump it when you change the aspects.
taxonomy_version = 1
# Review ids left out of insights.json, e.g. ["01J...."].
hide_reviews = []

# The `business` block of reviews.json (services and service areas come from the lists below).
[business]
id = "my-business"                # lower-case letters, digits, single hyphens
name = "My Business"
category = {category}
description = ""
url = "https://example.com/"
telephone = "+1 555 555 0100"     # international form
opening_hours = [{{days = ["mo", "tu", "we", "th", "fr"], opens = "09:00", closes = "17:00"}}]

[business.address]
street_address = ""
locality = ""
region = ""
postal_code = ""
country = "US"                    # ISO 3166-1 alpha-2

[business.geo]
latitude = 0.0
longitude = 0.0

# Phrases whose sentiment the lexicon gets wrong for your trade: valence from -4 to 4.
[sentiment_overrides]
"""

_COMMENTS = {
    "practitioners": "People customers name: aliases add to the name, surname and first name\n"
    "# (a first name counts only when no one else shares it).",
    "services": "What you offer; listed in reviews.json. Aliases are other words for it.",
    "service_areas": "Where your customers come from.",
    "aspects": "What reviews judge you on; each mention gets a sentiment from the words around its terms.",
    "problems": "What customers come to you with.",
    "topics": "Anything else worth counting.",
    "faq": "Questions answered from counts and quotes of reviews about the listed ids.",
}


def _toml_value(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def render_preset(name: str) -> str:
    """The commented starter business.toml of one preset."""
    preset = PRESETS[name]
    lines = [_HEADER.format(preset=name, category=_toml_value(preset["category"]))]
    lines += [
        f"{_toml_value(phrase)} = {valence}" for phrase, valence in preset["sentiment_overrides"].items()
    ]
    for group, comment in _COMMENTS.items():
        lines.append(f"\n# {comment}")
        if not preset.get(group):  # an empty array here would land in the table above: an example instead
            lines.append(f'# [[{group}]]\n# id = "an-id"\n# label = "A label"')
        for item in preset.get(group, []):
            lines.append(f"[[{group}]]")
            lines += [f"{key} = {_toml_value(value)}" for key, value in item.items()]
    lines.append("\n# Correct one review's mention: suppress it, or set its sentiment (kept on re-analysis).")
    lines.append(
        '# [[corrections]]\n# review_id = "01J..."\n# group = "aspects"\n# id = "wait-time"\n'
        '# sentiment = "positive"    # or: suppress = true'
    )
    return "\n".join(lines) + "\n"


def write_starter(data_dir: Path, preset: str) -> Path:
    """Write DIR/business.toml from a preset; FileExistsError if there is one already."""
    text = render_preset(preset)
    parse_profile(text, f"preset {preset}")  # a preset that does not validate is our bug, not the user's
    path = Path(data_dir) / PROFILE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "x", encoding="utf-8") as out:  # "x": never overwrite
        out.write(text)
    return path
