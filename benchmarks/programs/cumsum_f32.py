# cumsum_f32: inclusive running sum along each row in float32 (benchmarks.md times cumsum in fp32 too)
def cumsum_f32(x: f32[M, N]):
    return cumsum(x, axis=-1)
