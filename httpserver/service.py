"""The systemd glue of server.run(): socket activation, the notify protocol, the watchdog, signals, stopping.

run() serves the way a systemd service runs: READY=1 once it accepts, RELOADING=1/READY=1 around a reload on
SIGHUP, STOPPING=1 and a graceful drain on SIGTERM/SIGINT, WATCHDOG=1 while the server is healthy.  Every
piece is a no-op outside systemd (no NOTIFY_SOCKET, no LISTEN_FDS).
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
from typing import Any

log = logging.getLogger("reviewsd.server")

SD_LISTEN_FDS_START = 3

# A SIGHUP before the server takes over its signals (during the first load, which can take
# seconds) would end the process, its default action: kept for after READY instead.
hup_before_serving = threading.Event()


def install_early_signals(keep_hup: bool = True) -> None:
    """From the process's start until run() takes the signals over: Ctrl-C quiet, SIGHUP kept for later."""
    # Ctrl-C during the imports, the first load or `check`: status 130 at once, without a traceback
    # (the data files are only read, nothing is half-done)
    signal.signal(signal.SIGINT, lambda signum, frame: os._exit(130))
    if keep_hup:
        signal.signal(signal.SIGHUP, lambda signum, frame: hup_before_serving.set())


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
    """The READY line, written at once (INFO lines wait up to logs.FLUSH_INTERVAL, which is meant for the
    access log)."""
    log.info("listening on %s (%d threads)%s", url, threads, " (socket activation)" if activated else "")
    for handler in logging.getLogger().handlers:
        with contextlib.suppress(
            OSError, ValueError
        ):  # stderr closed or broken: serving goes on, as with the flusher
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
    """Ping WATCHDOG=1 every WATCHDOG_USEC/2 (if systemd asks) while healthy(timeout) holds; setting the
    Event returned stops it."""
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


def reload(on_reload: Callable[[], Any] | None) -> None:
    usec = (
        time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
    )  # required by Type=notify-reload on systemd >= 253
    notify(f"RELOADING=1\nMONOTONIC_USEC={usec}")
    log.info("reloading")
    if call_hook(on_reload, "reload failed; still serving the previous state"):
        notify_ready("reloaded")
    else:
        notify_ready("reload failed, serving the previous state")


def stop(shutdown: Callable[[float], Any], grace: float, on_stop: Callable[[], Any] | None, why: str) -> int:
    """STOPPING=1, a graceful `shutdown(grace)` of the server, then the caller's on_stop; 1 if that raised,
    else 0."""
    notify("STOPPING=1")
    log.info("%s: stopping, up to %.1fs for in-flight requests", why, grace)
    shutdown(grace)
    if not call_hook(on_stop, "on_stop failed"):
        return 1
    log.info("stopped")
    return 0


def call_hook(hook: Callable[[], Any] | None, failure: str) -> bool:
    """Call the caller's hook, if any; False if it raised (logged as `failure`, traceback included)."""
    try:
        if hook is not None:
            hook()
    except Exception:
        log.exception(failure)
        return False
    return True


@contextlib.contextmanager
def signal_socket(signums: tuple[int, ...]) -> Iterator[socket.socket]:
    """A socket on which `signums` arrive as bytes (signal.set_wakeup_fd) while the block runs.

    The Python-level handlers do nothing: the work (reload, drain, on_stop) runs in the main thread's normal
    frame, never in a signal handler's, where taking a lock that the interrupted code holds would deadlock.
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
