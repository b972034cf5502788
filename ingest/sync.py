"""`reviewsd sync`: new and edited reviews from the platforms' APIs, merged as `import` merges files.

Sources are business.toml's [[sources]]: Google Business Profile API v4 `reviews.list` (OAuth 2.0 refresh
token grant, then pages of 50 newest-edited first) and Trustpilot's business-unit reviews (an API key,
pages of 100 newest first). Incremental: paging stops at the first page that reaches what the last sync
already had. Everything is fetched before anything is written; a failure writes nothing."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import quote, urlencode

import orjson

from ..authoring.files import dumps, read_json, write_atomically
from ..authoring.profile import Profile
from .fetch import FetchError, Http, checked_endpoint
from .merge import MergeResult
from .records import Imported, InputError, Skipped, utc_text
from .run import merge_records, parse_document
from .sources import open_regular, read_capped

GOOGLE_API = "https://mybusiness.googleapis.com"
GOOGLE_TOKEN = "https://oauth2.googleapis.com/token"
TRUSTPILOT_API = "https://api.trustpilot.com"
ENDPOINT_VARIABLES = {
    "google_api": ("REVIEWSD_GOOGLE_API_URL", GOOGLE_API),
    "google_token": ("REVIEWSD_GOOGLE_TOKEN_URL", GOOGLE_TOKEN),
    "trustpilot_api": ("REVIEWSD_TRUSTPILOT_API_URL", TRUSTPILOT_API),
}
STATE_FILE = ".reviewsd-sync.json"  # source -> the newest time the last sync saw there
GOOGLE_PAGE_SIZE = 50  # reviews.list's maximum
TRUSTPILOT_PAGE_SIZE = 100
MAX_PAGES = 2000  # 100,000 reviews at Google's page size: a bound, not a goal
MAX_SECRET_BYTES = 64 << 10


class SyncError(Exception):
    """A source could not be synced: the message names it and what went wrong, never a secret."""


@dataclass(frozen=True)
class Endpoints:
    google_api: str = GOOGLE_API
    google_token: str = GOOGLE_TOKEN
    trustpilot_api: str = TRUSTPILOT_API

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> "Endpoints":
        """The platforms' endpoints, or the REVIEWSD_*_URL that point them elsewhere (a proxy, tests)."""
        values = {}
        for key, (variable, default) in ENDPOINT_VARIABLES.items():
            try:
                values[key] = checked_endpoint(environ.get(variable) or default, variable)
            except ValueError as error:
                raise SyncError(str(error)) from None
        return cls(**values)


@dataclass
class Pulled:
    """What one source gave: its reviews in the export shape the importers read, and the paging done."""

    label: str
    key: str  # the source's key in the state file
    kind: str  # "google" or "trustpilot"
    reviews: list[Any]
    newest: str | None  # the newest time seen, for the next sync
    pages: int


def source_label(source: Mapping[str, Any]) -> str:
    if source["type"] == "google":
        return f"google {source['account']}/{source['location']}"
    return f"trustpilot {source['business_unit']}"


def read_secret(data_dir: Path, name: str, label: str) -> bytes:
    """A credentials file (relative to the data directory), refused if group or others may read it."""
    path = Path(name) if os.path.isabs(name) else Path(data_dir) / name
    try:
        stream, _ = open_regular(path)
    except InputError as error:
        raise SyncError(f"{label}: {error}") from None
    with stream:
        mode = stat.S_IMODE(os.fstat(stream.fileno()).st_mode)
        if mode & 0o077:
            raise SyncError(
                f"{label}: {path} may be read by group or others (mode {mode:04o}); run `chmod 600 {path}`"
            )
        try:
            return read_capped(stream, str(path), MAX_SECRET_BYTES)
        except InputError as error:
            raise SyncError(f"{label}: {error}") from None


def google_credentials(data_dir: Path, source: Mapping[str, Any], label: str) -> dict[str, str]:
    content = read_secret(data_dir, source["credentials"], label)
    try:
        doc = orjson.loads(content)
    except orjson.JSONDecodeError:
        doc = None
    if isinstance(doc, dict) and isinstance(doc.get("installed"), dict):
        doc = {**doc["installed"], **{k: v for k, v in doc.items() if k != "installed"}}  # Google's download
    keys = ("client_id", "client_secret", "refresh_token")
    if not isinstance(doc, dict) or not all(isinstance(doc.get(key), str) and doc[key] for key in keys):
        raise SyncError(f"{label}: {source['credentials']} is not JSON with {', '.join(keys)}")
    return {key: doc[key] for key in keys}


def _stamp(value: Any) -> str | None:
    """A timestamp as comparable UTC text, or None when it is not one (the importer says why later)."""
    try:
        return utc_text(value)
    except ValueError:
        return None


def _review_list(page: Any, label: str) -> list[Any]:
    reviews = page.get("reviews") if isinstance(page, dict) else None
    if reviews is None and isinstance(page, dict):
        return []
    if not isinstance(reviews, list):
        raise SyncError(f"{label}: the answer is not a reviews list")
    return reviews


class GoogleSource:
    """Google Business Profile API v4: accounts.locations.reviews.list, newest edit first."""

    def __init__(self, source: Mapping[str, Any], data_dir: Path, endpoints: Endpoints, http: Http):
        self.label = source_label(source)
        self.credentials = google_credentials(data_dir, source, self.label)
        self.endpoints, self.http = endpoints, http
        path = f"/v4/{quote(source['account'])}/{quote(source['location'])}/reviews"
        self.url = endpoints.google_api + path

    def access_token(self) -> str:
        """The OAuth 2.0 refresh token grant (RFC 6749, 6): a form POST to the token endpoint."""
        form = urlencode({"grant_type": "refresh_token", **self.credentials}).encode()
        headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
        try:
            answer = self.http.json(
                "POST", self.endpoints.google_token, headers, form, f"{self.label}: the token endpoint"
            )
        except FetchError as error:
            if error.error_code in ("invalid_grant", "invalid_client", "unauthorized_client"):
                raise SyncError(
                    f"{self.label}: Google refused the credentials ({error.error_code}): the refresh token "
                    "was revoked or expired, or the client changed; renew the credentials "
                    "(docs/deployment.md)"
                ) from None
            raise SyncError(str(error)) from None
        token = answer.get("access_token") if isinstance(answer, dict) else None
        if not isinstance(token, str) or not token:
            raise SyncError(f"{self.label}: the token endpoint's answer has no access_token")
        return token

    def pull(self, since: str | None) -> Pulled:
        token, refreshed = self.access_token(), False
        reviews: list[Any] = []
        page_token, pages = None, 0
        while pages < MAX_PAGES:
            query = {"pageSize": GOOGLE_PAGE_SIZE, "orderBy": "updateTime desc"}
            if page_token:
                query["pageToken"] = page_token
            headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
            try:
                page = self.http.json("GET", f"{self.url}?{urlencode(query)}", headers, what=self.label)
            except FetchError as error:
                if error.status == 401 and not refreshed:  # the access token expired: one new one
                    token, refreshed = self.access_token(), True
                    continue
                raise SyncError(str(error)) from None
            pages += 1
            items = _review_list(page, self.label)
            reviews += items
            page_token = page.get("nextPageToken")
            if not items or not isinstance(page_token, str) or not page_token:
                break
            stamps = [_stamp(item.get("updateTime")) for item in items if isinstance(item, dict)]
            oldest = min((s for s in stamps if s), default=None)
            if since and oldest and oldest <= since:  # newest edit first: the rest was seen before
                break
        stamps = [_stamp(item.get("updateTime")) for item in reviews if isinstance(item, dict)]
        newest = max([s for s in stamps if s] + ([since] if since else []), default=None)
        return Pulled(self.label, self.label, "google", reviews, newest, pages)


class TrustpilotSource:
    """Trustpilot's business-unit reviews (an API key in the `apikey` header), newest first."""

    def __init__(self, source: Mapping[str, Any], data_dir: Path, endpoints: Endpoints, http: Http):
        self.label = source_label(source)
        key = read_secret(data_dir, source["api_key_file"], self.label).decode("utf-8", "replace").strip()
        if not key or any(ch.isspace() for ch in key):
            raise SyncError(f"{self.label}: {source['api_key_file']} does not hold one API key")
        self.key, self.http = key, http
        self.url = f"{endpoints.trustpilot_api}/v1/business-units/{quote(source['business_unit'])}/reviews"

    def pull(self, since: str | None) -> Pulled:
        reviews: list[Any] = []
        pages = 0
        while pages < MAX_PAGES:
            query = {"perPage": TRUSTPILOT_PAGE_SIZE, "page": pages + 1, "orderBy": "createdat.desc"}
            headers = {"apikey": self.key, "Accept": "application/json"}
            try:
                page = self.http.json("GET", f"{self.url}?{urlencode(query)}", headers, what=self.label)
            except FetchError as error:
                raise SyncError(str(error)) from None
            pages += 1
            items = _review_list(page, self.label)
            reviews += items
            links = page.get("links") if isinstance(page, dict) else None
            has_next = isinstance(links, list) and any(
                isinstance(link, dict) and link.get("rel") == "next-page" for link in links
            )
            if not items or not has_next:
                break
            stamps = [_stamp(item.get("createdAt")) for item in items if isinstance(item, dict)]
            oldest = min((s for s in stamps if s), default=None)
            if since and oldest and oldest <= since:
                break
        stamps = [_stamp(item.get("createdAt")) for item in reviews if isinstance(item, dict)]
        newest = max([s for s in stamps if s] + ([since] if since else []), default=None)
        return Pulled(self.label, self.label, "trustpilot", reviews, newest, pages)


SOURCES = {"google": GoogleSource, "trustpilot": TrustpilotSource}


@dataclass
class SyncResult:
    pulled: list[Pulled]
    merged: MergeResult


def _state(data_dir: Path) -> dict[str, str]:
    try:
        state = read_json(Path(data_dir) / STATE_FILE)
    except (OSError, ValueError):
        return {}  # none yet, or damaged: the next sync reads every page once
    return {k: v for k, v in state.items() if isinstance(v, str)} if isinstance(state, dict) else {}


def sync_dir(
    data_dir: Path, profile: Profile, endpoints: Endpoints, http: Http, full: bool = False
) -> SyncResult:
    """Pull every source, then merge into DIR/reviews.json (written only if all succeeded)."""
    data_dir = Path(data_dir)
    state = {} if full else _state(data_dir)
    pulled = []
    for source in profile.sources:
        client = SOURCES[source["type"]](source, data_dir, endpoints, http)
        pulled.append(client.pull(state.get(client.label)))
    records: list[Imported | Skipped] = []
    warnings: list[str] = []
    for result in pulled:
        try:
            records += parse_document(
                result.label, {"reviews": result.reviews}, profile, warnings, result.kind
            )
        except InputError as error:
            raise SyncError(f"{error} (as the API sent it)") from None
    merged = merge_records(data_dir, records, profile, warnings)
    new_state = {**_state(data_dir), **{p.key: p.newest for p in pulled if p.newest}}
    write_atomically(data_dir / STATE_FILE, dumps(dict(sorted(new_state.items()))))
    return SyncResult(pulled, merged)
