"""tf_onthefly for JAX: every generator of the core as a function of JAX arrays, through
jax.ffi on the CPU and on CUDA, bit for bit the TensorFlow op's batch (docs/jax.md).

    import tf_onthefly.jax as otf
    features, labels = jax.jit(lambda step: otf.random_batch(32, 16, seed=7, step=step))(3)

Each generator takes the TensorFlow wrapper's arguments (tf_onthefly.random_batch ->
tf_onthefly.jax.random_batch); seed and step are operands (a new step or seed never
retraces), the attributes fix the call. A step vector of shape [n] gives the n steps'
batches stacked, [n, rows, ...], in one call. Under `jax.vmap` the calls run one after another
(vmap_method="sequential"); under `shard_map`, `first_sample` may be a traced value (the
axis index times the shard's rows): each shard then gets its rows of the global batch.
Imports no TensorFlow.
"""

import ctypes
import functools
import json

import jax
import jax.numpy as jnp
import numpy as np

from tf_onthefly import _core, _frontend

if not hasattr(jax, "ffi"):
    raise ImportError(f"tf_onthefly.jax needs JAX 0.5 or newer (jax.ffi); JAX {jax.__version__} is installed")
ffi = jax.ffi

CORE = _core.Core()


def _xla_ffi_api(header: str) -> int:
    """The XLA FFI API version (major * 1000 + minor) an XLA FFI c_api.h declares."""
    with open(header) as f:
        parts = dict(
            line.split()[1:3]
            for line in f
            if line.startswith(("#define XLA_FFI_API_MAJOR ", "#define XLA_FFI_API_MINOR "))
        )
    return int(parts["XLA_FFI_API_MAJOR"]) * 1000 + int(parts["XLA_FFI_API_MINOR"])


def _check_xla_ffi_api():
    """An XLA refuses a handler built against a newer FFI API than its own, and JAX reports
    that only as a backend that cannot start: say it here, plainly, before registering."""
    import os

    ours = CORE.versions()["xla_ffi_api"]
    if ours < 0:
        raise ImportError("tf_onthefly.jax: this tf_onthefly's core was built without XLA handlers")
    theirs = _xla_ffi_api(os.path.join(ffi.include_dir(), "xla", "ffi", "api", "c_api.h"))
    if ours // 1000 != theirs // 1000 or ours > theirs:
        raise ImportError(
            f"tf_onthefly.jax: the core's XLA handlers use XLA FFI API {ours // 1000}.{ours % 1000}, which "
            f"this jaxlib ({jax.__version__}, XLA FFI API {theirs // 1000}.{theirs % 1000}) does not accept; "
            "the supported JAX versions are in docs/jax.md (pip install 'tf-onthefly[jax]')"
        )


_check_xla_ffi_api()
# (target, platform) pairs registered with JAX's XLA.
_REGISTERED = set()
# The XLA platforms JAX names, and the core's for each.
_PLATFORMS = (("cpu", "host"), ("CUDA", "cuda"))


def _x64() -> bool:
    return bool(jax.config.read("jax_enable_x64")) if hasattr(jax.config, "read") else jax.config.x64_enabled


def dtype_name(value, arg: str) -> str:
    """A dtype argument's name: a NumPy/JAX dtype or scalar type (jnp.bfloat16 included) or
    its name."""
    try:
        return np.dtype(value).name
    except TypeError:
        raise ValueError(f"{arg} must be a dtype (jnp.float32, jnp.bfloat16, 'float16', ...), got {value!r}") from None


@functools.lru_cache(maxsize=None)
def _configure(op: str, attrs_json: str) -> _core.Call:
    """The core's checks and description of one call (cached: tracing it again is free)."""
    call = CORE.configure(op, **json.loads(attrs_json))
    _register(call.info)
    return call


def _register(info: dict):
    """The variant's XLA handlers, registered with JAX once per process."""
    target = info["xla_target"]
    for platform, core_platform in _PLATFORMS:
        if (target, platform) in _REGISTERED:
            continue
        try:
            address = CORE.xla_handler(info["op"], info["variant"], core_platform)
        except _core.CoreError:
            continue  # no handler for that platform (a GPU-only generator on the CPU, ...)
        ffi.register_ffi_target(target, ffi.pycapsule(ctypes.c_void_p(address)), platform=platform)
        _REGISTERED.add((target, platform))


def _int64_operand(value, arg: str, shapes=((),)):
    """`value` (a seed, step or sample offset) as an operand of 64-bit words. A Python or
    NumPy integer (or a seed pair) becomes a constant. A JAX integer array of one of
    `shapes` passes as it is where it is 64-bit; a narrower one is widened as TensorFlow's
    cast would (signed: sign-extended) and passed as the two 32-bit halves of each word
    (uint32 [..., 2], little-endian: the same bytes), which needs no jax_enable_x64."""
    words = _frontend.seed_words(value, arg)
    if words is not None:
        if words.shape not in shapes:
            raise ValueError(
                f"{arg} must have shape {' or '.join(map(str, map(list, shapes)))}, got {list(words.shape)}"
            )
        return jnp.asarray(words) if _x64() else jnp.asarray(words.reshape(-1).view(np.uint32))
    x = jnp.asarray(value)
    if not jnp.issubdtype(x.dtype, jnp.integer):
        raise ValueError(f"{arg} must be an integer array, got dtype {x.dtype}")
    if x.shape not in shapes:
        raise ValueError(f"{arg} must have shape {' or '.join(map(str, map(list, shapes)))}, got {list(x.shape)}")
    if x.dtype.itemsize == 8:
        return x
    low = x.astype(jnp.uint32)
    high = (
        jax.lax.shift_right_arithmetic(x.astype(jnp.int32), jnp.int32(31)).astype(jnp.uint32)
        if jnp.issubdtype(x.dtype, jnp.signedinteger)
        else jnp.zeros_like(low)
    )
    return jnp.stack([low, high], axis=-1).reshape(-1)


def _step_operand(value, op: str):
    """The step operand, and how many steps it holds: None for one step (a scalar), n for a
    vector of n steps (shape [n]: the n steps' batches in one call, stacked)."""
    shape = tuple(jnp.shape(value))  # a Python list's too; _int64_operand converts it
    _frontend.check_step_shape(shape, op)
    return _int64_operand(value, "step", (shape,)), (shape[0] if shape else None)


def _input(value, arg: str, spec: dict, info: dict):
    """A generator's own tensor input: a JAX array of its dtype, or Python/NumPy values that
    convert to it exactly; its shape as the op wants it."""
    want = np.dtype(_core._numpy_dtype(np, spec["dtype"]))
    if isinstance(value, jax.Array) or hasattr(value, "aval"):
        x = value
        if x.dtype != want:
            raise ValueError(f"{info['op']}: {arg} must be a {want.name} array, got dtype {x.dtype}")
    else:
        array = np.asarray(value)
        if array.dtype.kind not in "iuf" or (want.kind in "iu" and array.dtype.kind == "f"):
            raise ValueError(f"{info['op']}: {arg} must be {want.name} numbers, got {array.dtype} values")
        for v in array.ravel() if want.kind == "f" else ():
            _frontend._values.float_value(v, arg)
        x = jnp.asarray(array.astype(want))
    dims = next(i["dims"] for i in info["inputs"] if i["name"] == arg)
    rows = info["num_samples"]
    ok = len(x.shape) == len(dims) and all(
        d == s or (d == -1 and s == rows) or (d == -2 and s >= 1) for d, s in zip(dims, x.shape)
    )
    if not ok:
        want_shape = ", ".join("rows" if d == -1 else "n" if d == -2 else str(d) for d in dims)
        raise ValueError(f"{info['op']}: {arg} must have shape [{want_shape}], got {list(x.shape)}")
    return x


def _run(spec: _frontend.Spec, args, kwargs):
    bound = spec.bind(args, kwargs, dtype_name)
    first = bound.first_sample
    static_first = _frontend._values.is_integer(first)
    attrs = dict(bound.attrs, Tindex="int64")
    call = _configure(spec.op, json.dumps(attrs, sort_keys=True))
    info = call.info
    if not _x64() and any(o["dtype"] in ("int64", "uint64", "float64") for o in info["outputs"]):
        wide = [f"{o['name']} ({o['dtype']})" for o in info["outputs"] if o["dtype"] in ("int64", "uint64", "float64")]
        raise ValueError(
            f"{spec.op}: output {', '.join(wide)} needs 64-bit types in JAX: "
            "jax.config.update('jax_enable_x64', True), or a 32-bit dtype"
        )
    if static_first:
        first = _frontend._values.int_value(first, "first_sample")
        rows = info["num_samples"]
        if not 0 <= first <= info["batch_size"] - rows:
            raise ValueError(
                f"{spec.op}: first_sample must be in [0, batch_size - num_samples] = "
                f"[0, {info['batch_size'] - rows}], got {first}"
            )
    step, steps = _step_operand(bound.step, spec.op)
    operands = [_int64_operand(bound.seed, "seed", ((), (2,))), step]
    if not static_first:
        operands.append(_int64_operand(first, "first_sample"))
    operands += [_input(v, n, spec.inputs[n], info) for n, v in zip(spec.inputs, bound.inputs)]
    # A vector of n steps is one call whose outputs hold the n batches one after another,
    # [n * rows, ...], viewed as [n, rows, ...]; no step, no batch and no call.
    n = 1 if steps is None else steps
    if steps is not None:
        call.check_steps(steps, xla=True)
    shapes = [(n * o["shape"][0], *o["shape"][1:]) for o in info["outputs"]]
    dtypes = [_core._numpy_dtype(np, o["dtype"]) for o in info["outputs"]]
    if n == 0:
        return spec.returned([jnp.zeros((0, *o["shape"]), d) for o, d in zip(info["outputs"], dtypes)], bound.options)
    results = [jax.ShapeDtypeStruct(shape, d) for shape, d in zip(shapes, dtypes)]
    if info["scratch_bytes"] > 0:
        results.append(jax.ShapeDtypeStruct((n * info["scratch_buffer_bytes"],), np.uint8))
    outputs = ffi.ffi_call(info["xla_target"], results, vmap_method="sequential")(
        *operands,
        batch_size=np.int64(info["batch_size"]),
        first_sample=np.int64(first if static_first else 0),
        params=np.frombuffer(bytes.fromhex(info["params"]), np.int8),
        op=spec.op,
        input_rules=np.frombuffer(bytes.fromhex(info["input_rules"]), np.int8),
        input_names=info["input_names"],
        scratch_bytes=np.int64(info["scratch_bytes"]),
        sample_offset=np.int64(0 if static_first else 1),
    )
    outputs = outputs[: len(info["outputs"])]
    if steps is not None:
        outputs = [x.reshape((steps, *o["shape"])) for x, o in zip(outputs, info["outputs"])]
    return spec.returned(outputs, bound.options)


def _function(spec: _frontend.Spec):
    def run(spec, args, kwargs):
        name = kwargs.get("name")
        if name is None:
            return _run(spec, args, kwargs)
        with jax.named_scope(name):
            return _run(spec, args, kwargs)

    return _frontend.make_function(spec, run, "JAX", dtype_default=lambda n: jnp.dtype(n).type)


GENERATORS = _frontend.Generators(CORE, _function, globals())


def load_generators(path: str) -> dict:
    """Loads a library of generators built with the SDK (docs/writing-a-generator.md) and
    returns {name: function} of the JAX functions of those it added (also in GENERATORS
    and this module). A refused registration is an ImportError naming what differs."""
    return GENERATORS.load(path)


__all__ = sorted(GENERATORS) + ["GENERATORS", "load_generators"]
