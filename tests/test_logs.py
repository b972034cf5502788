"""Log output: formats, batching, order, and nothing lost at close."""

from __future__ import annotations

import io
import json
import logging
import threading
from collections.abc import Iterator

import pytest
from polling import wait_until
from support.http import WAIT, connect, read_response, serving

from reviewsd_app import logs


def record(
    message: str, level: int = logging.INFO, created: float | None = None, **extra: object
) -> logging.LogRecord:
    entry = logging.LogRecord("reviewsd.test", level, __file__, 1, message, (), None)
    if created is not None:
        entry.created, entry.msecs = created, (created - int(created)) * 1000
    entry.__dict__.update(extra)
    return entry


@pytest.fixture
def stream() -> io.StringIO:
    return io.StringIO()


@pytest.fixture
def handler(stream: io.StringIO) -> Iterator[logs.BatchingStreamHandler]:
    # A long interval: these tests decide when lines are written, not the flusher.
    batching = logs.BatchingStreamHandler(stream, interval=3600)
    batching.setFormatter(logs.TextFormatter())
    yield batching
    batching.close()


def test_info_lines_wait_for_the_flush(handler: logs.BatchingStreamHandler, stream: io.StringIO) -> None:
    handler.handle(record("first"))
    handler.handle(record("second"))
    assert stream.getvalue() == ""
    handler.flush()
    lines = stream.getvalue().splitlines()
    assert [line.rsplit(": ", 1)[1] for line in lines] == ["first", "second"]


# A warning and a full queue wake the flusher (the handler's interval is an hour: only the wake writes them);
# it writes them, not the thread that logged them (issue 39: that thread may be the server's selector).


def test_a_warning_is_written_at_once_after_what_was_queued(
    handler: logs.BatchingStreamHandler, stream: io.StringIO
) -> None:
    handler.handle(record("queued"))
    handler.handle(record("problem", logging.WARNING))
    assert wait_until(lambda: stream.getvalue().count("\n") == 2)
    lines = stream.getvalue().splitlines()
    assert [line.rsplit(": ", 1)[1] for line in lines] == ["queued", "problem"]
    assert " WARNING " in lines[1]


def test_a_full_queue_is_written_at_once(handler: logs.BatchingStreamHandler, stream: io.StringIO) -> None:
    for n in range(logs.MAX_QUEUED - 1):
        handler.handle(record(f"line {n}"))
    assert not handler._wake.is_set() and stream.getvalue() == ""
    handler.handle(record("the last that fits"))
    assert wait_until(lambda: len(stream.getvalue().splitlines()) == logs.MAX_QUEUED)


def test_logging_shutdown_while_the_flusher_is_woken_ends() -> None:
    """logging.shutdown holds the handler's lock and calls flush; the flusher, woken by a warning just
    before, must not hold the turn to write while waiting for that lock (they deadlocked at exit: a
    server refused its port and never exited, once in a full test run)."""
    for _ in range(200):
        stream = io.StringIO()
        batching = logs.BatchingStreamHandler(stream, interval=3600)
        batching.setFormatter(logs.TextFormatter())
        batching.handle(record("cannot listen", logging.ERROR))  # wakes the flusher

        def shutdown(handler: logs.BatchingStreamHandler = batching) -> None:
            handler.acquire()  # as logging.shutdown does
            try:
                handler.flush()
                handler.close()
            finally:
                handler.release()

        closing = threading.Thread(target=shutdown, daemon=True)
        closing.start()
        closing.join(WAIT)
        assert not closing.is_alive()
        assert stream.getvalue().endswith("cannot listen\n")


class BlockingStream(io.StringIO):
    """A log stream whose writes wait until `release` is set (a stalled journald or pipe); `entered` says one
    is waiting."""

    def __init__(self) -> None:
        super().__init__()
        self.entered, self.release = threading.Event(), threading.Event()

    def write(self, text: str) -> int:
        self.entered.set()
        self.release.wait(WAIT)
        return super().write(text)


def test_a_blocked_stream_never_blocks_a_logging_thread_and_the_lines_dropped_are_counted() -> None:
    stream = BlockingStream()
    batching = logs.BatchingStreamHandler(stream, interval=0.01)
    batching.setFormatter(logs.TextFormatter())
    try:
        batching.handle(record("first"))
        assert wait_until(stream.entered.is_set)  # the flusher is stuck writing it
        extra = 100
        done = threading.Event()

        def log_many() -> None:
            for n in range(logs.MAX_BUFFERED + extra):
                batching.write_info("reviewsd.access", f"line {n}", 1_700_000_000.0)
                batching.handle(record(f"record {n}"))
            done.set()

        threading.Thread(target=log_many, daemon=True).start()
        assert done.wait(WAIT)  # without waiting on the stream
        stream.release.set()
        assert wait_until(lambda: "log lines dropped" in stream.getvalue())
        lines = stream.getvalue().splitlines()
        assert len(lines) == 1 + logs.MAX_BUFFERED + 1
        assert lines[-1].endswith(
            f": {logs.MAX_BUFFERED + 2 * extra} log lines dropped: the log stream took none for a while"
        )
    finally:
        stream.release.set()
        batching.close()


def test_close_writes_what_is_queued(handler: logs.BatchingStreamHandler, stream: io.StringIO) -> None:
    handler.handle(record("last words"))
    handler.close()
    assert stream.getvalue().endswith("last words\n")


def test_the_flusher_writes_queued_lines_by_itself(stream: io.StringIO) -> None:
    batching = logs.BatchingStreamHandler(stream, interval=0.01)
    batching.setFormatter(logs.TextFormatter())
    try:
        batching.handle(record("eventually"))
        assert wait_until(lambda: "eventually" in stream.getvalue())
    finally:
        batching.close()


@pytest.mark.parametrize("created", [1_700_000_000.0, 1_700_000_000.999, 1_700_000_001.5, 1_700_086_400.25])
def test_text_format_matches_the_standard_formatter(created: float) -> None:
    standard = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    cached = logs.TextFormatter()
    for when in (created, created + 0.001, created + 1):  # the cache must notice a new second
        entry = record("hello", created=when)
        assert cached.format(entry) == standard.format(entry)


def test_json_format_carries_the_structured_fields() -> None:
    line = json.loads(
        logs.JsonFormatter().format(record("GET /x", created=1_700_000_000.5, status=200, path="/x"))
    )
    assert line["time"] == logging.Formatter().formatTime(
        record("", created=1_700_000_000.5), "%Y-%m-%dT%H:%M:%S"
    )
    assert (line["level"], line["logger"], line["message"]) == ("info", "reviewsd.test", "GET /x")
    assert (line["status"], line["path"]) == (200, "/x")


def test_configure_logging_sends_every_logger_through_one_handler(stream: io.StringIO) -> None:
    root = logging.getLogger()
    saved = root.handlers[:], root.level, logging.logThreads, logging.logProcesses, logging.logMultiprocessing
    try:
        handler = logs.configure_logging("json", stream)
        logging.getLogger("reviewsd.anything").warning("careful")
        assert root.handlers == [handler]
        assert wait_until(lambda: stream.getvalue().endswith("\n"))  # the flusher writes it, woken at once
        assert json.loads(stream.getvalue())["message"] == "careful"
    finally:
        root.handlers[:], level, logging.logThreads, logging.logProcesses, logging.logMultiprocessing = saved
        root.setLevel(level)
        handler.close()


# ---------------------------------------------------------------- the access log's direct path


@pytest.fixture
def configured(stream: io.StringIO) -> Iterator[logs.BatchingStreamHandler]:
    """configure_logging("text") on `stream`, undone afterwards (pytest's own capture handler removed
    meanwhile)."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level, logging.logThreads, logging.logProcesses, logging.logMultiprocessing
    handler = logs.configure_logging("text", stream)
    handler._interval = 3600  # type: ignore[attr-defined]
    try:
        yield handler
    finally:
        root.handlers[:], level, logging.logThreads, logging.logProcesses, logging.logMultiprocessing = saved
        root.setLevel(level)
        handler.close()


@pytest.mark.parametrize("created", [1_700_000_000.0, 1_700_000_000.0625, 1_700_000_059.999])
def test_direct_line_equals_the_records_line(
    configured: logs.BatchingStreamHandler, stream: io.StringIO, created: float
) -> None:
    logging.getLogger().handlers[:] = [configured]  # pytest adds its capture handlers around each test body
    access = logging.getLogger("reviewsd.access")
    assert logs.direct_info_handler(access) is configured
    configured.write_info(access.name, '127.0.0.1 "GET /x" 200 5 0.1ms', created)
    entry = logging.LogRecord(
        access.name, logging.INFO, __file__, 1, '127.0.0.1 "GET /x" 200 5 0.1ms', (), None
    )
    entry.created, entry.msecs = created, int((created - int(created)) * 1000) + 0.0
    configured.handle(entry)
    configured.flush()
    direct, general = stream.getvalue().splitlines()
    assert direct == general


def test_direct_path_steps_aside_whenever_records_could_differ(
    configured: logs.BatchingStreamHandler,
) -> None:
    access = logging.getLogger("reviewsd.access")
    root = logging.getLogger()
    root.handlers[:] = [configured]  # pytest adds its capture handlers around each test body
    checks = []
    extra = logging.NullHandler()
    root.addHandler(extra)  # e.g. pytest's caplog
    checks.append(logs.direct_info_handler(access))
    root.removeHandler(extra)
    access.addFilter(lambda r: True)
    checks.append(logs.direct_info_handler(access))
    access.filters.clear()
    configured.setFormatter(logs.JsonFormatter())
    checks.append(logs.direct_info_handler(access))
    configured.setFormatter(logs.TextFormatter())
    access.setLevel(logging.WARNING)
    checks.append(logs.direct_info_handler(access))
    access.setLevel(logging.NOTSET)
    assert checks == [None, None, None, None]
    assert logs.direct_info_handler(access) is configured


def test_the_ready_line_is_written_at_once(
    configured: logs.BatchingStreamHandler, stream: io.StringIO
) -> None:
    """Whoever waits for "listening on" (a script, a test, bench/compare) sees it when the server is READY."""
    from reviewsd_app.httpserver import service

    logging.getLogger("reviewsd.anything").info("queued")
    assert stream.getvalue() == ""
    service.log_listening("http://127.0.0.1:8080", 8)
    lines = stream.getvalue().splitlines()
    assert [line.rsplit(": ", 1)[1] for line in lines] == [
        "queued",
        "listening on http://127.0.0.1:8080 (8 threads)",
    ]


def test_a_broken_stderr_does_not_stop_the_ready_line(
    configured: logs.BatchingStreamHandler, stream: io.StringIO
) -> None:
    from reviewsd_app.httpserver import service

    attempts = []

    def broken(text: str) -> int:
        attempts.append(text)
        raise ValueError("I/O operation on closed file")  # as a closed stderr would

    stream.write = broken  # type: ignore[method-assign]
    service.log_listening("http://127.0.0.1:8080", 8)  # does not raise
    assert any("listening on http://127.0.0.1:8080 (8 threads)" in text for text in attempts)


def test_the_server_answers_the_feed_while_the_log_stream_blocks(app: object) -> None:
    """The selector thread answers the feed itself and logs each answer: a stalled log stream must not stop
    it (before, the flusher wrote while holding the lock every access line takes)."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level, logging.logThreads, logging.logProcesses, logging.logMultiprocessing
    stream = BlockingStream()
    handler = logs.configure_logging("text", stream)
    handler._interval = 0.01  # type: ignore[attr-defined]
    try:
        with serving(app) as srv, connect(srv) as sock:
            f = sock.makefile("rb")
            sock.sendall(b"GET /api/feed.json HTTP/1.1\r\nHost: t\r\n\r\n")
            assert read_response(f)[0] == 200
            assert wait_until(stream.entered.is_set)  # the flusher is stuck writing its line
            for _ in range(3):
                sock.sendall(b"GET /api/feed.json HTTP/1.1\r\nHost: t\r\n\r\n" * 100)
                assert all(read_response(f)[0] == 200 for _ in range(100))
            stream.release.set()
            assert wait_until(lambda: stream.getvalue().count('"GET /api/feed.json') == 301)
    finally:
        stream.release.set()
        root.handlers[:], level, logging.logThreads, logging.logProcesses, logging.logMultiprocessing = saved
        root.setLevel(level)
        handler.close()
