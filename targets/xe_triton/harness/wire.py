"""Frames between the candidate's child process and the harness: a JSON header and raw tensors.

The parent never unpickles what a child sends (a pickle from a candidate's process could run code
in the parent): a frame is an 8-byte length and a JSON header, then each payload as an 8-byte
length and its bytes; a tensor travels as its dtype, shape and raw bytes. `FrameReader` reads
with a deadline and a size limit, so a child that hangs or floods is told apart.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from typing import Any

import numpy as np
import torch

_LENGTH = struct.Struct("<Q")
#: the largest JSON header a child may send
HEADER_MAX = 1 << 20

#: wire name -> (torch dtype, numpy dtype of the same width the bytes are read as)
_DTYPES: dict[str, tuple[torch.dtype, type]] = {
    "f32": (torch.float32, np.float32), "f16": (torch.float16, np.float16),
    "bf16": (torch.bfloat16, np.int16), "f64": (torch.float64, np.float64),
    "i32": (torch.int32, np.int32), "i64": (torch.int64, np.int64), "i1": (torch.bool, np.bool_)}
_NAMES = {torch_dtype: name for name, (torch_dtype, _) in _DTYPES.items()}


class WireError(Exception):
    """A frame that breaks the protocol: malformed, too large, or late."""


def tensor_payload(tensor: torch.Tensor) -> tuple[dict[str, Any], bytes]:
    """A tensor's description (dtype, shape) and its bytes."""
    if tensor.dtype not in _NAMES:
        raise WireError(f"a result of dtype {tensor.dtype}, which the harness does not compare")
    name = _NAMES[tensor.dtype]
    flat = tensor.detach().contiguous().cpu()
    array = flat.view(torch.int16).numpy() if name == "bf16" else flat.numpy()
    return {"dtype": name, "shape": list(tensor.shape)}, array.tobytes()


def tensor_from(spec: Any, data: bytes) -> torch.Tensor:
    """The tensor `tensor_payload` described; WireError when spec and bytes disagree."""
    if (not isinstance(spec, dict) or spec.get("dtype") not in _DTYPES
            or not isinstance(spec.get("shape"), list)
            or not all(isinstance(d, int) and d >= 0 for d in spec["shape"])):
        raise WireError(f"a malformed tensor description {str(spec)[:80]}")
    torch_dtype, numpy_dtype = _DTYPES[spec["dtype"]]
    count = int(np.prod(spec["shape"], dtype=np.int64))
    if count * np.dtype(numpy_dtype).itemsize != len(data):
        raise WireError(f"a tensor of shape {spec['shape']} sent with {len(data)} bytes")
    tensor = torch.from_numpy(np.frombuffer(data, dtype=numpy_dtype).copy())
    if spec["dtype"] == "bf16":
        tensor = tensor.view(torch.bfloat16)
    return tensor.reshape(spec["shape"]).to(torch_dtype)


def send(fd: int, header: dict[str, Any], payloads: tuple[bytes, ...] = ()) -> None:
    """Write one frame to `fd`."""
    text = json.dumps({**header, "payloads": [len(p) for p in payloads]}).encode()
    parts = [_LENGTH.pack(len(text)), text]
    for payload in payloads:
        parts += [_LENGTH.pack(len(payload)), payload]
    data = b"".join(parts)
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class FrameReader:
    """Reads frames from a pipe's file descriptor; `limit` caps one frame's payload bytes."""

    def __init__(self, fd: int, limit: int) -> None:
        self.fd = fd
        self.limit = limit
        self.buffer = bytearray()
        self.closed = False

    def _fill(self, count: int, deadline: float) -> bytes | None:
        """`count` bytes, or None at end of file; WireError past the deadline."""
        while len(self.buffer) < count:
            if self.closed:
                return None
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                raise TimeoutError
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                self.closed = True
            self.buffer += chunk
        data = bytes(self.buffer[:count])
        del self.buffer[:count]
        return data

    def read(self, deadline: float) -> tuple[dict[str, Any], list[bytes]] | None:
        """The next frame (header, payloads), or None when the child closed the pipe; raises
        TimeoutError past `deadline` (a `time.monotonic()` value) and WireError for a
        malformed frame."""
        length = self._fill(_LENGTH.size, deadline)
        if length is None:
            return None
        (size,) = _LENGTH.unpack(length)
        if size > HEADER_MAX:
            raise WireError(f"a header of {size} bytes")
        text = self._fill(size, deadline)
        if text is None:
            return None
        try:
            header = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise WireError(f"a header that is not JSON ({e})") from None
        sizes = header.get("payloads") if isinstance(header, dict) else None
        if not isinstance(sizes, list) or not all(isinstance(s, int) and s >= 0 for s in sizes):
            raise WireError("a header without its payload sizes")
        if sum(sizes) > self.limit:
            raise WireError(f"{sum(sizes)} bytes of results, more than the case's outputs")
        payloads = []
        for expected in sizes:
            got = self._fill(_LENGTH.size, deadline)
            if got is None:
                return None
            if _LENGTH.unpack(got)[0] != expected:
                raise WireError("a payload whose length disagrees with its header")
            data = self._fill(expected, deadline)
            if data is None:
                return None
            payloads.append(data)
        return header, payloads
