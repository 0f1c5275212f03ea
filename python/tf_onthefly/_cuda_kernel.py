"""A kernel written from Python (PTX) as a native TensorFlow op: OnTheFly>CudaKernel.

    ptx = numba.cuda.compile_ptx(fn, sig)[0]        # or CuPy/NVRTC, clang or nvcc -ptx
    features, labels = tf_onthefly.cuda_kernel(
        ptx, "my_kernel", batch_size=4096, outputs=[((64,), tf.float32), ((1,), tf.float32)],
        seed=7, step=step, int_scalars=[64], float_scalars=[0.5])

The op launches the PTX on TensorFlow's stream into outputs TensorFlow allocated, through
the CUDA driver API (the module is loaded once per device and cached); there is nothing to
build. Under XLA (jit_compile=True) it is a custom call launching the same kernel on XLA's
stream. The PTX is an attribute of the op, so it travels with the graph: a SavedModel that
uses it runs wherever the driver can JIT the PTX. GPU only: on a CPU the op says so.

The kernel's parameters, in this order (docs/interop.md):
    const int64_t* seed, int64_t seed_size, const int64_t* step,   (device memory)
    int64_t first_sample, int64_t num_samples, int64_t batch_size,
    int64_t int_scalars[i]..., float float_scalars[i]...,
    const T* inputs[i]...,     T* outputs[i]...                     (device memory)
`contract_source()` gives the counter-contract helpers (Philox, key derivation, the
mappings) as CUDA source, for NVRTC/CuPy or for a file next to clang, so a kernel from
Python draws the same random words as the built-in generators.
"""

import ctypes
import os
from typing import Optional, Sequence

import numpy as np
import tensorflow as tf

from tf_onthefly import _args, _load

OP = "OnTheFly>CudaKernel"
GRID_RULES = ("elements", "samples", "fixed")
DTYPES = (
    tf.float32,
    tf.float64,
    tf.float16,
    tf.bfloat16,
    tf.int8,
    tf.uint8,
    tf.int16,
    tf.int32,
    tf.int64,
    tf.uint32,
    tf.uint64,
    tf.bool,
)
MAX_TENSORS = 16  # inputs, and outputs, of one call (the op's limit)
_lib = None


def _parser():
    """The op library's PTX parser (tf_ops/cuda_kernel/ptx_kernel.h), the one the op uses."""
    global _lib
    if _lib is None:
        lib = ctypes.CDLL(_load.VARIANT["library"])
        lib.tf_onthefly_ptx_entries.restype = ctypes.c_int64
        lib.tf_onthefly_ptx_entries.argtypes = [ctypes.c_char_p, ctypes.c_int64, ctypes.c_char_p, ctypes.c_int64]
        lib.tf_onthefly_ptx_is_ptx.restype = ctypes.c_int
        lib.tf_onthefly_ptx_is_ptx.argtypes = [ctypes.c_char_p, ctypes.c_int64]
        _lib = lib
    return _lib


def _bytes(ptx) -> bytes:
    return ptx if isinstance(ptx, bytes) else str(ptx).encode("utf-8", errors="replace")


def ptx_entries(ptx) -> list:
    """The kernel names (.entry directives) of a PTX text (str or bytes), in order, as the op
    reads them: comments and strings skipped, any whitespace after `.entry`."""
    text = _bytes(ptx)
    lib = _parser()
    size = lib.tf_onthefly_ptx_entries(text, len(text), None, 0)
    out = ctypes.create_string_buffer(max(1, size))
    lib.tf_onthefly_ptx_entries(text, len(text), out, size)
    return out.raw[:size].decode("utf-8", errors="replace").splitlines()


def _is_ptx(text: bytes) -> bool:
    return bool(_parser().tf_onthefly_ptx_is_ptx(text, len(text)))


class _Checks:
    """Refusals naming the op, the entry and the argument (InvalidArgumentError)."""

    def __init__(self, entry):
        self.who = f"{OP} (entry {entry!r})" if isinstance(entry, str) and entry else OP

    def refuse(self, arg, message):
        _args.refuse(f"{self.who}: {arg}", message)

    def arg(self, arg):
        return f"{self.who}: {arg}"

    def int_value(self, value, arg, low=None, high=None):
        v = _args.int_value(value, self.arg(arg))
        if (low is not None and v < low) or (high is not None and v > high):
            bounds = f"in [{low}, {high}]" if high is not None else f">= {low}"
            self.refuse(arg, f"must be {bounds}, got {v}")
        return v

    def sequence(self, value, arg, what):
        """A list, tuple or 1-D array as a list; anything else refused."""
        if isinstance(value, np.ndarray) and value.ndim == 1:
            return list(value)
        if not isinstance(value, (list, tuple)):
            self.refuse(arg, f"must be a list of {what}, got {value!r} ({type(value).__name__})")
        return list(value)


def _check_ptx(ptx, entry, c):
    if isinstance(ptx, bytes):
        ptx = ptx.decode("utf-8", errors="replace")
    if not isinstance(ptx, str):
        c.refuse("ptx", f"must be PTX text (str or bytes), got {type(ptx).__name__}")
    if not isinstance(entry, str) or not entry:
        c.refuse("entry", f"must name a kernel of the PTX, got {entry!r}")
    text = _bytes(ptx)
    if not _is_ptx(text):
        c.refuse(
            "ptx",
            "is not PTX text (no .version or .target directive): pass the output of "
            "numba.cuda.compile_ptx, NVRTC (cupy.RawModule(...)), or clang/nvcc -ptx",
        )
    entries = ptx_entries(text)
    if entry not in entries:
        c.refuse(
            "entry",
            f"{entry!r} is not a kernel of the PTX; its kernels are {entries} (a C++ kernel "
            'needs extern "C" to keep its name)',
        )
    return ptx


def _outputs(outputs, c):
    if not isinstance(outputs, (list, tuple)) or not outputs:
        c.refuse("outputs", f"must be a non-empty list of (sample_shape, dtype) pairs, got {outputs!r}")
    if len(outputs) > MAX_TENSORS:
        c.refuse("outputs", f"has {len(outputs)} pairs; the op writes at most {MAX_TENSORS} outputs")
    shapes, dtypes = [], []
    for i, pair in enumerate(outputs):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            c.refuse(f"outputs[{i}]", f"must be a (sample_shape, dtype) pair, got {pair!r}")
        shape, dtype = pair
        try:
            shape = tf.TensorShape(shape)
        except (TypeError, ValueError):
            c.refuse(f"outputs[{i}]", f"has a sample shape that is not a shape: {shape!r}")
        if not shape.is_fully_defined():
            c.refuse(f"outputs[{i}]", f"needs a fully defined sample shape, got {shape}")
        try:
            dtype = tf.as_dtype(dtype)
        except TypeError:
            c.refuse(f"outputs[{i}]", f"has a dtype TensorFlow does not know: {dtype!r}")
        if dtype not in DTYPES:
            c.refuse(f"outputs[{i}]", f"has dtype {dtype.name}; supported: {[d.name for d in DTYPES]}")
        shapes.append(shape)
        dtypes.append(dtype)
    return shapes, dtypes


def _inputs(inputs, c):
    values = c.sequence(inputs, "inputs", "tensors")
    if len(values) > MAX_TENSORS:
        c.refuse("inputs", f"has {len(values)} tensors; the op takes at most {MAX_TENSORS}")
    tensors = []
    for i, value in enumerate(values):
        if value is None:
            c.refuse(f"inputs[{i}]", "must be a tensor (or an array), got None")
        try:
            t = tf.convert_to_tensor(value)
        except (TypeError, ValueError) as e:
            c.refuse(f"inputs[{i}]", f"cannot become a tensor ({type(value).__name__}): {e}")
        if t.dtype not in DTYPES:
            c.refuse(f"inputs[{i}]", f"has dtype {t.dtype.name}; supported: {[d.name for d in DTYPES]}")
        tensors.append(t)
    return tensors


def _grid(grid, grid_dims, c):
    if grid not in GRID_RULES:
        c.refuse("grid", f"must be one of {GRID_RULES}, got {grid!r}")
    dims = [] if grid_dims is None else c.sequence(grid_dims, "grid_dims", "block counts")
    if grid == "fixed":
        if not 1 <= len(dims) <= 3:
            c.refuse("grid_dims", f"must give 1 to 3 block counts for grid='fixed', got {grid_dims!r}")
    elif dims:
        c.refuse("grid_dims", f"is only for grid='fixed' (grid is {grid!r})")
    return [c.int_value(g, f"grid_dims[{i}]", 1, 2**31 - 1 if i == 0 else 65535) for i, g in enumerate(dims)]


def cuda_kernel(
    ptx,
    entry: str,
    *,
    batch_size: int,
    outputs: Sequence,
    seed=0,
    step=0,
    inputs: Sequence = (),
    int_scalars: Sequence[int] = (),
    float_scalars: Sequence[float] = (),
    grid: str = "elements",
    grid_dims: Optional[Sequence[int]] = None,
    block: int = 256,
    items_per_thread: int = 1,
    shared_memory_bytes: int = 0,
    first_sample=0,
    num_samples: Optional[int] = None,
    name: Optional[str] = None,
):
    """Runs kernel `entry` of `ptx` as a TensorFlow op; returns its outputs (a list).

    Args:
      ptx: PTX text (str or bytes).
      entry: the kernel's name in the PTX (an extern "C" name, or the mangled one).
      batch_size: samples in the step's global batch (>= 1).
      outputs: one (sample_shape, dtype) per output, at most 16; output i has shape
        [num_samples] + sample_shape. The kernel must write every element.
      seed, step: int64 scalars (seed also an int64 pair), passed in device memory.
      inputs: a list of at most 16 tensors, passed as device pointers after the scalars.
      int_scalars, float_scalars: lists of constants passed by value (int64, then float32).
      grid: 'elements' (one thread per `items_per_thread` elements of output 0), 'samples'
        (one per `items_per_thread` rows) or 'fixed' (`grid_dims` blocks).
      grid_dims: the blocks of a 'fixed' grid: [x], [x, y] or [x, y, z].
      block: threads per block, 1..1024 (and no more than the kernel allows).
      items_per_thread: for the 'elements' and 'samples' rules.
      shared_memory_bytes: dynamic shared memory per block.
      first_sample, num_samples: this call's rows of the global batch (default: all of it),
        for replicas that each produce a slice (docs/counter-contract.md).

    Every refusal is an InvalidArgumentError naming the op, the entry and the argument.
    """
    c = _Checks(entry)
    ptx = _check_ptx(ptx, entry, c)
    shapes, dtypes = _outputs(outputs, c)
    batch_size = c.int_value(batch_size, "batch_size", 1)
    rows = batch_size if num_samples is None else c.int_value(num_samples, "num_samples", 0, batch_size)
    grid_dims = _grid(grid, grid_dims, c)
    block = c.int_value(block, "block", 1, 1024)
    items_per_thread = c.int_value(items_per_thread, "items_per_thread", 1)
    shared_memory_bytes = c.int_value(shared_memory_bytes, "shared_memory_bytes", 0)
    ints = [
        _args.int_value(v, c.arg(f"int_scalars[{i}]"))
        for i, v in enumerate(c.sequence(int_scalars, "int_scalars", "integers"))
    ]
    floats = [
        _args.float_value(v, c.arg(f"float_scalars[{i}]"))
        for i, v in enumerate(c.sequence(float_scalars, "float_scalars", "real numbers"))
    ]
    tensors = _inputs(inputs, c)
    with tf.name_scope(name or "CudaKernel"):
        return _load.ops.on_the_fly_cuda_kernel(
            seed=_args.int64_tensor(seed, c.arg("seed"), unsigned_64=True),
            step=_args.int64_tensor(step, c.arg("step"), unsigned_64=True),
            first_sample=_args.index_tensor(first_sample, c.arg("first_sample")),
            inputs=tensors,
            ptx=ptx,
            entry=entry,
            batch_size=batch_size,
            num_samples=-1 if num_samples is None else rows,
            sample_shapes=shapes,
            Tout=dtypes,
            int_scalars=ints,
            float_scalars=floats,
            grid_rule=grid,
            grid=grid_dims,
            block=block,
            items_per_thread=items_per_thread,
            shared_memory_bytes=shared_memory_bytes,
        )


_CONTRACT_HEADERS = ("philox.h", "uniform.h")


def contract_source(folder: Optional[str] = None) -> str:
    """philox.h and uniform.h (the counter contract's helpers: Philox4x32_10, DeriveKey,
    SampleBlock, UniformFloat, UniformBelow, ...) as one CUDA source text that NVRTC
    (cupy.RawModule, options=("-std=c++17",)) and clang/nvcc compile; prepend it to a
    kernel's source instead of the two #include lines. Read from `folder`, else from the
    headers the wheel ships (tf_onthefly.include_dir(), a source tree's root in a checkout)."""
    from tf_onthefly import include_dir

    folders = [folder] if folder else [os.path.join(include_dir(), "tf_ops", "common")]
    for candidate in folders:
        paths = [os.path.join(candidate, h) for h in _CONTRACT_HEADERS]
        if all(os.path.exists(p) for p in paths):
            texts = []
            for p in paths:
                with open(p) as f:
                    texts.append(f.read())
            texts[1] = texts[1].replace('#include "tf_ops/common/philox.h"', "")
            return "\n".join(texts)
    raise FileNotFoundError(
        f"the counter-contract headers ({', '.join(_CONTRACT_HEADERS)}) are not in {folders}; pass the folder "
        "that holds them (a source tree's tf_ops/common)"
    )
