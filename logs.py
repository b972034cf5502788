"""Log output for the server process: text or JSON lines on stderr (journald), written in batches.

A `write` + `flush` per access line (a system call per request) was the largest per-request cost after
the app itself: INFO lines are queued and a flusher thread writes the queue every FLUSH_INTERVAL. WARNING
and above, and a full queue, wake the flusher at once, so lines keep their order and problems are never held
back. Only the flusher (or an explicit flush) writes, and the lock a logging thread takes is never held
while writing: the server's selector thread logs the answers it gives itself, and a stream that blocks
(a stalled journald or pipe) must not stop it (issue 39). While the stream blocks, lines wait up to
MAX_BUFFERED; INFO lines beyond are dropped, and a WARNING line says how many once the stream takes lines
again.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from typing import IO, cast

FLUSH_INTERVAL = 0.05  # seconds an INFO line may wait before it reaches stderr
MAX_QUEUED = 512  # lines; a burst beyond this wakes the flusher at once
MAX_BUFFERED = 16_384  # lines waiting while the stream blocks (a few MB); INFO lines beyond are dropped


class _CachedTime(logging.Formatter):
    """formatTime that renders each second once (the access log asks thousands of times a second)."""

    _stamp: tuple[int, str] = (-1, "")  # (second, its text), one attribute so threads never pair them wrongly

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802
        text = self._second_text(int(record.created), datefmt or self.default_time_format)
        return text if datefmt else self.default_msec_format % (text, record.msecs)

    def _second_text(self, second: int, datefmt: str) -> str:
        cached, text = self._stamp
        if cached != second:
            text = time.strftime(datefmt, self.converter(second))
            self._stamp = (second, text)
        return text


class TextFormatter(_CachedTime):
    """`2026-11-22 12:00:00,123 INFO reviewsd.access: message`."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def line(self, created: float, level: str, name: str, message: str) -> str:
        """The formatted line of a record without an exception, from its fields alone."""
        second = int(created)
        text = self._second_text(second, self.default_time_format)
        return "%s,%03d %s %s: %s" % (text, (created - second) * 1000, level, name, message)


class JsonFormatter(_CachedTime):
    """One JSON object per line, with any structured `extra` fields of the record."""

    SKIP = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        line.update({k: v for k, v in vars(record).items() if k not in self.SKIP})
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


class BatchingStreamHandler(logging.StreamHandler):
    """A StreamHandler that writes INFO lines in batches, on its flusher thread (see the module docstring)."""

    def __init__(self, stream: IO[str] | None = None, interval: float = FLUSH_INTERVAL) -> None:
        super().__init__(stream)
        self._queued: list[str] = []  # under self.lock, which is never held while writing
        self._dropped = 0  # INFO lines dropped since the last write (the stream blocked)
        self._interval = interval
        self._writing = threading.Lock()  # held while writing: batches reach the stream in order
        self._wake = threading.Event()
        self._stop_flusher = threading.Event()
        self._flusher: threading.Thread | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            # emit runs under the handler's lock (Handler.handle), as _enqueue needs.
            self._enqueue(self.format(record) + self.terminator, at_once=record.levelno >= logging.WARNING)
        except RecursionError:
            raise
        except Exception:
            self.handleError(record)

    def write_info(self, name: str, message: str, created: float) -> None:
        """Queue an INFO line formatted as for a record, without making one (see `direct_info_handler`)."""
        formatter = cast(TextFormatter, self.formatter)  # direct_info_handler checked its type
        line = formatter.line(created, "INFO", name, message) + self.terminator
        with self.lock:  # type: ignore[union-attr]
            self._enqueue(line, at_once=False)

    def _enqueue(self, line: str, at_once: bool) -> None:
        """Queue a line (with the lock held); wake the flusher if asked or the queue is full. Never writes."""
        if not at_once and len(self._queued) >= MAX_BUFFERED:
            self._dropped += 1
            return
        self._queued.append(line)
        if at_once or len(self._queued) == MAX_QUEUED:  # once: an Event.set per line after it cost 0.4 us
            self._wake.set()
        if self._flusher is None:
            self._flusher = threading.Thread(target=self._flush_periodically, name="log-flusher", daemon=True)
            self._flusher.start()

    def flush(self) -> None:
        """Write what is queued, on this thread (the flusher's, or a caller's such as close).

        A batch and its turn to write are taken together under the lock, so batches reach the stream in
        order; the lock is let go before writing and never taken while holding the turn (logging.shutdown
        calls flush holding the lock: the other order deadlocked at exit)."""
        with self.lock:  # type: ignore[union-attr]
            text = self._take_queued()
            self._writing.acquire()
        try:
            if text:
                self.stream.write(text)
            if self.stream and hasattr(self.stream, "flush"):
                self.stream.flush()
        finally:
            self._writing.release()

    def close(self) -> None:
        self._stop_flusher.set()
        self._wake.set()
        self.flush()
        super().close()

    def _take_queued(self) -> str:
        """The queued lines as one text (the lock held), and a line counting those dropped, if any."""
        if self._dropped:
            notice = logging.LogRecord(
                "reviewsd.logs",
                logging.WARNING,
                __file__,
                0,
                "%d log lines dropped: the log stream took none for a while",
                (self._dropped,),
                None,
            )
            self._queued.append(self.format(notice) + self.terminator)
            self._dropped = 0
        text = "".join(self._queued)
        self._queued.clear()
        return text

    def _flush_periodically(self) -> None:
        while not self._stop_flusher.is_set():
            self._wake.wait(self._interval)
            self._wake.clear()
            try:
                self.flush()
            except (OSError, ValueError):  # stderr closed or broken: nothing left to write to
                return


def configure_logging(log_format: str, stream: IO[str] | None = None) -> logging.Handler:
    """Send every record of the process to stderr (or `stream`) as text or JSON lines."""
    handler = BatchingStreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    # No format here prints them, and each costs a lookup per record (logging HOWTO, "Optimization").
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    return handler


def direct_info_handler(logger: logging.Logger) -> BatchingStreamHandler | None:
    """The handler whose `write_info` may stand in for `logger.info(message)`, or None where it would differ.

    Only a lone BatchingStreamHandler with a TextFormatter and no filter on the way (what
    `configure_logging("text")` sets up) writes the line the record would give; the tests compare them.
    """
    if not logger.isEnabledFor(logging.INFO):
        return None
    handlers: list[logging.Handler] = []
    current: logging.Logger | None = logger
    while current is not None:
        if current.filters:
            return None
        handlers += current.handlers
        current = current.parent if current.propagate else None  # type: ignore[assignment]
    if len(handlers) != 1:
        return None
    handler = handlers[0]
    # exact types: a subclass may format or filter differently
    if (
        type(handler) is not BatchingStreamHandler
        or type(handler.formatter) is not TextFormatter
        or handler.filters
        or handler.level > logging.INFO
    ):
        return None
    return handler
