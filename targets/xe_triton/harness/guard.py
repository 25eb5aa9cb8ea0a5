"""Seeing a candidate patch what checks and times it, in the child process that imports it.

`Snapshot.take(strict, lenient)` records, for attributes of the given modules and classes, the
object bound to it and, for a Python function, its code, defaults and closure; `changed()`
names what differs now (`torch.allclose`, `torch.cuda.Event.elapsed_time`). Of a *strict* owner
(the harness's own modules) every attribute counts, and so does a name added to it (a global
that shadows a builtin); of a *lenient* one (torch, builtins, ...) only the functions, classes
and modules bound to its existing names count, since torch changes its plain state (flags,
caches) and gains lazily imported submodules as it runs. The child
takes one before it imports a candidate and compares after the import, after the checked call and
after the timing; a candidate that patched anything is rejected and the child is not reused.
This sees Python-level patching (rebinding, replacing a function's code); a candidate that writes
the process's memory through ctypes is beyond it, which is why the check of the results runs in
the parent, where no candidate is imported.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import FunctionType, ModuleType
from typing import Any


def _fingerprint(value: Any) -> tuple[int, ...]:
    """The identities that, if changed, change what calling `value` does."""
    function = value.__func__ if hasattr(value, "__func__") else value
    if isinstance(function, FunctionType):
        closure = tuple(id(c.cell_contents) for c in function.__closure__ or ()
                        if _filled(c))
        return (id(value), id(function.__code__), id(function.__defaults__),
                id(function.__kwdefaults__), *closure)
    return (id(value),)


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 (an empty cell raises ValueError)
    except ValueError:
        return False
    return True


def _behaviour(value: Any) -> bool:
    """Whether rebinding `value` changes what code does (a function, class or module), as
    opposed to plain state."""
    return callable(value) or isinstance(value, ModuleType)


Owner = ModuleType | type


def _fingerprints(owners: dict[str, Owner], everything: bool) -> dict[str, tuple[int, ...]]:
    found = {}
    for prefix, owner in owners.items():
        for name, value in list(vars(owner).items()):
            if everything or _behaviour(value):
                found[f"{prefix}.{name}"] = _fingerprint(value)
    return found


@dataclass
class Snapshot:
    """The fingerprints of the watched attributes of some modules and classes, by dotted
    name."""

    strict: dict[str, Owner]
    lenient: dict[str, Owner]
    fingerprints: dict[str, tuple[int, ...]]
    #: the objects fingerprinted, kept alive so an id is never reused by a new object
    keep: list[Any]

    @classmethod
    def take(cls, strict: dict[str, Owner], lenient: dict[str, Owner]) -> Snapshot:
        """Fingerprint the attributes of each owner (a module or a class) by its name."""
        keep = [v for owner in (*strict.values(), *lenient.values()) for v in vars(owner).values()]
        return cls(dict(strict), dict(lenient),
                   {**_fingerprints(strict, True), **_fingerprints(lenient, False)}, keep)

    def changed(self) -> list[str]:
        """The dotted names whose binding or code differs from the snapshot, or that were
        deleted; of a strict owner also the names added."""
        now = {**_fingerprints(self.strict, True), **_fingerprints(self.lenient, False)}
        names = set(self.fingerprints) | {n for n in now if n.split(".")[0] in self.strict}
        return sorted(n for n in names if now.get(n) != self.fingerprints.get(n))
