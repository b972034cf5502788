"""Telephone numbers as people write them, in the international form reviews.json stores (pure)."""

from __future__ import annotations

import re

# The form the schemas require: a country code first.
INTERNATIONAL = re.compile(r"^\+[0-9][0-9 ()-]{6,24}$")
# Country calling codes by ISO 3166 alpha-2 (address.country), for numbers written without one.
CALLING_CODES = {
    **dict.fromkeys(("US", "CA", "PR", "GU", "VI", "AS", "MP"), "1"),
    "GB": "44", "IE": "353", "FR": "33", "DE": "49", "AT": "43", "CH": "41", "IT": "39", "ES": "34",
    "PT": "351", "NL": "31", "BE": "32", "LU": "352", "DK": "45", "SE": "46", "NO": "47", "FI": "358",
    "IS": "354", "PL": "48", "CZ": "420", "SK": "421", "HU": "36", "RO": "40", "BG": "359", "GR": "30",
    "HR": "385", "SI": "386", "EE": "372", "LV": "371", "LT": "370", "TR": "90", "IL": "972", "ZA": "27",
    "AU": "61", "NZ": "64", "JP": "81", "KR": "82", "CN": "86", "HK": "852", "SG": "65", "IN": "91",
    "MX": "52", "BR": "55", "AR": "54", "CL": "56", "CO": "57", "PE": "51", "AE": "971", "PH": "63",
}  # fmt: skip
# Where a national number's leading 0 is part of the number, not a trunk prefix to drop.
ZERO_KEPT = {"IT"}
_ALLOWED = re.compile(r"^\+?[0-9 ().\-/]+$")


def international(number: str, country: str) -> str | None:
    """`number` in international form (+1 812 555 0142), or None when it cannot be read as one.

    A number already in that form is kept as written. Otherwise the digits keep their groups: a leading
    + or 00 starts the country code; else the country's code is put first (a NANP number's leading 1 and
    another country's trunk 0 dropped)."""
    number = number.strip()
    if INTERNATIONAL.match(number):
        return number
    if not _ALLOWED.match(number):
        return None
    groups = re.findall(r"[0-9]+", number)
    digits = "".join(groups)
    if number.startswith("+"):
        code = ""
    elif digits.startswith("00"):
        groups[0] = groups[0][2:]  # the international call prefix; an emptied group goes below
        code = ""
    else:
        code = CALLING_CODES.get(country.upper())
        if code is None:
            return None
        if code == "1":
            if len(digits) == 11 and digits.startswith("1"):
                digits = digits[1:]
            if len(digits) != 10:
                return None
            groups = [digits[:3], digits[3:6], digits[6:]]
        elif groups[0].startswith("0") and country.upper() not in ZERO_KEPT:
            groups[0] = groups[0][1:]
    groups = [group for group in groups if group]
    result = "+" + " ".join(([code] if code else []) + groups)
    return result if INTERNATIONAL.match(result) and 8 <= len(re.sub(r"\D", "", result)) <= 15 else None
