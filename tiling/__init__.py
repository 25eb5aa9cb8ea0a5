"""Tiling: tiled kernels proposed for tensor-level functions, admitted only when proved.

`kernels.py` writes a function as one kernel over blocks of rows (and columns), optionally with
a sequential loop over a reduced dim; `profiles.py` turns a device profile into the assumptions
a kernel's tiles need; `cost.py` models a kernel's HBM traffic, on-chip bytes and time, and
`concretize.py` picks concrete tile sizes; `search.py` proposes, proves and ranks every tiling
of a program and its variants.
"""
