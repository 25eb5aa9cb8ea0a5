"""The PyTorch frontend: a KernelBench-format problem captured with `torch.export` into `ax`.

    problem = load_problem_file(path, sizes={"batch_size": 33})   # RUNS the file's Python
    captured = capture_problem(problem)                             # func.func @forward
    python -m axon.frontend.torch PROBLEM.py [-o out.mlir] [--size NAME=VALUE ...]

Importing a problem executes it (its imports, `Model.__init__`, `get_inputs`, and `forward` under
torch.export's tracing), so this frontend is only for files you would run yourself; the NumPy-subset
frontend parses its input and never runs it, and never hands a file to this one.
"""

from axon.frontend.torch.aten import ATEN
from axon.frontend.torch.capture import (
    CapturedProblem,
    LoadedProblem,
    TorchFrontendError,
    capture_problem,
    load_problem_file,
)
from axon.frontend.torch.translate import translate_program

__all__ = ["ATEN", "CapturedProblem", "LoadedProblem", "TorchFrontendError", "capture_problem",
           "load_problem_file", "translate_program"]
