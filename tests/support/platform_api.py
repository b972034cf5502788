"""A local stand-in for the platforms' APIs `reviewsd sync` reads, answering as their documentation says.

Google: the OAuth 2.0 token endpoint (POST, form, `grant_type=refresh_token`; a revoked token is 400
`invalid_grant`) and Business Profile API v4 `GET /v4/accounts/A/locations/L/reviews` (`pageSize` up to
50, `pageToken`, `orderBy=updateTime desc`; `reviews`, `averageRating`, `totalReviewCount`,
`nextPageToken`; 401 `UNAUTHENTICATED` for an unknown or expired bearer token). Trustpilot:
`GET /v1/business-units/ID/reviews` (`page`, `perPage`, `orderBy=createdat.desc`; the `apikey` header;
`reviews` and `links` with `rel: next-page`). Failures to answer first can be queued (429, 503)."""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":  # run as a script, its folder comes first on sys.path: its http.py would shadow
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import datetime as dt  # noqa: E402
import json  # noqa: E402
import threading  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer  # noqa: E402
from typing import Any  # noqa: E402
from urllib.parse import parse_qs, urlsplit  # noqa: E402

CLIENT = {"client_id": "1234-abc.apps.googleusercontent.com", "client_secret": "GOCSPX-s3cr3t-client"}
REFRESH_TOKEN = "1//0refresh-token-SECRET"
TRUSTPILOT_KEY = "tp-key-SECRET-42"
ACCOUNT, LOCATION, BUSINESS_UNIT = "accounts/104928374658291038475", "locations/8374625109384756201", "5f3c9a"
NAMES = ["Maria Ortega", "Tom Baker", "Ann Lee", "Sam Oduya", "Lee Chen", "Priya Nair", "Jonas Müller"]
STARS = ["ONE", "TWO", "THREE", "FOUR", "FIVE"]


def stamp(day: int, hour: int = 12) -> str:
    moment = dt.datetime(2025, 1, 1, hour, tzinfo=dt.timezone.utc) + dt.timedelta(days=day)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.123456789Z")


def google_review(n: int, day: int | None = None) -> dict[str, Any]:
    day = n if day is None else day
    return {
        "name": f"{ACCOUNT}/{LOCATION}/reviews/r{n}",
        "reviewId": f"r{n}",
        "reviewer": {"displayName": NAMES[n % len(NAMES)], "profilePhotoUrl": f"https://lh3.example/p{n}"},
        "starRating": STARS[n % 5],
        "comment": f"Visit number {n}: the front desk was friendly and Dr. Patel listened.",
        "createTime": stamp(day),
        "updateTime": stamp(day),
    }


def trustpilot_review(n: int) -> dict[str, Any]:
    return {
        "id": f"tp{n:04d}",
        "consumer": {"displayName": NAMES[n % len(NAMES)]},
        "stars": 1 + n % 5,
        "title": f"Review {n}",
        "text": f"Trustpilot review number {n}.",
        "createdAt": stamp(n, 9).replace(".123456789", ".000"),
        "updatedAt": None,
        "isVerified": n % 2 == 0,
    }


@dataclass
class PlatformState:
    google: list[dict[str, Any]] = field(default_factory=list)
    trustpilot: list[dict[str, Any]] = field(default_factory=list)
    revoked: bool = False
    tokens: set[str] = field(default_factory=set)
    issued: int = 0
    token_lifetime: int | None = None  # review requests an access token serves before it expires
    served: dict[str, int] = field(default_factory=dict)
    fail_next: list[tuple[int, dict[str, str]]] = field(default_factory=list)  # (status, headers)
    log: list[tuple[str, str]] = field(default_factory=list)  # (method, path with query)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def requests(self, prefix: str) -> int:
        return sum(1 for _, path in self.log if path.startswith(prefix))


class _Handler(BaseHTTPRequestHandler):
    state: PlatformState

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, doc: Any, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _queued_failure(self) -> bool:
        with self.state.lock:
            failure = self.state.fail_next.pop(0) if self.state.fail_next else None
        if failure is None:
            return False
        status, headers = failure
        self._send(
            status, {"error": {"code": status, "message": "try later", "status": "UNAVAILABLE"}}, headers
        )
        return True

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        self.state.log.append(("POST", self.path))
        length = int(self.headers.get("Content-Length") or 0)
        form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
        if urlsplit(self.path).path != "/token":
            return self._send(404, {"error": "not_found"})
        if self._queued_failure():
            return None
        expected = {"grant_type": "refresh_token", **CLIENT, "refresh_token": REFRESH_TOKEN}
        if self.state.revoked or form != expected:
            return self._send(
                400, {"error": "invalid_grant", "error_description": "Token has been expired or revoked."}
            )
        with self.state.lock:
            self.state.issued += 1
            token = f"ya29.access-{self.state.issued}-SECRET"
            self.state.tokens.add(token)
            self.state.served[token] = 0
        return self._send(200, {"access_token": token, "expires_in": 3599, "token_type": "Bearer"})

    def do_GET(self) -> None:  # noqa: N802
        self.state.log.append(("GET", self.path))
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        if url.path == f"/v4/{ACCOUNT}/{LOCATION}/reviews":
            return self._google(query)
        if url.path == f"/v1/business-units/{BUSINESS_UNIT}/reviews":
            return self._trustpilot(query)
        return self._send(404, {"error": {"code": 404, "status": "NOT_FOUND"}})

    def _google(self, query: dict[str, str]) -> None:
        if self._queued_failure():
            return None
        token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
        with self.state.lock:
            lifetime = self.state.token_lifetime
            valid = token in self.state.tokens and (lifetime is None or self.state.served[token] < lifetime)
            if valid:
                self.state.served[token] += 1
        if not valid:
            return self._send(
                401,
                {
                    "error": {
                        "code": 401,
                        "message": "Request had invalid authentication credentials.",
                        "status": "UNAUTHENTICATED",
                    }
                },
            )
        size = min(int(query.get("pageSize", 50)), 50)
        start = int(query.get("pageToken", 0) or 0)
        ordered = sorted(self.state.google, key=lambda r: r["updateTime"], reverse=True)
        page = ordered[start : start + size]
        doc: dict[str, Any] = {"reviews": page, "averageRating": 4.1, "totalReviewCount": len(ordered)}
        if start + size < len(ordered):
            doc["nextPageToken"] = str(start + size)
        return self._send(200, doc)

    def _trustpilot(self, query: dict[str, str]) -> None:
        if self._queued_failure():
            return None
        if self.headers.get("apikey") != TRUSTPILOT_KEY:
            return self._send(401, {"fault": {"faultstring": "Invalid ApiKey"}})
        size, page_number = min(int(query.get("perPage", 20)), 100), int(query.get("page", 1))
        ordered = sorted(self.state.trustpilot, key=lambda r: r["createdAt"], reverse=True)
        page = ordered[(page_number - 1) * size : page_number * size]
        links = []
        if page_number * size < len(ordered):
            links.append(
                {
                    "href": f"/v1/business-units/{BUSINESS_UNIT}/reviews?page={page_number + 1}",
                    "method": "GET",
                    "rel": "next-page",
                }
            )
        return self._send(200, {"links": links, "reviews": page})


class PlatformApi:
    """The stand-in on 127.0.0.1 (a free port), in a thread; `stop()` ends it."""

    def __init__(self, state: PlatformState):
        self.state = state
        handler = type("Handler", (_Handler,), {"state": state})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        # shutdown() waits for serve_forever's next poll: 0.5 s by default, at the end of every test.
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    def environ(self) -> dict[str, str]:
        return {
            "REVIEWSD_GOOGLE_API_URL": self.url,
            "REVIEWSD_GOOGLE_TOKEN_URL": self.url + "/token",
            "REVIEWSD_TRUSTPILOT_API_URL": self.url,
        }

    def stop(self) -> None:
        if not self.thread.is_alive():
            return
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


def main(argv: list[str]) -> int:
    """`python tests/support/platform_api.py [--reviews N] [--for SECONDS]`: the stand-in in the background,
    for the docs' walk-through. It prints the shell lines that point reviewsd at it once it listens, and
    stops by itself after SECONDS (default 120), or on `kill $REVIEWSD_STANDIN_PID`."""
    import argparse
    import os

    parser = argparse.ArgumentParser(prog="platform_api.py")
    parser.add_argument("--reviews", type=int, default=123)
    parser.add_argument("--for", dest="seconds", type=float, default=120.0)
    args = parser.parse_args(argv)
    read_end, write_end = os.pipe()
    if os.fork():  # the parent prints what the child says once it listens, then exits
        os.close(write_end)
        sys.stdout.write(os.read(read_end, 4096).decode())
        return 0
    os.close(read_end)
    os.setsid()
    # Made after the fork: a thread started before it would not run in the child.
    api = PlatformApi(PlatformState(google=[google_review(n) for n in range(args.reviews)]))
    lines = [f"export {name}={value}" for name, value in api.environ().items()]
    lines.append(f"REVIEWSD_STANDIN_PID={os.getpid()}")
    os.write(write_end, ("\n".join(lines) + "\n").encode())
    os.close(write_end)
    for fd in (0, 1, 2):  # nothing of the caller's terminal or pipes stays open
        os.dup2(os.open(os.devnull, os.O_RDWR), fd)
    threading.Timer(args.seconds, api.server.shutdown).start()
    api.thread.join()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
