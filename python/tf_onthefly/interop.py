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

- Ordering, with no host wait for CuPy, PyTorch and Numba: TensorFlow's stream waits on the
  GPU for the producer library's stream (its current stream when make_batch returns, or the
  stream given as sync=), through an event the bridge's op (OnTheFly>BridgePut) records
  there. Producers whose stream cannot be known (JAX, DLPack capsules, sync="device" or
  "stream", a sync callable) are waited for on the host, once per batch. (On an H100 the
  hand-over still returned after the producer had finished: docs/interop.md, known problem.)
- Ownership: TensorFlow holds the producer's array until its tensor is freed; the bridge
  also keeps the last `keep` batches, and the producer's stream waits on the GPU for
  TensorFlow's work queued before each hand-over, so a producer's memory pool does not
  hand their memory to a new batch while TensorFlow's stream may still read them.
- Inside a graph the batch is made by a tf.py_function on the CPU (the step is read on the
  host: no device-to-host wait, given a step on the host) and enters the step on the
  bridge's device through OnTheFly>BridgeTake: the step runs Python (the GIL) once per batch.
  Not XLA-compilable (jit_compile=True refuses EagerPyFunc), and not serialisable into a
  SavedModel (the Python function is not part of the graph): use a built-in generator or
  tf_onthefly.cuda_kernel where either matters.
- int32 arrays on a GPU are refused: TensorFlow keeps int32 tensors of GPU ops in host
  memory, so an int32 device tensor would be copied or misplaced; produce int64 or floats.
- Host arrays (NumPy, or anything np.asarray takes) work too, on any machine: they become
  tensors by one copy, as with from_python.
"""

import collections
import ctypes
import itertools
import os
import sys
import warnings
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
_TICKETS = itertools.count(1)  # one per batch handed over, for the process


class DeviceBridge:
    """make_batch(step) -> a structure of device (or host) arrays, as TensorFlow tensors.

    Args:
      make_batch: called with the step (a Python int) for each batch; returns arrays in the
        structure of `output_signature`: CuPy, Numba, torch CUDA tensors, JAX arrays
        (anything with __dlpack__, or DLPack capsules), or host arrays.
      output_signature: nested tf.TensorSpec, as for from_python; each batch is checked
        against it (SignatureDriftError names the field, the expected and the actual shape
        and dtype, and the batch number).
      keep: batches the bridge keeps referenced after handing them over (>= 1), so their
        memory is not reused while TensorFlow may still read them; at least the batches in
        flight (prefetch depth + 2 through dataset()).
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
        sees no GPU).

    Call it with a step (an integer, or an integer tensor): eagerly it converts directly;
    inside a tf.function it is a tf.py_function on the CPU that makes the batch and an op on
    `device` that takes it in, so it works in graph loops and model.fit
    (GeneratorModel(model, bridge), compiled with jit_compile=False, keeps its step on the
    host for the bridge). A step on the GPU costs a device-to-host wait per batch.
    """

    step_on_host = True  # read by GeneratorModel and DataPosition: keep the step on the CPU

    def __init__(
        self,
        make_batch: Callable[[int], Any],
        output_signature,
        *,
        keep: int = 2,
        sync="auto",
        device: Optional[str] = None,
    ):
        if not callable(make_batch):
            raise TypeError(f"make_batch must be callable, got {type(make_batch).__name__}")
        flat = tf.nest.flatten(output_signature)
        if not flat or not all(isinstance(s, tf.TensorSpec) for s in flat):
            raise TypeError("output_signature must be a (nested) structure of tf.TensorSpec")
        if not isinstance(keep, int) or isinstance(keep, bool) or keep < 1:
            raise ValueError(f"keep must be an integer >= 1, got {keep!r}")
        self._sync_stream = None
        if not (sync in _SYNC_MODES or callable(sync)):
            self._sync_stream = _stream_handle(sync)
            if self._sync_stream is None:
                raise ValueError(
                    f"sync must be 'auto', 'device', 'stream', a CuPy/PyTorch/Numba stream or a callable, got {sync!r}"
                )
        self.make_batch = make_batch
        self.output_signature = output_signature
        self.keep = keep
        self._sync = sync
        self._flat_specs = flat
        self._shapes = [s.shape.as_list() if s.shape.rank is not None else None for s in flat]
        self._names = _field_names(output_signature) or [f"output {i}" for i in range(len(flat))]
        self._kept = collections.deque(maxlen=keep)
        self._stream_tensors = {}
        self._count = 0
        if device is None:
            device = "/GPU:0" if tf.config.list_logical_devices("GPU") else "/CPU:0"
        self.device = device
        spec = tf.DeviceSpec.from_string(device)
        self._gpu = (spec.device_index or 0) if (spec.device_type or "").upper() == "GPU" else None
        self._tf_has_gpu = bool(tf.config.list_logical_devices("GPU"))
        self._torch_checked = False
        self._check_torch()
        _warn_if_tensorflow_holds_the_gpu()

    def _check_torch(self):
        """A PyTorch imported after TensorFlow crashes in its GPU code: say so instead."""
        if not self._torch_checked and "torch" in sys.modules:
            check_torch_import_order("tf_onthefly.interop.DeviceBridge")
            self._torch_checked = True

    # ---- The Python side: one batch, checked, ordered and handed over ----------------------
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
            on_gpu = self._gpu is not None and ordinal == self._gpu
            stream = self._sync_stream
            if stream is None and self._sync == "auto":
                stream = _producer_stream(array)
            if on_gpu and stream is not None:
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

    def _tensor(self, array, spec, want, name, index, no_sync):
        host = not isinstance(array, (tf.Tensor, tf.Variable)) and not _is_capsule(array)
        if host and (isinstance(array, np.ndarray) or not hasattr(array, "__dlpack__")) and not _is_device_array(array):
            # Host values: checked as from_python checks them, before any conversion.
            arr = np.asarray(array)
            dtype_matches = arr.dtype == spec.dtype.as_numpy_dtype
            if not _matches(want, dtype_matches, arr.shape):
                _check_field(index, name, spec, dtype_matches, str(arr.dtype), list(arr.shape))
        try:
            tensor = to_tensor(array, name, _no_sync=no_sync)
        except BridgeError as e:
            raise BridgeError(f"batch {index}: {e}") from None
        except (TypeError, ValueError, tf.errors.OpError) as e:
            raise BridgeError(
                f"batch {index}: field '{name}' ({type(array).__name__}, dtype {_dtype_name(array)}) cannot become a "
                f"tensor: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
            ) from None
        if not _matches(want, tensor.dtype == spec.dtype, tensor.shape):
            _check_field(index, name, spec, tensor.dtype == spec.dtype, tensor.dtype.name, tensor.shape.as_list())
        return tensor

    def _produce(self, step) -> tf.Tensor:
        """make_batch(step), checked, ordered and put under a new ticket, returned as an int64
        tensor on the host, where BridgePut and BridgeTake read it (made under the GPU's
        scope it would be copied to the GPU and back for every batch)."""
        step = int(step.numpy()) if hasattr(step, "numpy") else int(step)
        self._check_torch()
        batch = self.make_batch(step)
        index = self._count
        self._count += 1
        try:
            tf.nest.assert_same_structure(self.output_signature, batch, check_types=False)
        except (ValueError, TypeError) as e:
            raise SignatureDriftError(f"batch {index}: structure differs from the output signature: {e}") from None
        arrays = tf.nest.flatten(batch)
        streams, on_stream = self._order(arrays, index)
        tensors = [
            self._tensor(array, spec, want, name, index, no_sync)
            for array, spec, want, name, no_sync in zip(arrays, self._flat_specs, self._shapes, self._names, on_stream)
        ]
        with tf.device("/CPU:0"):
            ticket = tf.constant(next(_TICKETS), tf.int64)
        with tf.device(self.device):
            _load.ops.on_the_fly_bridge_put(
                ticket=ticket, producer_streams=self._streams_tensor(streams), tensors=tensors
            )
        self._kept.append(arrays)
        return ticket

    def _streams_tensor(self, streams):
        """The producer streams as an int64 vector, made once per set of streams (a producer
        uses the same stream batch after batch)."""
        key = tuple(streams)
        tensor = self._stream_tensors.get(key)
        if tensor is None:
            with tf.device("/CPU:0"):
                tensor = tf.constant(streams, tf.int64, shape=[len(streams)])
            self._stream_tensors = {key: tensor}  # only the last set: a stream may go away
        return tensor

    def _take(self, ticket):
        with tf.device(self.device):
            flat = _load.ops.on_the_fly_bridge_take(ticket=ticket, T=[s.dtype for s in self._flat_specs])
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
            return self._take(self._produce(step))
        with tf.device("/CPU:0"):
            ticket = tf.py_function(self._produce, [tf.cast(step, tf.int64)], Tout=tf.int64, name="DeviceBridge")
        return self._take(ticket)

    def dataset(self, steps: Optional[int] = None, *, start_step: int = 0) -> tf.data.Dataset:
        """Step numbers (8 bytes each): the dataset for GeneratorModel(model, bridge), whose
        step calls the bridge. (A tf.data map of the bridge would run on the host, where
        TensorFlow copies every batch back from the GPU.)"""
        return tf.data.Dataset.range(start_step, sys.maxsize if steps is None else start_step + steps)

    def __repr__(self):
        return f"DeviceBridge({getattr(self.make_batch, '__name__', self.make_batch)!r}, keep={self.keep})"
