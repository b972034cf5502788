"""Configuration: every option of `python reviewsd.py`, as a flag and as an environment variable.

Light on purpose: no third-party imports.
"""

from __future__ import annotations

import argparse
import functools
import ipaddress
import os
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping, NoReturn, Sequence
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
BUNDLED_DATA_DIR = HERE / "data"  # the sample served out of the box (installed: the copy in the package)
DATA_DIR_ENV = "REVIEWSD_DATA_DIR"
# The command's name as the user typed it: `reviewsd` when installed, `reviewsd.py` in a checkout.
PROG = "reviewsd" if Path(sys.argv[0]).name == "reviewsd" else "reviewsd.py"


def default_state_dir() -> Path:
    """state/ beside the code in a checkout; the user's state directory (XDG) when installed."""
    if (HERE / "pyproject.toml").exists():
        return HERE / "state"
    return Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "reviewsd"


def resolve_data_dir(given: str | Path | None, *, writes: bool) -> Path:
    """The data directory of every command, by one rule: --data-dir DIR, else $REVIEWSD_DATA_DIR, else the
    bundled sample. A command that writes takes the sample only when it is named: without either, it
    refuses (ValueError, one line saying what to pass) rather than overwrite the sample."""
    named = given or os.environ.get(DATA_DIR_ENV)
    if named:
        return Path(named)
    if writes:
        raise ValueError(
            f"which data directory? Give --data-dir DIR or set {DATA_DIR_ENV}=DIR (the bundled sample "
            "is written only when named)"
        )
    return BUNDLED_DATA_DIR


def option(default: Any, description: str, low: float | None = None, high: float | None = None) -> Any:
    """A Config field: its default, its --help text and, for a number, its range (None: unbounded on that
    side). Outside the range the server stops at once, naming the option, rather than run not as asked."""
    return field(default=default, metadata={"help": description, "range": (low, high)})


@dataclass(frozen=True)
class Config:
    """Every option; each is a flag `--name-with-dashes` and a variable `REVIEWSD_NAME`."""

    host: str = option("127.0.0.1", "address to listen on")
    port: int = option(8080, "port to listen on", 0, 65535)
    data_dir: str = option(str(BUNDLED_DATA_DIR), "directory holding reviews.json and insights.json")
    state_dir: str = option(
        str(default_state_dir()), "directory for the hub's and the events' SQLite databases"
    )
    base_url: str = option("", "public base URL used in every absolute URL (empty: http://HOST:PORT)")
    threads: int = option(8, "worker threads serving requests", 1, 1000)
    reload_interval: float = option(
        2.0, "seconds between checks of the data files (0 disables polling; SIGHUP always reloads)", 0
    )
    log_format: str = option("text", "text or json log lines on stderr")
    # MCP (besides these origins, the base URL's origin and localhost are always allowed)
    mcp_allowed_origins: str = option("", "extra Origin values allowed on /mcp, comma-separated")
    mcp_max_sessions: int = option(1000, "most MCP sessions kept at once", 1)
    mcp_session_idle: float = option(1800.0, "seconds after which an idle MCP session ends", 1)
    mcp_max_resource_bytes: int = option(
        8 << 20,
        "largest resource MCP resources/read returns, in bytes; a larger one is refused with a pointer "
        "to its HTTP URL (a resource read costs several times its size while it is made)",
        1,
    )
    max_body: int = option(1 << 20, "largest request body accepted, in bytes", 1)
    body_timeout: float = option(  # see server.Server: the selector thread reads bodies
        30.0, "seconds a request body may take to arrive after its head (then 408 and close)", 0.1, 3600
    )
    max_connections: int = option(
        1000, "most client connections open at once (idle keep-alive ones are closed first)", 1, 1_000_000
    )
    max_connections_per_client: int = option(
        100,
        "most connections open at once from one client address (0: no cap; --trusted-proxies are exempt; "
        "idle keep-alive ones are closed first)",
        0,
        1_000_000,
    )
    send_buffer: int = option(  # see server.Server: bounded, a large body stays in the CPU cache on loopback
        256 * 1024, "socket send buffer per client connection, in bytes (0: the kernel sizes it)", 0, 1 << 30
    )
    output_budget: int = option(  # see server.Server: shared precomputed bodies do not count
        64 << 20,
        "bytes of responses made per request that slow clients may leave unread, in all; past it, new "
        "requests wait until they drain (0: no budget)",
        0,
        1 << 40,
    )
    client_prefix_v6: int = option(
        64, "IPv6 clients are counted per network of this prefix length for the per-client caps", 32, 128
    )
    max_data_file_bytes: int = option(  # the default: about 5x the reviews.json of 100,000 reviews
        256 << 20, "largest data file loaded, in bytes; a larger one is refused before it is read", 1
    )
    # WebSub hub
    hub: bool = option(True, "run the WebSub hub (--no-hub on read-only replicas)")
    allow_private_callbacks: bool = option(
        False, "allow hub callbacks on loopback/private addresses (development and tests only)"
    )
    ca_file: str = option(
        "",
        "CA bundle for verifying subscribers' HTTPS certificates (empty: the system store, or SSL_CERT_FILE)",
    )
    hub_retry_delay: float = option(
        30.0, "first delay before retrying a failed delivery, seconds (doubles after)", 0
    )
    hub_work_retry: float = option(
        30.0,
        "delay before the hub retries a subscriber's verification or delivery that failed inside the hub "
        "(its store unusable, say), seconds",
        0,
    )
    hub_lease_min: int = option(300, "shortest lease granted, seconds", 1)
    hub_lease_default: int = option(86400, "lease granted when none is asked for, seconds", 1)
    hub_lease_max: int = option(30 * 86400, "longest lease granted, seconds", 1)
    hub_workers: int = option(32, "concurrent outbound hub requests", 1, 1000)
    hub_workers_per_host: int = option(
        4, "most concurrent outbound hub requests to one callback host", 1, 1000
    )
    hub_delivery_timeout: float = option(
        10.0,
        "seconds an outbound hub request may take in all (DNS, connect, TLS, sending, the answer)",
        1,
        3600,
    )
    hub_max_subscriptions: int = option(10000, "most subscriptions in total", 0)
    hub_max_per_topic: int = option(5000, "most subscriptions per topic", 0)
    hub_max_per_host: int = option(50, "most subscriptions per callback host", 0)
    hub_rate_limit: float = option(60.0, "hub requests allowed per client per minute (0: no limit)", 0)
    hub_state_check: float = option(
        5.0,
        "seconds between checks that the state directory is intact, retries of a hub store that failed, and "
        "attempts to take the hub over from another server on the same directory",
        0.01,
        3600,
    )
    # Events out (docs/events.md)
    notify: str = option(
        "", "TOML file of webhooks and email alerts sent when reviews arrive or change (docs/events.md)"
    )
    # Behind a reverse proxy
    trusted_proxies: str = option(
        "", "reverse-proxy addresses whose X-Forwarded-For is trusted, comma-separated"
    )

    @property
    def public_base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host  # an IPv6 address (RFC 3986 3.2.2)
        return (self.base_url or f"http://{host}:{self.port}").rstrip("/")

    def url(self, path: str) -> str:
        return self.public_base_url + path


def env_value(name: str, default: Any) -> Any:
    """REVIEWSD_<NAME> read as the type of the option's default; ValueError, naming the variable, if it
    is not that type."""
    variable = f"REVIEWSD_{name.upper()}"
    raw = os.environ.get(variable)
    if raw is None:
        return default
    if isinstance(default, bool):
        return raw.strip().lower() in ("1", "true", "yes", "on")
    try:
        return type(default)(raw)
    except ValueError:
        raise ValueError(f"{variable}: not a valid {type(default).__name__}: {raw!r}") from None


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def range_problems(config: Config) -> list[str]:
    """What is out of range in `config`: each option's bounds, and leases in order."""
    problems = []
    for f in fields(config):
        low, high = f.metadata["range"]
        value = getattr(config, f.name)
        if low is not None and value < low:
            problems.append(f"{flag(f.name)} must be at least {low:g}, got {value:g}")
        elif high is not None and value > high:
            problems.append(f"{flag(f.name)} must be at most {high:g}, got {value:g}")
    if not config.hub_lease_min <= config.hub_lease_default <= config.hub_lease_max:
        problems.append(
            f"leases must satisfy --hub-lease-min <= --hub-lease-default <= --hub-lease-max, got "
            f"{config.hub_lease_min} / {config.hub_lease_default} / {config.hub_lease_max}"
        )
    return problems


def version() -> str:
    """The version of reviewsd: the installed distribution's, else pyproject.toml's (a checkout)."""
    from importlib import metadata

    try:
        return metadata.version("reviewsd")
    except metadata.PackageNotFoundError:
        import tomllib

        with open(HERE / "pyproject.toml", "rb") as file:
            return tomllib.load(file)["project"]["version"]


class Parser(argparse.ArgumentParser):
    """argparse, but a bad command line costs one line and a pointer to --help, not the whole usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class VersionAction(argparse.Action):
    """--version: prints `reviewsd VERSION` and exits; the version is looked up then, not at every start."""

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(f"reviewsd {version()}")
        parser.exit()


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each option's default, except an empty one (its help says what empty means)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default in ("", None):
            return action.help
        return super()._get_help_string(action)


USAGE = f"""{PROG} [serve] [OPTION ...]                  serve the API (the default; `serve` may be left out)
       {PROG} check [--data-dir DIR]                validate a data directory and exit
       {PROG} init --preset NAME --data-dir DIR     write a starter business.toml for your trade
       {PROG} import --data-dir DIR [--encoding E] [--date-format F] FILE ...
                                                         merge review exports into reviews.json
       {PROG} analyze --data-dir DIR [--explain ID]  derive insights.json from the reviews
       {PROG} sync --data-dir DIR [--full]          pull new reviews from Google and Trustpilot
       {PROG} notify test [--notify FILE]           send a sample event to every webhook and alert
       {PROG} --version | --help"""


def parse_config(argv: Sequence[str]) -> Config:
    parser = Parser(
        prog=PROG,
        usage=USAGE,
        formatter_class=HelpFormatter,
        description="Serve one business's reviews and review insights as a read-only API.",
        epilog="Every option can also be set as REVIEWSD_<NAME>, e.g. REVIEWSD_PORT=9000; a flag "
        "wins over its variable, and a default shown above already includes the variable. "
        f"`{PROG} check --help` describes the check command.",
    )
    parser.add_argument(
        "--version",
        action=VersionAction,
        nargs=0,
        default=argparse.SUPPRESS,
        help="show reviewsd's version and exit",
    )
    for f in fields(Config):
        try:
            if f.name == "data_dir":
                default = str(resolve_data_dir(None, writes=False))
            else:
                default = env_value(f.name, f.default)
        except ValueError as exc:
            parser.error(str(exc))
        kind: dict[str, Any] = (
            {"action": argparse.BooleanOptionalAction}
            if isinstance(f.default, bool)
            else {"type": type(f.default)}
        )
        if f.name == "log_format":
            kind["choices"] = ("text", "json")
        parser.add_argument(flag(f.name), dest=f.name, default=default, help=f.metadata["help"], **kind)
    args = parser.parse_args(argv)
    config = Config(**vars(args))
    if problems := range_problems(config):
        parser.error("; ".join(problems))
    if urlsplit(config.public_base_url).scheme not in ("http", "https"):
        parser.error(f"--base-url must be an http or https URL, got {config.base_url!r}")
    try:
        parse_networks(config.trusted_proxies)
    except ValueError as exc:
        parser.error(f"--trusted-proxies: {exc}")
    return config


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_networks(text: str) -> list[Network]:
    return [ipaddress.ip_network(item.strip(), strict=False) for item in text.split(",") if item.strip()]


def is_trusted(address: str, trusted: Sequence[Network]) -> bool:
    """Whether a client address is in one of the --trusted-proxies networks."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in trusted)  # an address is never in a network of the other version


@functools.lru_cache(maxsize=4096)  # bounded: addresses are the clients' to choose
def client_group(address: str, v6_prefix: int = 64) -> str:
    """Who a connection counts against in the per-client caps: an IPv4 address, also written IPv4-mapped
    (::ffff:a.b.c.d is that IPv4 host), or the IPv6 network of `v6_prefix` bits (one host often holds a
    whole /64, so an address of its own per connection costs it nothing)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address  # not an IP address (a Unix socket's peer)
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        if v6_prefix < 128:
            return str(ipaddress.IPv6Network((ip, v6_prefix), strict=False))
    return str(ip)


def client_address(environ: Mapping[str, Any], trusted: Sequence[Network]) -> str:
    """REMOTE_ADDR, or behind trusted proxies the right-most X-Forwarded-For entry that is not one of them."""
    address = str(environ.get("REMOTE_ADDR") or "")
    hops = [h.strip() for h in str(environ.get("HTTP_X_FORWARDED_FOR", "")).split(",") if h.strip()]
    while is_trusted(address, trusted) and hops:
        candidate = hops.pop()
        try:
            address = str(ipaddress.ip_address(candidate))
        except ValueError:
            break
    return address
