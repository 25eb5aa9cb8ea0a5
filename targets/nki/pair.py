"""Two (or four) programs of a grid at a time: a printing choice of the NKI emitter.

NeuronCore engines run their instructions in order, one queue each (reference/nki.md 6.2).
In a program whose sequential loop passes each block from engine to engine (attention's
scores on TensorE, their exponentials on ScalarE, the probabilities transposed on TensorE and
copied out of PSUM on VectorE, then their product with the values on TensorE), every engine's
next instruction waits on another engine's last one: the programs run one after the other and
the kernel is bound by those waits, not by any engine's work.

`paired(lines, pid)` prints the grid's innermost loop over `pid` two programs at a time:

    for i in nl.affine_range(E):            if (E) % 2 == 0:
        <body of program i>           ->        for i_pair in nl.affine_range((E) // 2):
                                                    i = 2 * i_pair
                                                    i_b = 2 * i_pair + 1
                                                    <the two bodies, statement by statement>
                                            else:
                                                for i in nl.affine_range(E):
                                                    <body of program i>

The second program's body is the first's with every name the body binds (its tiles, the
extents of its blocks) and `pid` itself renamed (`t12` -> `t12_b`, `i` -> `i_b`); the two
are merged statement by statement: a loop both bodies open (the same header) is opened once
and its bodies merged in turn, any other statement (an instruction, a guarded `if` with what
it guards, a `del`) is printed for the first program, then for the second. Each program's
statements keep their order, and the programs of an `affine_range` grid are independent (they
read what was computed before the grid and write disjoint blocks of the outputs), so the
paired grid computes what the grid computes; the engines' queues then hold two programs'
instructions, and one program's run while the other's wait. A tile of the second program
written only by statements that, its names read as the first's, are the first's own (a block
of k or v, which names neither program) is the first's tile: those statements are printed
once, and the block is loaded once for both (`_shared`; a statement writes through `dst=`
and `reduce_res=`, and one calling an instruction not listed is taken to write every name it
mentions). `paired(lines, pid, 4)` prints four programs a step the same way (`i_b`, `i_c`,
`i_d`).

It is an emission, not a rewrite of the lowering: the kernel printed this way is checked on
the simulator against the reference like every candidate, and priced by the cost model.
Where the grid's extent is not a multiple of the count when the kernel is traced, the kernel
runs the grid as it was.

None where there is nothing to pair: no such loop, a body without a sequential loop (its
programs wait on nothing but their own loads), a body writing a tile it does not make (a
buffer filled before the grid: then its programs are not independent), or bodies whose
statements do not line up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["COUNTS", "paired", "paired_text", "way"]

#: the programs at a time the selection prints the best candidate with (`select.py`)
COUNTS = (2, 4)


def way(count: int) -> str:
    """How the selection names the way: `two programs at a time`."""
    return f"{ {2: 'two', 3: 'three', 4: 'four'}[count]} programs at a time"

_INDENT = "    "
_BOUND = re.compile(r"^\s*([A-Za-z_]\w*) = ")
#: the keywords through which an instruction writes a tile (`emit.py` prints no other)
_WRITES = re.compile(r"\b(?:dst|reduce_res)=([A-Za-z_]\w*)")
#: the instructions whose writes `_WRITES` finds; a statement calling another is taken to
#: write every name it mentions
_KNOWN = frozenset({"activation", "activation_reduce", "affine_select", "dma_copy",
                    "dma_transpose", "memset", "nc_matmul", "nc_transpose", "tensor_copy",
                    "tensor_reduce", "tensor_scalar", "tensor_tensor", "tensor_tensor_scan"})
_CALL = re.compile(r"\bnisa\.(\w+)\(")
_NAME = re.compile(r"\b[A-Za-z_]\w*\b")
#: the kernel's outputs, which its programs write at disjoint blocks
_OUTPUT = re.compile(r"out\d+")
#: the second, third and fourth programs' names: the first's with these suffixes
_SUFFIXES = ("_b", "_c", "_d")


@dataclass
class _Statement:
    """A line and the lines it holds (a loop's or an `if`'s body), by indentation."""

    line: str
    body: list[_Statement] = field(default_factory=list)

    def lines(self) -> list[str]:
        return [self.line, *(x for s in self.body for x in s.lines())]


def _depth(line: str) -> int:
    return (len(line) - len(line.lstrip(" "))) // len(_INDENT)


def _statements(lines: list[str]) -> list[_Statement]:
    """`lines` (every one at least as deep as the first) as statements of the first's depth."""
    out: list[_Statement] = []
    stack: list[tuple[int, list[_Statement]]] = [(_depth(lines[0]), out)]
    for line in lines:
        depth = _depth(line)
        while stack and depth < stack[-1][0]:
            stack.pop()
        statement = _Statement(line)
        stack[-1][1].append(statement)
        if line.rstrip().endswith(":"):
            stack.append((depth + 1, statement.body))
    return out


def _renamed(lines: list[str], names: set[str], suffix: str) -> list[str]:
    if not names:
        return list(lines)
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, names))) + r")\b")
    return [pattern.sub(lambda m: f"{m.group(1)}{suffix}", line) for line in lines]


@dataclass
class _Group:
    """A statement of each program at one place of the body, or (`inner` given) a loop all
    open, with its body's groups."""

    statements: tuple[_Statement, ...]
    inner: list[_Group] | None = None


def _aligned(programs: list[list[_Statement]]) -> list[_Group] | None:
    """The programs' statements side by side; None where they do not line up."""
    if len({len(p) for p in programs}) != 1:
        return None
    out: list[_Group] = []
    for statements in zip(*programs, strict=True):
        first = statements[0]
        if first.line.lstrip().startswith("for ") \
                and all(s.line == first.line for s in statements):
            inner = _aligned([s.body for s in statements])
            if inner is None:
                return None
            out.append(_Group(statements, inner))
        else:
            out.append(_Group(statements))
    return out


def _leaves(groups: list[_Group]) -> list[_Group]:
    out: list[_Group] = []
    stack = [iter(groups)]
    while stack:
        group = next(stack[-1], None)
        if group is None:
            stack.pop()
        elif group.inner is not None:
            stack.append(iter(group.inner))
        else:
            out.append(group)
    return out


def _written(statement: _Statement) -> set[str]:
    """The names a statement binds or writes into (`dst=`, `reduce_res=`; every name it
    mentions where it calls an instruction `_KNOWN` does not list)."""
    out: set[str] = set()
    for line in statement.lines():
        if (m := _BOUND.match(line)) is not None:
            out.add(m.group(1))
        out.update(_WRITES.findall(line))
        if any(call not in _KNOWN for call in _CALL.findall(line)):
            out.update(_NAME.findall(line))
    return out


def _mapped(text: str, mapping: dict[str, str]) -> str:
    if not mapping:
        return text
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, mapping))) + r")\b")
    return pattern.sub(lambda m: mapping[m.group(1)], text)


def _shared(groups: list[_Group], copy: int, names: set[str], suffix: str) -> dict[str, str]:
    """Program `copy`'s names (`names`, the first's with `suffix`) that hold what the first
    program's do (each written only by statements that, read through this mapping, are the
    first's own: a block of k or v that names no program of the group), mapped to the
    first's: the largest such set, by removing the names a differing statement writes until
    none does."""
    leaves = _leaves(groups)
    same = set(names)
    while True:
        mapping = {name: name.removesuffix(suffix) for name in same}
        differing: set[str] = set()
        for group in leaves:
            mine, first = group.statements[copy], group.statements[0]
            if _mapped("\n".join(mine.lines()), mapping) != "\n".join(first.lines()):
                differing |= _written(mine) & same
        if not differing:
            return mapping
        same -= differing


def _printed(groups: list[_Group], mappings: list[dict[str, str]]) -> list[str]:
    """Each group's first statement, then each other program's read through its mapping
    unless that is the first's (the tile it makes is the first's); a loop all open, opened
    once."""
    out: list[str] = []
    for group in groups:
        if group.inner is not None:
            out += [group.statements[0].line, *_printed(group.inner, mappings)]
            continue
        first = group.statements[0].lines()
        out += first
        for statement, mapping in zip(group.statements[1:], mappings, strict=True):
            mine = _mapped("\n".join(statement.lines()), mapping).split("\n")
            if mine != first:
                out += mine
    return out


def paired(lines: list[str], pid: str, count: int = 2) -> list[str] | None:
    """`lines` (an emitted kernel) with each loop `for <pid> in nl.affine_range(E):` printed
    `count` programs at a time (2 to 4) where its body holds a sequential loop (module
    docstring); None where no loop is."""
    if not 2 <= count <= len(_SUFFIXES) + 1:
        raise ValueError(f"paired: {count} programs at a time; 2 to {len(_SUFFIXES) + 1}")
    header = re.compile(rf"^(\s*)for {re.escape(pid)} in nl\.affine_range\((.*)\):$")
    out: list[str] = []
    changed = False
    k = 0
    while k < len(lines):
        match = header.match(lines[k])
        if match is None:
            out.append(lines[k])
            k += 1
            continue
        depth = _depth(lines[k])
        end = k + 1
        while end < len(lines) and (not lines[end].strip() or _depth(lines[end]) > depth):
            end += 1
        body = lines[k + 1:end]
        pair = _paired_loop(lines[k], body, pid, match.group(1), match.group(2), count)
        if pair is None:
            out += lines[k:end]
        else:
            out += pair
            changed = True
        k = end
    return out if changed else None


def _paired_loop(header: str, body: list[str], pid: str, indent: str, extent: str,
                 count: int) -> list[str] | None:
    if not body or not any("nl.sequential_range(" in line for line in body):
        return None
    bound = {m.group(1) for line in body if (m := _BOUND.match(line))}
    suffixes = _SUFFIXES[:count - 1]
    groups = _aligned([_statements(body), *(_statements(_renamed(body, bound | {pid}, suffix))
                                            for suffix in suffixes)])
    if groups is None:
        return None
    outside = set().union(*(_written(g.statements[0]) for g in _leaves(groups))) - bound
    if any(not _OUTPUT.fullmatch(name) for name in outside):
        return None  # a tile made before the grid written by its programs: not independent
    mappings = [_shared(groups, copy, {name + suffix for name in bound}, suffix)
                for copy, suffix in enumerate(suffixes, 1)]
    merged = _printed(groups, mappings)
    inner = indent + _INDENT
    pair = f"{pid}_pair"
    return [f"{indent}if ({extent}) % {count} == 0:",
            f"{inner}for {pair} in nl.affine_range(({extent}) // {count}):",
            f"{inner}{_INDENT}{pid} = {count} * {pair}",
            *(f"{inner}{_INDENT}{pid}{suffix} = {count} * {pair} + {k}"
              for k, suffix in enumerate(suffixes, 1)),
            *(_INDENT + line for line in merged),
            f"{indent}else:",
            _INDENT + header,
            *(_INDENT + line for line in body)]


def paired_text(text: str, pid: str, count: int = 2) -> str | None:
    """An emitted module's text printed `count` programs at a time (`paired`); None where
    nothing pairs."""
    lines = paired(text.split("\n"), pid, count)
    return None if lines is None else "\n".join(lines)
