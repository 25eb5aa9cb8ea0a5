"""Walk a parsed Axon source tree and build IR through the builder functions.

Values while walking are what the tracing API would see: `Tensor`s, Python numbers, size symbols
(IntExpr), tuples and lists, dtype specs and builder functions. Every mistake becomes a
`SourceError` at the node or operator that caused it.

The walk never recurses on the program: each rule that needs the value of a sub-expression (or of
an inlined function's body) is a generator that yields the request and receives the value, and
`Walker.drive` runs those generators on an explicit stack. A flat sum of any length, a chain of
unary minuses or a long chain of inlined calls costs heap, not Python stack.
"""

from __future__ import annotations

import difflib
import inspect
import re
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import Any, NoReturn

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from axon.dialects.ax.shapes import ShapeError
from axon.dialects.form.intexpr import IntExpr
from axon.frontend import builders
from axon.frontend.builders import BUILDERS, METHODS, Scalar, Tensor
from axon.frontend.diagnostics import SourceError, source_error
from axon.frontend.graph import GraphBuilder, build_function
from axon.frontend.numpy_subset.syntax import Node
from axon.frontend.numpy_subset.tokens import Token
from axon.frontend.specs import DTYPE_SPECS, DTypeSpec, TensorSpec

#: a step of the walk: yields what it needs (an expression as `(node, scope)`, or another task),
#: receives its value, and returns its own value (see `Walker.drive`)
Task = Generator[Any, Any, Any]

_BINARY = {"+": builders.add, "-": builders.subtract, "*": builders.multiply,
           "/": builders.divide, "@": builders.matmul, "**": builders.power,
           "<": builders.less, "<=": builders.less_equal, ">": builders.greater,
           ">=": builders.greater_equal, "==": builders.equal, "!=": builders.not_equal}
_NOT_IN_SUBSET = {"//": "floor division ('//') is not part of the Axon subset",
                  "%": "the modulo operator ('%') is not part of the Axon subset"}
#: errors a builder raises for a user's mistake (ShapeError and size-expression errors)
_USER_ERRORS = (ShapeError, ValueError, ZeroDivisionError, OverflowError)
_DIM_OPERATORS = frozenset({"+", "-", "*"})


class _AxNamespace:
    """The value of the name `ax`: `ax.exp` is `exp`."""


AX = _AxNamespace()


@dataclass
class FunctionDef:
    """A `def` of the file: its parameters' specs and its statements."""

    name: str
    node: Node
    params: list[tuple[str, TensorSpec]]
    body: list[Node]
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
        # expression kinds whose value needs no sub-expression, and those that do (tasks)
        self.leaves: dict[str, Callable[[Node, Scope], Any]] = {
            "name": self.eval_name, "number": self.eval_number, "string": self.eval_string,
            "true": self.eval_true, "false": self.eval_false, "none": self.eval_none,
            "empty_tuple": self.eval_empty_tuple}
        self.tasks: dict[str, Callable[[Node, Scope], Task]] = {
            "tuple": self.eval_tuple, "list": self.eval_list, "unary": self.eval_unary,
            "binop": self.eval_binop, "compare": self.eval_compare,
            "attribute": self.eval_attribute, "subscript": self.eval_subscript,
            "call": self.eval_call}

    # ---- the explicit stack -------------------------------------------------------------------
    def drive(self, task: Task) -> Any:
        """Run `task` to its value, and on the way every task it asks for, on one explicit stack.

        A task yields `(node, scope)` for the value of an expression (a leaf is evaluated at
        once; any other kind starts its own task) or yields a task; either way the value comes
        back as the result of its `yield`."""
        stack = [task]
        value: Any = None
        while True:
            try:
                request = stack[-1].send(value)
            except StopIteration as done:
                stack.pop()
                if not stack:
                    return done.value
                value = done.value
                continue
            if type(request) is tuple:
                node, scope = request
                while node.kind == "paren":
                    node = node.children[0]
                leaf = self.leaves.get(node.kind)
                if leaf is not None:
                    value = leaf(node, scope)
                    continue
                rule = self.tasks.get(node.kind)
                if rule is None:
                    self.fail("this expression is not part of the Axon subset", node)
                request = rule(node, scope)
            stack.append(request)
            value = None

    # ---- diagnostics ----------------------------------------------------------------------
    def fail(self, message: str, where: Node | Token) -> NoReturn:
        line, column = _position(where)
        raise source_error(message, self.text, self.filename, line, column)

    def guarded(self, where: Node | Token, fn: Callable[..., Any], *args: Any,
                **kwargs: Any) -> Any:
        """fn(*args, **kwargs), its user errors located at `where`."""
        try:
            return fn(*args, **kwargs)
        except SourceError:
            raise
        except _USER_ERRORS as err:
            self.fail(str(err), where)

    # ---- the file -------------------------------------------------------------------------
    def module(self, tree: Node) -> ModuleOp:
        """One func.func per top-level def, in order."""
        stmts: list[Node] = tree.children
        for stmt in stmts:
            if stmt.kind == "funcdef":
                self.all_defs.setdefault(str(stmt.children[0]), stmt.line)
        funcs = []
        for stmt in stmts:
            if stmt.kind == "funcdef":
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

    def declare(self, node: Node) -> FunctionDef:
        """Check a def's header: name, parameters and their annotations."""
        name_tok, params_node, _returns, suite = node.children
        name = str(name_tok)
        if name in self.defined:
            self.fail(f"function '{name}' is already defined on line "
                      f"{self.defined[name].node.line}", name_tok)
        params: list[tuple[str, TensorSpec]] = []
        seen: set[str] = set()
        for param in params_node.children if params_node is not None else []:
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
            if stmt.kind == "assign":
                for target in _targets(stmt.children[0]):
                    fdef.assigned.setdefault(str(target.children[0]), target.line)
        return fdef

    def build(self, fdef: FunctionDef, builder: GraphBuilder, args: list[SSAValue]
              ) -> list[SSAValue]:
        """The body of fdef's func.func: walk it with the parameters bound to the arguments."""
        symbols = {s for _, spec in fdef.params for s in spec.symbols()}
        scope = Scope(fdef, {p: Tensor(a, builder) for (p, _), a in zip(fdef.params, args,
                                                                       strict=True)},
                      {s: IntExpr.sym(s) for s in symbols})
        value, where = self.drive(self.run(scope))
        return self.guarded(where, builders.as_results, value, builder, fdef.name)

    # ---- annotations ----------------------------------------------------------------------
    def annotation(self, node: Node, param: str) -> TensorSpec:
        """`dtype[dims]` (or `ax.dtype[dims]`) as a TensorSpec."""
        usage = f"the annotation of '{param}' must be dtype[dims], like bf16[M, K] or f32[]"
        if node.kind != "subscript":
            self.fail(usage, node)
        base, items = node.children
        if base.kind == "attribute" and base.children[0].kind == "name" \
                and str(base.children[0].children[0]) == "ax":
            dtype_tok = base.children[1]
        elif base.kind == "name":
            dtype_tok = base.children[0]
        else:
            self.fail(usage, base)
        dtype = str(dtype_tok)
        if dtype not in DTYPE_SPECS:
            self.fail(f"unknown dtype '{dtype}' in the annotation of '{param}'; expected one of "
                      f"{', '.join(DTYPE_SPECS)}{_suggest(dtype, DTYPE_SPECS)}", dtype_tok)
        dim_nodes = [] if items is None else list(items.children)
        if len(dim_nodes) == 1 and dim_nodes[0].kind == "empty_tuple":
            dim_nodes = []
        dims = tuple(self.drive(self.dim(d, param)) for d in dim_nodes)
        return TensorSpec(dtype, dims)

    def dim(self, node: Node, param: str) -> Task:
        """A dim of an annotation: an integer, a size symbol, or + - * over them."""
        kind = node.kind
        if kind == "number" and re.fullmatch(r"\d+", str(node.children[0])):
            return IntExpr.const(int(str(node.children[0])))
        if kind == "name":
            return IntExpr.sym(str(node.children[0]))
        if kind == "paren":
            return (yield self.dim(node.children[0], param))
        if kind == "unary" and str(node.children[0]) == "-":
            value = -(yield self.dim(node.children[1], param))
        elif kind == "binop" and str(node.children[1]) in _DIM_OPERATORS:
            a, op, b = node.children
            lhs = yield self.dim(a, param)
            rhs = yield self.dim(b, param)
            value = lhs + rhs if op.text == "+" else lhs - rhs if op.text == "-" else lhs * rhs
        else:
            self.fail(f"a dim in the annotation of '{param}' must be an integer, a size symbol or "
                      f"an expression of them with + - *", node)
        if value.is_const and value.value < 0:
            self.fail(f"dim {value} in the annotation of '{param}' is negative", node)
        return value

    # ---- statements -----------------------------------------------------------------------
    def run(self, scope: Scope) -> Task:
        """Walk a body; its value is the returned value and the return statement."""
        returned: tuple[Any, Node] | None = None
        for stmt in scope.function.body:
            if returned is not None:
                self.fail("code after 'return' is not part of the Axon subset (it never runs)",
                          stmt)
            kind = stmt.kind
            if kind == "assign":
                target, value_node = stmt.children
                self.assign(target, (yield (value_node, scope)), scope, value_node)
            elif kind == "return_stmt":
                if stmt.children[1] is None:
                    self.fail("'return' needs a value: an Axon function returns tensors", stmt)
                returned = ((yield (stmt.children[1], scope)), stmt)
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

    def assign(self, target: Node, value: Any, scope: Scope, where: Node) -> None:
        names = _targets(target)
        if not names:
            self.fail("only names can be assigned in the Axon subset", target)
        if len(names) == 1 and target.kind == "name":
            scope.env[str(names[0].children[0])] = value
            return
        if not isinstance(value, tuple | list) or len(value) != len(names):
            count = len(value) if isinstance(value, tuple | list) else 1
            self.fail(f"cannot unpack {count} value(s) into {len(names)} names", where)
        for name, item in zip(names, value, strict=True):
            scope.env[str(name.children[0])] = item

    # ---- expressions: leaves ----------------------------------------------------------------
    def eval_name(self, node: Node, scope: Scope) -> Any:
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

    def eval_number(self, node: Node, scope: Scope) -> int | float:
        text = str(node.children[0])
        return int(text) if text.isdigit() else float(text)

    def eval_string(self, node: Node, scope: Scope) -> NoReturn:
        self.fail("string literals are not part of the Axon subset", node)

    def eval_true(self, node: Node, scope: Scope) -> bool:
        return True

    def eval_false(self, node: Node, scope: Scope) -> bool:
        return False

    def eval_none(self, node: Node, scope: Scope) -> None:
        return None

    def eval_empty_tuple(self, node: Node, scope: Scope) -> tuple[()]:
        return ()

    # ---- expressions: tasks (each `yield (node, scope)` is the value of a sub-expression) -----
    def eval_tuple(self, node: Node, scope: Scope) -> Task:
        items = []
        for child in node.children:
            items.append((yield (child, scope)))
        return tuple(items)

    def eval_list(self, node: Node, scope: Scope) -> Task:
        items = []
        for child in node.children:
            items.append((yield (child, scope)))
        return items

    def eval_unary(self, node: Node, scope: Scope) -> Task:
        op, operand = node.children
        value = yield (operand, scope)
        if op.text == "-":
            return self.guarded(op, builders.neg, value)
        if not isinstance(value, Tensor | int | float | IntExpr | Scalar):
            self.fail(f"unary '+' needs a tensor or a number, not {_describe(value)}", op)
        return value

    def eval_binop(self, node: Node, scope: Scope) -> Task:
        a, op, b = node.children
        if op.text in _NOT_IN_SUBSET:
            self.fail(_NOT_IN_SUBSET[op.text], op)
        lhs = yield (a, scope)
        rhs = yield (b, scope)
        return self.guarded(op, _BINARY[op.text], lhs, rhs)

    def eval_compare(self, node: Node, scope: Scope) -> Task:
        if len(node.children) > 3:
            self.fail("chained comparisons are not part of the Axon subset", node.children[3])
        a, op, b = node.children
        lhs = yield (a, scope)
        rhs = yield (b, scope)
        return self.guarded(op, _BINARY[op.text], lhs, rhs)

    def eval_attribute(self, node: Node, scope: Scope) -> Task:
        base_node, attr_tok = node.children
        base, attr = (yield (base_node, scope)), attr_tok.text
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

    def eval_subscript(self, node: Node, scope: Scope) -> Task:
        base_node, items = node.children
        base = yield (base_node, scope)
        item_nodes: list[Node] = [] if items is None else items.children
        where = item_nodes[0] if item_nodes else node
        if not item_nodes:
            self.fail("an empty index '[]' is only allowed in a 0-d annotation like f32[]", node)
        key_items: list[Any] = []
        for item in item_nodes:
            if item.kind == "ellipsis":
                key_items.append(Ellipsis)
            elif item.kind == "slice":
                bounds = []
                for bound in item.children:
                    bounds.append(None if bound is None else (yield (bound, scope)))
                key_items.append(slice(*bounds))
            else:
                key_items.append((yield (item, scope)))
        single = len(key_items) == 1
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

    def eval_call(self, node: Node, scope: Scope) -> Task:
        callee_node, arg_nodes = node.children
        callee = yield (callee_node, scope)
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for arg in [] if arg_nodes is None else arg_nodes.children:
            if arg.kind == "kwarg":
                key_tok, value_node = arg.children
                if key_tok.text in kwargs:
                    self.fail(f"keyword argument '{key_tok}' is repeated", key_tok)
                kwargs[key_tok.text] = yield (value_node, scope)
            else:
                if kwargs:
                    self.fail("a positional argument follows a keyword argument", arg)
                args.append((yield (arg, scope)))
        if isinstance(callee, FunctionDef):
            return (yield self.inline(callee, args, kwargs, node))
        if not callable(callee) or isinstance(callee, DTypeSpec | _AxNamespace):
            self.fail(f"{_describe(callee)} is not a function", callee_node)
        name = getattr(callee, "__name__", "function")
        signature = _signature(callee)
        try:
            signature.bind(*args, **kwargs)
        except TypeError as err:
            self.fail(f"wrong arguments to '{name}{signature}': {err}", node)
        return self.guarded(node, callee, *args, **kwargs)

    # ---- calls of earlier defs: inlined -----------------------------------------------------
    def inline(self, callee: FunctionDef, args: list[Any], kwargs: dict[str, Any],
               node: Node) -> Task:
        """Walk callee's body with its parameters bound to the arguments (sizes unified)."""
        signature = inspect.Signature([inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                                       for p, _ in callee.params])
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as err:
            self.fail(f"wrong arguments to '{callee.name}{signature}': {err}", node)
        sizes = self.unify(callee, bound.arguments, node)
        value, _ = yield self.run(Scope(callee, dict(bound.arguments), sizes))
        return value

    def unify(self, callee: FunctionDef, arguments: dict[str, Any], node: Node
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
def _position(where: Node | Token) -> tuple[int, int]:
    return where.line, where.column


def _small_statements(stmt: Node) -> Iterator[Node]:
    if stmt.kind == "simple_stmt":
        yield from stmt.children
    else:
        yield stmt


def _statements(suite: Node) -> Iterator[Node]:
    for child in suite.children:
        yield from _small_statements(child)


def _is_docstring(stmt: Node) -> bool:
    return stmt.kind == "expr_stmt" and stmt.children[0].kind == "string"


def _targets(target: Node) -> list[Node]:
    """The name nodes an assignment target binds; [] when it is not made of names."""
    while target.kind == "paren":
        target = target.children[0]
    if target.kind == "name":
        return [target]
    if target.kind == "tuple" and all(c.kind == "name" for c in target.children):
        return list(target.children)
    return []


def _signature(callee: Callable[..., Any]) -> inspect.Signature:
    """The plain signature of a builder function or a bound method (derived once per function:
    `inspect.signature` is slow next to the rest of a call)."""
    func = getattr(callee, "__func__", None)
    if func is None:
        return _function_signature(callee, False)
    return _function_signature(func, True)


@lru_cache(maxsize=1024)
def _function_signature(func: Callable[..., Any], bound: bool) -> inspect.Signature:
    signature = _plain(inspect.signature(func))
    if bound:  # a method's signature, seen through an instance: without `self`
        signature = signature.replace(parameters=list(signature.parameters.values())[1:])
    return signature


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
