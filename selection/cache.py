"""The winner cache: the measured best candidate of a program, on disk.

    cache = WinnerCache(path)                 # default_cache_path() unless given
    key = winner_key(program_text, sizes, dtypes, profile)
    cache.get(key)                            # a Winner, or None
    cache.put(key, winner); cache.save()      # written atomically

The key is a hash of the program's text, its sizes, its dtypes, the device profile and Axon's
build (`axon_build`: its version and a digest of its code), so a winner never outlives a change
of any of them, a change of the compiler between releases included. The file is versioned JSON
(`{"format": "axon-winners", "version": 1, "winners": {key: {...}}}`), written to a temporary
file beside it and moved into place (`os.replace`), so a reader never sees half a file. A file
that cannot be read as that format (corrupt, another version) is ignored with a warning and
replaced on the next save.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from axon.tools.version import axon_build, axon_version

FORMAT = "axon-winners"
VERSION = 1
#: the environment variable naming the cache file (else the user's cache folder)
CACHE_ENV = "AXON_WINNER_CACHE"


@dataclass(frozen=True)
class Winner:
    """The fastest checked candidate of one program at one binding of its sizes."""

    program: str
    sizes: dict[str, int]
    dtype: str
    profile: str
    candidate: str
    kwargs: dict[str, Any]
    function: str
    module_text: str
    """The emitted module, as timed."""
    axon_ms: float | None = None
    baseline_ms: float | None = None
    baseline: str = ""
    axon_version: str = field(default_factory=axon_version)


def winner_key(program_text: str, sizes: Mapping[str, int], dtypes: Sequence[str],
               profile: str, version: str | None = None) -> str:
    """The cache key: a hash of the program text, sizes, dtypes, profile and Axon's build
    (`version`, else `axon_build()`)."""
    record = [program_text, sorted(sizes.items()), list(dtypes), profile,
              version or axon_build()]
    return hashlib.sha256(json.dumps(record).encode()).hexdigest()[:32]


def default_cache_path() -> Path:
    """`$AXON_WINNER_CACHE`, else `axon/xe_triton_winners.json` in the user's cache folder
    (`$XDG_CACHE_HOME`, else `~/.cache`)."""
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given)
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "axon" / "winners.json"


class WinnerCache:
    """Winners by key, read from `path` (missing: empty) and written back by `save`."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_cache_path()
        self.winners: dict[str, Winner] = {}
        if self.path.exists():
            self.winners = _read(self.path)

    def get(self, key: str) -> Winner | None:
        return self.winners.get(key)

    def put(self, key: str, winner: Winner) -> None:
        self.winners[key] = winner

    def save(self) -> None:
        """Write every winner to `path` atomically (a temporary file, then `os.replace`)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        document = {"format": FORMAT, "version": VERSION,
                    "winners": {k: dataclasses.asdict(w) for k, w in sorted(self.winners.items())}}
        handle, scratch = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        try:
            with os.fdopen(handle, "w") as out:
                json.dump(document, out, indent=1, sort_keys=True)
                out.flush()
                os.fsync(out.fileno())
            os.replace(scratch, self.path)
        except BaseException:
            os.unlink(scratch)
            raise


def _read(path: Path) -> dict[str, Winner]:
    """The winners of a cache file; a file of another format or version, or one that does not
    parse, is ignored with a warning."""
    try:
        document = json.loads(path.read_text())
        if not isinstance(document, dict) or document.get("format") != FORMAT:
            raise ValueError(f"not an {FORMAT} file")
        if document.get("version") != VERSION:
            raise ValueError(f"version {document.get('version')!r}, this Axon reads {VERSION}")
        names = {f.name for f in dataclasses.fields(Winner)}
        return {str(key): Winner(**{k: v for k, v in record.items() if k in names})
                for key, record in document["winners"].items()}
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as err:
        warnings.warn(f"{path}: winner cache ignored ({err})", stacklevel=3)
        return {}
