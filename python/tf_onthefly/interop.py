"""Python GPU code (CuPy, Numba, PyTorch, JAX) feeding TensorFlow with no host copy.

    def make_batch(step):                      # any Python code returning device arrays
        x = cupy.random.default_rng(step).random((4096, 64), dtype=cupy.float32)
        return x, (x.sum(axis=1, keepdims=True) > 32).astype(cupy.float32)

    bridge = tf_onthefly.interop.DeviceBridge(make_batch, (
        tf.TensorSpec([4096, 64], tf.float32), tf.TensorSpec([4096, 1], tf.float32)))
    x, y = bridge(step)                       # eager, or inside tf.function / graph loops
    model = tf_onthefly.data.GeneratorModel(model, bridge)    # model.fit, compile(jit_compile=False)

Each array is handed to TensorFlow through DLPack (`__dlpack__`, or a DLPack capsule), so
the tensor TensorFlow gets is the producer's memory: no host copy, no device copy. What
that takes, and costs (docs/interop.md):

- No tf.py_function: inside a graph the bridge is one op, OnTheFly>BridgeTake, that takes
  the batch of its step; the bridge's producer thread calls make_batch for the steps the
  graph asks for and the next `prefetch` ones, while TensorFlow runs the steps before
  them, and puts each batch through the op library's C functions (ctypes). Eagerly,
  make_batch runs in the calling thread. The GIL is held while make_batch runs.
- Ordering, with no host wait for CuPy, PyTorch and Numba: an event recorded on the
  producer library's stream as the batch is put (its current stream when make_batch
  returns, or the stream given as sync=), which TensorFlow's stream waits for when the op
  takes the batch. Producers whose stream cannot be known (JAX, DLPack capsules,
  sync="device" or "stream", a sync callable) are waited for on the host, once per batch.
- Ownership: TensorFlow holds the producer's array until its tensor is freed; the bridge
  also keeps the last `keep` batches taken, and the producer's stream waits on the GPU for
  TensorFlow's work queued before each take, so a producer's memory pool does not hand
  their memory to a new batch while TensorFlow's stream may still read them.
- Not XLA-compilable (jit_compile=True refuses OnTheFly>BridgeTake), and not serialisable
  into a SavedModel (the Python producer is not part of the graph): use a built-in
  generator or tf_onthefly.cuda_kernel where either matters.
- int32 arrays on a GPU are refused: TensorFlow keeps int32 tensors of GPU ops in host
  memory, so an int32 device tensor would be copied or misplaced; produce int64 or floats.
  Device arrays must be on the bridge's GPU.
- Host arrays (NumPy, or anything np.asarray takes) work too, on any machine: they are
  copied as they are put, as with from_python.
"""

import ctypes
import itertools
import os
import re
import sys
import threading
import warnings
import weakref
from typing import Any, Callable, Optional

import numpy as np
import tensorflow as tf

from tf_onthefly import _args, _load
from tf_onthefly._torch_order import check_torch_import_order
from tf_onthefly.data import SignatureDriftError, _check_field, _field_names


class BridgeError(ValueError):
    """An array the bridge cannot hand to TensorFlow as it is."""


# ---- Synchronising with the producer on the host ----------------------------------------
def _module_of(array) -> str:
    return type(array).__module__.split(".")[0]


_driver = None


def _device_synchronize(ordinal: int = 0):
    """Waits for all work on GPU `ordinal` (every stream of its primary context, the one
    CUDA's runtime, TensorFlow, CuPy and PyTorch share), through the driver API, for
    producers the bridge does not know."""
    global _driver
    if _driver is None:
        try:
            _driver = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise BridgeError(f"cannot wait for a GPU array's producer: the CUDA driver does not load ({e})") from None
    ctx, dev = ctypes.c_void_p(), ctypes.c_int()
    for call, args in (
        ("cuInit", (0,)),
        ("cuDeviceGet", (ctypes.byref(dev), ordinal)),
        ("cuDevicePrimaryCtxRetain", (ctypes.byref(ctx), dev)),
    ):
        result = getattr(_driver, call)(*args)
        if result != 0:
            raise RuntimeError(f"{call} failed with CUDA driver error {result}")
    try:
        if _driver.cuCtxPushCurrent_v2(ctx) != 0:
            raise RuntimeError("cuCtxPushCurrent failed")
        result = _driver.cuCtxSynchronize()
        _driver.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))
        if result != 0:
            raise RuntimeError(f"cuCtxSynchronize failed with CUDA driver error {result}")
    finally:
        _driver.cuDevicePrimaryCtxRelease_v2(dev)


def synchronize(array, mode: str = "device"):
    """Blocks the calling thread until the work that produces `array` is done (the bridge's
    host-wait modes).

    mode "device": all work on the array's GPU, whichever stream it is on (TensorFlow's
    queued work included). mode "stream": only the producer library's current stream,
    cheaper, and right only when make_batch's work is on that stream when it returns (not
    inside a `with stream:` block that has ended). JAX arrays wait for themselves
    (block_until_ready) in both modes."""
    module = _module_of(array)
    if module in ("jax", "jaxlib"):
        array.block_until_ready()
    elif module == "cupy":
        import cupy

        if mode == "stream":
            cupy.cuda.get_current_stream().synchronize()
        else:
            cupy.cuda.Device(array.device.id).synchronize()
    elif module == "torch":
        import torch

        if mode == "stream":
            torch.cuda.current_stream(array.device).synchronize()
        else:
            torch.cuda.synchronize(array.device)
    elif module == "numba" and mode == "stream" and getattr(array, "stream", 0):
        array.stream.synchronize()
    else:
        _device_synchronize(_device_of(array)[1])


# ---- Where an array is, and on which stream it was made --------------------------------
_KDLCPU, _KDLCUDA, _KDLCUDA_HOST, _KDLCUDA_MANAGED = 1, 2, 3, 13
_PER_THREAD_STREAM = 2  # CU_STREAM_PER_THREAD: the calling thread's, not one the op can name


def _is_capsule(value) -> bool:
    return type(value).__name__ == "PyCapsule"


def _capsule_device(capsule):
    """(DLPack device type, id) of a DLPack capsule, read without consuming it: a
    DLManagedTensor (capsule "dltensor") or DLManagedTensorVersioned ("dltensor_versioned")
    starts with, or holds at byte 32, a DLTensor whose device follows its data pointer."""
    api = ctypes.pythonapi
    api.PyCapsule_IsValid.restype = ctypes.c_int
    api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    for name, offset in ((b"dltensor", 0), (b"dltensor_versioned", 32)):
        if api.PyCapsule_IsValid(capsule, name):
            device = (ctypes.c_int32 * 2).from_address(api.PyCapsule_GetPointer(capsule, name) + offset + 8)
            return int(device[0]), int(device[1])
    raise BridgeError("a DLPack capsule that was used already (or is not a DLPack tensor) cannot be handed over")


def _device_of(value):
    """(DLPack device type, ordinal) of an array; (kDLCPU, 0) for host arrays."""
    if hasattr(value, "__dlpack_device__"):
        kind, ordinal = value.__dlpack_device__()
        return int(kind), int(ordinal)
    if _is_capsule(value):
        return _capsule_device(value)
    if hasattr(value, "__cuda_array_interface__"):
        return _KDLCUDA, _cai_ordinal(value)
    return _KDLCPU, 0


def _cai_ordinal(value) -> int:
    """The GPU of a __cuda_array_interface__ array: Numba's current device for Numba arrays
    (Numba makes them there), else the first."""
    if _module_of(value) == "numba":
        try:
            from numba import cuda

            return int(cuda.get_current_device().id)
        except Exception:  # noqa: BLE001 - no device Numba can see: the first GPU
            return 0
    return 0


def _is_device_array(value) -> bool:
    return _device_of(value)[0] in (_KDLCUDA, _KDLCUDA_MANAGED)


def _stream_handle(stream) -> Optional[int]:
    """The CUDA stream handle of a CuPy (ptr), PyTorch (cuda_stream) or Numba (handle)
    stream object; None for anything else."""
    for attr in ("ptr", "cuda_stream"):
        value = getattr(stream, attr, None)
        if isinstance(value, int):
            return value
    handle = getattr(stream, "handle", None)  # Numba: a ctypes pointer, or a binding's CUstream
    if handle is not None and hasattr(handle, "value"):
        return int(handle.value or 0)
    if handle is not None and hasattr(handle, "getPtr"):
        return int(handle)
    return None


def _producer_stream(array) -> Optional[int]:
    """The stream the array's library made it on, by its convention (its current stream when
    make_batch returns; a Numba or __cuda_array_interface__ array's own); None where it
    cannot be known (JAX, capsules, other libraries, the per-thread default stream)."""
    module = _module_of(array)
    handle = None
    try:
        if module == "cupy":
            import cupy

            handle = cupy.cuda.get_current_stream(array.device.id).ptr
        elif module == "torch":
            import torch

            handle = torch.cuda.current_stream(array.device).cuda_stream
        elif module == "numba" or hasattr(array, "__cuda_array_interface__") and not hasattr(array, "__dlpack__"):
            stream = array.__cuda_array_interface__.get("stream")
            handle = 1 if stream is None else int(stream)  # None: "ready"; 1: the legacy stream
    except Exception:  # noqa: BLE001 - an older library without these: wait on the host
        return None
    return None if handle is None or handle == _PER_THREAD_STREAM else int(handle)


# ---- One array to one tensor ------------------------------------------------------------
def _dtype_name(value) -> str:
    return str(getattr(value, "dtype", "?")).replace("torch.", "")


def _capsule_of(value, no_sync: bool):
    """value's DLPack capsule. no_sync: the bridge orders the streams itself, so the
    producer is asked for no synchronisation of its own (DLPack's stream=-1)."""
    if _is_capsule(value):
        return value
    if no_sync:
        try:
            return value.__dlpack__(stream=-1)
        except (TypeError, ValueError, BufferError):
            pass
    return value.__dlpack__()


def to_tensor(value, name: str = "output 0", *, _no_sync: bool = False) -> tf.Tensor:
    """A device array (`__dlpack__`, a DLPack capsule, or `__cuda_array_interface__` through
    a CuPy view) as a tf.Tensor on its GPU, with no copy; a host array (NumPy, a CPU DLPack
    tensor) as a tensor of its own by one copy. `name` is the field in error messages.

    The caller orders the producer's work first (DeviceBridge does); this only converts."""
    if isinstance(value, (tf.Tensor, tf.Variable)):
        return tf.convert_to_tensor(value)
    if hasattr(value, "__cuda_array_interface__") and not hasattr(value, "__dlpack__"):
        value = _from_cuda_array_interface(value, name, _no_sync)
    kind = _device_of(value)[0]
    if kind in (_KDLCUDA, _KDLCUDA_MANAGED):
        if "int32" == _dtype_name(value):
            raise BridgeError(
                f"field '{name}' is an int32 array on a GPU: TensorFlow keeps int32 tensors of GPU ops in host "
                f"memory, so it cannot use this one where it lies; produce int64 (or a float type) instead"
            )
        return tf.experimental.dlpack.from_dlpack(_capsule_of(value, _no_sync))
    if _is_capsule(value) or hasattr(value, "__dlpack__") and not isinstance(value, np.ndarray):
        # A host DLPack tensor: its memory stays the producer's, so the tensor gets a copy.
        value = np.array(tf.experimental.dlpack.from_dlpack(_capsule_of(value, False)), copy=True)
    # A copy of the bridge's own: the producer may refill its array once make_batch returns.
    return tf.constant(np.array(value, copy=True, order="C"))


class _Ordered:
    """A __cuda_array_interface__ array whose stream the bridge orders on the GPU, offered
    with no stream (CuPy would otherwise synchronise that stream on the host); it holds the
    original, as the CuPy view holds it."""

    def __init__(self, value):
        self.base = value
        self.__cuda_array_interface__ = dict(value.__cuda_array_interface__, stream=None)


def _from_cuda_array_interface(value, name, no_sync=False):
    """A device array with __cuda_array_interface__ only (a Numba device array) as a CuPy
    view of the same memory (no copy), which speaks DLPack; the view holds the original.
    no_sync: the bridge orders the array's stream on the GPU, so CuPy is not to wait for it."""
    try:
        import cupy
    except ImportError:
        raise BridgeError(
            f"field '{name}' is a device array with __cuda_array_interface__ but no DLPack support "
            f"({type(value).__name__}); install CuPy (the bridge then wraps it without a copy) or return a "
            f"DLPack-capable array"
        ) from None
    return cupy.asarray(_Ordered(value) if no_sync else value)


def _warn_if_tensorflow_holds_the_gpu():
    """By default TensorFlow takes nearly all of a GPU's memory the first time it uses it,
    and the producer library then runs out of memory: say so once, with the fix."""
    gpus = tf.config.list_physical_devices("GPU")
    if not gpus or os.environ.get("TF_FORCE_GPU_ALLOW_GROWTH", "").lower() == "true":
        return
    if not all(tf.config.experimental.get_memory_growth(g) for g in gpus):
        warnings.warn(
            "tf_onthefly.interop: TensorFlow reserves nearly all GPU memory unless memory growth is on, leaving "
            "little to the library that makes the batches; set TF_FORCE_GPU_ALLOW_GROWTH=true (or "
            "tf.config.experimental.set_memory_growth(gpu, True) before TensorFlow first uses the GPU)",
            stacklevel=3,
        )


def _matches(want, dtype_matches, shape) -> bool:
    """Whether a value fits its spec, `want` being the spec's shape as a list (None: any):
    the common case, checked without building TensorShapes (_check_field says what differs
    otherwise)."""
    if not dtype_matches:
        return False
    if want is None:
        return True
    shape = tuple(shape)
    return len(shape) == len(want) and all(w is None or w == d for w, d in zip(want, shape))


_SYNC_MODES = ("auto", "device", "stream")
_MAX_RANK = 8  # the ranks a bridge's signature may have (tf_ops/device_bridge)


# ---- The bridge's C side (tf_ops/device_bridge/device_bridge_ops.cc), through ctypes -------
class _Field(ctypes.Structure):
    """One field of a batch as the C side takes it (its struct Field)."""

    _fields_ = [
        ("kind", ctypes.c_int32),  # _HOST: data holds host values; _DLPACK*: a DLPack handle
        ("dtype", ctypes.c_int32),
        ("rank", ctypes.c_int32),
        ("reserved", ctypes.c_int32),
        ("dims", ctypes.c_int64 * _MAX_RANK),
        ("data", ctypes.c_void_p),
    ]


_HOST, _DLPACK, _DLPACK_VERSIONED = 0, 1, 2
# DLPack's consumer protocol: a capsule whose handle a consumer took is renamed, so that its
# own destructor no longer frees it. The names must outlive the capsules (module constants).
_CAPSULES = {
    b"dltensor": (_DLPACK, b"used_dltensor"),
    b"dltensor_versioned": (_DLPACK_VERSIONED, b"used_dltensor_versioned"),
}
_lib = None


def _c():
    """The op library's bridge functions (loaded already by tf_onthefly: the same handle)."""
    global _lib
    if _lib is None:
        lib = ctypes.CDLL(_load.VARIANT["library"])
        i32, i64, p = ctypes.c_int32, ctypes.c_int64, ctypes.POINTER
        lib.OtfBridgeOpen.restype = i64
        lib.OtfBridgeOpen.argtypes = [i32, i32, i32, i32, p(i32), p(i32), p(i64)]
        lib.OtfBridgeClose.argtypes = [i64]
        lib.OtfBridgePut.restype = i32
        lib.OtfBridgePut.argtypes = [i64, i64, i32, p(_Field), p(i64), i32, ctypes.c_char_p, i64, p(i32), p(i64)]
        lib.OtfBridgeFail.argtypes = [i64, i64, i32, ctypes.c_char_p]
        lib.OtfBridgeServe.argtypes = [i64, i32]
        lib.OtfBridgeNext.restype = i32
        lib.OtfBridgeNext.argtypes = [i64, i32, p(i64)]
        api = ctypes.pythonapi
        api.PyCapsule_GetName.restype = ctypes.c_char_p
        api.PyCapsule_GetName.argtypes = [ctypes.py_object]
        api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
        api.PyCapsule_GetPointer.restype = ctypes.c_void_p
        api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
        _lib = lib
    return _lib


def _capsule_handle(capsule):
    """(field kind, DLPack handle, the name a consumer gives it) of an unused capsule."""
    api = ctypes.pythonapi
    name = api.PyCapsule_GetName(capsule)
    if name not in _CAPSULES:
        raise BridgeError("a DLPack capsule that was used already (or is not a DLPack tensor) cannot be handed over")
    kind, used = _CAPSULES[name]
    return kind, api.PyCapsule_GetPointer(capsule, name), used


def _error_code(e) -> int:
    """The TensorFlow error code a make_batch exception becomes in the graph (as
    tf.py_function maps them)."""
    if isinstance(e, tf.errors.OpError):
        return e.error_code
    if isinstance(e, (ValueError, TypeError)):
        return tf.errors.INVALID_ARGUMENT
    if isinstance(e, MemoryError):
        return tf.errors.RESOURCE_EXHAUSTED
    if isinstance(e, StopIteration):
        return tf.errors.OUT_OF_RANGE
    if isinstance(e, NotImplementedError):
        return tf.errors.UNIMPLEMENTED
    return tf.errors.UNKNOWN


def _serve(ref, bridge_id):
    """The producer thread: makes the steps the bridge's takes ask for, and the next ones
    ahead of them, until the bridge is gone. Blocks in C (without the GIL) between batches."""
    lib, step = _c(), ctypes.c_int64()
    try:
        while True:
            got = lib.OtfBridgeNext(bridge_id, 200, ctypes.byref(step))
            bridge = ref() if got >= 0 else None
            if bridge is None:
                return
            if got == 1:
                try:
                    bridge._hand_over(step.value)
                except Exception as e:  # noqa: BLE001 - the take of this step raises it
                    message = f"{type(e).__name__}: {e}".encode("utf-8", "replace")
                    lib.OtfBridgeFail(bridge_id, step.value, _error_code(e), message)
            del bridge
    finally:
        lib.OtfBridgeServe(bridge_id, 0)


class DeviceBridge:
    """make_batch(step) -> a structure of device (or host) arrays, as TensorFlow tensors.

    Args:
      make_batch: called with the step (a Python int) for each batch; returns arrays in the
        structure of `output_signature`: CuPy, Numba, torch CUDA tensors, JAX arrays
        (anything with __dlpack__, or DLPack capsules), or host arrays.
      output_signature: nested tf.TensorSpec (ranks up to 8), as for from_python; each batch
        is checked against it (SignatureDriftError names the field, the expected and the
        actual shape and dtype, and the batch number).
      keep: batches the bridge keeps referenced after TensorFlow has taken them (>= 1), so
        their memory is not reused while TensorFlow's stream may still read them: at least
        the batches in flight (a graph loop and GeneratorModel: 2).
      prefetch: inside a graph, batches the bridge's producer thread makes ahead of the
        step that asks for one (>= 0; the next steps in order).
      sync: how TensorFlow waits for the producer.
        "auto" (the default): on the GPU, no host wait, for CuPy, PyTorch and Numba arrays:
          TensorFlow's stream waits for the library's current stream as make_batch returns
          it (a Numba array's own stream); on the host for JAX arrays (block_until_ready)
          and anything else (all work on the array's GPU).
        a stream object (cupy.cuda.Stream, torch.cuda.Stream, a Numba stream): on the GPU,
          for that stream: for a make_batch whose work is on a stream that is not current
          when it returns (a `with stream:` block inside it).
        "device" / "stream" / a callable(array): on the host (synchronize(); a callable is
          called once per library and GPU a batch).
      device: where the batch enters the step (default: /GPU:0, or /CPU:0 where TensorFlow
        sees no GPU); device arrays must be on that GPU.

    Call it with a step (an integer, or an integer tensor). Eagerly, make_batch runs in the
    calling thread and the batch is returned. Inside a tf.function the bridge is one op,
    OnTheFly>BridgeTake, on `device`: it takes the batch of its step, made by the bridge's
    producer thread (started with the first graph that calls the bridge) while TensorFlow
    runs the steps before it; so it works in graph loops and model.fit (GeneratorModel
    (model, bridge), compiled with jit_compile=False, keeps its step on the host for the
    bridge). A step on the GPU costs a device-to-host wait per batch.
    """

    step_on_host = True  # read by GeneratorModel and DataPosition: keep the step on the CPU

    def __init__(
        self,
        make_batch: Callable[[int], Any],
        output_signature,
        *,
        keep: int = 2,
        prefetch: int = 2,
        sync="auto",
        device: Optional[str] = None,
    ):
        if not callable(make_batch):
            raise TypeError(f"make_batch must be callable, got {type(make_batch).__name__}")
        flat = tf.nest.flatten(output_signature)
        if not flat or not all(isinstance(s, tf.TensorSpec) for s in flat):
            raise TypeError("output_signature must be a (nested) structure of tf.TensorSpec")
        if any(s.shape.rank is not None and s.shape.rank > _MAX_RANK for s in flat):
            raise ValueError(f"output_signature: a DeviceBridge takes tensors of rank up to {_MAX_RANK}")
        for name, value, least in (("keep", keep, 1), ("prefetch", prefetch, 0)):
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")
        self._sync_stream = None
        if not (sync in _SYNC_MODES or callable(sync)):
            self._sync_stream = _stream_handle(sync)
            if self._sync_stream is None:
                raise ValueError(
                    f"sync must be 'auto', 'device', 'stream', a CuPy/PyTorch/Numba stream or a callable, got {sync!r}"
                )
        self.make_batch = make_batch
        self.output_signature = output_signature
        self.keep, self.prefetch = keep, prefetch
        self._sync = sync
        self._flat_specs = flat
        self._shapes = [s.shape.as_list() if s.shape.rank is not None else None for s in flat]
        self._names = _field_names(output_signature) or [f"output {i}" for i in range(len(flat))]
        self._count = itertools.count()
        if device is None:
            device = "/GPU:0" if tf.config.list_logical_devices("GPU") else "/CPU:0"
        self.device = device
        spec = tf.DeviceSpec.from_string(device)
        self._gpu = (spec.device_index or 0) if (spec.device_type or "").upper() == "GPU" else None
        self._tf_has_gpu = bool(tf.config.list_logical_devices("GPU"))
        self._torch_checked = False
        self._check_torch()
        _warn_if_tensorflow_holds_the_gpu()
        n = len(flat)
        ranks = (ctypes.c_int32 * n)(*[-1 if s is None else len(s) for s in self._shapes])
        dims = (ctypes.c_int64 * (n * _MAX_RANK))()
        for i, shape in enumerate(self._shapes):
            for k, d in enumerate(shape or ()):
                dims[i * _MAX_RANK + k] = -1 if d is None else d
        dtypes = (ctypes.c_int32 * n)(*[s.dtype.as_datatype_enum for s in flat])
        gpu = -1 if self._gpu is None or not self._tf_has_gpu else self._gpu
        self._id = _c().OtfBridgeOpen(keep, prefetch, gpu, n, dtypes, ranks, dims)
        self._producer = None
        self._producer_lock = threading.Lock()
        weakref.finalize(self, _c().OtfBridgeClose, self._id)

    def _check_torch(self):
        """A PyTorch imported after TensorFlow crashes in its GPU code: say so instead."""
        if not self._torch_checked and "torch" in sys.modules:
            check_torch_import_order("tf_onthefly.interop.DeviceBridge")
            self._torch_checked = True

    # ---- The Python side: one batch, checked, ordered and put ------------------------------
    def _order(self, arrays, index):
        """Host waits where the producer's stream is unknown. Returns the producer streams
        TensorFlow's stream is to wait for on the GPU, and which arrays those cover."""
        streams, on_stream, waited = [], [False] * len(arrays), set()
        for i, (array, name) in enumerate(zip(arrays, self._names)):
            kind, ordinal = _device_of(array)
            if kind not in (_KDLCUDA, _KDLCUDA_MANAGED):
                continue
            if not self._tf_has_gpu:
                raise BridgeError(
                    f"batch {index}: field '{name}' is a GPU array ({type(array).__name__}), but TensorFlow sees no "
                    f"GPU here; return host arrays (NumPy) where there is no GPU"
                )
            if self._gpu is None or ordinal != self._gpu:
                raise BridgeError(
                    f"batch {index}: field '{name}' is on GPU {ordinal}, the bridge's device is {self.device}: make "
                    f"the arrays on the bridge's GPU (or give the bridge that GPU as its device)"
                )
            stream = self._sync_stream
            if stream is None and self._sync == "auto":
                stream = _producer_stream(array)
            if stream is not None:
                if stream not in streams:
                    streams.append(stream)
                on_stream[i] = True
                continue
            module = "capsule" if _is_capsule(array) else _module_of(array)
            key = (module, id(array) if module in ("jax", "jaxlib") else ordinal)
            if key in waited:
                continue
            waited.add(key)
            if callable(self._sync):
                self._sync(array)
            elif module == "capsule":
                _device_synchronize(ordinal)
            else:
                synchronize(array, "stream" if self._sync == "stream" else "device")
        return streams, on_stream

    def _field(self, field, array, spec, want, name, index, no_sync, held):
        """Fills `field` for one array: a DLPack handle for device arrays and DLPack
        capsules, host values otherwise (checked here as from_python checks them; the C side
        copies them). `held` keeps what the field points into alive until the put."""
        if isinstance(array, (tf.Tensor, tf.Variable)):
            array = tf.convert_to_tensor(array)
            array = tf.experimental.dlpack.to_dlpack(array) if "GPU" in array.device else array.numpy()
        elif hasattr(array, "__cuda_array_interface__") and not hasattr(array, "__dlpack__"):
            array = _from_cuda_array_interface(array, name, no_sync)
        if _is_capsule(array) or hasattr(array, "__dlpack__") and not isinstance(array, np.ndarray):
            if not _is_capsule(array) and _is_device_array(array) and _dtype_name(array) == "int32":
                raise BridgeError(
                    f"field '{name}' is an int32 array on a GPU: TensorFlow keeps int32 tensors of GPU ops in host "
                    f"memory, so it cannot use this one where it lies; produce int64 (or a float type) instead"
                )
            capsule = _capsule_of(array, no_sync)
            field.kind, field.data, used = _capsule_handle(capsule)
            held.append((capsule, used))
            return
        arr = np.asarray(array)
        dtype_matches = arr.dtype == spec.dtype.as_numpy_dtype
        if not _matches(want, dtype_matches, arr.shape):
            _check_field(index, name, spec, dtype_matches, str(arr.dtype), list(arr.shape))
        if arr.ndim > _MAX_RANK:
            raise BridgeError(f"field '{name}' has rank {arr.ndim}; a DeviceBridge takes ranks up to {_MAX_RANK}")
        arr = np.ascontiguousarray(arr)
        field.kind, field.dtype, field.rank, field.data = _HOST, spec.dtype.as_datatype_enum, arr.ndim, arr.ctypes.data
        for k, d in enumerate(arr.shape):
            field.dims[k] = d
        held.append((arr, None))

    def _hand_over(self, step: int):
        """make_batch(step), checked, ordered and put under the step for the take."""
        self._check_torch()
        batch = self.make_batch(step)
        index = next(self._count)
        try:
            tf.nest.assert_same_structure(self.output_signature, batch, check_types=False)
        except (ValueError, TypeError) as e:
            raise SignatureDriftError(f"batch {index}: structure differs from the output signature: {e}") from None
        arrays = tf.nest.flatten(batch)
        streams, on_stream = self._order(arrays, index)
        fields, held = (_Field * len(arrays))(), []
        for i, (array, spec, want, name, no_sync) in enumerate(
            zip(arrays, self._flat_specs, self._shapes, self._names, on_stream)
        ):
            try:
                self._field(fields[i], array, spec, want, name, index, no_sync, held)
            except BridgeError as e:
                raise BridgeError(f"batch {index}: {e}") from None
            except (TypeError, ValueError, BufferError, tf.errors.OpError) as e:
                if isinstance(e, SignatureDriftError):
                    raise
                raise BridgeError(
                    f"batch {index}: field '{name}' ({type(array).__name__}, dtype {_dtype_name(array)}) cannot become "
                    f"a tensor: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
                ) from None
        self._put(step, fields, streams, index)
        for capsule, used in held:  # the C side owns their handles now
            if used is not None:
                ctypes.pythonapi.PyCapsule_SetName(capsule, used)

    def _put(self, step, fields, streams, index):
        message, refused, dims = (
            ctypes.create_string_buffer(1024),
            (ctypes.c_int32 * 3)(),
            (ctypes.c_int64 * _MAX_RANK)(),
        )
        n = len(fields)
        if _c().OtfBridgePut(
            self._id,
            step,
            n,
            fields,
            (ctypes.c_int64 * len(streams))(*streams),
            len(streams),
            message,
            1024,
            refused,
            dims,
        ):
            field, dtype, rank = refused
            if field >= 0:
                got = tf.dtypes.as_dtype(dtype)
                spec = self._flat_specs[field]
                _check_field(
                    index, self._names[field], spec, got == spec.dtype, got.name, list(dims[: min(rank, _MAX_RANK)])
                )
            text = message.value.decode("utf-8", "replace")
            text = re.sub(r"^field (\d+)", lambda m: f"field '{self._names[int(m.group(1))]}'", text)
            raise BridgeError(f"batch {index}: {text}")

    # ---- The graph side --------------------------------------------------------------------
    def _serve(self):
        """Starts the producer thread, once."""
        with self._producer_lock:
            if self._producer is None:
                _c().OtfBridgeServe(self._id, 1)
                self._producer = threading.Thread(
                    target=_serve, args=(weakref.ref(self), self._id), name=f"DeviceBridge-{self._id}", daemon=True
                )
                self._producer.start()

    def _take(self, step, wait=True):
        with tf.device(self.device):
            flat = _load.ops.on_the_fly_bridge_take(
                step=step, bridge=self._id, wait=wait, T=[s.dtype for s in self._flat_specs]
            )
        for tensor, spec in zip(flat, self._flat_specs):
            tensor.set_shape(spec.shape)
        return tf.nest.pack_sequence_as(self.output_signature, flat)

    def __call__(self, step):
        """The batch of `step` (an integer, or an integer tensor: read on the host)."""
        if isinstance(step, (tf.Tensor, tf.Variable)) or hasattr(step, "_as_graph_element"):
            step = tf.convert_to_tensor(step)
            if not step.dtype.is_integer or step.shape.rank not in (None, 0):
                _args.refuse("DeviceBridge: step", f"must be an integer scalar, got {step.dtype.name} {step.shape}")
        else:
            step = _args.int_value(step, "DeviceBridge: step")
        if tf.executing_eagerly():
            step = int(step.numpy()) if hasattr(step, "numpy") else int(step)
            self._hand_over(step)
            with tf.device("/CPU:0"):
                step = tf.constant(step, tf.int64)
            # Put above: the take need not wait (waiting here, holding the GIL, could wait for
            # the producer thread, which needs it).
            return self._take(step, wait=False)
        self._serve()
        with tf.device("/CPU:0"):
            step = tf.reshape(tf.cast(step, tf.int64), [])
        return self._take(step)

    def dataset(self, steps: Optional[int] = None, *, start_step: int = 0) -> tf.data.Dataset:
        """Step numbers (8 bytes each): the dataset for GeneratorModel(model, bridge), whose
        step calls the bridge. (A tf.data map of the bridge would run on the host, where
        TensorFlow copies every batch back from the GPU.)"""
        return tf.data.Dataset.range(start_step, sys.maxsize if steps is None else start_step + steps)

    def __repr__(self):
        return f"DeviceBridge({getattr(self.make_batch, '__name__', self.make_batch)!r}, keep={self.keep})"
