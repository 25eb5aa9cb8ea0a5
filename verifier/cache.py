"""The query cache: verdicts keyed by the hash of the canonical obligation text, and the results
of whole deterministic steps (a function's propagation, a program's tiling) keyed by what
determines them.

In memory for a run; optionally persisted as JSON (no pickle):

    {"format": "axon-proof-cache", "version": 3, "entries": {key: record},
     "results": {key: record}, "sha256": ...}

`sha256` is the hash of the canonical JSON of `entries` and `results` (files of versions 1 and
2, which hold no Unknown, are read too; version 1 has only `entries`). A file with another
format, version or checksum, or that does not parse, is ignored with a warning (and overwritten
on save). `entries` holds proved and refuted verdicts by obligation key, and by the query's
key (`prove.query_key`: both functions' text, the assumptions, the budget's counts, z3's
version and Axon's code) what the query came to: an Unknown that a budget's count decided
(`verdict: "unknown"`, with the budget that ran out and the reason; the same query under the
same budget runs out again, and a larger budget has another key), or the obligation that
decided it (`verdict: "answered"`, `obligation`: normalization is a function of the query's
inputs and code, so the same query derives the same obligation again, and is served its
stored verdict without normalizing). An Unknown the safety-net clock decided is never stored:
a later run may decide it.

A step's result (`result`, `put_result`) is keyed by `step_key`: the step's name, the hash of
Axon's own code and data (`code_fingerprint`) and the step's inputs as text. It lists the
obligation keys of the proofs it relies on, and is served only while each of them is in
`entries` as proved (`holds_proofs`); the step decides what else makes a result reusable (it
stores only results a re-run would compute identically: none a clock shaped).

`process_cache` is this process's own cache, in memory and bounded (`max_entries`: past it the
oldest records are forgotten): the NKI target proves its lowerings, fusions, tilings and chains
through it, so a second selection in the same process (a nested one, the next program, an
embedding compiler's next call) proves each query once. Its keys name the code (`code_fingerprint`)
and both functions' text, so a changed lowering is a new query, never a stale answer.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

FORMAT = "axon-proof-cache"
VERSION = 3
#: older versions read as they are: their records mean what they meant
_READ_VERSIONS = (1, 2, VERSION)
#: the package's folders whose files do not change what a step computes
_NOT_CODE = ("tests", "lit_tests", "docs")
#: the records `process_cache` keeps of each kind (verdicts, step results) before it forgets the
#: oldest: a verdict is a few hundred bytes, a refutation's small inputs a few kilobytes
PROCESS_ENTRIES = 20_000


def _checksum(entries: dict[str, Any], results: dict[str, Any] | None = None) -> str:
    doc: dict[str, Any] = entries if results is None else {"entries": entries,
                                                            "results": results}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


class ProofCache:
    """Verdict records by obligation key (and Unknowns a budget's count decided, by query key),
    step results by step key; counts verdict hits and misses."""

    def __init__(self, path: str | Path | None = None, max_entries: int | None = None) -> None:
        self.path = Path(path) if path is not None else None
        #: past this many verdicts (or step results), the oldest are forgotten (None: no bound)
        self.max_entries = max_entries
        if self.path is not None and not self.path.parent.is_dir():
            # said before any proof is done, not when the verdicts are written back
            raise FileNotFoundError(2, "its folder does not exist", str(self.path))
        self.entries: dict[str, dict[str, Any]] = {}
        self.results: dict[str, dict[str, Any]] = {}
        self.hits = 0
        self.misses = 0
        if self.path is not None and self.path.exists():
            self.entries, self.results = _load(self.path)

    def get(self, key: str) -> dict[str, Any] | None:
        """The proved or refuted verdict stored under the obligation `key` (a hit or a miss)."""
        rec = self.entries.get(key)
        if rec is None:
            self.misses += 1
        else:
            self.hits += 1
        return rec

    def put(self, key: str, record: dict[str, Any]) -> None:
        """Store a verdict's record under `key`."""
        self.entries[key] = record
        self._bound(self.entries)

    def limited(self, key: str) -> dict[str, Any] | None:
        """The Unknown a budget's count decided, stored under the query `key` (a hit when
        found; not found is no miss: the query goes on to its obligation's key)."""
        rec = self.entries.get(key)
        if rec is None or rec.get("verdict") != "unknown":
            return None
        self.hits += 1
        return rec

    def answer(self, query: str, obligation: str) -> None:
        """Record that the query `query` was decided by the obligation `obligation` (stored
        here as proved or refuted); nothing when that verdict is not here."""
        if self.entries.get(obligation, {}).get("verdict") in ("proved", "refuted"):
            self.entries[query] = {"verdict": "answered", "obligation": obligation}
            self._bound(self.entries)

    def answered(self, query: str) -> tuple[str, dict[str, Any]] | None:
        """The obligation key and its verdict record that the query `query` was decided by,
        when both are here (a hit); else None (no miss: the query goes on to normalize)."""
        rec = self.entries.get(query)
        if rec is None or rec.get("verdict") != "answered":
            return None
        verdict = self.entries.get(rec["obligation"])
        if verdict is None or verdict.get("verdict") not in ("proved", "refuted"):
            return None
        self.hits += 1
        return rec["obligation"], verdict

    def holds_proofs(self, keys: Iterable[str]) -> bool:
        """Whether every obligation key in `keys` has a proved verdict here."""
        return all(self.entries.get(k, {}).get("verdict") == "proved" for k in keys)

    def result(self, key: str) -> dict[str, Any] | None:
        """The step result stored under `key`, when every proof it relies on is still here."""
        rec = self.results.get(key)
        if rec is None or not self.holds_proofs(rec.get("proofs", ())):
            return None
        return rec

    def put_result(self, key: str, record: dict[str, Any], proofs: Iterable[str]) -> None:
        """Store a step's result (JSON data) with the obligation keys of the proofs it relies
        on; a key that is empty (a proof found without the cache) stores nothing."""
        keys = sorted(set(proofs))
        if all(keys):
            self.results[key] = {**record, "proofs": keys}
            self._bound(self.results)

    def _bound(self, records: dict[str, dict[str, Any]]) -> None:
        """Forget the oldest of `records` past `max_entries` (a result whose proofs are
        forgotten is no longer served: `result`)."""
        while self.max_entries is not None and len(records) > self.max_entries:
            del records[next(iter(records))]

    def save(self, path: str | Path | None = None) -> None:
        """Write the versioned, checksummed file (atomically: a temp file, then a rename)."""
        target = Path(path) if path is not None else self.path
        if target is None:
            raise ValueError("no path to save the proof cache to")
        doc = {"format": FORMAT, "version": VERSION, "entries": self.entries,
               "results": self.results, "sha256": _checksum(self.entries, self.results)}
        tmp = target.with_suffix(target.suffix + ".tmp")
        tmp.write_text(json.dumps(doc, sort_keys=True))
        os.replace(tmp, target)


@functools.cache
def process_cache() -> ProofCache:
    """This process's own proof cache: in memory, at most `PROCESS_ENTRIES` records of each
    kind (the module docstring)."""
    return ProofCache(max_entries=PROCESS_ENTRIES)


@functools.cache
def code_fingerprint() -> str:
    """The hash of Axon's Python code (its packages, not its tests or docs): a step result
    computed by other code is never served. Data a step reads (a device profile) is one of
    the step's inputs instead."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for folder, subfolders, files in os.walk(root):
        here = Path(folder)
        # only packages: no virtual environment, build folder or cache inside a checkout
        subfolders[:] = sorted(d for d in subfolders if d not in _NOT_CODE
                               and (here / d / "__init__.py").is_file())
        for name in sorted(f for f in files if f.endswith(".py")):
            digest.update(f"{(here / name).relative_to(root).as_posix()}\n".encode())
            digest.update(hashlib.sha256((here / name).read_bytes()).digest())
    return digest.hexdigest()


def step_key(step: str, *inputs: str) -> str:
    """The key of `step`'s result on `inputs` (texts that together determine it), under this
    code (`code_fingerprint`)."""
    text = json.dumps([step, code_fingerprint(), *inputs])
    return hashlib.sha256(text.encode()).hexdigest()


def _load(path: Path) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    nothing: tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]] = ({}, {})
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        warnings.warn(f"proof cache {path} ignored: {err}", stacklevel=3)
        return nothing
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        warnings.warn(f"proof cache {path} ignored: not an {FORMAT} file", stacklevel=3)
        return nothing
    version = doc.get("version")
    if version not in _READ_VERSIONS:
        warnings.warn(f"proof cache {path} ignored: version {version}, expected {VERSION}",
                      stacklevel=3)
        return nothing
    entries = doc.get("entries")
    results = doc.get("results") if version != 1 else None
    if not isinstance(entries, dict) or (version != 1 and not isinstance(results, dict)) \
            or doc.get("sha256") != _checksum(entries, results):
        warnings.warn(f"proof cache {path} ignored: checksum mismatch", stacklevel=3)
        return nothing
    return entries, results or {}
