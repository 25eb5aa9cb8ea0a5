"""Forge: existing Triton kernels and PyTorch modules as Axon's input (issue 14).

    axon forge problem.py --from torch -o kernel_opt.py          # command.py
    axon forge kernel.py --problem problem.py --profile b70 -o kernel_opt.py

Two paths, one check. The torch path (`torch_path.py`) captures a KernelBench-format problem
with torch.export into `ax` and runs Axon's proved pipeline on it (propagation, proved tilings,
the KB's launches, selection), writing a drop-in `ModelNew`. The Triton path (`triton_path.py`)
rewrites a user's kernel file stage by stage: each stage (`stages/`) reads the file's text, never
imports or runs it (the Triton frontend's parse and analysis, `ast`), and proposes whole new
module texts that keep `ModelNew` and its entry points, editing source spans so the user's
formatting and comments survive; the planner (`planner.py`) orders the stages, the driver
(`driver.py`) keeps a proposal only when the cascade (`cascade.py`: syntax, structure against
the KB, the frozen harness against the original kernel, the GPU's timing) passes it, and a
plugged `Proposer` (`proposer.py`) is admitted the same way. `bundle.py` writes the problem
set's candidates of both paths for `axon-bench`.

    kernel_file = KernelFile.read("kernels/01_gemm_bias_relu.py")
    plan = make_plan(kernel_file)                       # planner.py: stages in order, why skipped
    result = optimize_kernel_file(path, load_device("b70"), check, print)   # driver.py
"""
