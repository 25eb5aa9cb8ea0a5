# relu: elementwise max(x, 0)
def relu(x: bf16[M, N]):
    return ax.relu(x)
