"""`axon PROGRAM --target nki`: a program's NKI kernel, tiled, lowered, proved and printed.

    axon rmsnorm --target nki --profile trn2 --sizes M=4096,N=1024 -o kernel.py

No selection yet: the `tile` search proves and prices the program's tilings for the NeuronCore
profile at the sizes; the proved tilings are taken cheapest first (by the tiled cost model),
and the first whose kernel lowers to `nki` and whose lowering is proved is printed with its
best concrete tile sizes (`emit.py`). A tiling that does not lower is reported and skipped.
The driver (`tools/axon_main.py`) parses the command line and calls `emit_kernel`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp

from axon.dialects.ax import TensorType
from axon.passes.sizes import parse_sizes, sizes_problem
from axon.targets.nki.emit import emit_nki
from axon.targets.nki.lower import Refused, lower_and_prove
from axon.targets.profiles import load_profile
from axon.tiling.search import all_sizes, tile_program

#: the NeuronCore profiles (`targets/nki/profiles/<name>.yaml`)
NKI_PROFILES = tuple(sorted(p.stem for p in
                            (Path(__file__).resolve().parent / "profiles").glob("*.yaml")))
#: the profile `--target nki` uses unless told
DEFAULT_PROFILE = "trn2"


class NkiTargetError(ValueError):
    """A user error of `--target nki`: the message says where and what was expected."""


def emit_kernel(module: ModuleOp, filename: str, profile: str, sizes_text: str,
                say: Callable[[str], None]) -> str:
    """The NKI module of the program in `module` (see the module docstring)."""
    start = time.perf_counter()
    if profile not in NKI_PROFILES:
        raise NkiTargetError(f"--profile: '{profile}' is not a NeuronCore profile; known: "
                             f"{', '.join(NKI_PROFILES)}")
    problem = sizes_problem(sizes_text)
    if problem is not None:
        raise NkiTargetError(f"--sizes '{sizes_text}': {problem}")
    funcs = [op for op in module.ops if isinstance(op, FuncOp)]
    if len(funcs) != 1:
        names = ", ".join(f"@{f.sym_name.data}" for f in funcs)
        raise NkiTargetError(f"{filename}: --target emits the kernel of one function; this "
                             f"file defines {len(funcs)} ({names})")
    (func,) = funcs
    name = func.sym_name.data
    sizes = parse_sizes(sizes_text)
    symbols = sorted({s for t in func.function_type.inputs.data if isinstance(t, TensorType)
                      for d in t.shape for s in d.symbols()})
    unknown = sorted(set(sizes) - set(symbols))
    if unknown:
        raise NkiTargetError(f"--sizes: {', '.join(unknown)} is not a size of @{name} in "
                             f"{filename} (its sizes: {', '.join(symbols) or 'none'})")
    bound = all_sizes(func, sizes)
    say(f"nki: @{name} at {', '.join(f'{k}={v}' for k, v in bound.items())} on {profile}")
    try:
        chosen = choose_kernel(func, profile, bound, say)
    except NoKernel as err:
        raise NkiTargetError(f"{filename}: @{name}: {err}") from None
    say(f"nki: @{name}: {chosen.kind} ({chosen.chosen}), tiling proof {chosen.tiling_proof}, "
        f"lowering proof {chosen.lowering_proof}; {time.perf_counter() - start:.1f} s")
    return chosen.module_text


class NoKernel(Exception):
    """No proved tiling of the function lowers to `nki`; the message says why."""


@dataclass(frozen=True)
class ChosenKernel:
    """The kernel `--target nki` prints: the tiling's kind, its lowered function, the tile
    sizes, the printed module, both proofs' ids, and the seconds spent tiling and proving
    (`symbolic_s`: the `tile` search, the lowering and its proof) and printing (`emit_s`)."""

    kind: str
    lowered: FuncOp
    params: dict[str, int]
    module_text: str
    tiling_proof: str
    lowering_proof: str
    symbolic_s: float
    emit_s: float

    @property
    def chosen(self) -> str:
        """The tile sizes as `BM=128 BN=128`."""
        return " ".join(f"{k}={v}" for k, v in self.params.items())


def choose_kernel(func: FuncOp, profile: str, sizes: Mapping[str, int],
                  say: Callable[[str], None]) -> ChosenKernel:
    """The proved tilings of `func` at `sizes` (every size bound), cheapest first; the first
    whose lowering is proved, printed with its best concrete tile sizes. `NoKernel` when
    none lowers."""
    name = func.sym_name.data
    start = time.perf_counter()
    result = tile_program([func], load_profile(profile), sizes)
    proved = [p for p in result.proved if p.candidates and p.kernel is not None]
    say(f"nki: @{name}: {len(result.proposals)} tilings proposed, {len(proved)} proved and "
        f"fitting")
    refusals = []
    for proposal in proved:
        assert proposal.kernel is not None
        try:
            lowered = lower_and_prove(proposal.kernel)
        except Refused as err:
            say(f"nki: @{name}: {proposal.tiling.kind}: {err}")
            refusals.append(f"{proposal.tiling.kind}: {err}")
            continue
        symbolic = time.perf_counter() - start
        params = dict(proposal.candidates[0].params)
        module_text = emit_nki(lowered.func, params).text
        return ChosenKernel(proposal.tiling.kind, lowered.func, params, module_text,
                            proposal.proof_id, lowered.proof_id, symbolic,
                            time.perf_counter() - start - symbolic)
    why = "; ".join(refusals) or "no tiling is proved and fits the profile"
    raise NoKernel(f"no kernel lowers to nki ({why})")
