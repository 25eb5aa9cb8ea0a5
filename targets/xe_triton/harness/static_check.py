"""A static check of a Forge module's source before any process imports it.

`findings(path)` parses the file (parsing runs none of it) and lists, as `file:line: what`, the
uses that let a kernel escape what the harness measures or checks: threads and processes that
finish the work after the call returns (`threading`, `_thread`, `concurrent`, `multiprocessing`,
`subprocess`, `asyncio`, `os.fork`, `os.system`, ...), raw memory (`ctypes`, `cffi`, `mmap`), side
CUDA streams the timing does not wait for (`torch.cuda.Stream`, `torch.cuda.stream`,
`set_stream`, `ExternalStream`), the environment (`os.environ` written, `os.putenv`), code built at
run time (`__import__`, `exec`, `eval`, `compile`, `importlib`), and reading what it should compute
(`open`, `inspect`, `gc`, `sys._getframe`, `sys.modules`, `pickle`). Standard library only.

It is a net for the known tricks, not a proof: Python can reach a module without naming it
(through an object's attributes), which is why the child also checks dynamically (threads,
the current stream, `guard.py`) and the parent compares the results.
"""

from __future__ import annotations

import ast
from pathlib import Path

#: modules a kernel module may not import, and why
MODULES: dict[str, str] = {
    "threading": "threads", "_thread": "threads", "concurrent": "threads or processes",
    "multiprocessing": "processes", "subprocess": "processes", "asyncio": "background tasks",
    "signal": "signal handlers", "ctypes": "raw memory", "cffi": "raw memory",
    "mmap": "raw memory", "importlib": "imports built at run time", "inspect": "frames",
    "gc": "the heap's objects", "pickle": "code in data", "socket": "the network",
    "torch.multiprocessing": "processes"}
#: builtins a kernel module may not call
BUILTINS = {"__import__": "imports built at run time", "exec": "code built at run time",
            "eval": "code built at run time", "compile": "code built at run time",
            "open": "files (the problem, the reference)", "breakpoint": "a debugger"}
#: dotted attributes (as written, or by any alias of the module) a kernel module may not use
ATTRIBUTES = {
    "torch.cuda.Stream": "a side stream", "torch.cuda.stream": "a side stream",
    "torch.cuda.set_stream": "a side stream", "torch.cuda.ExternalStream": "a side stream",
    "torch.cuda.streams": "a side stream", "torch.Stream": "a side stream",
    "torch.multiprocessing": "processes", "os.putenv": "the environment",
    "os.unsetenv": "the environment", "os.system": "processes", "os.popen": "processes",
    "os.fork": "processes", "os.forkpty": "processes", "os.kill": "processes",
    "os.write": "the harness's pipes", "os.read": "the harness's pipes",
    "os.open": "the harness's pipes", "os.dup": "the harness's pipes",
    "os.dup2": "the harness's pipes", "os.fdopen": "the harness's pipes",
    "sys._getframe": "frames", "sys.modules": "other modules",
    "torch.cuda.memory._record_memory_history": "the allocator"}
#: os functions whose name starts with these start a process
_OS_PREFIXES = ("exec", "spawn", "posix_spawn")
#: methods that write a mapping
_WRITES = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"}


def _dotted(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """`torch.cuda.Stream` for an attribute chain whose root is an imported name (through
    `aliases`); None for any other expression (a local variable's attributes)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in aliases:
        return None
    parts.append(aliases[node.id])
    return ".".join(reversed(parts))


def _module_reason(name: str) -> str | None:
    for banned, why in MODULES.items():
        if name == banned or name.startswith(banned + "."):
            return f"imports {banned} ({why})"
    return None


def _attribute_reason(dotted: str) -> str | None:
    for banned, why in ATTRIBUTES.items():
        if dotted == banned or dotted.startswith(banned + "."):
            return f"uses {banned} ({why})"
    head, _, rest = dotted.partition(".")
    if head == "os" and rest.startswith(_OS_PREFIXES):
        return f"uses {dotted} (processes)"
    return _module_reason(dotted)


def findings_in(source: str, filename: str) -> list[str]:
    """`filename:line: what` for each forbidden use in `source` (a syntax error is one)."""
    try:
        tree = ast.parse(source, filename)
    except SyntaxError as e:
        return [f"{filename}:{e.lineno or 0}: does not parse: {e.msg}"]
    aliases: dict[str, str] = {}
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                aliases[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0])
                why = _module_reason(alias.name)
                if why:
                    found.append((node.lineno, why))
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                aliases[alias.asname or alias.name] = full
                why = _module_reason(node.module) or _attribute_reason(full)
                if why:
                    found.append((node.lineno, why))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in BUILTINS and node.func.id not in aliases:
                found.append((node.lineno, f"calls {node.func.id} "
                                           f"({BUILTINS[node.func.id]})"))
        if isinstance(node, ast.Attribute):
            dotted = _dotted(node, aliases)
            why = _attribute_reason(dotted) if dotted else None
            if why:
                found.append((node.lineno, why))
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = (node.targets if isinstance(node, (ast.Assign, ast.Delete))
                       else [node.target])
            for target in targets:
                if (isinstance(target, ast.Subscript)
                        and _dotted(target.value, aliases) == "os.environ"):
                    found.append((node.lineno, "writes os.environ (the environment)"))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in _WRITES
                and _dotted(node.func.value, aliases) == "os.environ"):
            found.append((node.lineno, "writes os.environ (the environment)"))
    lines = sorted(set(found))
    return [f"{filename}:{line}: {what}" for line, what in lines]


def findings(path: Path) -> list[str]:
    """`findings_in` of the file at `path` (named by its file name)."""
    try:
        source = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        return [f"{path.name}:0: cannot be read: {e}"]
    return findings_in(source, path.name)
