"""The winner cache: a round trip through the file, a key that changes with each of its parts,
atomic writes, and a corrupt or foreign file ignored with a warning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from axon.selection.cache import CACHE_ENV, Winner, WinnerCache, default_cache_path, winner_key
from axon.tools.version import axon_build, axon_version, source_digest

WINNER = Winner(program="matmul", sizes={"M": 64}, dtype="bf16", profile="h200",
                candidate="matmul.blocks_k.BM64.w4", kwargs={"BM": 64, "num_warps": 4},
                function="matmul_blocks_k", module_text="import triton\n", axon_ms=0.5,
                baseline_ms=0.6, baseline="torch.compile")


def test_a_winner_survives_the_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "winners.json"
    cache = WinnerCache(path)
    cache.put("k", WINNER)
    cache.save()
    assert WinnerCache(path).get("k") == WINNER
    assert WinnerCache(path).get("other") is None
    document = json.loads(path.read_text())
    assert (document["format"], document["version"]) == ("axon-winners", 1)
    assert [p.name for p in path.parent.iterdir()] == ["winners.json"]  # no temporary left


def test_the_key_changes_with_each_of_its_parts() -> None:
    base = ("func.func @f", {"M": 4, "N": 8}, ["bf16"], "h200", "0.1.0")
    keys = {winner_key(*base),
            winner_key("func.func @g", *base[1:]),
            winner_key(base[0], {"M": 4, "N": 16}, *base[2:]),
            winner_key(*base[:2], ["f32"], *base[3:]),
            winner_key(*base[:3], "max1550", base[4]),
            winner_key(*base[:4], "0.2.0")}
    assert len(keys) == 6
    assert winner_key(base[0], {"N": 8, "M": 4}, *base[2:]) == winner_key(*base)


def test_the_build_changes_with_the_code_and_only_with_it(tmp_path: Path) -> None:
    # a winner cached by one build of the compiler is not served by another of the same
    # version (a checkout between releases): the key's default is the build
    root = tmp_path / "pkg"
    for relative, text in (("tiling/cost.py", "A = 1\n"), ("targets/kb/h200.yaml", "x: 1\n"),
                           ("tests/test_a.py", "pass\n"), (".venv/lib/m.py", "pass\n"),
                           ("tiling/__pycache__/cost.pyc", "\0")):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)
    first = source_digest(root)
    for relative in ("tests/test_a.py", ".venv/lib/m.py", "tiling/__pycache__/cost.pyc",
                     "docs/notes.md"):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text("changed\n")
    assert source_digest(root) == first  # tests, environments, caches and documents do not count
    (root / "targets/kb/h200.yaml").write_text("x: 2\n")
    second = source_digest(root)
    assert second != first
    (root / "tiling/cost.py").rename(root / "tiling/cost2.py")
    assert source_digest(root) != second  # a file's name is part of the code
    assert axon_build().startswith(axon_version() + "+")
    assert winner_key("func.func @f", {"M": 4}, ["bf16"], "h200") == \
        winner_key("func.func @f", {"M": 4}, ["bf16"], "h200", axon_build())


@pytest.mark.parametrize("text", ["{not json", '{"format": "axon-winners", "version": 99, '
                                  '"winners": {}}', "[1, 2]"])
def test_a_corrupt_or_foreign_file_is_ignored_with_a_warning(tmp_path: Path, text: str) -> None:
    path = tmp_path / "winners.json"
    path.write_text(text)
    with pytest.warns(UserWarning, match="winner cache ignored"):
        cache = WinnerCache(path)
    assert cache.winners == {}
    cache.put("k", WINNER)
    cache.save()  # the bad file is replaced
    assert WinnerCache(path).get("k") == WINNER


def test_a_failed_write_leaves_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    path = tmp_path / "winners.json"
    cache = WinnerCache(path)
    cache.put("k", WINNER)
    cache.save()
    before = path.read_text()

    def refuse(*_: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("axon.selection.cache.os.replace", refuse)
    cache.put("k2", WINNER)
    with pytest.raises(OSError, match="disk full"):
        cache.save()
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["winners.json"]


def test_the_default_path_follows_the_environment(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "w.json"))
    assert default_cache_path() == tmp_path / "w.json"
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_path() == tmp_path / "axon" / "winners.json"
