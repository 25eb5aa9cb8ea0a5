"""The syntax tree of a NumPy-subset file, parsed from its tokens without recursion.

The grammar is a little wider than the subset (augmented assignment, `//`, `%`, nested defs,
top-level statements, strings) so the walker can reject those constructs with a located, specific
message:

    file         := stmt*
    stmt         := funcdef | simple_stmt
    funcdef      := "def" NAME "(" [param ("," param)* [","]] ")" ["->" test] ":" suite
    param        := NAME [":" test]
    suite        := simple_stmt | NEWLINE INDENT stmt+ DEDENT
    simple_stmt  := small_stmt (";" small_stmt)* [";"] NEWLINE
    small_stmt   := testlist "=" testlist | testlist AUGOP testlist | "return" [testlist]
                  | "pass" | testlist
    testlist     := test ("," test)* [","]               (a tuple when there is a comma)
    test         := arith (COMP_OP arith)*                (a compare when there is an operator)
    arith, term  := binary "+ -", then "* / @ // %", left-associative
    factor       := ("+" | "-") factor | postfix ["**" factor]
    postfix      := atom ("(" [arguments] ")" | "[" [subscripts] "]" | "." NAME)*
    atom         := NAME | NUMBER | STRING+ | True | False | None | "(" [testlist] ")"
                  | "[" [test ("," test)* [","]] "]"
    arguments    := (test | NAME "=" test) ("," ...)* [","]
    subscripts   := (test | [test] ":" [test] [":" [test]] | "...") ("," ...)* [","]

Statements are read by loops. Expressions are read by one loop over an explicit stack: operator
precedence for the operators, one frame per open bracket. No Python call recurses on the program's
shape, so a flat sum of any length parses; brackets may nest `MAX_NESTING` deep.

Nodes (`Node.kind`, then `children`): file [stmt...], funcdef [NAME, parameters?, returns?,
suite], parameters [param...], param [NAME, annotation?], suite [stmt...], simple_stmt
[small...], assign [target, value], augassign [target, AUGOP, value], return_stmt [RETURN,
value?], pass_stmt [], expr_stmt [value], tuple [item...], compare [a, op, b, op, c...], binop
[a, op, b], unary [op, operand], call [callee, arguments?], arguments [arg...], kwarg [NAME,
value], subscript [base, subscripts?], subscripts [item...], slice [lo?, hi?, step?], ellipsis
[], attribute [base, NAME], name [NAME], number [NUMBER], string [STRING...], true [], false [],
none [], empty_tuple [], paren [item], list [item...]. A missing optional part is None.
"""

from __future__ import annotations

from typing import Any, NoReturn

from axon.frontend.diagnostics import SourceError, source_error
from axon.frontend.numpy_subset.tokens import AUGMENTED, Token

MAX_NESTING = 200
"""Most brackets (parentheses, calls, subscripts, lists) an expression may nest, the limit CPython
sets too (its tokenizer's MAXLEVEL), so a program Python reads is never refused for it. The parser
and the walker keep explicit stacks, so they would take more; the bound keeps nested values (a list
of lists thousands deep) away from Python's recursive repr and comparisons."""

class Node:
    """A node of the syntax tree: its kind, its children and where its first token starts.

    The children are nodes, tokens and None (a missing optional part), by kind as the module
    docstring lists them; they are typed `Any` so that a rule can unpack them by position."""

    __slots__ = ("kind", "children", "line", "column")

    def __init__(self, kind: str, children: list[Any], line: int, column: int):
        self.kind = kind
        self.children = children
        self.line = line
        self.column = column

    def __repr__(self) -> str:
        return f"Node({self.kind!r} at {self.line}:{self.column})"


# binary operators: precedence (higher binds tighter) and the node they make
_BINARY = {"<": 1, "<=": 1, ">": 1, ">=": 1, "==": 1, "!=": 1,
           "+": 2, "-": 2,
           "*": 3, "/": 3, "@": 3, "//": 3, "%": 3,
           "**": 5}
_COMPARE = frozenset({"<", "<=", ">", ">=", "==", "!="})
_UNARY_PRECEDENCE = 4
_POWER = "**"
_ATOMS = {"NAME": "name", "NUMBER": "number", "True": "true", "False": "false", "None": "none"}
_STARTS_EXPRESSION = frozenset({"NAME", "NUMBER", "STRING", "True", "False", "None", "(", "[",
                                "+", "-"})
_TOKEN_WORDS = {"NEWLINE": "end of line", "INDENT": "indentation", "DEDENT": "end of block"}


def _at(token: Token | Node) -> tuple[int, int]:
    return token.line, token.column


class _Frame:
    """One open bracket of an expression (or the expression itself, kind "top"): the items read
    so far and the operator-precedence state of the item being read."""

    __slots__ = ("kind", "opener", "base", "items", "operands", "operators", "item_start",
                 "after_comma", "keyword", "slice_parts", "ellipsis")

    def __init__(self, kind: str, opener: Token | None, base: Node | None):
        self.kind = kind            # top | paren | list | call | subscript
        self.opener = opener        # the bracket token
        self.base = base            # the callee or the subscripted value
        self.items: list[Node] = []
        self.after_comma = False    # the last token was a ',' between items
        self.start_item()

    def start_item(self) -> None:
        self.operands: list[Node] = []
        # (precedence, operator token, is_unary)
        self.operators: list[tuple[int, Token, bool]] = []
        self.item_start: Token | None = None
        self.keyword: Token | None = None
        self.slice_parts: list[Node | None] | None = None
        self.ellipsis = False

    @property
    def part_is_empty(self) -> bool:
        return not self.operands and not self.operators and not self.ellipsis


class Parser:
    """Reads the tokens of one file into a tree of `Node`s; SourceError at the first mistake."""

    def __init__(self, tokens: list[Token], text: str, filename: str):
        self.tokens = tokens
        self.pos = 0
        self.text = text
        self.filename = filename

    # ---- tokens -----------------------------------------------------------------------------
    def peek(self) -> Token:
        token = self.tokens[self.pos]
        if token.kind == "ERROR":
            raise self.error(token.text, token)
        return token

    def next(self) -> Token:
        token = self.peek()
        self.pos += 1
        return token

    def expect(self, kind: str) -> Token:
        token = self.peek()
        if token.kind != kind:
            self.unexpected(token)
        self.pos += 1
        return token

    def error(self, message: str, where: Token | Node) -> SourceError:
        return source_error(message, self.text, self.filename, *_at(where))

    def unexpected(self, token: Token) -> NoReturn:
        """The syntax error for `token`, specific where the construct is known."""
        if token.kind == "END":
            raise self.error("unexpected end of file", self.end_of_file())
        if token.kind == "INDENT":
            raise self.error("unexpected indentation", token)
        if token.kind in _TOKEN_WORDS:
            raise self.error(f"invalid syntax: unexpected {_TOKEN_WORDS[token.kind]}", token)
        if token.kind == "@" and self._first_on_line(token):
            raise self.error("decorators are not part of the Axon subset", token)
        raise self.error(f"invalid syntax: unexpected {token.text!r}", token)

    def end_of_file(self) -> Token:
        """Where the end of the file is reported: just after its last line."""
        lines = self.text.splitlines() or [""]
        return Token("END", "", len(lines), len(lines[-1]) + 1)

    def _first_on_line(self, token: Token) -> bool:
        previous = self.tokens[self.pos - 1] if self.pos > 0 else None
        return previous is None or previous.kind in ("NEWLINE", "INDENT", "DEDENT")

    # ---- statements -------------------------------------------------------------------------
    def file(self) -> Node:
        """The whole file."""
        stmts = []
        while self.peek().kind != "END":
            stmts.append(self.statement())
        return Node("file", stmts, 1, 1)

    def statement(self) -> Node:
        if self.peek().kind == "def":
            return self.funcdef()
        return self.simple_stmt()

    def funcdef(self) -> Node:
        start = self.expect("def")
        name = self.expect("NAME")
        self.expect("(")
        params: Node | None = None
        if self.peek().kind != ")":
            first = self.peek()
            items: list[Any] = []
            while True:
                pname = self.expect("NAME")
                annotation = None
                if self.peek().kind == ":":
                    self.pos += 1
                    annotation = self.expression(allow_tuple=False)
                items.append(Node("param", [pname, annotation], *_at(pname)))
                if self.peek().kind != ",":
                    break
                self.pos += 1
                if self.peek().kind == ")":
                    break
            params = Node("parameters", items, *_at(first))
        self.expect(")")
        returns = None
        if self.peek().kind == "->":
            self.pos += 1
            returns = self.expression(allow_tuple=False)
        self.expect(":")
        return Node("funcdef", [name, params, returns, self.suite(start)], *_at(start))

    def suite(self, header: Token) -> Node:
        first = self.peek()
        if first.kind != "NEWLINE":
            return Node("suite", [self.simple_stmt()], *_at(first))
        self.pos += 1
        indent = self.peek()
        if indent.kind != "INDENT":
            raise self.error(f"expected an indented block after the 'def' on line {header.line}",
                             self.end_of_file() if indent.kind == "END" else indent)
        self.pos += 1
        stmts = [self.statement()]
        while self.peek().kind != "DEDENT":
            stmts.append(self.statement())
        self.pos += 1
        return Node("suite", stmts, *_at(stmts[0]))

    def simple_stmt(self) -> Node:
        first = self.peek()
        smalls = [self.small_stmt()]
        while self.peek().kind == ";":
            self.pos += 1
            if self.peek().kind == "NEWLINE":
                break
            smalls.append(self.small_stmt())
        self.expect("NEWLINE")
        return Node("simple_stmt", smalls, *_at(first))

    def small_stmt(self) -> Node:
        first = self.peek()
        if first.kind == "return":
            self.pos += 1
            value = None if self.peek().kind in ("NEWLINE", ";") \
                else self.expression(allow_tuple=True)
            return Node("return_stmt", [first, value], *_at(first))
        if first.kind == "pass":
            self.pos += 1
            return Node("pass_stmt", [], *_at(first))
        target = self.expression(allow_tuple=True)
        operator = self.peek()
        if operator.kind == "=":
            self.pos += 1
            return Node("assign", [target, self.expression(allow_tuple=True)], *_at(first))
        if operator.kind in AUGMENTED:
            self.pos += 1
            return Node("augassign", [target, operator, self.expression(allow_tuple=True)],
                        *_at(first))
        return Node("expr_stmt", [target], *_at(first))

    # ---- expressions ------------------------------------------------------------------------
    def expression(self, allow_tuple: bool) -> Node:
        """A test (or a testlist when `allow_tuple`), read by one loop: operands and operators
        on the current frame's stacks, a frame pushed for each open bracket and popped, as an
        operand of the frame below, when it closes."""
        frames = [_Frame("top", None, None)]
        expect_operand = True
        while True:
            frame = frames[-1]
            token = self.peek()
            kind = token.kind
            if frame.item_start is None:
                frame.item_start = token
            if expect_operand:
                if frame.part_is_empty and self.empty_part(frame, token):
                    if kind in (")", "]"):
                        node = self.close(frames, token)
                        frames[-1].operands.append(node)
                        expect_operand = False
                    continue
                if kind == "+" or kind == "-":
                    frame.operators.append((_UNARY_PRECEDENCE, token, True))
                    self.pos += 1
                    continue
                if kind in _ATOMS:
                    if kind == "NAME" and frame.kind == "call" and frame.part_is_empty \
                            and frame.keyword is None and self.tokens[self.pos + 1].kind == "=":
                        frame.keyword = token
                        self.pos += 2
                        continue
                    frame.operands.append(Node(_ATOMS[kind], [token] if kind in ("NAME", "NUMBER")
                                               else [], *_at(token)))
                elif kind == "STRING":
                    strings = [token]
                    while self.tokens[self.pos + 1].kind == "STRING":
                        self.pos += 1
                        strings.append(self.tokens[self.pos])
                    frame.operands.append(Node("string", list(strings), *_at(token)))
                elif kind == "(" or kind == "[":
                    self.open(frames, "paren" if kind == "(" else "list", token, None)
                    self.pos += 1
                    continue
                elif kind == "..." and frame.kind == "subscript" and frame.part_is_empty \
                        and frame.slice_parts is None:
                    frame.operands.append(Node("ellipsis", [], *_at(token)))
                    frame.ellipsis = True
                else:
                    self.unexpected(token)
                self.pos += 1
                expect_operand = False
                continue
            # an operand was just read: a postfix, a binary operator, or the end of the item
            if frame.ellipsis and kind != "," and kind != "]":
                self.unexpected(token)
            if kind == "(" or kind == "[":
                base = frame.operands.pop()
                self.open(frames, "call" if kind == "(" else "subscript", token, base)
                self.pos += 1
                expect_operand = True
                continue
            if kind == ".":
                self.pos += 1
                name = self.expect("NAME")
                base = frame.operands.pop()
                frame.operands.append(Node("attribute", [base, name], *_at(base)))
                continue
            if kind in _BINARY:
                precedence = _BINARY[kind]
                right = kind == _POWER
                operators = frame.operators
                while operators and (operators[-1][0] > precedence
                                     or (operators[-1][0] == precedence and not right)):
                    self.reduce(frame)
                frame.operators.append((precedence, token, False))
                self.pos += 1
                expect_operand = True
                continue
            item = self.finish_part(frame)
            if frame.kind == "top":
                if kind == "," and allow_tuple:
                    frame.items.append(item)
                    self.pos += 1
                    if self.peek().kind in _STARTS_EXPRESSION:
                        frame.start_item()
                        expect_operand = True
                        continue
                    return Node("tuple", list(frame.items), *_at(frame.items[0]))
                if frame.items:
                    frame.items.append(item)
                    return Node("tuple", list(frame.items), *_at(frame.items[0]))
                return item
            if not self.end_part(frame, token, item):
                self.unexpected(token)
            if kind in (")", "]"):
                node = self.close(frames, token)
                frames[-1].operands.append(node)
                expect_operand = False
            else:
                expect_operand = True

    def empty_part(self, frame: _Frame, token: Token) -> bool:
        """Handle `token` where the current item (or slice bound) has no tokens yet: a closing
        bracket after '(' or a trailing ',', or a slice bound left out. False when `token` must
        start an operand instead."""
        kind = token.kind
        if frame.kind == "subscript" and (kind == ":" or (frame.slice_parts is not None
                                                          and kind in (",", "]"))):
            return self.end_part(frame, token, None)
        if kind in (")", "]") and frame.kind != "top" and _CLOSER[frame.kind] == kind \
                and frame.keyword is None and frame.slice_parts is None \
                and (not frame.items or frame.after_comma):
            return True
        return False

    def end_part(self, frame: _Frame, token: Token, part: Node | None) -> bool:
        """The current item or slice bound ends at `token` (`,`, `:` or the closing bracket);
        False when `token` cannot end it."""
        kind = token.kind
        if kind == ":" and frame.kind == "subscript" and not frame.ellipsis:
            if frame.slice_parts is None:
                frame.slice_parts = [part]
            elif len(frame.slice_parts) < 2:
                frame.slice_parts.append(part)
            else:
                return False
            frame.operands, frame.operators = [], []
            self.pos += 1
            return True
        if kind != "," and kind != _CLOSER.get(frame.kind):
            return False
        if frame.slice_parts is not None:
            parts = [*frame.slice_parts, part]
            parts += [None] * (3 - len(parts))
            start = frame.item_start
            assert start is not None
            item: Node | None = Node("slice", parts, *_at(start))
        else:
            item = part
        assert item is not None
        if frame.keyword is not None:
            item = Node("kwarg", [frame.keyword, item], *_at(frame.keyword))
        frame.items.append(item)
        frame.start_item()
        frame.after_comma = kind == ","
        if kind == ",":
            self.pos += 1
        return True

    def finish_part(self, frame: _Frame) -> Node:
        """Reduce the operators of the current item: its one node."""
        while frame.operators:
            self.reduce(frame)
        (node,) = frame.operands
        return node

    def reduce(self, frame: _Frame) -> None:
        """Apply the top operator of `frame` to its operands."""
        _, operator, unary = frame.operators.pop()
        operands = frame.operands
        if unary:
            operands.append(Node("unary", [operator, operands.pop()], *_at(operator)))
            return
        rhs = operands.pop()
        lhs = operands.pop()
        if operator.kind in _COMPARE:
            if lhs.kind == "compare":  # a < b < c: one node, rejected by the walker
                lhs.children += [operator, rhs]
                operands.append(lhs)
                return
            operands.append(Node("compare", [lhs, operator, rhs], *_at(lhs)))
            return
        operands.append(Node("binop", [lhs, operator, rhs], *_at(lhs)))

    def open(self, frames: list[_Frame], kind: str, bracket: Token, base: Node | None) -> None:
        if len(frames) > MAX_NESTING:
            raise self.error(f"brackets nested more than {MAX_NESTING} deep; the Axon subset, "
                             f"like Python, allows at most {MAX_NESTING}", bracket)
        frames.append(_Frame(kind, bracket, base))

    def close(self, frames: list[_Frame], bracket: Token) -> Node:
        """Pop the innermost frame at its closing `bracket`: its node."""
        self.pos += 1
        frame = frames.pop()
        opener = frame.opener
        assert opener is not None
        items: list[Any] = list(frame.items)
        if frame.kind == "paren":
            if not items:
                return Node("empty_tuple", [], *_at(opener))
            inner = items[0] if len(items) == 1 and not frame.after_comma \
                else Node("tuple", items, *_at(frame.items[0]))
            return Node("paren", [inner], *_at(opener))
        if frame.kind == "list":
            return Node("list", items, *_at(opener))
        base = frame.base
        assert base is not None
        inner_kind = "arguments" if frame.kind == "call" else "subscripts"
        inner_node = Node(inner_kind, items, *_at(frame.items[0])) if items else None
        return Node(frame.kind, [base, inner_node], *_at(base))


_CLOSER = {"paren": ")", "list": "]", "call": ")", "subscript": "]"}


def parse_tree(tokens: list[Token], text: str, filename: str) -> Node:
    """The syntax tree of a file's tokens; SourceError at the first mistake."""
    return Parser(tokens, text, filename).file()
