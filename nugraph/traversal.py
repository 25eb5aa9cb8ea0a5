"""Depth-first traversals without the Python stack: a program of ten thousand statements is a
graph ten thousand levels deep, and Python's recursion stops at about a thousand.

`postorder` lists what a recursive depth-first walk would finish, in the order it would finish
it (so printed programs keep their op order); `run_nested` runs a recursive procedure written as
a generator, which `yield`s the generator of each nested call instead of calling it, on an
explicit stack:

    def size(t):                     # recursive: 1 + sum(size(c) for c in t.children)
        total = 1
        for c in t.children:
            total += yield size(c)
        return total

    run_nested(size(tree))
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Hashable, Iterable, Sequence
from typing import Any, TypeVar

N = TypeVar("N", bound=Hashable)
R = TypeVar("R")

#: a recursive procedure as a generator: yields the nested calls, returns its result
Nested = Generator["Nested[Any]", Any, R]


class Cycle(ValueError):
    """`postorder(..., on_cycle="raise")` met a node again while still inside it."""


def postorder(roots: Iterable[N], children: Callable[[N], Sequence[N]],
              on_cycle: str = "skip") -> list[N]:
    """Every node reached from `roots`, each after its children, in the order a recursive
    depth-first walk (roots in order, children in order) finishes them.

    A child that is still being walked (a cycle) is passed over with `on_cycle="skip"` (the
    cycle is broken there) and raises `Cycle` with `on_cycle="raise"`."""
    order: list[N] = []
    state: dict[N, bool] = {}  # False: being walked, True: finished
    for root in roots:
        if root in state:
            if not state[root] and on_cycle == "raise":
                raise Cycle(root)
            continue
        state[root] = False
        stack: list[tuple[N, Sequence[N], int]] = [(root, children(root), 0)]
        while stack:
            node, kids, i = stack[-1]
            if i == len(kids):
                stack.pop()
                state[node] = True
                order.append(node)
                continue
            stack[-1] = (node, kids, i + 1)
            child = kids[i]
            seen = state.get(child)
            if seen is None:
                state[child] = False
                stack.append((child, children(child), 0))
            elif not seen and on_cycle == "raise":
                raise Cycle(child)
    return order


def run_nested(call: Nested[R]) -> R:
    """The result of the generator-written recursive procedure `call` (see the module
    docstring), each nested call run on an explicit stack."""
    stack: list[Nested[Any]] = [call]
    value: Any = None
    while True:
        try:
            nested = stack[-1].send(value)
        except StopIteration as done:
            stack.pop()
            if not stack:
                return done.value  # type: ignore[no-any-return]
            value = done.value
            continue
        stack.append(nested)
        value = None
