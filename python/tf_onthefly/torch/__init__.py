"""tf_onthefly for PyTorch: every generator of the core as a torch.library custom op
(tf_onthefly::<name>), on the CPU and on CUDA, bit for bit the TensorFlow op's batch
(docs/torch.md).

    import tf_onthefly.torch as otf
    step = torch.zeros((), dtype=torch.int64, device="cuda")
    features, labels = otf.random_batch(32, 16, seed=7, step=step)

Each generator takes the TensorFlow wrapper's arguments (tf_onthefly.random_batch ->
tf_onthefly.torch.random_batch), and `device=` (default: the step's device where the step is
a tensor, else torch's default device). The op allocates its outputs and scratch through
PyTorch and launches on the current CUDA stream; its kernel is the op library's
(_ops_torch.so, tf_ops/torch: compiled against PyTorch's stable C ABI, so one build serves
every PyTorch from the ABI version it targets on) or, on an older PyTorch, the Python
implementation here, over the core's C API through ctypes (TF_ONTHEFLY_TORCH_KERNELS=python
picks it on any PyTorch). Its fake implementation gives torch.compile the output shapes, so
the op stays in the graph, and its launch may be captured in a CUDA graph (seed and step
then live in device tensors the graph reads at replay). Imports no TensorFlow.
"""

import ctypes
import functools
import json
import os
import re

import numpy as np
import torch

from tf_onthefly import _build_info, _core, _frontend, _torch_order, _values

CORE = _core.Core()
NAMESPACE = "tf_onthefly"
_LIBRARY = torch.library.Library(NAMESPACE, "FRAGMENT")


def _kernels():
    """The op library (its kernels for every op), or None where the Python implementation
    runs the ops: a PyTorch older than the stable ABI the library targets, or
    TF_ONTHEFLY_TORCH_KERNELS=python."""
    choice = os.environ.get("TF_ONTHEFLY_TORCH_KERNELS", "library")
    if choice not in ("library", "python"):
        raise ImportError(f"TF_ONTHEFLY_TORCH_KERNELS must be 'library' or 'python', got {choice!r}")
    version = tuple(int(p) for p in re.findall(r"\d+", torch.__version__)[:2])
    if choice == "python" or version < _build_info.TORCH_STABLE_ABI:
        return None
    try:
        lib = ctypes.CDLL(os.path.join(os.path.dirname(_core.__file__), "_ops_torch.so"))
    except OSError as error:
        raise ImportError(
            f"tf_onthefly.torch: PyTorch {torch.__version__} could not load the op library ({error}); "
            "TF_ONTHEFLY_TORCH_KERNELS=python runs the ops' Python implementation instead"
        ) from None
    lib.tf_onthefly_torch_register.restype = ctypes.c_int32
    lib.tf_onthefly_torch_register.argtypes = [ctypes.c_char_p] * 3
    return lib


KERNELS = _kernels()

_TORCH_DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float64": torch.float64,
    "int32": torch.int32,
    "int64": torch.int64,
    "int16": torch.int16,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "bool": torch.bool,
}
_NAMES = {v: k for k, v in _TORCH_DTYPES.items()}


def dtype_name(value, arg: str) -> str:
    """A dtype argument's name: a torch.dtype, or its name ("float32", "bfloat16", ...)."""
    if isinstance(value, torch.dtype) and value in _NAMES:
        return _NAMES[value]
    if isinstance(value, str):
        return value
    raise ValueError(f"{arg} must be a torch dtype (torch.float32, torch.bfloat16, ...) or its name, got {value!r}")


class _Prepared:
    """One configured call (cached by op and attributes): what every run of it needs."""

    def __init__(self, op: str, attrs_json: str):
        self.call = CORE.configure(op, **json.loads(attrs_json))
        info = self.call.info
        self.info = info
        self.outputs = [(tuple(o["shape"]), _TORCH_DTYPES[o["dtype"]]) for o in info["outputs"]]
        self.inputs = [(i["name"], i["dtype"]) for i in info["inputs"]]
        self.scratch = info["scratch_buffer_bytes"] if info["scratch_bytes"] > 0 else 0
        self.handle = self.call.handle
        # Rows over torch's intra-op threads where there is enough to share (as XLA's Host
        # handler does); below, starting threads costs more than it saves.
        size = sum(torch.empty((), dtype=d).element_size() * _numel(s) for s, d in self.outputs)
        self.share_rows = size >= _PARALLEL_BYTES


_PARALLEL_BYTES = 1 << 18  # sdk::kHostParallelBytes (tf_ops/sdk/generator.h)
# Whether this process's import order lets PyTorch use the GPU (_torch_order), checked at
# the first launch on a GPU.
_ORDER_CHECKED = []
# How the op library's kernel reports the core's errors (tf_ops/torch/torch_ops.cc).
_KERNEL_ERROR = re.compile(r"\[tf_onthefly (\d+)\] (.*)", re.DOTALL)


@torch.compiler.assume_constant_result
def _order_checked(op) -> bool:
    """Raises TorchImportOrderError where this process's import order keeps PyTorch from the
    GPU (_torch_order); once (torch.compile: as it traces)."""
    if not _ORDER_CHECKED:  # an order that passes cannot turn bad later
        _torch_order.check_torch_import_order(f"tf_onthefly.torch ({op})")
        _ORDER_CHECKED.append(True)
    return True


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


@functools.lru_cache(maxsize=None)
def _prepared(op: str, attrs_json: str) -> _Prepared:
    return _Prepared(op, attrs_json)


_RUN_CPU = CORE.lib.tf_onthefly_core_run_cpu
_RUN_GPU = CORE.lib.tf_onthefly_core_run_gpu
# The current stream of a CUDA device as an address: CUDA builds of PyTorch have the raw
# getter (what torch.compile's generated code calls); Stream objects cost a microsecond more.
_current_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or (
    lambda index: torch.cuda.current_stream(index).cuda_stream
)


def _run_op(op, seed, step, sample_offset, inputs, first_sample, attrs):
    """The ops' Python implementation (CPU and CUDA), where the op library's kernels are not
    used (KERNELS): the same steps as tf_ops/torch/torch_ops.cc. Outputs from PyTorch's
    allocator, one run of the core on the CPU (rows over torch's intra-op threads) or on the
    current stream."""
    p = _prepared(op, attrs)
    device = step.device
    for name, t in (("seed", seed), ("step", step), ("sample_offset", sample_offset)):
        if t is not None and (t.dtype != torch.int64 or t.device != device or not t.is_contiguous()):
            raise ValueError(
                f"{op}: {name} must be a contiguous int64 tensor on the step's device ({device}), "
                f"got {t.dtype} on {t.device}"
            )
    shapes = _shapes(p, step)
    if step.dim() == 1:
        p.call.check_steps(step.numel())
    outs = [torch.empty(shape, dtype=dtype, device=device) for shape, dtype in shapes]
    if step.numel() == 0:  # no step, no batch
        return _results(outs)
    args = _core.RunArgs(
        struct_size=ctypes.sizeof(_core.RunArgs),
        seed=seed.data_ptr(),
        seed_size=seed.numel(),
        step=step.data_ptr(),
        first_sample=first_sample,
        sample_offset=sample_offset.data_ptr() if sample_offset is not None else None,
        num_inputs=len(inputs),
        num_steps=step.numel(),
    )
    for i, x in enumerate(inputs):
        if x.device != device or not x.is_contiguous():
            raise ValueError(
                f"{op}: input {i} must be a contiguous tensor on the step's device ({device}), got {x.device}"
            )
        args.inputs[i] = x.data_ptr()
        args.input_dtypes[i] = _core.DTYPES[_NAMES[x.dtype]]
        args.input_ranks[i] = x.dim()
        for d, size in enumerate(x.shape[: _core.MAX_RANK]):
            args.input_dims[i][d] = size
    for i, o in enumerate(outs):
        args.outputs[i] = o.data_ptr()
    if device.type == "cpu":
        code = _RUN_CPU(p.handle, ctypes.byref(args), torch.get_num_threads() if p.share_rows else 1)
    else:
        _order_checked(op)
        size = p.scratch * step.numel()
        scratch = torch.empty(size, dtype=torch.uint8, device=device) if size else None
        code = _RUN_GPU(
            p.handle,
            ctypes.byref(args),
            _current_stream(device.index),
            scratch.data_ptr() if scratch is not None else None,
            size,
        )
    CORE.check(code)
    return _results(outs)


def _fake_op(op, seed, step, sample_offset, inputs, first_sample, attrs):
    """Shapes and dtypes only (torch.compile, meta tensors): from the core's configure."""
    return _results([step.new_empty(shape, dtype=dtype) for shape, dtype in _shapes(_prepared(op, attrs), step)])


def _shapes(p, step):
    """The outputs' (shape, dtype): the call's, for a vector of n steps with n before them; a
    step of another rank is refused, as the op library's kernel refuses it."""
    _frontend.check_step_shape(step.shape, p.info["op"])
    return [(tuple(step.shape) + shape, dtype) for shape, dtype in p.outputs]


def _results(outs):
    """The op's results as its schema declares them: a Tensor for one output, else a tuple."""
    return outs[0] if len(outs) == 1 else tuple(outs)


def _define(spec: _frontend.Spec):
    """tf_onthefly::<name>(seed, step, sample_offset, inputs, first_sample, attrs) -> outputs."""
    results = "Tensor" if len(spec.outputs) == 1 else "(" + ", ".join("Tensor" for _ in spec.outputs) + ")"
    _LIBRARY.define(
        f"{spec.name}(Tensor seed, Tensor step, Tensor? sample_offset, Tensor[] inputs, int first_sample, "
        f"str attrs) -> {results}"
    )
    qualified = f"{NAMESPACE}::{spec.name}"
    names = (NAMESPACE.encode(), spec.name.encode(), spec.op.encode())
    code = 1 if KERNELS is None else KERNELS.tf_onthefly_torch_register(*names)
    if code == 2:
        raise ImportError(f"PyTorch {torch.__version__} refused the op library's kernel for {qualified}")
    if code == 1:  # no op library, or every one of its kernel slots taken
        run = functools.partial(_run_op, spec.op)
        _LIBRARY.impl(spec.name, run, "CPU")
        _LIBRARY.impl(spec.name, run, "CUDA")
    torch.library.register_fake(qualified, functools.partial(_fake_op, spec.op), lib=_LIBRARY)
    return getattr(getattr(torch.ops, NAMESPACE), spec.name)


def _words(value, arg: str, device: torch.device, shapes=((),)) -> torch.Tensor:
    """A seed, step or sample offset as an int64 tensor on `device`: a Python integer (a seed
    pair) as a 64-bit word (made once per value and device: a call copies nothing to the
    device, and a CUDA graph captured after the first call finds it made); an integer tensor
    widened as TensorFlow's cast would."""
    if isinstance(value, torch.Tensor):
        if value.dtype == torch.int64 and value.device == device and tuple(value.shape) in shapes:
            return value
        if value.dtype.is_floating_point or value.dtype.is_complex or value.dtype == torch.bool:
            raise ValueError(f"{arg} must be an integer tensor, got dtype {value.dtype}")
        if tuple(value.shape) not in shapes:
            raise ValueError(
                f"{arg} must have shape {' or '.join(str(list(s)) for s in shapes)}, got {list(value.shape)}"
            )
        return value.to(device=device, dtype=torch.int64)
    if isinstance(value, (list, tuple)):
        value, kinds = tuple(value), tuple(type(v) for v in value)
    else:
        kinds = type(value)
    return _word_constant(value, kinds, arg, shapes, device)  # kinds: 1 and True are not the same


@torch.compiler.assume_constant_result
def _word_constant(value, kinds, arg, shapes, device) -> torch.Tensor:
    """The made tensor of a Python seed or step. torch.compile runs this once as it traces
    (it does not trace hash()) and keeps the tensor as a constant of the graph: a compiled call
    makes no tensor for it (traced, torch.tensor would fill a new one every call, a kernel
    launch of its own)."""
    try:
        hash(value)
    except TypeError:  # unhashable (a NumPy array): converted every call
        return _word_tensor.__wrapped__(value, kinds, arg, shapes, device)
    return _word_tensor(value, kinds, arg, shapes, device)


@functools.lru_cache(maxsize=4096)
def _word_tensor(value, kinds, arg, shapes, device) -> torch.Tensor:
    return torch.tensor(_python_words(value, arg, shapes), dtype=torch.int64, device=device)


@torch.compiler.assume_constant_result
def _python_words(value, arg, shapes):
    """A Python seed or step as int64 words: an int, or a tuple for a pair (torch.compile
    runs this once as it traces)."""
    words = _frontend.seed_words(value, arg)
    if words is None:
        raise ValueError(f"{arg} must be an integer or an integer tensor, got {value!r}")
    if tuple(words.shape) not in shapes:
        raise ValueError(f"{arg} must have shape {' or '.join(str(list(s)) for s in shapes)}, got {list(words.shape)}")
    return tuple(words.tolist()) if words.shape else int(words)


def _input(value, arg: str, want: str, device: torch.device, op: str) -> torch.Tensor:
    """A generator's own tensor input: a tensor of its dtype, or Python/NumPy values that
    convert to it exactly. The op checks the shape (and on the CPU the values)."""
    dtype = _TORCH_DTYPES[want]
    if isinstance(value, torch.Tensor):
        if value.dtype != dtype:
            raise ValueError(f"{op}: {arg} must be a {want} tensor, got dtype {value.dtype}")
        return value.to(device).contiguous()
    flat, shape = _python_input(value, arg, want, op)
    return torch.tensor(flat, dtype=dtype, device=device).reshape(shape)


@torch.compiler.assume_constant_result
def _python_input(value, arg: str, want: str, op: str):
    """Python/NumPy values as (flat values, shape), checked as the TensorFlow wrapper checks
    them (torch.compile runs this once as it traces)."""
    import numpy as np

    array = np.asarray(value)
    if array.dtype.kind not in "iuf" or (want.startswith(("int", "uint")) and array.dtype.kind == "f"):
        raise ValueError(f"{op}: {arg} must be {want} numbers, got {array.dtype} values")
    if want.startswith(("float", "bfloat")):
        for v in array.ravel():
            _values.float_value(v, arg)
    return tuple(array.ravel().tolist()), tuple(array.shape)


@torch.compiler.assume_constant_result
def _constants(name, values):
    """spec.constants, with the attributes as the op's JSON argument; torch.compile runs it
    once as it traces (its checks use NumPy): they are Python values, fixed per traced call."""
    key = (name, tuple((k, type(v), v) for k, v in values))  # 4 and 4.0 are not the same
    try:
        return _CONSTANTS[key]
    except KeyError:
        pass
    except TypeError:  # an unhashable value (a list): converted every call
        return _convert(name, values)
    if len(_CONSTANTS) >= 4096:
        _CONSTANTS.clear()
    _CONSTANTS[key] = result = _convert(name, values)
    return result


_CONSTANTS = {}  # the calls' converted Python values: an eager call converts them once


def _convert(name, values):
    attrs, options, _ = _SPECS[name].constants(dict(values), dtype_name)
    return json.dumps(attrs, sort_keys=True), options


def _step_shape(step, op) -> tuple:
    """The step's shape: [] for one step, [n] for a vector of n steps (the n steps' batches
    stacked, in one call)."""
    # isinstance, not hasattr: torch.compile of PyTorch 2.4 cannot trace hasattr on a tensor.
    if isinstance(step, (torch.Tensor, np.ndarray)):
        shape = tuple(step.shape)
    else:
        shape = (len(step),) if isinstance(step, (list, tuple)) else ()
    _frontend.check_step_shape(shape, op)
    return shape


def _default_device(step) -> torch.device:
    if isinstance(step, torch.Tensor):
        return step.device
    get = getattr(torch, "get_default_device", None)
    return get() if get is not None else torch.device("cpu")


def _function(spec: _frontend.Spec, op):
    def run(spec, args, kwargs):
        device = kwargs.pop("device", None)
        values, dynamic = spec.split(args, kwargs)
        attrs, options = _constants(spec.name, tuple(values.items()))
        step = dynamic["step"]
        device = torch.device(device) if device is not None else _default_device(step)
        first, offset = dynamic["first_sample"], None
        if isinstance(first, torch.Tensor):
            offset, first = _words(first, "first_sample", device), 0
        else:
            first = _values.int_value(first, "first_sample")
        inputs = [_input(dynamic[n], n, spec.inputs[n]["dtype"], device, spec.op) for n in spec.inputs]
        if device.type == "cuda":
            _order_checked(spec.op)
        try:
            outs = op(
                _words(dynamic["seed"], "seed", device, ((), (2,))),
                _words(step, "step", device, (_step_shape(step, spec.op),)),
                offset,
                inputs,
                first,
                attrs,
            )
        except RuntimeError as error:  # the op library's kernel failed: the core's error
            match = _KERNEL_ERROR.match(str(error))
            if match is None:
                raise
            raise _core.CoreError(int(match[1]), match[2]) from None
        return spec.returned(outs if isinstance(outs, tuple) else (outs,), options)

    function = _frontend.make_function(spec, run, "PyTorch", dtype_default=lambda n: _TORCH_DTYPES[n])
    function.__signature__ = function.__signature__.replace(
        parameters=[
            *function.__signature__.parameters.values(),
            function.__signature__.parameters["name"].replace(name="device", default=None),
        ]
    )
    return function


_SPECS = {}


def _make(spec: _frontend.Spec):
    _SPECS[spec.name] = spec
    return _function(spec, _define(spec))


GENERATORS = _frontend.Generators(CORE, _make, globals())


def load_generators(path: str) -> dict:
    """Loads a library of generators built with the SDK (docs/writing-a-generator.md) and
    returns {name: function} of the PyTorch functions of those it added (also in GENERATORS
    and this module). A refused registration is an ImportError naming what differs."""
    return GENERATORS.load(path)


__all__ = sorted(GENERATORS) + ["GENERATORS", "load_generators"]
