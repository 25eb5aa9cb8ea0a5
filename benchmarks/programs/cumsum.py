# cumsum: inclusive running sum along each row, y[i, j] = sum_{k <= j} x[i, k]
def cumsum(x: bf16[M, N]):
    return ax.cumsum(x, axis=-1)
