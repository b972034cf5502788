"""Options: every flag and REVIEWSD_* variable is checked before anything starts."""

from __future__ import annotations

from dataclasses import fields

import pytest

from reviewsd_app.config import Config, parse_config, range_problems


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--threads", "0"], "--threads must be at least 1, got 0"),
        (["--port", "70000"], "--port must be at most 65535, got 70000"),
        (["--reload-interval", "-1"], "--reload-interval must be at least 0, got -1"),
        (
            ["--max-body", "0", "--hub-workers", "0"],
            "--max-body must be at least 1, got 0; --hub-workers must be at least 1, got 0",
        ),
        (
            ["--hub-lease-min", "100", "--hub-lease-max", "50"],
            "leases must satisfy --hub-lease-min <= --hub-lease-default <= --hub-lease-max, got 100 / 86400 "
            "/ 50",
        ),
        (["--mcp-session-idle", "0"], "--mcp-session-idle must be at least 1, got 0"),
    ],
)
def test_an_option_out_of_range_stops_with_a_message_naming_it(
    argv: list[str], message: str, capsys: pytest.CaptureFixture
) -> None:
    with pytest.raises(SystemExit) as stopped:
        parse_config(argv)
    assert stopped.value.code == 2 and message in capsys.readouterr().err


def test_a_variable_that_is_not_of_its_type_stops_with_a_message_naming_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setenv("REVIEWSD_THREADS", "eight")
    with pytest.raises(SystemExit) as stopped:
        parse_config([])
    assert stopped.value.code == 2 and "REVIEWSD_THREADS: not a valid int: 'eight'" in capsys.readouterr().err


def test_the_bounds_cover_every_numeric_option_and_admit_the_defaults() -> None:
    numeric = {f.name for f in fields(Config) if type(f.default) in (int, float)}
    assert {f.name for f in fields(Config) if f.metadata["range"] != (None, None)} == numeric
    assert range_problems(Config()) == []
    assert parse_config(["--port", "0", "--reload-interval", "0", "--hub-rate-limit", "0"]).port == 0
