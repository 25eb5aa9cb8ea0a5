"""Fuzz the source frontend: mutated programs give a verified module or a SourceError, never
another exception (no traceback reaches a user)."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from axon.frontend.diagnostics import SourceError
from axon.frontend.numpy_subset import parse_source

INLINE_PROGRAMS = [
    """\
# rmsnorm followed by a matmul
def rmsnorm_matmul(x: bf16[M, K], g: bf16[K], w: bf16[K, N]):
    ms = mean(x * x, axis=-1, keepdims=True)
    y = x * rsqrt(ms + 1e-6) * g
    return y @ w
""",
    """\
def attn(q: f32[B, S, D], k: f32[B, T, D], v: f32[B, T, E]):
    s = ax.softmax(q @ transpose(k, (0, 2, 1)) / sqrt(D), axis=-1)
    return s @ v, attention(q, k, v, causal=True)
""",
    """\
def shapes(x: f16[M, 2*N], y: f16[M, 3]):
    a = x[1:, ::2]
    b = concatenate([x, y], axis=-1).T
    c = reshape(x, [-1, 2])
    return a, b, c, x.sum(axis=(0, 1)), where(x > 0, x, 0.0), cumsum(x, 0)
""",
    """\
def helper(x: f32[R, C]):
    return layernorm(x, ones([C]), zeros([C]), eps=1e-5)

def main(a: f32[4, N], b: i32[N]):
    h = helper(a)
    return gelu_tanh(h) ** 2, astype(b, f32) + iota([N], 0, f32), -h, maximum(h, 1)
""",
]
BENCHMARKS = sorted((Path(__file__).resolve().parents[2] / "benchmarks" / "programs").glob("*.py"))
PROGRAMS = INLINE_PROGRAMS + [p.read_text() for p in BENCHMARKS]

INSERTS = ["for ", "while ", "if ", "else:", "import ", "lambda ", "class ", "+=", "//", "%",
           "(", ")", "[", "]", ",", ":", "=", "**", "@", ".T", "\n", "    ", "\t", "'", "{",
           "-1", "0", "2*", "None", "True", "return ", "def ", "...", "axis=", "keepdims=True",
           "ax.", "exp(", "q", "M", "K + 1", "f64", "bf16[", "#", "\\\n", "1e-6", "x", " and "]
TOKEN = re.compile(r"[A-Za-z_][A-Za-z_0-9]*|\d+(?:\.\d*)?(?:e-?\d+)?|\*\*|//|\S|\s+")
NAMES = ["x", "y", "w", "g", "M", "K", "N", "D", "exp", "softmax", "sum", "mean", "f32", "bf16",
         "i1", "ax", "zz", "reshape", "T", "attention", "matmul", "where", "iota"]


@st.composite
def mutated_program(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(PROGRAMS))
    for _ in range(draw(st.integers(1, 3))):
        tokens = TOKEN.findall(text)
        if not tokens:
            break
        i = draw(st.integers(0, len(tokens) - 1))
        kind = draw(st.sampled_from(["delete", "duplicate", "swap", "insert", "rename",
                                     "redim", "char"]))
        if kind == "delete":
            del tokens[i]
        elif kind == "duplicate":
            tokens.insert(i, tokens[i])
        elif kind == "swap" and i + 1 < len(tokens):
            tokens[i], tokens[i + 1] = tokens[i + 1], tokens[i]
        elif kind == "insert":
            tokens.insert(i, draw(st.sampled_from(INSERTS)))
        elif kind == "rename" and re.fullmatch(r"[A-Za-z_]\w*", tokens[i]):
            tokens[i] = draw(st.sampled_from(NAMES))
        elif kind == "redim" and re.fullmatch(r"\d+|[A-Z]\w*", tokens[i]):
            tokens[i] = draw(st.sampled_from(["1", "2", "3", "0", "M", "K", "2*K", "N + 1"]))
        elif kind == "char":
            pos = draw(st.integers(0, len(text)))
            text = text[:pos] + text[pos + 1:]
            continue
        text = "".join(tokens)
    return text


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutated_program())
def test_mutations_give_module_or_source_error(text: str) -> None:
    try:
        module = parse_source(text, "fuzz.py")
    except SourceError as err:
        first = str(err).split("\n", 1)[0]
        assert re.match(r"fuzz\.py:\d+:\d+: error: ", first), first
        return
    module.verify()


def test_unmutated_programs_parse() -> None:
    for text in PROGRAMS:
        parse_source(text, "prog.py").verify()
