"""The candidate bundle: the directory selection writes and the harness reads.

    BUNDLE/manifest.json          the cases, their inputs and their candidates (below)
    BUNDLE/<case>/<candidate>.py  one emitted Triton module per candidate

`read_bundle` checks every field and raises `BundleError` naming the file and the JSON path of
the first mistake (`manifest.json: cases[2].candidates[0].kwargs.BM: expected an integer`);
`write_bundle` writes a `Bundle` (the writer's side of the same contract). Standard library
only: the harness runs where Axon's other dependencies are missing.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

FORMAT = "axon-bundle"
VERSION = 1
MANIFEST = "manifest.json"
#: element types a bundle's tensors may have
DTYPES = ("f32", "f16", "bf16")
#: input distributions (benchmarks/suite.py, `Init`)
INIT_KINDS = ("normal", "uniform", "cos", "sin")
#: a case or candidate id: a file name on every system, no path separators
_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.=+-]*$")
#: a kwarg name the host function takes
_KWARG = re.compile(r"^[A-Za-z_]\w*$")


class BundleError(Exception):
    """A bundle that does not keep to the contract: the message names the file and the place."""


@dataclass(frozen=True)
class Init:
    """How the harness draws one input: `kind` normal (mean 0, std 1), uniform in [low, high),
    or cos / sin (rotary tables of a [T, D2] input), times `scale`."""

    kind: str = "normal"
    low: float = 0.0
    high: float = 1.0
    scale: float = 1.0


@dataclass(frozen=True)
class TensorSpec:
    """One input or output: its shape and dtype; an input has a name and an `Init`."""

    shape: tuple[int, ...]
    dtype: str
    name: str = ""
    init: Init | None = None

    @property
    def numel(self) -> int:
        """The number of elements."""
        return math.prod(self.shape)


@dataclass(frozen=True)
class Candidate:
    """One emitted kernel: its module (relative to the bundle), the host function's name, the
    launch keywords it is timed with, and how selection made it."""

    id: str
    module: str
    function: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    tiling: str = ""
    proof_id: str = ""
    modeled_ms: float | None = None


@dataclass(frozen=True)
class Case:
    """One program at one set of sizes, with its candidates. `flops` and `bytes` are the
    program's as written (the roofline floor); `tolerance` is (rtol, atol)."""

    case: str
    program: str
    tier: int
    sizes: dict[str, int]
    dtype: str
    tolerance: tuple[float, float]
    flops: int
    bytes: int
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    candidates: tuple[Candidate, ...]
    key: str = ""
    """The winner-cache key the case's winner is filed under (selection's; empty: none)."""


@dataclass(frozen=True)
class Bundle:
    """A whole bundle: where it lies, the device profile, the seed of the inputs, its cases."""

    root: Path
    profile: str
    seed: int
    axon_version: str
    cases: tuple[Case, ...]

    def module_path(self, candidate: Candidate) -> Path:
        """The file of a candidate's module."""
        return self.root / candidate.module


def read_bundle(root: Path) -> Bundle:
    """Read and check `root/manifest.json`; BundleError at the first mistake."""
    path, data = read_manifest(root)
    return _Reader(path).bundle(data, root)


def read_manifest(root: Path) -> tuple[Path, Any]:
    """The manifest's path and its JSON value; BundleError when there is none or it is not
    JSON."""
    path = root / MANIFEST
    if not root.is_dir():
        raise BundleError(f"{root}: not a directory (expected a bundle holding {MANIFEST})")
    if not path.is_file():
        raise BundleError(f"{path}: no such file (a bundle holds {MANIFEST})")
    try:
        return path, json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise BundleError(f"{path}:{e.lineno}:{e.colno}: error: invalid JSON: {e.msg}") from None
    except UnicodeDecodeError as e:
        raise BundleError(f"{path}: error: not UTF-8 text ({e.reason})") from None


def write_bundle(bundle: Bundle, modules: dict[str, str]) -> Path:
    """Write `bundle.root/manifest.json` and each candidate's module text (`modules` maps a
    candidate's `module` path to its text); the written bundle reads back equal."""
    bundle.root.mkdir(parents=True, exist_ok=True)
    for case in bundle.cases:
        for candidate in case.candidates:
            target = bundle.root / candidate.module
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(modules[candidate.module])
    data = {"format": FORMAT, "version": VERSION, "profile": bundle.profile,
            "seed": bundle.seed, "axon_version": bundle.axon_version,
            "cases": [_case_json(c) for c in bundle.cases]}
    path = bundle.root / MANIFEST
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path


def _case_json(case: Case) -> dict[str, Any]:
    data = asdict(case)
    data["tolerance"] = list(case.tolerance)
    if not case.key:
        del data["key"]
    for group in ("inputs", "outputs"):
        for spec in data[group]:
            spec["shape"] = list(spec["shape"])
            if group == "outputs" or spec["init"] is None:
                del spec["init"]
            if group == "outputs":
                del spec["name"]
    return data


class _Reader:
    """Checks the manifest's JSON value, naming the JSON path of a mistake."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def error(self, where: str, what: str) -> BundleError:
        return BundleError(f"{self.path}: error: {where}: {what}" if where
                           else f"{self.path}: error: {what}")

    def get(self, obj: dict[str, Any], key: str, where: str, kind: type | tuple[type, ...],
            default: Any = ..., what: str = "") -> Any:
        here = f"{where}.{key}" if where else key
        if key not in obj:
            if default is not ...:
                return default
            raise self.error(where, f"missing key '{key}'")
        value = obj[key]
        if not isinstance(value, kind) or (isinstance(value, bool) and bool not in (
                kind if isinstance(kind, tuple) else (kind,))):
            raise self.error(here, f"expected {what or _kind_name(kind)}, got {_show(value)}")
        return value

    def bundle(self, data: Any, root: Path) -> Bundle:
        profile, seed, axon_version, cases_json = self.header(data, FORMAT)
        cases = self.named(cases_json, "cases", "case", lambda c, where: self.case(c, where, root))
        return Bundle(root, profile, seed, axon_version, tuple(cases))

    def header(self, data: Any, fmt: str) -> tuple[str, int, str, list[Any]]:
        """The manifest's format (must be `fmt`) and version checked; its profile, seed, Axon
        version and cases (a list, not empty)."""
        if not isinstance(data, dict):
            raise self.error("", f"expected a JSON object, got {_show(data)}")
        found = self.get(data, "format", "", str)
        if found != fmt:
            raise self.error("format", f"expected '{fmt}', got '{found}'")
        version = self.get(data, "version", "", int)
        if version != VERSION:
            raise self.error("version", f"this harness reads version {VERSION}, got {version}")
        profile = self.get(data, "profile", "", str)
        seed = self.get(data, "seed", "", int)
        axon_version = self.get(data, "axon_version", "", str, "unknown")
        cases_json = self.get(data, "cases", "", list, what="a list of cases")
        if not cases_json:
            raise self.error("cases", "the bundle has no cases")
        return profile, seed, axon_version, cases_json

    def named(self, items: list[Any], where: str, key: str,
              parse: Callable[[Any, str], Any]) -> list[Any]:
        """Each item of `items` parsed at `where[i]`; an error where two share their `key`."""
        found, seen = [], set()
        for i, item in enumerate(items):
            value = parse(item, f"{where}[{i}]")
            name = getattr(value, key)
            if name in seen:
                raise self.error(f"{where}[{i}].{key}", f"'{name}' is named twice")
            seen.add(name)
            found.append(value)
        return found

    def case(self, data: Any, where: str, root: Path) -> Case:
        if not isinstance(data, dict):
            raise self.error(where, f"expected a case object, got {_show(data)}")
        name = self.ident(data, "case", where)
        program = self.get(data, "program", where, str)
        tier = self.get(data, "tier", where, int)
        sizes_json = self.get(data, "sizes", where, dict, what="an object of sizes")
        sizes = {}
        for symbol, value in sizes_json.items():
            sizes[symbol] = self.count(value, f"{where}.sizes.{symbol}")
        dtype = self.dtype(data, where)
        tolerance = self.get(data, "tolerance", where, list, what="[rtol, atol]")
        if len(tolerance) != 2 or not all(isinstance(t, (int, float)) and not isinstance(t, bool)
                                          and t >= 0 for t in tolerance):
            raise self.error(f"{where}.tolerance",
                             f"expected [rtol, atol], two numbers >= 0, got {_show(tolerance)}")
        flops = self.count(self.get(data, "flops", where, int), f"{where}.flops")
        nbytes = self.count(self.get(data, "bytes", where, int), f"{where}.bytes")
        inputs = self.tensors(data, "inputs", where, named=True)
        outputs = self.tensors(data, "outputs", where, named=False)
        candidates_json = self.get(data, "candidates", where, list, what="a list of candidates")
        candidates = self.named(candidates_json, f"{where}.candidates", "id",
                                lambda c, here: self.candidate(c, here, root))
        key = self.get(data, "key", where, str, "")
        return Case(name, program, tier, sizes, dtype,
                    (float(tolerance[0]), float(tolerance[1])), flops, nbytes, inputs, outputs,
                    tuple(candidates), key)

    def ident(self, data: dict[str, Any], key: str, where: str) -> str:
        value = self.get(data, key, where, str)
        if not _ID.match(value):
            raise self.error(f"{where}.{key}", f"'{value}' is not a file name (letters, digits, "
                                               "_ . = + -, no path separators)")
        return str(value)

    def count(self, value: Any, where: str) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise self.error(where, f"expected an integer >= 0, got {_show(value)}")
        return value

    def dtype(self, data: dict[str, Any], where: str) -> str:
        dtype = self.get(data, "dtype", where, str)
        if dtype not in DTYPES:
            raise self.error(f"{where}.dtype", f"expected one of {', '.join(DTYPES)}, "
                                               f"got '{dtype}'")
        return str(dtype)

    def tensors(self, data: dict[str, Any], key: str, where: str,
                named: bool) -> tuple[TensorSpec, ...]:
        specs = []
        for k, spec in enumerate(self.get(data, key, where, list, what=f"a list of {key}")):
            here = f"{where}.{key}[{k}]"
            if not isinstance(spec, dict):
                raise self.error(here, f"expected an object, got {_show(spec)}")
            shape_json = self.get(spec, "shape", here, list, what="a list of extents")
            shape = tuple(self.count(d, f"{here}.shape[{n}]") for n, d in enumerate(shape_json))
            dtype = self.dtype(spec, here)
            if not named:
                specs.append(TensorSpec(shape, dtype))
                continue
            name = self.get(spec, "name", here, str)
            init_json = self.get(spec, "init", here, dict, {"kind": "normal"}, "an init object")
            specs.append(TensorSpec(shape, dtype, name, self.init(init_json, f"{here}.init")))
        if not specs:
            raise self.error(f"{where}.{key}", f"the case has no {key}")
        return tuple(specs)

    def init(self, data: dict[str, Any], where: str) -> Init:
        kind = self.get(data, "kind", where, str)
        if kind not in INIT_KINDS:
            raise self.error(f"{where}.kind", f"expected one of {', '.join(INIT_KINDS)}, "
                                              f"got '{kind}'")
        numbers = [self.get(data, key, where, (int, float), default, "a number")
                   for key, default in (("low", 0.0), ("high", 1.0), ("scale", 1.0))]
        low, high, scale = (float(n) for n in numbers)
        if kind == "uniform" and not low < high:
            raise self.error(where, f"a uniform init needs low < high, got [{low}, {high})")
        return Init(str(kind), low, high, scale)

    def file(self, data: dict[str, Any], key: str, where: str, root: Path,
             optional: bool = False) -> str | None:
        """A `.py` path inside the bundle that exists (None for an optional null)."""
        kinds: tuple[type, ...] = (str, type(None)) if optional else (str,)
        value = self.get(data, key, where, kinds, None if optional else ...,
                         "a path or null" if optional else "")
        if value is None:
            return None
        relative = Path(value)
        if relative.is_absolute() or ".." in relative.parts or relative.suffix != ".py":
            raise self.error(f"{where}.{key}", f"'{value}' is not a .py path inside the bundle")
        if not (root / relative).is_file():
            raise self.error(f"{where}.{key}", f"'{value}': no such file in the bundle")
        return str(value)

    def candidate(self, data: Any, where: str, root: Path) -> Candidate:
        if not isinstance(data, dict):
            raise self.error(where, f"expected a candidate object, got {_show(data)}")
        cid = self.ident(data, "id", where)
        module = self.file(data, "module", where, root)
        assert module is not None
        function = self.get(data, "function", where, str)
        if not _KWARG.match(function):
            raise self.error(f"{where}.function", f"'{function}' is not a Python name")
        kwargs = self.get(data, "kwargs", where, dict, {}, "an object of launch keywords")
        for key, value in kwargs.items():
            if not _KWARG.match(key):
                raise self.error(f"{where}.kwargs", f"'{key}' is not a Python name")
            if not isinstance(value, (int, float, str, bool)):
                raise self.error(f"{where}.kwargs.{key}",
                                 f"expected a number, string or boolean, got {_show(value)}")
        modeled = self.get(data, "modeled_ms", where, (int, float, type(None)), None,
                           "a number or null")
        return Candidate(cid, module, function, dict(kwargs),
                         self.get(data, "tiling", where, str, ""),
                         self.get(data, "proof_id", where, str, ""),
                         None if modeled is None else float(modeled))


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {int: "an integer", float: "a number", str: "a string", list: "a list",
             dict: "an object", bool: "a boolean", type(None): "null"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def _show(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."
