"""The Forge path's problem set (issue 14): PyTorch problems in KernelBench format, each with the
plain Triton kernel a user would write first (`problems.py` lists, loads and checks them)."""
