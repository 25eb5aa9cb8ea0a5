"""Loading a kernel file with `nki`, `nki.language` and `nki.isa` bound to the simulator.

The file is compiled and executed in a fresh namespace (not a module registered in
`sys.modules`, and `__name__` is not `"__main__"`, so a `__main__` block does not run) whose
`__import__` resolves `nki`, `nki.language` and `nki.isa` to the simulator's surface and lets
through only numpy, math, typing and `__future__`; every other import is an error at its line.
Nothing is installed globally: other code importing `nki` afterwards sees what it saw before.
This keeps a kernel file from pulling in other code by accident; it is not a security sandbox.
"""

from __future__ import annotations

import builtins
import types
from pathlib import Path
from typing import Any

from axon.targets.nki.simulator import isa, language
from axon.targets.nki.simulator.errors import KernelError
from axon.targets.nki.simulator.kernel import JitKernel, jit
from axon.targets.nki.simulator.run import kernel_line

#: modules a kernel file may import besides the nki surface
ALLOWED_IMPORTS = ("__future__", "math", "numpy", "typing")


def _surface() -> dict[str, types.ModuleType]:
    top = types.ModuleType("nki", "The NKI surface of Axon's simulator.")
    top.jit = jit  # type: ignore[attr-defined]
    top.language = language  # type: ignore[attr-defined]
    top.isa = isa  # type: ignore[attr-defined]
    return {"nki": top, "nki.language": language, "nki.isa": isa}


def _importer(surface: dict[str, types.ModuleType]) -> Any:
    real_import = builtins.__import__

    def kernel_import(name: str, globals: Any = None, locals: Any = None,
                      fromlist: Any = (), level: int = 0) -> types.ModuleType:
        if level:
            raise ImportError(f"relative import of '{name}': a simulated kernel file is loaded "
                              f"on its own, without its package")
        top = name.partition(".")[0]
        if top == "nki":
            if name not in surface:
                raise ImportError(f"'{name}' is not part of the simulated NKI surface (nki, "
                                  f"nki.language, nki.isa)")
            return surface[name] if fromlist else surface["nki"]
        if top == "neuronxcc":
            raise ImportError(f"'{name}' is the legacy NKI API (neuronxcc.nki); the simulator "
                              f"runs kernels written against the current `nki` API")
        if top not in ALLOWED_IMPORTS:
            raise ImportError(f"import of '{name}' is not allowed in a simulated kernel; it may "
                              f"import nki, nki.language, nki.isa, {', '.join(ALLOWED_IMPORTS)}")
        return real_import(name, globals, locals, fromlist, level)  # type: ignore[no-any-return]

    return kernel_import


def load_kernel(path: str | Path, name: str | None = None) -> JitKernel:
    """The `@nki.jit` kernel called `name` in the file at `path` (the file's only kernel when
    `name` is None). Any failure is a KernelError at the file's line."""
    file = str(path)
    try:
        source = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise KernelError(file, 0, f"cannot read the kernel file: {err}") from err
    try:
        code = compile(source, file, "exec")
    except SyntaxError as err:
        raise KernelError(file, err.lineno or 0, f"syntax error: {err.msg}") from err
    kernel_builtins = dict(vars(builtins))
    kernel_builtins["__import__"] = _importer(_surface())
    namespace: dict[str, Any] = {"__name__": "__nki_kernel__", "__file__": file,
                                 "__builtins__": kernel_builtins}
    try:
        exec(code, namespace)
    except Exception as err:
        raise KernelError(file, kernel_line(err, file, 0),
                          f"{type(err).__name__}: {err}") from err
    kernels = {key: value for key, value in namespace.items() if isinstance(value, JitKernel)}
    if name is not None:
        if name not in kernels:
            raise KernelError(file, 0, f"no @nki.jit kernel named '{name}'; the file defines: "
                                       f"{', '.join(sorted(kernels)) or 'none'}")
        return kernels[name]
    if len(kernels) != 1:
        found = ", ".join(sorted(kernels)) or "none"
        raise KernelError(file, 0, f"expected exactly one @nki.jit kernel (or name one); the "
                                   f"file defines: {found}")
    return next(iter(kernels.values()))
