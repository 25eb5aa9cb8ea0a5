"""Union-find over dense integer ids, with path halving (egg's `unionfind.rs`, in Python)."""

from __future__ import annotations


class UnionFind:
    """Disjoint sets of ids 0, 1, 2, ...; `union` keeps the first argument's root as the root."""

    def __init__(self) -> None:
        self._parent: list[int] = []

    def __len__(self) -> int:
        return len(self._parent)

    def make_set(self) -> int:
        """A new singleton set; returns its id."""
        self._parent.append(len(self._parent))
        return len(self._parent) - 1

    def find(self, x: int) -> int:
        """The root of x's set (path halving keeps later finds short)."""
        parent = self._parent
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(self, a: int, b: int) -> int:
        """Merge the sets of a and b; returns the surviving root (a's)."""
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self._parent[rb] = ra
        return ra
