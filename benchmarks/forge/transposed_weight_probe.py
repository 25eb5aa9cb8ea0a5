"""Where a raised GEMM's time goes: the host function's copy of a transposed weight.

A KernelBench linear layer's kernel reads `W^T` through strides (`w.stride(1), w.stride(0)`):
the raised path passes that view, and the emitted host function makes its inputs row-major
(`.contiguous()`), a transposing copy of W every call. This probe times, on the GPU, that copy
alone, the raised host function on the view (copy included), the same on a row-major `W^T`
made once, and torch's `relu(linear(x))`, on one problem's sizes:

    python -m axon.benchmarks.forge.transposed_weight_probe RAISED_MODULE HOST_FUNCTION

(`RAISED_MODULE`: a raised candidate written by `axon forge --paths raised -o DIR`, e.g. 01's.)
Timing by `triton.testing.do_bench` (median ms, L2 cleared between runs).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys


def main(argv: list[str] | None = None) -> None:
    import torch
    import torch.nn.functional as F
    from triton.testing import do_bench

    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("module")
    parser.add_argument("host")
    parser.add_argument("--sizes", default="2048,4096,4096", help="M,K,N (01's)")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        sys.exit("transposed_weight_probe: needs a GPU")
    spec = importlib.util.spec_from_file_location("raised_probe", args.module)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    host = getattr(module, args.host)
    m, k, n = (int(s) for s in args.sizes.split(","))
    torch.manual_seed(0)
    x = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
    w = torch.randn(n, k, dtype=torch.bfloat16, device="cuda") * 0.02
    b = torch.randn(n, dtype=torch.bfloat16, device="cuda")
    y = torch.empty(m, n, dtype=torch.bfloat16, device="cuda")
    view = w.t()
    made = view.contiguous()
    want = torch.relu(F.linear(x, w, b))
    host(x, view, b, out=(y,))
    err = (y.float() - want.float()).abs().max().item()
    rows = [("W^T copy alone (.contiguous())", lambda: view.contiguous()),
            ("raised host on the view (copy inside)", lambda: host(x, view, b, out=(y,))),
            ("raised host on W^T made once", lambda: host(x, made, b, out=(y,))),
            ("torch relu(linear(x))", lambda: torch.relu(F.linear(x, w, b)))]
    print(f"{torch.cuda.get_device_name()}; M={m} K={k} N={n} bf16; max |raised - torch| "
          f"{err:.3g}")
    for name, fn in rows:
        print(f"{name:<40}{do_bench(fn, warmup=25, rep=200):>9.4f} ms")


if __name__ == "__main__":
    main()
