"""The LocalBusiness JSON-LD of the home page.

Only facts about the business: no AggregateRating and no Review. Google's review-snippet rules
exclude reviews a business publishes about itself and reviews gathered from other sites, and
this page is both, so such markup could earn a manual action rather than stars.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from markupsafe import Markup

from .display_text import printable

SCHEMA_DAYS = {
    "mo": "Monday",
    "tu": "Tuesday",
    "we": "Wednesday",
    "th": "Thursday",
    "fr": "Friday",
    "sa": "Saturday",
    "su": "Sunday",
}

# Inside <script>, the HTML parser looks only for "</script" (and "<!--"): escaping <, > and &
# as JSON escapes keeps any text in the data from closing the element, and the JSON reads the same.
_SCRIPT_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def local_business(business: Mapping[str, Any], page_url: str) -> dict[str, Any]:
    """schema.org LocalBusiness: name, description, address, geo, hours, telephone and url."""
    address = business["address"]
    return {
        "@context": "https://schema.org",
        "@type": "LocalBusiness",
        "@id": page_url + "#business",
        "name": business["name"],
        "description": business["description"] or None,
        "url": business["url"],
        "telephone": business["telephone"],
        "address": {
            "@type": "PostalAddress",
            "streetAddress": address["street_address"],
            "addressLocality": address["locality"],
            "addressRegion": address["region"],
            "postalCode": address["postal_code"],
            "addressCountry": address["country"],
        },
        "geo": {
            "@type": "GeoCoordinates",
            "latitude": business["geo"]["latitude"],
            "longitude": business["geo"]["longitude"],
        },
        "openingHoursSpecification": [
            {
                "@type": "OpeningHoursSpecification",
                "dayOfWeek": [SCHEMA_DAYS[day] for day in hours["days"]],
                "opens": hours["opens"],
                "closes": hours["closes"],
            }
            for hours in business["opening_hours"]
        ],
        "areaServed": [area["label"] for area in business["service_areas"]] or None,
    }


def json_ld_script(data: Mapping[str, Any]) -> Markup:
    """A <script type="application/ld+json"> element holding `data`, safe whatever text it holds."""
    compact = {key: value for key, value in data.items() if value is not None}
    text = printable(json.dumps(compact, ensure_ascii=False, separators=(",", ":")).translate(_SCRIPT_SAFE))
    return Markup(f'<script type="application/ld+json">{text}</script>')
