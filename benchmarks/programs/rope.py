# rope: rotary embedding on interleaved pairs (x[2i], x[2i+1]) of each head, angles per token:
# out[2i] = x[2i] * cos[i] - x[2i+1] * sin[i], out[2i+1] = x[2i] * sin[i] + x[2i+1] * cos[i]
def rope(x: bf16[T, H, 2*D2], cos: bf16[T, D2], sin: bf16[T, D2]):
    # stop 2*D2 - 1 rather than the end selects the same elements; the extent of 0::2 would be
    # (2*D2 + 1) floordiv 2, which the integer-expression canonicalizer does not reduce to D2
    x_even = x[:, :, 0:2*D2 - 1:2]
    x_odd = x[:, :, 1::2]
    c = reshape(cos, [T, 1, D2])
    s = reshape(sin, [T, 1, D2])
    out_even = x_even * c - x_odd * s
    out_odd = x_even * s + x_odd * c
    pairs = concatenate([reshape(out_even, [T, H, D2, 1]), reshape(out_odd, [T, H, D2, 1])], axis=3)
    return reshape(pairs, [T, H, 2*D2])
