"""Tiling: tiled kernels proposed for tensor-level functions, admitted only when proved.

`rows.py` writes a row-local function as one kernel over blocks of rows. `profiles.py` turns a
device profile into the constraints a kernel's tile parameters must meet.
"""
