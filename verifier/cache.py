"""The query cache: verdicts keyed by the hash of the canonical obligation text.

In memory for a run; optionally persisted as JSON (no pickle):

    {"format": "axon-proof-cache", "version": 1, "entries": {key: record}, "sha256": ...}

`sha256` is the hash of the canonical JSON of `entries`. A file with another format, version or
checksum, or that does not parse, is ignored with a warning (and overwritten on save). Only proved
and refuted verdicts are stored: an unknown may be a timeout that a later run resolves.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from pathlib import Path
from typing import Any

FORMAT = "axon-proof-cache"
VERSION = 1


def _checksum(entries: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(entries, sort_keys=True).encode()).hexdigest()


class ProofCache:
    """Verdict records by obligation key; counts hits and misses."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else None
        if self.path is not None and not self.path.parent.is_dir():
            # said before any proof is done, not when the verdicts are written back
            raise FileNotFoundError(2, "its folder does not exist", str(self.path))
        self.entries: dict[str, dict[str, Any]] = {}
        self.hits = 0
        self.misses = 0
        if self.path is not None and self.path.exists():
            self.entries = _load(self.path)

    def get(self, key: str) -> dict[str, Any] | None:
        rec = self.entries.get(key)
        if rec is None:
            self.misses += 1
        else:
            self.hits += 1
        return rec

    def put(self, key: str, record: dict[str, Any]) -> None:
        self.entries[key] = record

    def save(self, path: str | Path | None = None) -> None:
        """Write the versioned, checksummed file (atomically: a temp file, then a rename)."""
        target = Path(path) if path is not None else self.path
        if target is None:
            raise ValueError("no path to save the proof cache to")
        doc = {"format": FORMAT, "version": VERSION, "entries": self.entries,
               "sha256": _checksum(self.entries)}
        tmp = target.with_suffix(target.suffix + ".tmp")
        tmp.write_text(json.dumps(doc, sort_keys=True))
        os.replace(tmp, target)


def _load(path: Path) -> dict[str, dict[str, Any]]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        warnings.warn(f"proof cache {path} ignored: {err}", stacklevel=3)
        return {}
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        warnings.warn(f"proof cache {path} ignored: not an {FORMAT} file", stacklevel=3)
        return {}
    if doc.get("version") != VERSION:
        warnings.warn(f"proof cache {path} ignored: version {doc.get('version')}, "
                      f"expected {VERSION}", stacklevel=3)
        return {}
    entries = doc.get("entries")
    if not isinstance(entries, dict) or doc.get("sha256") != _checksum(entries):
        warnings.warn(f"proof cache {path} ignored: checksum mismatch", stacklevel=3)
        return {}
    return entries
