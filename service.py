"""The systemd glue: socket activation, the notify protocol, the watchdog, signals and graceful stop.

serve() runs a started server the way a systemd service runs: READY=1 once it
accepts, RELOADING=1/READY=1 around a reload on SIGHUP, STOPPING=1 and a
graceful drain on SIGTERM/SIGINT, WATCHDOG=1 while the server is healthy.
Every piece is a no-op outside systemd (no NOTIFY_SOCKET, no LISTEN_FDS).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from server import Server

log = logging.getLogger("reviewsd.server")

SD_LISTEN_FDS_START = 3


def activated_socket() -> socket.socket | None:
    """The socket systemd passed us (fd 3) if LISTEN_PID is us; clears the LISTEN_* variables."""
    pid = os.environ.get("LISTEN_PID", "")
    fds = os.environ.get("LISTEN_FDS", "")
    for name in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"):
        os.environ.pop(name, None)  # so child processes do not think they were activated
    if not (pid.isdigit() and int(pid) == os.getpid() and fds.isdigit() and int(fds) >= 1):
        return None
    os.set_inheritable(SD_LISTEN_FDS_START, False)
    return socket.socket(fileno=SD_LISTEN_FDS_START)


def notify(message: str) -> bool:
    """Send one sd_notify datagram to $NOTIFY_SOCKET; False if unset or it failed."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address[0] == "@":
        address = "\0" + address[1:]  # abstract namespace
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.sendto(message.encode(), address)
    except OSError as e:
        log.debug("sd_notify failed: %s", e)
        return False
    return True


def log_listening(url: str, threads: int, activated: bool = False) -> None:
    """The READY line, written at once: INFO lines wait up to logs.FLUSH_INTERVAL, which is for the access log."""
    log.info("listening on %s (%d threads)%s", url, threads, " (socket activation)" if activated else "")
    for handler in logging.getLogger().handlers:
        with contextlib.suppress(OSError, ValueError):  # stderr closed or broken: serving goes on, as with the flusher
            handler.flush()


def notify_ready(status: str = "") -> bool:
    """READY=1 with an optional STATUS= line."""
    return notify("READY=1" + (f"\nSTATUS={status}" if status else ""))


def watchdog_interval() -> float | None:
    """Seconds between WATCHDOG=1 pings (half of WATCHDOG_USEC), or None if not asked for us."""
    usec = os.environ.get("WATCHDOG_USEC", "")
    pid = os.environ.get("WATCHDOG_PID", "")
    if not usec.isdigit() or int(usec) == 0 or (pid and pid != str(os.getpid())):
        return None
    return int(usec) / 2e6


def start_watchdog(healthy: Callable[[float], bool]) -> threading.Event:
    """Ping WATCHDOG=1 every WATCHDOG_USEC/2 (if systemd asks) while healthy(timeout) holds; set the Event to stop."""
    interval = watchdog_interval()
    stop = threading.Event()

    def ping() -> None:
        while not stop.wait(interval):
            if healthy(interval * 2):
                notify("WATCHDOG=1")
            else:
                log.error("not healthy: withholding the watchdog ping")

    if interval is not None:
        threading.Thread(target=ping, name="reviewsd-watchdog", daemon=True).start()
    return stop


def serve(
    server: Server,
    *,
    activated: bool = False,
    shutdown_grace: float = 10.0,
    on_reload: Callable[[], Any] | None = None,
    on_stop: Callable[[], Any] | None = None,
    on_ready: Callable[[], Any] | None = None,
    ready_status: str = "",
    reload_pending: threading.Event | None = None,
) -> int:
    """Start `server` and run it as a systemd service until SIGTERM/SIGINT; returns the exit code.

    Call it from the main thread (signal handling).  0 after a clean stop; 130 after
    SIGINT (Ctrl-C); 1 if the serve loop died or on_stop raised.  `on_ready` runs once on this thread right
    after READY=1: work that serving need not wait for.  `reload_pending`, set by
    the caller's own SIGHUP handler before this took over, reloads after it.
    """
    with _signal_socket((signal.SIGHUP, signal.SIGTERM, signal.SIGINT)) as signals:
        server.start()
        url = _url(server.server_address)
        log_listening(url, server.threads, activated)
        notify_ready(ready_status or f"listening on {url}")
        # Serving goes on if it fails: what it would have done is not needed to serve.
        _call(on_ready, "the work after READY failed")
        if reload_pending is not None and reload_pending.is_set():
            log.info("a SIGHUP came during start-up")
            _reload(on_reload)
        watchdog = start_watchdog(server.healthy)
        signals.settimeout(1.0)
        try:
            while True:
                try:
                    received = signals.recv(64)
                except TimeoutError:
                    received = b""
                for signum in received:
                    if signum == signal.SIGHUP:
                        _reload(on_reload)
                    elif signum in (signal.SIGTERM, signal.SIGINT):
                        failed = _stop(server, shutdown_grace, on_stop, signal.Signals(signum).name)
                        return failed or (130 if signum == signal.SIGINT else 0)  # Ctrl-C: the shell's 128 + SIGINT
                if server.stopped():  # the selector thread died: let systemd restart us
                    log.error("server loop ended unexpectedly")
                    return _stop(server, 0.0, on_stop, "failure") or 1
        finally:
            watchdog.set()


def _url(address: Any) -> str:
    if not isinstance(address, tuple):
        return f"unix:{address}"
    host = f"[{address[0]}]" if ":" in address[0] else address[0]
    return f"http://{host}:{address[1]}"


def _reload(on_reload: Callable[[], Any] | None) -> None:
    usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000  # required by Type=notify-reload on systemd >= 253
    notify(f"RELOADING=1\nMONOTONIC_USEC={usec}")
    log.info("reloading")
    if _call(on_reload, "reload failed; still serving the previous state"):
        notify_ready("reloaded")
    else:
        notify_ready("reload failed, serving the previous state")


def _stop(server: Server, grace: float, on_stop: Callable[[], Any] | None, why: str) -> int:
    notify("STOPPING=1")
    log.info("%s: stopping, up to %.1fs for in-flight requests", why, grace)
    server.shutdown(grace)
    if not _call(on_stop, "on_stop failed"):
        return 1
    log.info("stopped")
    return 0


def _call(hook: Callable[[], Any] | None, failure: str) -> bool:
    """Call the caller's hook if there is one; False if it raised (logged as `failure`, with the traceback)."""
    try:
        if hook is not None:
            hook()
    except Exception:
        log.exception(failure)
        return False
    return True


@contextlib.contextmanager
def _signal_socket(signums: tuple[int, ...]) -> Iterator[socket.socket]:
    """A socket on which `signums` arrive as bytes (signal.set_wakeup_fd) while the block runs.

    The Python-level handlers do nothing: the work (reload, drain, on_stop)
    runs in the main thread's normal frame, never inside a signal handler
    frame where taking a lock the interrupted code holds would deadlock.
    """
    r, w = socket.socketpair()
    w.setblocking(False)
    old_fd = signal.set_wakeup_fd(w.fileno(), warn_on_full_buffer=False)
    old = {s: signal.signal(s, lambda signum, frame: None) for s in signums}
    try:
        yield r
    finally:
        for signum, handler in old.items():
            signal.signal(signum, handler)
        signal.set_wakeup_fd(old_fd)
        r.close()
        w.close()
