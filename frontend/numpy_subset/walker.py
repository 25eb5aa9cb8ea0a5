"""Walk a parsed Axon source tree and build IR through the builder functions.

Values while walking are what the tracing API would see: `Tensor`s, Python numbers, size symbols
(IntExpr), tuples and lists, dtype specs and builder functions. Every mistake becomes a
`SourceError` at the node or operator that caused it.
"""

from __future__ import annotations

import difflib
import inspect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NoReturn

from lark import Token, Tree
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from axon.dialects.ax.shapes import ShapeError
from axon.dialects.form.intexpr import IntExpr
from axon.frontend import builders
from axon.frontend.builders import BUILDERS, METHODS, Scalar, Tensor
from axon.frontend.diagnostics import SourceError, source_error
from axon.frontend.graph import GraphBuilder, build_function
from axon.frontend.specs import DTYPE_SPECS, DTypeSpec, TensorSpec

Node = Tree | Token

_BINARY = {"+": builders.add, "-": builders.subtract, "*": builders.multiply,
           "/": builders.divide, "@": builders.matmul, "**": builders.power,
           "<": builders.less, "<=": builders.less_equal, ">": builders.greater,
           ">=": builders.greater_equal, "==": builders.equal, "!=": builders.not_equal}
_NOT_IN_SUBSET = {"//": "floor division ('//') is not part of the Axon subset",
                  "%": "the modulo operator ('%') is not part of the Axon subset"}
#: errors a builder raises for a user's mistake (ShapeError and size-expression errors)
_USER_ERRORS = (ShapeError, ValueError, ZeroDivisionError, OverflowError)


class _AxNamespace:
    """The value of the name `ax`: `ax.exp` is `exp`."""


AX = _AxNamespace()


@dataclass
class FunctionDef:
    """A `def` of the file: its parameters' specs and its statements."""

    name: str
    node: Tree
    params: list[tuple[str, TensorSpec]]
    body: list[Tree]
    #: local name -> line of its first assignment (to report use before assignment)
    assigned: dict[str, int] = field(default_factory=dict)


@dataclass
class Scope:
    """The names visible while walking one (possibly inlined) function body."""

    function: FunctionDef
    env: dict[str, Any]
    sizes: dict[str, IntExpr]


class Walker:
    """Builds a module from the tree of one file."""

    def __init__(self, text: str, filename: str):
        self.text = text
        self.filename = filename
        self.defined: dict[str, FunctionDef] = {}
        self.all_defs: dict[str, int] = {}

    # ---- diagnostics ----------------------------------------------------------------------
    def fail(self, message: str, where: Node) -> NoReturn:
        line, column = _position(where)
        raise source_error(message, self.text, self.filename, line, column)

    def guarded(self, where: Node, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """fn(*args, **kwargs), its user errors located at `where`."""
        try:
            return fn(*args, **kwargs)
        except SourceError:
            raise
        except _USER_ERRORS as err:
            self.fail(str(err), where)

    # ---- the file -------------------------------------------------------------------------
    def module(self, tree: Tree) -> ModuleOp:
        """One func.func per top-level def, in order."""
        stmts = [s for s in tree.children if isinstance(s, Tree)]
        for stmt in stmts:
            if stmt.data == "funcdef":
                self.all_defs.setdefault(str(stmt.children[0]), _position(stmt)[0])
        funcs = []
        for stmt in stmts:
            if stmt.data == "funcdef":
                fdef = self.declare(stmt)
                funcs.append(build_function(fdef.name, [s.bind({}) for _, s in fdef.params],
                                            partial(self.build, fdef),
                                            [name for name, _ in fdef.params]))
                self.defined[fdef.name] = fdef
            else:
                for small in _small_statements(stmt):
                    if not _is_docstring(small):
                        self.fail("only 'def' statements may appear at the top level of an Axon "
                                  "file", small)
        return ModuleOp(funcs)

    def declare(self, node: Tree) -> FunctionDef:
        """Check a def's header: name, parameters and their annotations."""
        name_tok, params_node, _returns, suite = node.children
        name = str(name_tok)
        if name in self.defined:
            self.fail(f"function '{name}' is already defined on line "
                      f"{_position(self.defined[name].node)[0]}", name_tok)
        params: list[tuple[str, TensorSpec]] = []
        seen: set[str] = set()
        for param in params_node.children if params_node is not None else []:
            if not isinstance(param, Tree):
                continue
            pname_tok, annotation = param.children
            pname = str(pname_tok)
            if pname in seen:
                self.fail(f"duplicate parameter name '{pname}' in function '{name}'", pname_tok)
            seen.add(pname)
            if annotation is None:
                self.fail(f"parameter '{pname}' needs a tensor annotation like f32[M, K]",
                          pname_tok)
            params.append((pname, self.annotation(annotation, pname)))
        body = list(_statements(suite))
        fdef = FunctionDef(name, node, params, body)
        for stmt in body:
            if stmt.data == "assign":
                for target in _targets(stmt.children[0]):
                    fdef.assigned.setdefault(str(target.children[0]), _position(target)[0])
        return fdef

    def build(self, fdef: FunctionDef, builder: GraphBuilder, args: list[SSAValue]
              ) -> list[SSAValue]:
        """The body of fdef's func.func: walk it with the parameters bound to the arguments."""
        symbols = {s for _, spec in fdef.params for s in spec.symbols()}
        scope = Scope(fdef, {p: Tensor(a, builder) for (p, _), a in zip(fdef.params, args,
                                                                       strict=True)},
                      {s: IntExpr.sym(s) for s in symbols})
        value, where = self.run(scope)
        return self.guarded(where, builders.as_results, value, builder, fdef.name)

    # ---- annotations ----------------------------------------------------------------------
    def annotation(self, node: Tree, param: str) -> TensorSpec:
        """`dtype[dims]` (or `ax.dtype[dims]`) as a TensorSpec."""
        usage = f"the annotation of '{param}' must be dtype[dims], like bf16[M, K] or f32[]"
        if node.data != "subscript":
            self.fail(usage, node)
        base, items = node.children
        if base.data == "attribute" and base.children[0].data == "name" \
                and str(base.children[0].children[0]) == "ax":
            dtype_tok = base.children[1]
        elif base.data == "name":
            dtype_tok = base.children[0]
        else:
            self.fail(usage, base)
        dtype = str(dtype_tok)
        if dtype not in DTYPE_SPECS:
            self.fail(f"unknown dtype '{dtype}' in the annotation of '{param}'; expected one of "
                      f"{', '.join(DTYPE_SPECS)}{_suggest(dtype, DTYPE_SPECS)}", dtype_tok)
        dim_nodes = [] if items is None else [c for c in items.children if isinstance(c, Tree)]
        if len(dim_nodes) == 1 and dim_nodes[0].data == "empty_tuple":
            dim_nodes = []
        dims = tuple(self.dim(d, param) for d in dim_nodes)
        return TensorSpec(dtype, dims)

    def dim(self, node: Tree, param: str) -> IntExpr:
        """A dim of an annotation: an integer, a size symbol, or + - * over them."""
        kind = node.data
        if kind == "number" and re.fullmatch(r"\d+", str(node.children[0])):
            return IntExpr.const(int(str(node.children[0])))
        if kind == "name":
            return IntExpr.sym(str(node.children[0]))
        if kind == "paren":
            return self.dim(node.children[0], param)
        if kind == "unary" and str(node.children[0]) == "-":
            value = -self.dim(node.children[1], param)
        elif kind == "binop" and str(node.children[1]) in "+-*":
            a, op, b = node.children
            lhs, rhs = self.dim(a, param), self.dim(b, param)
            value = lhs + rhs if op == "+" else lhs - rhs if op == "-" else lhs * rhs
        else:
            self.fail(f"a dim in the annotation of '{param}' must be an integer, a size symbol or "
                      f"an expression of them with + - *", node)
        if value.is_const and value.value < 0:
            self.fail(f"dim {value} in the annotation of '{param}' is negative", node)
        return value

    # ---- statements -----------------------------------------------------------------------
    def run(self, scope: Scope) -> tuple[Any, Node]:
        """Walk a body; the returned value and the return statement."""
        returned: tuple[Any, Node] | None = None
        for stmt in scope.function.body:
            if returned is not None:
                self.fail("code after 'return' is not part of the Axon subset (it never runs)",
                          stmt)
            kind = stmt.data
            if kind == "assign":
                target, value_node = stmt.children
                self.assign(target, self.eval(value_node, scope), scope, value_node)
            elif kind == "return_stmt":
                if stmt.children[1] is None:
                    self.fail("'return' needs a value: an Axon function returns tensors", stmt)
                returned = (self.eval(stmt.children[1], scope), stmt)
            elif kind == "augassign":
                op = stmt.children[1]
                self.fail(f"augmented assignment ('{op}') is not part of the Axon subset; write "
                          f"'x = x {str(op)[:-1]} ...'", op)
            elif kind == "funcdef":
                self.fail(f"nested functions are not part of the Axon subset; define "
                          f"'{stmt.children[0]}' at the top level", stmt)
            elif kind == "expr_stmt":
                if not _is_docstring(stmt):
                    self.fail("this expression's value is unused; assign it to a name or "
                              "return it", stmt)
            # pass_stmt: nothing to do
        if returned is None:
            self.fail(f"function '{scope.function.name}' has no 'return'; an Axon function "
                      f"returns one or more tensors", scope.function.node.children[0])
        return returned

    def assign(self, target: Tree, value: Any, scope: Scope, where: Node) -> None:
        names = _targets(target)
        if not names:
            self.fail("only names can be assigned in the Axon subset", target)
        if len(names) == 1 and target.data == "name":
            scope.env[str(names[0].children[0])] = value
            return
        if not isinstance(value, tuple | list) or len(value) != len(names):
            count = len(value) if isinstance(value, tuple | list) else 1
            self.fail(f"cannot unpack {count} value(s) into {len(names)} names", where)
        for name, item in zip(names, value, strict=True):
            scope.env[str(name.children[0])] = item

    # ---- expressions ----------------------------------------------------------------------
    def eval(self, node: Node, scope: Scope) -> Any:
        """The value of an expression node."""
        method = getattr(self, f"eval_{node.data}", None) if isinstance(node, Tree) else None
        if method is None:
            self.fail("this expression is not part of the Axon subset", node)
        return method(node, scope)

    def eval_name(self, node: Tree, scope: Scope) -> Any:
        name = str(node.children[0])
        if name in scope.env:
            return scope.env[name]
        if name in scope.function.assigned:
            self.fail(f"name '{name}' is used before it is assigned (on line "
                      f"{scope.function.assigned[name]})", node)
        if name in scope.sizes:
            return scope.sizes[name]
        if name in self.defined:
            return self.defined[name]
        if name in self.all_defs:
            if name == scope.function.name:
                self.fail(f"recursion ('{name}' calling itself) is not part of the Axon subset",
                          node)
            self.fail(f"function '{name}' is defined below (line {self.all_defs[name]}); a "
                      f"function can only call functions defined above it", node)
        if name in BUILDERS:
            return BUILDERS[name]
        if name in DTYPE_SPECS:
            return DTYPE_SPECS[name]
        if name == "ax":
            return AX
        known = [*scope.env, *scope.sizes, *self.defined, *BUILDERS, *DTYPE_SPECS, "ax"]
        self.fail(f"unknown name '{name}'{_suggest(name, known)}", node)

    def eval_number(self, node: Tree, scope: Scope) -> int | float:
        text = str(node.children[0])
        return int(text) if text.isdigit() else float(text)

    def eval_string(self, node: Tree, scope: Scope) -> NoReturn:
        self.fail("string literals are not part of the Axon subset", node)

    def eval_true(self, node: Tree, scope: Scope) -> bool:
        return True

    def eval_false(self, node: Tree, scope: Scope) -> bool:
        return False

    def eval_none(self, node: Tree, scope: Scope) -> None:
        return None

    def eval_empty_tuple(self, node: Tree, scope: Scope) -> tuple[()]:
        return ()

    def eval_paren(self, node: Tree, scope: Scope) -> Any:
        return self.eval(node.children[0], scope)

    def eval_tuple(self, node: Tree, scope: Scope) -> tuple[Any, ...]:
        return tuple(self.eval(c, scope) for c in node.children if c is not None)

    def eval_list(self, node: Tree, scope: Scope) -> list[Any]:
        return [self.eval(c, scope) for c in node.children if c is not None]

    def eval_unary(self, node: Tree, scope: Scope) -> Any:
        op, operand = node.children
        value = self.eval(operand, scope)
        if str(op) == "-":
            return self.guarded(op, builders.neg, value)
        if not isinstance(value, Tensor | int | float | IntExpr | Scalar):
            self.fail(f"unary '+' needs a tensor or a number, not {_describe(value)}", op)
        return value

    def eval_binop(self, node: Tree, scope: Scope) -> Any:
        a, op, b = node.children
        if str(op) in _NOT_IN_SUBSET:
            self.fail(_NOT_IN_SUBSET[str(op)], op)
        lhs, rhs = self.eval(a, scope), self.eval(b, scope)
        return self.guarded(op, _BINARY[str(op)], lhs, rhs)

    def eval_compare(self, node: Tree, scope: Scope) -> Any:
        if len(node.children) > 3:
            self.fail("chained comparisons are not part of the Axon subset", node.children[3])
        a, op, b = node.children
        lhs, rhs = self.eval(a, scope), self.eval(b, scope)
        return self.guarded(op, _BINARY[str(op)], lhs, rhs)

    def eval_attribute(self, node: Tree, scope: Scope) -> Any:
        base_node, attr_tok = node.children
        base, attr = self.eval(base_node, scope), str(attr_tok)
        if base is AX:
            if attr in BUILDERS:
                return BUILDERS[attr]
            if attr in DTYPE_SPECS:
                return DTYPE_SPECS[attr]
            self.fail(f"unknown function 'ax.{attr}'"
                      f"{_suggest(attr, [*BUILDERS, *DTYPE_SPECS], 'ax.')}", attr_tok)
        if isinstance(base, Tensor):
            if attr == "T":
                return self.guarded(attr_tok, builders.transpose, base)
            if attr == "shape":
                return base.shape
            if attr == "ndim":
                return base.ndim
            if attr == "dtype":
                return DTYPE_SPECS[base.dtype]
            if attr in METHODS:
                return getattr(base, attr)
            known = ["T", "shape", "ndim", "dtype", *METHODS]
            self.fail(f"tensors have no attribute '{attr}' in the Axon subset"
                      f"{_suggest(attr, known)}", attr_tok)
        self.fail(f"{_describe(base)} has no attribute '{attr}'", attr_tok)

    def eval_subscript(self, node: Tree, scope: Scope) -> Any:
        base_node, items = node.children
        base = self.eval(base_node, scope)
        item_nodes = [] if items is None else [c for c in items.children if isinstance(c, Tree)]
        where = item_nodes[0] if item_nodes else node
        if not item_nodes:
            self.fail("an empty index '[]' is only allowed in a 0-d annotation like f32[]", node)
        key_items = [self.index_item(c, scope) for c in item_nodes]
        single = len(key_items) == 1 and items is not None and len(items.children) == 1
        key = key_items[0] if single else tuple(key_items)
        if isinstance(base, Tensor):
            return self.guarded(where, builders.getitem, base, key)
        if isinstance(base, tuple | list) and single and isinstance(key, int) \
                and not isinstance(key, bool):
            if not -len(base) <= key < len(base):
                self.fail(f"index {key} is out of range for {_describe(base)}", where)
            return base[key]
        if isinstance(base, DTypeSpec):
            self.fail("a tensor type like f32[M] is only allowed as a parameter annotation", node)
        self.fail(f"{_describe(base)} cannot be indexed with {_describe(key)}", where)

    def index_item(self, node: Tree, scope: Scope) -> Any:
        if node.data == "ellipsis":
            return Ellipsis
        if node.data == "slice":
            lo, hi, step = (None if c is None else self.eval(c, scope) for c in node.children)
            return slice(lo, hi, step)
        return self.eval(node, scope)

    def eval_call(self, node: Tree, scope: Scope) -> Any:
        callee_node, arg_nodes = node.children
        callee = self.eval(callee_node, scope)
        args, kwargs = self.arguments(arg_nodes, scope)
        if isinstance(callee, FunctionDef):
            return self.inline(callee, args, kwargs, node)
        if not callable(callee) or isinstance(callee, DTypeSpec | _AxNamespace):
            self.fail(f"{_describe(callee)} is not a function", callee_node)
        name = getattr(callee, "__name__", "function")
        signature = _plain(inspect.signature(callee))
        try:
            signature.bind(*args, **kwargs)
        except TypeError as err:
            self.fail(f"wrong arguments to '{name}{signature}': {err}", node)
        return self.guarded(node, callee, *args, **kwargs)

    def arguments(self, arg_nodes: Tree | None, scope: Scope) -> tuple[list[Any], dict[str, Any]]:
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for arg in [] if arg_nodes is None else [c for c in arg_nodes.children if c is not None]:
            if arg.data == "kwarg":
                key_tok, value_node = arg.children
                if str(key_tok) in kwargs:
                    self.fail(f"keyword argument '{key_tok}' is repeated", key_tok)
                kwargs[str(key_tok)] = self.eval(value_node, scope)
            else:
                if kwargs:
                    self.fail("a positional argument follows a keyword argument", arg)
                args.append(self.eval(arg, scope))
        return args, kwargs

    # ---- calls of earlier defs: inlined -----------------------------------------------------
    def inline(self, callee: FunctionDef, args: list[Any], kwargs: dict[str, Any],
               node: Tree) -> Any:
        """Walk callee's body with its parameters bound to the arguments (sizes unified)."""
        signature = inspect.Signature([inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                                       for p, _ in callee.params])
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as err:
            self.fail(f"wrong arguments to '{callee.name}{signature}': {err}", node)
        sizes = self.unify(callee, bound.arguments, node)
        value, _ = self.run(Scope(callee, dict(bound.arguments), sizes))
        return value

    def unify(self, callee: FunctionDef, arguments: dict[str, Any], node: Tree
              ) -> dict[str, IntExpr]:
        """Size symbols of callee's annotations, read off the argument shapes."""
        sizes: dict[str, IntExpr] = {}
        for pname, spec in callee.params:
            value = arguments[pname]
            if not isinstance(value, Tensor):
                self.fail(f"argument '{pname}' of '{callee.name}' must be a tensor, not "
                          f"{_describe(value)}", node)
            if value.dtype != spec.dtype or value.ndim != len(spec.dims):
                self.fail(f"argument '{pname}' of '{callee.name}' is {value.type}, which does not "
                          f"match its annotation {spec}", node)
            for dim, actual in zip(spec.dims, value.shape, strict=True):
                symbol = dim.as_symbol
                if symbol is not None:
                    sizes.setdefault(symbol, actual)
        for pname, spec in callee.params:
            value = arguments[pname]
            for dim, actual in zip(spec.dims, value.shape, strict=True):
                unbound = dim.symbols() - set(sizes)
                if unbound:
                    self.fail(f"cannot tell size {', '.join(sorted(unbound))} of "
                              f"'{callee.name}' from its arguments", node)
                if dim.substitute(sizes) != actual:
                    shown = ", ".join(f"{k} = {v}" for k, v in sizes.items())
                    self.fail(f"argument '{pname}' of '{callee.name}' is {value.type}, which does "
                              f"not match its annotation {spec} (with {shown})", node)
        return sizes


# ---- tree helpers ------------------------------------------------------------------------------
def _position(node: Node) -> tuple[int, int]:
    if isinstance(node, Token):
        return node.line or 1, node.column or 1
    meta = node.meta
    return (getattr(meta, "line", 1) or 1), (getattr(meta, "column", 1) or 1)


def _small_statements(stmt: Tree) -> Iterator[Tree]:
    if stmt.data == "simple_stmt":
        yield from (c for c in stmt.children if isinstance(c, Tree))
    else:
        yield stmt


def _statements(suite: Tree) -> Iterator[Tree]:
    for child in suite.children:
        if isinstance(child, Tree):
            yield from _small_statements(child)


def _is_docstring(stmt: Tree) -> bool:
    return stmt.data == "expr_stmt" and isinstance(stmt.children[0], Tree) \
        and stmt.children[0].data == "string"


def _targets(target: Tree) -> list[Tree]:
    """The name nodes an assignment target binds; [] when it is not made of names."""
    if target.data == "paren":
        return _targets(target.children[0])
    if target.data == "name":
        return [target]
    if target.data == "tuple":
        items = [c for c in target.children if c is not None]
        if all(isinstance(c, Tree) and c.data == "name" for c in items):
            return items
    return []


def _plain(signature: inspect.Signature) -> inspect.Signature:
    """The signature without annotations, as a user would read it: `softmax(x, axis=-1)`."""
    empty = inspect.Parameter.empty
    return signature.replace(parameters=[p.replace(annotation=empty)
                                         for p in signature.parameters.values()],
                             return_annotation=empty)


def _suggest(name: str, known: Any, prefix: str = "") -> str:
    close = difflib.get_close_matches(name, sorted(set(known)), n=3, cutoff=0.7)
    if not close:
        return ""
    return "; did you mean " + " or ".join(f"'{prefix}{c}'" for c in close) + "?"


def _describe(value: Any) -> str:
    if isinstance(value, Tensor):
        return f"a tensor {value.type}"
    if isinstance(value, FunctionDef):
        return f"function '{value.name}'"
    if isinstance(value, DTypeSpec):
        return f"the dtype {value.name}"
    if value is AX:
        return "'ax'"
    if isinstance(value, IntExpr):
        return f"the size {value}"
    if callable(value):
        return f"function '{getattr(value, '__name__', value)}'"
    if isinstance(value, tuple | list):
        return f"the {type(value).__name__} {value!r}"
    return f"{type(value).__name__} {value!r}"
