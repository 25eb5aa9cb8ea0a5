"""The source frontend builds the same IR as the tracing API, and reports located errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from axon.frontend import api as ax
from axon.frontend.diagnostics import SourceError
from axon.frontend.numpy_subset import parse_file, parse_source

RMSNORM_MATMUL = """\
# rmsnorm followed by a matmul
def rmsnorm_matmul(x: bf16[M, K], g: bf16[K], w: bf16[K, N]):
    ms = mean(x * x, axis=-1, keepdims=True)
    y = x * rsqrt(ms + 1e-6) * g
    return y @ w
"""


def _api_rmsnorm_matmul(x, g, w):
    ms = ax.mean(x * x, axis=-1, keepdims=True)
    y = x * ax.rsqrt(ms + 1e-6) * g
    return y @ w


MIXED = """\
def mixed(q: f32[S, 2*D], k: f32[S, 2*D], m: i32[S]):
    \"\"\"A docstring is allowed.\"\"\"
    s = ax.softmax(q[:, :D] @ k[:, D:].T / sqrt(D), axis=-1)
    c = concatenate([s, s], axis=1)
    r = reshape(c, [-1])
    t = transpose(broadcast_to(m, (2, S)), (1, 0))
    return r, c.sum(axis=0, keepdims=True), where(t > 1, t, 0), log_softmax(q), cumsum(q, 0)
"""


def _api_mixed(q, k, m):
    D = q.shape[1].floordiv(2)  # noqa: N806 - the size symbol's name
    s = ax.softmax(q[:, :D] @ k[:, D:].T / ax.sqrt(D), axis=-1)
    c = ax.concatenate([s, s], axis=1)
    r = ax.reshape(c, [-1])
    t = ax.transpose(ax.broadcast_to(m, (2, "S")), (1, 0))
    return r, c.sum(axis=0, keepdims=True), ax.where(t > 1, t, 0), ax.log_softmax(q), \
        ax.cumsum(q, 0)


@pytest.mark.parametrize("text, fn, specs", [
    (RMSNORM_MATMUL, _api_rmsnorm_matmul, [ax.bf16["M", "K"], ax.bf16["K"], ax.bf16["K", "N"]]),
    (MIXED, _api_mixed, [ax.f32["S", "2*D"], ax.f32["S", "2*D"], ax.i32["S"]]),
])
def test_source_and_api_build_identical_ir(text, fn, specs):
    from_source = parse_source(text, "prog.py")
    name = text.split("def ", 1)[1].split("(", 1)[0]
    from_api = ax.trace(fn, *specs, name=name).to_module()
    assert str(from_source) == str(from_api)


def test_earlier_def_is_inlined_with_sizes_unified():
    text = """\
def norm(x: f32[R, C]):
    return x / sum(x, axis=-1, keepdims=True)

def caller(a: f32[4, N], b: f32[4, N]):
    p, q = norm(a), norm(b)
    return p + q
"""
    module = parse_source(text)
    caller = list(module.ops)[1]
    assert [op.name for op in caller.body.block.ops].count("ax.sum") == 2


def test_every_benchmark_program_parses():
    root = Path(__file__).resolve().parents[2]
    programs = sorted((root / "benchmarks" / "programs").glob("*.py"))
    for path in programs:
        parse_file(path).verify()


ERRORS = [
    # (name, source, line, col, message fragment)
    ("syntax", "def f(x: f32[M]):\n    y = (x +\n    return y\n", 3, 5,
     "invalid syntax: unexpected 'return'"),
    ("for", "def f(x: f32[M]):\n    for i in x:\n        pass\n    return x\n", 2, 5,
     "'for' loops are not part of the Axon subset"),
    ("while", "def f(x: f32[M]):\n    while x:\n        pass\n    return x\n", 2, 5,
     "'while' loops"),
    ("if", "def f(x: f32[M]):\n    if x:\n        x = x\n    return x\n", 2, 5,
     "'if' statements"),
    ("class", "class A:\n    pass\n", 1, 1, "classes are not part"),
    ("import", "import numpy as np\n", 1, 1, "imports are not part"),
    ("lambda", "def f(x: f32[M]):\n    g = lambda a: a\n    return x\n", 2, 9, "'lambda'"),
    ("with", "def f(x: f32[M]):\n    with x:\n        pass\n    return x\n", 2, 5, "'with'"),
    ("try", "def f(x: f32[M]):\n    try:\n        x = x\n    except E:\n        pass\n", 2, 5,
     "exception handling"),
    ("comprehension", "def f(x: f32[M]):\n    return [a for a in x]\n", 2, 15, "comprehensions"),
    ("global", "def f(x: f32[M]):\n    global y\n    return x\n", 2, 5, "'global'"),
    ("augmented", "def f(x: f32[M]):\n    x += 1\n    return x\n", 2, 7,
     "augmented assignment ('+=')"),
    ("unknown function", "def f(x: f32[M]):\n    return expp(x)\n", 2, 12,
     "unknown name 'expp'; did you mean 'exp'?"),
    ("unknown variable", "def f(x: f32[M]):\n    return exp(y)\n", 2, 16, "unknown name 'y'"),
    ("arity", "def f(x: f32[M]):\n    return exp(x, x)\n", 2, 12,
     "wrong arguments to 'exp(x)': too many positional arguments"),
    ("keyword", "def f(x: f32[M]):\n    return softmax(x, axs=0)\n", 2, 12,
     "unexpected keyword argument 'axs'"),
    ("shape operator", "def f(x: f32[M], y: f32[K]):\n    return x + y\n", 2, 14,
     "cannot broadcast operand #1 (rhs) dim 0 (K)"),
    ("shape call", "def f(x: f32[M, K], y: f32[M, K]):\n    return matmul(x, y)\n", 2, 12,
     "contracted dims differ"),
    ("bad annotation", "def f(x: f32):\n    return x\n", 1, 10, "must be dtype[dims]"),
    ("missing annotation", "def f(x):\n    return x\n", 1, 7, "needs a tensor annotation"),
    ("undefined dtype", "def f(x: f64[M]):\n    return x\n", 1, 10, "unknown dtype 'f64'"),
    ("used before assignment", "def f(x: f32[M]):\n    z = y\n    y = x\n    return z\n", 2, 9,
     "name 'y' is used before it is assigned (on line 3)"),
    ("missing return", "def f(x: f32[M]):\n    y = x\n", 1, 5, "has no 'return'"),
    ("duplicate parameter", "def f(x: f32[M], x: f32[M]):\n    return x\n", 1, 18,
     "duplicate parameter name 'x'"),
    ("dtype mix", "def f(x: f32[M], y: bf16[M]):\n    return x * y\n", 2, 14,
     "element type bf16, expected f32"),
    ("floor division", "def f(x: f32[M]):\n    return x // 2\n", 2, 14, "floor division"),
    ("string", "def f(x: f32[M]):\n    return 'x'\n", 2, 12, "string literals"),
    ("top level", "y = 1\n", 1, 1, "only 'def' statements"),
    ("dedent", "def f(x: f32[M]):\n        y = x\n    return y\n", 3, 5, "unindent"),
    ("call order", "def f(x: f32[M]):\n    return g(x)\ndef g(x: f32[M]):\n    return x\n",
     2, 12, "defined below"),
    ("inline mismatch", "def g(x: f32[M, M]):\n    return x\ndef f(x: f32[A, B]):\n"
     "    return g(x)\n", 4, 12, "does not match its annotation"),
]


@pytest.mark.parametrize("name, text, line, col, fragment", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_are_located(name, text, line, col, fragment):
    with pytest.raises(SourceError) as info:
        parse_source(text, "prog.py")
    err = info.value
    first, source_line, caret = str(err).split("\n")
    assert first.startswith(f"prog.py:{line}:{col}: error: "), str(err)
    assert fragment in first, str(err)
    assert source_line == text.splitlines()[line - 1]
    assert caret == " " * (col - 1) + "^"
    assert "Traceback" not in str(err)
