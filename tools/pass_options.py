"""Typed pass options, checked when the pipeline is parsed and documented where they are declared.

An Axon pass derives from `CheckedPass` and declares each option as a dataclass field made by
`option(default, doc, ...)`: the field's type (`int`, `float`, `bool`, `str` or a `Literal` of
strings) and the option's range (`at_least`, `above`, or a `check` function) are enforced when the
pipeline is parsed (`axon-opt -p`, `axon -p`, `embed.run_pipeline`), before any pass runs, with the
valid range in the message; and `describe_options` writes the option list that `axon-opt --help`
and docs/cli.md show. As in xDSL (`xdsl/transforms/arith_add_fastmath.py`, options validated when
the pipeline is parsed), a bad option is a `ValueError` (a `PassOptionError`).

    @dataclass(frozen=True)
    class PropagatePass(CheckedPass):
        name = "propagate"
        max_iterations: int = option(20, "propagation iterations per function", at_least=1)
        emit: Literal["best", "graph", "top-k"] = option("best", "what replaces each function")

    propagate{max_iterations=0}   ->  propagate: max_iterations must be an integer >= 1, not 0
    propagate{time_limit=5}       ->  time_limit = 5.0 (an integer is a valid float, as in MLIR)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Self, get_args, get_origin, get_type_hints

from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec
from xdsl.utils.exceptions import DiagnosticException

#: the key of an option's `Option` in its dataclass field's metadata
_KEY = "axon.option"


class PassOptionError(ValueError, DiagnosticException):
    """An option value outside its type or range; the message starts with the pass's name. A
    ValueError, as xDSL's own option errors are, and a diagnostic, as a pass's errors are."""


@dataclass(frozen=True)
class Option:
    """What an option means and which values it takes (beyond its type)."""

    doc: str
    at_least: int | float | None = None
    above: int | float | None = None
    check: Callable[[Any], str | None] | None = None
    """Returns why a value is not valid (the message after "pass: "), or None when it is."""
    valid: str = ""
    """The valid values in words, for a `check` (`"a known device profile"`)."""


def option(default: Any, doc: str, *, at_least: int | float | None = None,
           above: int | float | None = None, check: Callable[[Any], str | None] | None = None,
           valid: str = "") -> Any:
    """A pass option: a dataclass field with its default, its documentation and its range."""
    return field(default=default,
                 metadata={_KEY: Option(doc, at_least, above, check, valid)})


def _type_words(hint: Any, spec: Option | None) -> str:
    """The valid values of an option in words: `an integer >= 1`, `one of best, graph`."""
    if get_origin(hint) is Literal:
        return "one of " + ", ".join(str(a) for a in get_args(hint))
    words = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}.get(
        hint, str(hint))
    if spec is not None:
        if spec.valid:
            return spec.valid
        if spec.at_least is not None:
            words += f" >= {spec.at_least}"
        if spec.above is not None:
            words += f" > {spec.above}"
    return words


def _coerce(pass_name: str, name: str, values: tuple[Any, ...], hint: Any,
            spec: Option | None) -> tuple[Any, ...]:
    """`values` as the option's type (an int where a float is expected becomes a float), or a
    ValueError saying which values the option takes."""
    shown = ",".join(repr(v) if isinstance(v, str) else str(v).lower() for v in values)
    problem = f"{pass_name}: {name} must be {_type_words(hint, spec)}, not {shown or 'nothing'}"
    if len(values) != 1:
        raise PassOptionError(problem)
    value = values[0]
    if get_origin(hint) is Literal:
        ok = isinstance(value, str) and value in get_args(hint)
    elif hint is bool:
        ok = isinstance(value, bool)
    elif hint is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif hint is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        value = float(value) if ok else value
    elif hint is str:
        ok = isinstance(value, str)
    else:
        return values  # a type this module does not know: xDSL's own conversion decides
    if not ok:
        raise PassOptionError(problem)
    return (value,)


@dataclass(frozen=True)
class CheckedPass(ModulePass):
    """A module pass whose options (fields made by `option`) are typed and range-checked when it
    is made from a pipeline string, and when it is constructed directly."""

    @classmethod
    def from_spec(cls, spec: ArgSpec) -> Self:
        hints = get_type_hints(cls)
        specs = {f.name: f.metadata.get(_KEY) for f in dataclasses.fields(cls)}
        parameters = {}
        for name, values in spec.normalize_parameter_names().parameters.items():
            if name in hints and name in specs:
                values = _coerce(cls.name, name, values, hints[name], specs[name])
            parameters[name] = values
        return super().from_spec(ArgSpec(spec.name, parameters))

    def __post_init__(self) -> None:
        hints = get_type_hints(type(self))
        for f in dataclasses.fields(self):
            spec = f.metadata.get(_KEY)
            if spec is None:
                continue
            value = getattr(self, f.name)
            words = _type_words(hints[f.name], spec)
            if spec.at_least is not None and value < spec.at_least or (
                    spec.above is not None and value <= spec.above):
                raise PassOptionError(f"{self.name}: {f.name} must be {words}, not {value}")
            problem = spec.check(value) if spec.check is not None else None
            if problem is not None:
                raise PassOptionError(f"{self.name}: {problem}")


def describe_options(pass_class: type[ModulePass]) -> list[str]:
    """One line per option of `pass_class`: `name=default  doc (valid values)`."""
    hints = get_type_hints(pass_class)
    lines = []
    for f in dataclasses.fields(pass_class):
        spec = f.metadata.get(_KEY)
        if spec is None:
            continue
        default = f.default
        shown = (str(default).lower() if isinstance(default, bool)
                 else f'"{default}"' if isinstance(default, str) else str(default))
        lines.append(f"{f.name}={shown}: {spec.doc} ({_type_words(hints[f.name], spec)})")
    return lines


def pass_summary(pass_class: type[ModulePass]) -> str:
    """The first line of a pass's docstring."""
    return (pass_class.__doc__ or "").strip().splitlines()[0]
