"""The wire between gpusim's CUDA runtime (shim/cudart.c, inside the application) and gpusim.

A request is a header (`op` u32, `nwords` u32, `blen` u64), `nwords` 64-bit words and `blen` bytes; a reply is
a header (`status` i32: a cudaError_t, `nwords` u32, `blen` u64), words and bytes. Little-endian, on a Unix
socket gpusim hands the application (GPUSIM_EXEC_FD). The operation numbers are cudart.c's `enum op`
(tests/exec/test_protocol.py compares the two)."""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

REQUEST = struct.Struct("<IIQ")
REPLY = struct.Struct("<iIQ")

OPS = {
    "HELLO": 1, "FATBIN": 2, "FATBIN_END": 3, "FUNCTION": 4, "VAR": 5, "PARAMS": 6, "LAUNCH": 7, "MALLOC": 8,
    "FREE": 9, "MEMCPY": 10, "MEMCPY2D": 11, "MEMSET": 12, "MEMSET2D": 13, "SYMBOL": 14, "DEVICE_SYNC": 15,
    "STREAM_CREATE": 16, "STREAM_DESTROY": 17, "STREAM_SYNC": 18, "STREAM_QUERY": 19, "STREAM_WAIT_EVENT": 20,
    "EVENT_CREATE": 21, "EVENT_DESTROY": 22, "EVENT_RECORD": 23, "EVENT_SYNC": 24, "EVENT_QUERY": 25,
    "EVENT_ELAPSED": 26, "PROPERTIES": 27, "ATTRIBUTE": 28, "MEM_INFO": 29, "FUNC_ATTRIBUTES": 30,
    "FUNC_SET_ATTRIBUTE": 31, "OCCUPANCY": 32, "POINTER": 33, "HOST_REGISTER": 34, "HOST_UNREGISTER": 35,
    "LIMIT": 36, "DEVICE_RESET": 37, "UNSUPPORTED": 38, "HOST_FUNC": 39, "SET_DEVICE": 40, "STREAM_INFO": 41,
    "FUNC_NAME": 42, "CHECK": 43, "HOST_POINTER": 44,
}
OP_NAMES = {v: k for k, v in OPS.items()}

# The runtime calls each operation serves, for what gpusim says (an operation's name is not a CUDA name).
CALLS = {
    "MALLOC": "cudaMalloc", "FREE": "cudaFree", "MEMCPY": "cudaMemcpy", "MEMCPY2D": "cudaMemcpy2D",
    "MEMSET": "cudaMemset", "MEMSET2D": "cudaMemset2D", "LAUNCH": "a kernel launch", "SYMBOL": "a symbol copy",
    "DEVICE_SYNC": "cudaDeviceSynchronize", "STREAM_SYNC": "cudaStreamSynchronize",
    "EVENT_ELAPSED": "cudaEventElapsedTime", "FATBIN": "__cudaRegisterFatBinary",
}

# cudaError_t values (CUDA 13 driver_types.h) gpusim returns
SUCCESS = 0
INVALID_VALUE = 1
MEMORY_ALLOCATION = 2
INVALID_CONFIGURATION = 9
INVALID_SYMBOL = 13
INVALID_DEVICE_POINTER = 17
INVALID_MEMCPY_DIRECTION = 21
INVALID_DEVICE_FUNCTION = 98
INVALID_DEVICE = 101
INVALID_KERNEL_IMAGE = 200
INVALID_PTX = 218
NO_KERNEL_IMAGE = 209
INVALID_RESOURCE_HANDLE = 400
NOT_READY = 600
ILLEGAL_ADDRESS = 700
LAUNCH_OUT_OF_RESOURCES = 701
LAUNCH_TIMEOUT = 702
HOST_MEMORY_ALREADY_REGISTERED = 712
HOST_MEMORY_NOT_REGISTERED = 713
MISALIGNED_ADDRESS = 716
LAUNCH_FAILURE = 719
NOT_SUPPORTED = 801
UNKNOWN = 999

ERROR_NAMES = {
    0: "cudaSuccess", 1: "cudaErrorInvalidValue", 2: "cudaErrorMemoryAllocation", 9: "cudaErrorInvalidConfiguration",
    13: "cudaErrorInvalidSymbol", 17: "cudaErrorInvalidDevicePointer", 21: "cudaErrorInvalidMemcpyDirection",
    98: "cudaErrorInvalidDeviceFunction", 101: "cudaErrorInvalidDevice", 200: "cudaErrorInvalidKernelImage",
    218: "cudaErrorInvalidPtx",
    209: "cudaErrorNoKernelImageForDevice", 400: "cudaErrorInvalidResourceHandle", 600: "cudaErrorNotReady",
    700: "cudaErrorIllegalAddress", 701: "cudaErrorLaunchOutOfResources", 702: "cudaErrorLaunchTimeout",
    712: "cudaErrorHostMemoryAlreadyRegistered", 713: "cudaErrorHostMemoryNotRegistered",
    716: "cudaErrorMisalignedAddress", 719: "cudaErrorLaunchFailure", 801: "cudaErrorNotSupported",
    999: "cudaErrorUnknown",
}

# Errors that leave the context unusable: every later call returns them (as on a GPU)
STICKY = frozenset({ILLEGAL_ADDRESS, LAUNCH_TIMEOUT, MISALIGNED_ADDRESS, LAUNCH_FAILURE})

# cudaMemcpyKind
H2H, H2D, D2H, D2D, DEFAULT = 0, 1, 2, 3, 4
# allocation kinds (cudart.c: KIND_*)
DEVICE, MANAGED, PINNED = 0, 1, 2
# the special stream handles: 0 the legacy default stream, cudaStreamLegacy, cudaStreamPerThread
LEGACY_STREAMS = (0, 1)
PER_THREAD_STREAM = 2
STREAM_NON_BLOCKING = 0x1  # cudaStreamNonBlocking
EVENT_DISABLE_TIMING = 0x2  # cudaEventDisableTiming
HOST_ALLOC_MAPPED = 0x2  # cudaHostAllocMapped


class Reply(Exception):
    """A CUDA error to return from the call being served (raised anywhere below the handler)."""

    def __init__(self, status: int, why: str = ""):
        super().__init__(why or ERROR_NAMES.get(status, str(status)))
        self.status, self.why = status, why


@dataclass(frozen=True, slots=True)
class Request:
    op: int
    words: tuple[int, ...]
    blob: bytes

    @property
    def name(self) -> str:
        return OP_NAMES.get(self.op, f"op {self.op}")

    def signed(self, i: int) -> int:
        """Word i as a signed 64-bit integer."""
        w = self.words[i]
        return w - (1 << 64) if w >= 1 << 63 else w


def _recv(sock: socket.socket, n: int) -> bytes | None:
    chunks, got = [], 0
    while got < n:
        part = sock.recv(min(n - got, 1 << 20))
        if not part:
            return None
        chunks.append(part)
        got += len(part)
    return b"".join(chunks)


def read_request(sock: socket.socket) -> Request | None:
    """The next request, or None when the application has closed its end (it exited)."""
    head = _recv(sock, REQUEST.size)
    if head is None:
        return None
    op, nwords, blen = REQUEST.unpack(head)
    words = _recv(sock, 8 * nwords) if nwords else b""
    blob = _recv(sock, blen) if blen else b""
    if words is None or blob is None:
        return None
    return Request(op, struct.unpack(f"<{nwords}Q", words), blob)


def send_reply(sock: socket.socket, status: int, words=(), blob: bytes = b"") -> None:
    words = [int(w) & ((1 << 64) - 1) for w in words]
    sock.sendall(REPLY.pack(status, len(words), len(blob)) + struct.pack(f"<{len(words)}Q", *words) + blob)
