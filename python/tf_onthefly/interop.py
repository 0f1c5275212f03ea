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

- Ordering: TensorFlow cannot wait on another library's CUDA stream, so before handing a
  batch over the bridge waits on the host until the producer's work is done (all work on
  the GPU by default, or only the library's current stream with sync="stream";
  block_until_ready for JAX): one host wait per batch. A batch TensorFlow reads is complete.
- Ownership: TensorFlow holds the producer's array until its tensor is freed; the bridge
  also keeps the last `keep` batches, so a producer's memory pool does not hand their
  memory to a new batch while TensorFlow's stream may still be reading them.
- Inside a graph the batch comes from a tf.py_function placed on the GPU: the step runs
  Python (the GIL) once per batch. Not XLA-compilable (jit_compile=True refuses
  EagerPyFunc), and not serialisable into a SavedModel (the Python function is not
  part of the graph): use a built-in generator or OnTheFly>CudaKernel
  (tf_onthefly.cuda_kernel) where either matters.
- int32 arrays on a GPU are refused: TensorFlow keeps int32 tensors of GPU ops in host
  memory, so an int32 device tensor would be copied or misplaced; produce int64 or floats.
- Host arrays (NumPy, or anything np.asarray takes) work too, on any machine: they become
  tensors by one copy, as with from_python.
"""

import collections
import ctypes
import os
import sys
import warnings
from typing import Any, Callable, Optional

import numpy as np
import tensorflow as tf

from tf_onthefly.data import SignatureDriftError, _check_field, _field_names


class BridgeError(ValueError):
    """An array the bridge cannot hand to TensorFlow as it is."""


# ---- Synchronising with the producer ---------------------------------------------------
def _module_of(array) -> str:
    return type(array).__module__.split(".")[0]


_driver = None


def _device_synchronize(ordinal: int = 0):
    """Waits for all work on GPU `ordinal` (every stream of its primary context, the one
    CUDA's runtime, TensorFlow, CuPy and PyTorch share), through the driver API, for
    producers the bridge does not know."""
    global _driver
    if _driver is None:
        _driver = ctypes.CDLL("libcuda.so.1")
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


def _ordinal(array) -> int:
    try:
        return int(array.__dlpack_device__()[1])
    except Exception:  # noqa: BLE001 - a capsule, or no device query: the first GPU
        return 0


def synchronize(array, mode: str = "device"):
    """Blocks the calling thread until the work that produces `array` is done: the one
    host wait per batch the bridge costs.

    mode "device" (the default): all work on the array's GPU, whichever stream it is on
    (TensorFlow's queued work included). mode "stream": only the producer library's
    current stream, cheaper, and right only when make_batch's work is on that stream when
    it returns (not inside a `with stream:` block that has ended). JAX arrays wait for
    themselves (block_until_ready) in both modes."""
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
        _device_synchronize(_ordinal(array))


# ---- One array to one tensor ------------------------------------------------------------
_KDLCUDA, _KDLCUDA_MANAGED = 2, 13


def _is_device_array(value) -> bool:
    if hasattr(value, "__dlpack_device__"):
        return value.__dlpack_device__()[0] in (_KDLCUDA, _KDLCUDA_MANAGED)
    return type(value).__name__ == "PyCapsule" or hasattr(value, "__cuda_array_interface__")


def _dtype_name(value) -> str:
    return str(getattr(value, "dtype", "?")).replace("torch.", "")


def to_tensor(value, name: str = "output 0") -> tf.Tensor:
    """A device array (`__dlpack__` or a DLPack capsule) as a tf.Tensor on its GPU, with no
    copy; a host array as a tensor by one copy. `name` is the field in error messages.

    The caller synchronises first (DeviceBridge does); this only converts."""
    if isinstance(value, (tf.Tensor, tf.Variable)):
        return tf.convert_to_tensor(value)
    if hasattr(value, "__cuda_array_interface__") and not hasattr(value, "__dlpack__"):
        value = _from_cuda_array_interface(value, name)
    if _is_device_array(value):
        if "int32" == _dtype_name(value):
            raise BridgeError(
                f"field '{name}' is an int32 array on a GPU: TensorFlow keeps int32 tensors of GPU ops in host "
                f"memory, so it cannot use this one where it lies; produce int64 (or a float type) instead"
            )
        capsule = value if type(value).__name__ == "PyCapsule" else value.__dlpack__()
        return tf.experimental.dlpack.from_dlpack(capsule)
    return tf.convert_to_tensor(np.asarray(value))


def _from_cuda_array_interface(value, name):
    """A device array with __cuda_array_interface__ only (a Numba device array) as a CuPy
    view of the same memory (no copy), which speaks DLPack; the view holds the original."""
    try:
        import cupy
    except ImportError:
        raise BridgeError(
            f"field '{name}' is a device array with __cuda_array_interface__ but no DLPack support "
            f"({type(value).__name__}); install CuPy (the bridge then wraps it without a copy) or return a "
            f"DLPack-capable array"
        ) from None
    return cupy.asarray(value)


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
      sync: how to wait for the producer: "device" (all work on the array's GPU, the
        default), "stream" (the producer library's current stream; see synchronize), or a
        callable(array).

    Call it with a step: eagerly it converts directly; inside a tf.function it is a
    tf.py_function on the GPU (or the CPU where TensorFlow sees no GPU), so it works in graph
    loops and model.fit (GeneratorModel(model, bridge), compiled with jit_compile=False).
    """

    def __init__(
        self,
        make_batch: Callable[[int], Any],
        output_signature,
        *,
        keep: int = 2,
        sync="device",
        device: Optional[str] = None,
    ):
        if not callable(make_batch):
            raise TypeError(f"make_batch must be callable, got {type(make_batch).__name__}")
        flat = tf.nest.flatten(output_signature)
        if not flat or not all(isinstance(s, tf.TensorSpec) for s in flat):
            raise TypeError("output_signature must be a (nested) structure of tf.TensorSpec")
        if not isinstance(keep, int) or keep < 1:
            raise ValueError(f"keep must be an integer >= 1, got {keep!r}")
        if not (sync in ("device", "stream") or callable(sync)):
            raise ValueError(f"sync must be 'device', 'stream' or a callable, got {sync!r}")
        self.make_batch = make_batch
        self.output_signature = output_signature
        self.keep = keep
        self._sync = sync
        self._flat_specs = flat
        self._names = _field_names(output_signature) or [f"output {i}" for i in range(len(flat))]
        self._kept = collections.deque(maxlen=keep)
        self._count = 0
        if device is None:
            device = "/GPU:0" if tf.config.list_logical_devices("GPU") else "/CPU:0"
        self.device = device
        _warn_if_tensorflow_holds_the_gpu()

    # The Python side: one batch, converted and checked.
    def _convert(self, step) -> list:
        step = int(step.numpy()) if hasattr(step, "numpy") else int(step)
        batch = self.make_batch(step)
        index = self._count
        self._count += 1
        try:
            tf.nest.assert_same_structure(self.output_signature, batch, check_types=False)
        except (ValueError, TypeError) as e:
            raise SignatureDriftError(f"batch {index}: structure differs from the output signature: {e}") from None
        arrays = tf.nest.flatten(batch)
        waited = set()
        for array in arrays:
            if not _is_device_array(array):
                continue
            if type(array).__name__ == "PyCapsule":
                key = ("capsule", 0)  # nothing to ask a capsule: wait for the first GPU
            else:
                module = _module_of(array)
                # One wait per (library, GPU) covers its arrays; a JAX array waits for itself.
                key = (module, id(array) if module in ("jax", "jaxlib") else _ordinal(array))
            if key in waited:
                continue
            waited.add(key)
            if callable(self._sync):
                self._sync(array)
            elif key[0] == "capsule":
                _device_synchronize(0)
            else:
                synchronize(array, self._sync)
        tensors = []
        for array, spec, name in zip(arrays, self._flat_specs, self._names):
            tensor = to_tensor(array, name)
            _check_field(index, name, spec, tensor.dtype == spec.dtype, tensor.dtype.name, tensor.shape.as_list())
            tensors.append(tensor)
        self._kept.append(arrays)
        return tensors

    def __call__(self, step):
        if tf.executing_eagerly():
            return tf.nest.pack_sequence_as(self.output_signature, self._convert(step))
        with tf.device(self.device):
            flat = tf.py_function(self._convert, [step], Tout=[s.dtype for s in self._flat_specs], name="DeviceBridge")
        for tensor, spec in zip(flat, self._flat_specs):
            tensor.set_shape(spec.shape)
        return tf.nest.pack_sequence_as(self.output_signature, flat)

    def dataset(self, steps: Optional[int] = None, *, start_step: int = 0) -> tf.data.Dataset:
        """Step numbers (8 bytes each): the dataset for GeneratorModel(model, bridge), whose
        step calls the bridge on the GPU. (A tf.data map of the bridge would run on the
        host, where TensorFlow copies every batch back from the GPU.)"""
        return tf.data.Dataset.range(start_step, sys.maxsize if steps is None else start_step + steps)

    def __repr__(self):
        return f"DeviceBridge({getattr(self.make_batch, '__name__', self.make_batch)!r}, keep={self.keep})"
