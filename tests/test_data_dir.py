"""One rule for the data directory of every command: --data-dir, else REVIEWSD_DATA_DIR, else the bundled
sample, which the commands that write never take unless it is named."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from conftest import ROOT

from reviewsd_app import reviewsd
from reviewsd_app.cli import commands
from reviewsd_app.config import BUNDLED_DATA_DIR, DATA_DIR_ENV, parse_config, resolve_data_dir

FIXTURES = ROOT / "tests" / "fixtures" / "import"

# Each command that writes into the data directory, with arguments that would write.
WRITERS = {
    "init": (commands.init_main, ["--preset", "dental"]),
    "import": (commands.import_main, [str(FIXTURES / "reviews.csv")]),
    "analyze": (commands.analyze_main, []),
    "sync": (commands.sync_main, []),
}


def bundled_files() -> dict[str, str]:
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(BUNDLED_DATA_DIR.iterdir())
        if path.is_file()
    }


@pytest.fixture
def no_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)


def test_the_rule(no_variable: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert resolve_data_dir(None, writes=False) == BUNDLED_DATA_DIR == ROOT / "data"
    with pytest.raises(ValueError, match=r"^which data directory\? Give --data-dir DIR or set REVIEWSD_"):
        resolve_data_dir(None, writes=True)
    assert resolve_data_dir(str(BUNDLED_DATA_DIR), writes=True) == BUNDLED_DATA_DIR  # named: taken
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "env"))
    assert resolve_data_dir(None, writes=True) == resolve_data_dir(None, writes=False) == tmp_path / "env"
    assert resolve_data_dir(tmp_path / "flag", writes=True) == tmp_path / "flag"  # the flag wins
    monkeypatch.setenv(DATA_DIR_ENV, "")  # an empty variable is no variable
    assert resolve_data_dir(None, writes=False) == BUNDLED_DATA_DIR


@pytest.mark.parametrize("command", sorted(WRITERS))
def test_a_command_that_writes_refuses_without_a_named_directory(
    command: str, no_variable: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys
) -> None:
    main, argv = WRITERS[command]
    before = bundled_files()
    monkeypatch.chdir(BUNDLED_DATA_DIR.parent)  # where `data` once meant the sample, for analyze and init
    assert main(argv) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err == (
        f"reviewsd {command}: which data directory? Give --data-dir DIR or set REVIEWSD_DATA_DIR=DIR (the "
        "bundled sample is written only when named); nothing written\n"
    )
    assert bundled_files() == before


def test_the_writers_take_the_flag_or_the_variable(no_variable: None, monkeypatch, tmp_path, capsys) -> None:
    by_flag, by_variable = tmp_path / "flag", tmp_path / "variable"
    by_flag.mkdir()
    by_variable.mkdir()
    assert commands.init_main(["--preset", "dental", "--data-dir", str(by_flag)]) == 0
    monkeypatch.setenv(DATA_DIR_ENV, str(by_variable))
    assert commands.init_main(["--preset", "dental"]) == 0
    assert commands.import_main([str(FIXTURES / "reviews.csv")]) == 0
    assert commands.analyze_main([]) == 0
    assert {p.name for p in by_variable.iterdir()} >= {"business.toml", "reviews.json", "insights.json"}
    assert {p.name for p in by_flag.iterdir()} == {"business.toml"}


def test_analyze_explain_writes_nothing_so_it_reads_the_sample_by_default(no_variable, capsys) -> None:
    review_id = json.loads((BUNDLED_DATA_DIR / "reviews.json").read_bytes())["reviews"][0]["id"]
    before = bundled_files()
    assert commands.analyze_main(["--explain", review_id]) == 0
    assert review_id in capsys.readouterr().out
    assert bundled_files() == before


def test_the_readers_default_to_the_sample_and_take_the_variable(no_variable, monkeypatch, tmp_path) -> None:
    assert parse_config([]).data_dir == str(BUNDLED_DATA_DIR)
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    assert parse_config([]).data_dir == str(tmp_path)
    assert parse_config(["--data-dir", "elsewhere"]).data_dir == "elsewhere"


def test_check_reads_by_the_same_rule(no_variable, monkeypatch, tmp_path, capsys) -> None:
    assert reviewsd.check_main([]) == 0
    assert capsys.readouterr().out == f"{BUNDLED_DATA_DIR}: OK\n"
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    assert reviewsd.check_main([]) == 1
    assert str(tmp_path) in capsys.readouterr().err


def test_every_command_is_a_reader_or_a_writer_here() -> None:
    """A new command gets its place in this file: the readers (serve and `notify test` through
    parse_config, check) or WRITERS."""
    assert set(reviewsd.COMMANDS) == set(WRITERS) | {"serve", "notify", "check"}
