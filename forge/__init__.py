"""Forge: staged Triton-to-Triton optimization of a user's existing Triton kernel file.

    kernel_file = KernelFile.read("kernels/01_gemm_bias_relu.py")
    plan = make_plan(kernel_file)                       # planner.py: stages in order, why skipped
    result = optimize_kernel_file(path, load_device("b70"), check, print)   # driver.py

Each stage (`stages/`) reads the file's text, never imports or runs it (the Triton frontend's
parse and analysis, `ast`), and proposes whole new module texts that keep `ModelNew` and its
entry points; the rewrites edit source spans, so the user's formatting and comments survive.
Nothing a stage or a plugged `Proposer` (proposer.py) proposes is kept unless the injected
`check` (the cascade: syntax, structure, correctness against the original, performance) passes.
"""
