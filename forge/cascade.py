"""The Forge cascade: every proposal for a user's kernel file, in order, stopping at the first
failure, whose step and reason the driver records.

1. syntax: the module parses and the Triton frontend reads its kernels and launches;
2. structure, against the KB device: only the Triton 3.6 `tl` API the Intel XPU backend takes
   (`targets/xe_triton/cascade.PORTABLE_TL`), and every launch's and autotune config's
   `num_warps` in the device's set, `grf_mode` among its modes, literal block sizes powers of two;
3. correctness against the ORIGINAL kernel's outputs and the problem's float32 reference, by the
   frozen harness (`harness.forge_run.check_against_original`: the modules run in child
   processes, never imported here; two seeds; every tamper check on) at the check sizes; on the
   CPU in float32 on Triton's interpreter (the original run once a cascade: its results are
   those of the same runs for every proposal), on a GPU in the problem's dtype; on the CPU for
   a module that will run on a GPU (`smoke_dtype`, the bundle), also run once in the problem's
   dtype, where only a crash fails it (the interpreter's bf16 `tl.dot` is not the GPU's, so
   its values are not judged; a store of a float32 value through a bf16 block pointer fails
   there as it fails to compile on the GPU);
4. performance, on a GPU: the proposal against the text it would replace (the stage before), so
   a stage that makes the kernel slower is rolled back; without a GPU it passes, untimed.

    cascade = ForgeCascade(original, problem, load_device("b70"), sizes=[{...}], scratch=dir)
    outcome = cascade(current_text, proposal_text)        # a driver.CheckOutcome
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from axon.forge.driver import CheckOutcome
from axon.frontend.diagnostics import SourceError
from axon.frontend.triton.parse import TritonModule, parse_triton_source
from axon.targets.xe_triton.cascade import PORTABLE_TL
from axon.targets.xe_triton.harness.forge_run import (
    Check,
    OriginalChecked,
    candidate_verdict,
    check_against_original,
    original_checked,
    problem_check,
)
from axon.targets.xe_triton.kb import Config, Device, KernelFacts, config_error

#: `tl` dtype names (attributes, not calls)
_DTYPES = frozenset({"float32", "float16", "bfloat16", "float64", "int1", "int8", "int16",
                     "int32", "int64", "uint8", "uint32", "uint64", "dtype"})
#: what the launch check asks of a kernel: no dot, so only the launch options are judged
_LAUNCH_ONLY = KernelFacts(kind="elementwise")
#: launch keywords that are not block sizes
_OPTIONS = frozenset({"num_warps", "num_stages", "num_ctas", "maxnreg", "grf_mode", "warp_size"})


def syntax_error(text: str, filename: str) -> str | None:
    """Why `text` does not parse as a Triton module, or None."""
    try:
        ast.parse(text, filename)
        parse_triton_source(text, filename)
    except SyntaxError as err:
        return f"line {err.lineno}: {err.msg}"
    except SourceError as err:
        return str(err).splitlines()[0]
    return None


def _literal(text: str) -> object:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None


def _settings_error(device: Device, settings: Mapping[str, object], where: str) -> str | None:
    """Why `device` cannot launch with `settings`: the KB's rule for the launch options
    (`config_error`: the device's warps, sub-group sizes, work-group size, GRF modes and their
    warp caps), then a `BLOCK*` size that is not a power of two (the KB knows no user's names)."""
    def count(name: str) -> int | None:
        value = settings.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    grf = settings.get("grf_mode")
    config = Config(num_warps=count("num_warps"), warp_size=count("warp_size"),
                    grf_mode=None if grf is None else str(grf))
    why = config_error(device, _LAUNCH_ONLY, config)
    if why:
        return f"{where}: {device.name}: {why}"
    for name, value in settings.items():
        if name not in _OPTIONS and isinstance(value, int) and not isinstance(value, bool) and (
                value < 1 or value & (value - 1)) and name.upper() == name and "BLOCK" in name:
            return f"{where}: block size {name}={value} is not a power of two"
    return None


def _autotune_configs(tree: ast.Module) -> list[tuple[int, dict[str, object]]]:
    """(line, settings) of every `triton.Config({...}, num_warps=...)` in the module."""
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "Config" and node.args
                and isinstance(node.args[0], ast.Dict)):
            settings: dict[str, object] = {}
            for key, value in zip(node.args[0].keys, node.args[0].values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    settings[key.value] = _literal(ast.unparse(value))
            for keyword in node.keywords:
                if keyword.arg is not None:
                    settings[keyword.arg] = _literal(ast.unparse(keyword.value))
            found.append((node.lineno, settings))
    return found


def tl_names(text: str, filename: str = "<module>") -> dict[str, int]:
    """The `triton.language` names the module uses (`tl.dot`, `tl.math.erf` as `math.erf`),
    each with the first line using it."""
    tree = ast.parse(text, filename)
    module: TritonModule = parse_triton_source(text, filename)
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                module.aliases.get(node.value.id) == "triton.language":
            found.setdefault(node.attr, node.lineno)
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
              and isinstance(node.value.value, ast.Name)
              and module.aliases.get(node.value.value.id) == "triton.language"):
            found.setdefault(f"{node.value.attr}.{node.attr}", node.lineno)
    return found


def structure_error(text: str, filename: str, device: Device,
                    original: str | None = None) -> str | None:
    """Why the module does not fit `device`: a `tl` name outside the portable set that the
    `original` text does not use already (a stage must not bring one in; the user's own are
    the user's), or a launch's or autotune config's settings."""
    known = set(tl_names(original, filename)) if original is not None else set()
    for name, line in tl_names(text, filename).items():
        base = name.split(".")[-1]
        if name in known or name in PORTABLE_TL or base in PORTABLE_TL or base in _DTYPES \
                or name.split(".")[0] in known or base[:1].isupper():
            continue
        return (f"line {line}: tl.{name} is not a Triton 3.6 API the Intel XPU backend takes")
    module = parse_triton_source(text, filename)
    tree = ast.parse(text, filename)
    for site in module.launches:
        settings = {k: _literal(v) for k, v in site.options}
        settings.update({k: _literal(v) for k, v in site.args if k in _OPTIONS
                         or (k.upper() == k and "BLOCK" in k)})
        why = _settings_error(device, settings, f"line {site.loc[0]}: {site.kernel}")
        if why:
            return why
    for line, settings in _autotune_configs(tree):
        why = _settings_error(device, settings, f"line {line}: autotune config")
        if why:
            return why
    return None


@dataclass
class ForgeCascade:
    """The cascade for proposals of one kernel file (see the module docstring); the harness
    runs the modules from files under `scratch`."""

    original: Path
    problem: Path
    device: Device
    sizes: Sequence[Mapping[str, int]]
    scratch: Path
    gpu: bool = False
    atol_scale: float = 1.0
    smoke_dtype: str | None = None
    """On the CPU: a dtype (the problem's) to run each passing proposal in once more, failing
    it only where it crashes (see the module docstring)."""
    checked: int = field(default=0, init=False)
    """Proposals asked about."""
    _files: int = field(default=0, init=False)
    _vouched: dict[str, tuple[str, ...]] = field(default_factory=dict, init=False)
    _on_cpu: tuple[Check, OriginalChecked] | None = field(default=None, init=False)

    def vouch(self, whole: str, singles: Sequence[str]) -> None:
        """Check `whole` (an autotuned module) without a GPU through `singles`: the same module
        over each configuration alone. Triton's autotuner picks by timing, which the CPU
        interpreter cannot do; a module passes when each configuration it may pick passes."""
        self._vouched[whole] = tuple(singles)

    def _file(self, text: str, stem: str) -> Path:
        self._files += 1
        path = self.scratch / f"{stem}_{self._files}.py"
        path.write_text(text)
        return path

    def _cpu_check(self) -> tuple[Check, OriginalChecked]:
        """The check on the CPU (in float32, at `sizes`) and the original's results under it,
        made once: every proposal is judged on the same runs against the same original, so
        its child process runs once, not once a proposal."""
        if self._on_cpu is None:
            check = problem_check(self.problem, sizes=list(self.sizes), dtype="f32",
                                  atol_scale=self.atol_scale, device="cpu")
            self._on_cpu = (check, original_checked(check, self.original))
        return self._on_cpu

    def __call__(self, current: str, proposal: str) -> CheckOutcome:
        """The proposal's verdict: the first step that fails it, or passed (timed on a GPU)."""
        self.checked += 1
        name = self.original.name
        why = syntax_error(proposal, name)
        if why:
            return CheckOutcome(False, "syntax", why)
        why = structure_error(proposal, name, self.device,
                              self.original.read_text(encoding="utf-8"))
        if why:
            return CheckOutcome(False, "structure", why)
        parts = () if self.gpu else self._vouched.get(proposal, ())
        for number, text in enumerate(parts or (proposal,), start=1):
            if self.gpu:
                verdict = check_against_original(
                    self.problem, self.original, self._file(text, "proposal"),
                    sizes=list(self.sizes), atol_scale=self.atol_scale, device="cuda")
            else:
                verdict = candidate_verdict(*self._cpu_check(), self._file(text, "proposal"))
            if not verdict.passed:
                which = f"configuration {number} of {len(parts)} alone: " if parts else ""
                return CheckOutcome(False, verdict.step or "correctness", which + verdict.reason)
        if not self.gpu and self.smoke_dtype is not None:
            for number, text in enumerate(parts or (proposal,), start=1):
                smoke = check_against_original(
                    self.problem, None, self._file(text, "smoke"), sizes=list(self.sizes),
                    dtype=self.smoke_dtype, atol_scale=self.atol_scale, device="cpu")
                if smoke.step == "crash":
                    which = f"configuration {number} of {len(parts)} alone: " if parts else ""
                    return CheckOutcome(False, "crash", f"{which}in {self.smoke_dtype}: "
                                                        f"{smoke.reason}")
        if parts:
            return CheckOutcome(True, "correctness", f"each of its {len(parts)} configurations "
                                                     "alone matches the original and the "
                                                     "reference (timing skipped: no GPU)")
        if not self.gpu:
            return CheckOutcome(True, "correctness", "matches the original and the reference "
                                                     "(timing skipped: no GPU)")
        candidate = self._file(proposal, "proposal")
        before = self._file(current, "current")
        timed = check_against_original(self.problem, before, candidate, sizes=[{}],
                                       atol_scale=self.atol_scale, device="cuda", time=True)
        if not timed.passed:
            return CheckOutcome(False, timed.step or "performance", timed.reason,
                                timed.candidate_ms)
        return CheckOutcome(True, "performance",
                            f"{timed.candidate_ms:.4g} ms against {timed.original_ms:.4g} ms",
                            timed.candidate_ms)
