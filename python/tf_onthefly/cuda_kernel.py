"""A kernel written from Python (PTX) as a native TensorFlow op: OnTheFly>CudaKernel.

    ptx = numba.cuda.compile_ptx(fn, sig)[0]        # or CuPy/NVRTC, clang or nvcc -ptx
    features, labels = tf_onthefly.cuda_kernel.cuda_kernel(
        ptx, "my_kernel", batch_size=4096, outputs=[((64,), tf.float32), ((1,), tf.float32)],
        seed=7, step=step, int_scalars=[64], float_scalars=[0.5])

The op launches the PTX on TensorFlow's stream into outputs TensorFlow allocated, through
the CUDA driver API (the module is loaded once per device and cached); there is nothing to
build. The PTX is an attribute of the op, so it travels with the graph: a SavedModel that
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

import os
import re
from typing import Optional, Sequence

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
_ENTRY = re.compile(r"\.entry\s+([A-Za-z_$][\w$]*)")


def ptx_entries(ptx: str) -> list:
    """The kernel names (.entry directives) of a PTX text, in order."""
    return _ENTRY.findall(ptx)


def _check_ptx(ptx, entry):
    if isinstance(ptx, bytes):
        ptx = ptx.decode("utf-8", errors="replace")
    if not isinstance(ptx, str):
        _args.refuse("ptx", f"must be PTX text (str or bytes), got {type(ptx).__name__}")
    if ".version" not in ptx or ".target" not in ptx:
        _args.refuse(
            "ptx",
            "is not PTX text (no .version or .target directive): pass the output of "
            "numba.cuda.compile_ptx, NVRTC (cupy.RawModule(...)), or clang/nvcc -ptx",
        )
    if not isinstance(entry, str) or not entry:
        _args.refuse("entry", f"must name a kernel of the PTX, got {entry!r}")
    entries = ptx_entries(ptx)
    if entry not in entries:
        _args.refuse(
            "entry",
            f"{entry!r} is not a kernel of the PTX; its kernels are {entries} (a C++ kernel "
            'needs extern "C" to keep its name)',
        )
    return ptx


def _outputs(outputs):
    if not isinstance(outputs, (list, tuple)) or not outputs:
        _args.refuse("outputs", f"must be a non-empty list of (sample_shape, dtype) pairs, got {outputs!r}")
    shapes, dtypes = [], []
    for i, pair in enumerate(outputs):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            _args.refuse(f"outputs[{i}]", f"must be a (sample_shape, dtype) pair, got {pair!r}")
        shape, dtype = pair
        try:
            shape = tf.TensorShape(shape)
        except (TypeError, ValueError):
            _args.refuse(f"outputs[{i}]", f"has a sample shape that is not a shape: {shape!r}")
        if not shape.is_fully_defined():
            _args.refuse(f"outputs[{i}]", f"needs a fully defined sample shape, got {shape}")
        try:
            dtype = tf.as_dtype(dtype)
        except TypeError:
            _args.refuse(f"outputs[{i}]", f"has a dtype TensorFlow does not know: {dtype!r}")
        if dtype not in DTYPES:
            _args.refuse(f"outputs[{i}]", f"has dtype {dtype.name}; supported: {[d.name for d in DTYPES]}")
        shapes.append(shape)
        dtypes.append(dtype)
    return shapes, dtypes


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
      batch_size: samples in the step's global batch.
      outputs: one (sample_shape, dtype) per output; output i has shape
        [num_samples] + sample_shape. The kernel must write every element.
      seed, step: int64 scalars (seed also an int64 pair), passed in device memory.
      inputs: tensors passed as device pointers after the scalars.
      int_scalars, float_scalars: constants passed by value (int64, then float32).
      grid: 'elements' (one thread per `items_per_thread` elements of output 0), 'samples'
        (one per `items_per_thread` rows) or 'fixed' (`grid_dims` blocks).
      grid_dims: the blocks of a 'fixed' grid: [x], [x, y] or [x, y, z].
      block: threads per block, 1..1024 (and no more than the kernel allows).
      items_per_thread: for the 'elements' and 'samples' rules.
      shared_memory_bytes: dynamic shared memory per block.
      first_sample, num_samples: this call's rows of the global batch (default: all of it),
        for replicas that each produce a slice (docs/counter-contract.md).
    """
    ptx = _check_ptx(ptx, entry)
    shapes, dtypes = _outputs(outputs)
    if grid not in GRID_RULES:
        _args.refuse("grid", f"must be one of {GRID_RULES}, got {grid!r}")
    if grid == "fixed":
        if not grid_dims or len(grid_dims) > 3:
            _args.refuse("grid_dims", f"must give 1 to 3 block counts for grid='fixed', got {grid_dims!r}")
    elif grid_dims:
        _args.refuse("grid_dims", f"is only for grid='fixed' (grid is {grid!r})")
    grid_dims = [_args.int_value(g, "grid_dims") for g in (grid_dims or [])]
    for arg, value in (
        ("block", block),
        ("items_per_thread", items_per_thread),
        ("shared_memory_bytes", shared_memory_bytes),
        ("batch_size", batch_size),
    ):
        _args.int_value(value, arg)
    if not 1 <= block <= 1024:
        _args.refuse("block", f"must be in [1, 1024] threads, got {block}")
    if items_per_thread < 1:
        _args.refuse("items_per_thread", f"must be >= 1, got {items_per_thread}")
    ints = [_args.int_value(v, f"int_scalars[{i}]") for i, v in enumerate(int_scalars)]
    floats = [_args.float_value(v, f"float_scalars[{i}]") for i, v in enumerate(float_scalars)]
    tensors = []
    for i, t in enumerate(inputs):
        t = tf.convert_to_tensor(t)
        if t.dtype not in DTYPES:
            _args.refuse(f"inputs[{i}]", f"has dtype {t.dtype.name}; supported: {[d.name for d in DTYPES]}")
        tensors.append(t)
    with tf.name_scope(name or "CudaKernel"):
        return _load.ops.on_the_fly_cuda_kernel(
            seed=_args.int64_tensor(seed, "seed", unsigned_64=True),
            step=_args.int64_tensor(step, "step", unsigned_64=True),
            first_sample=_args.index_tensor(first_sample, "first_sample"),
            inputs=tensors,
            ptx=ptx,
            entry=entry,
            batch_size=batch_size,
            num_samples=-1 if num_samples is None else _args.int_value(num_samples, "num_samples"),
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
