"""The framework-neutral core, libtf_onthefly_core.so, through ctypes (tf_ops/core/core_api.h).

Imports no framework: the JAX and PyTorch front ends and the TensorFlow loader (_load.py)
share it. NumPy only where a caller passes arrays.

    core = Core()                                    # the package's own core, loaded once
    spec = core.specs()["generators"]                # every generator's op spec
    call = core.configure("OnTheFly>RandomWalk", batch_size=8, length=5)
    call.info["outputs"]                             # names, dtypes, shapes
    walks, labels = call.run_cpu(seed=[1, 2], step=3)   # NumPy arrays
"""

import ctypes
import json
import os

LIBRARY = "libtf_onthefly_core.so"
HERE = os.path.dirname(os.path.abspath(__file__))

MAX_INPUTS = 4
MAX_RANK = 4

# sdk::DType numbers (TensorFlow's DataType), by NumPy's names.
DTYPES = {
    "float32": 1,
    "float64": 2,
    "int32": 3,
    "uint8": 4,
    "int16": 5,
    "int8": 6,
    "int64": 9,
    "bool": 10,
    "bfloat16": 14,
    "uint16": 17,
    "float16": 19,
    "uint32": 22,
    "uint64": 23,
}


class CoreError(Exception):
    """A failed core call: `code` (absl's numbering: 3 InvalidArgument, 8 ResourceExhausted,
    13 Internal, ...) and the core's message, which names the op and the argument."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class RunArgs(ctypes.Structure):
    """OtfRunArgs: one run's seed, step (num_steps of them), first sample, sample offset,
    inputs and outputs."""

    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("seed", ctypes.c_void_p),
        ("seed_size", ctypes.c_int64),
        ("step", ctypes.c_void_p),
        ("first_sample", ctypes.c_int64),
        ("sample_offset", ctypes.c_void_p),
        ("num_inputs", ctypes.c_int32),
        ("inputs", ctypes.c_void_p * MAX_INPUTS),
        ("input_dtypes", ctypes.c_int32 * MAX_INPUTS),
        ("input_ranks", ctypes.c_int32 * MAX_INPUTS),
        ("input_dims", (ctypes.c_int64 * MAX_RANK) * MAX_INPUTS),
        ("outputs", ctypes.c_void_p * MAX_INPUTS),
        ("num_steps", ctypes.c_int64),
    ]


def _bind(lib):
    c = ctypes
    for name, restype, argtypes in [
        ("tf_onthefly_core_abi_version", c.c_int32, []),
        ("tf_onthefly_core_contract_version", c.c_int32, []),
        ("tf_onthefly_core_xla_ffi_api_version", c.c_int32, []),
        ("tf_onthefly_core_last_error", c.c_char_p, []),
        ("tf_onthefly_core_free", None, [c.c_void_p]),
        ("tf_onthefly_core_specs_json", c.c_void_p, []),
        ("tf_onthefly_core_take_registration_errors", c.c_void_p, []),
        ("tf_onthefly_core_configure", c.c_int32, [c.c_char_p, c.c_char_p, c.POINTER(c.c_void_p)]),
        ("tf_onthefly_core_release", None, [c.c_void_p]),
        ("tf_onthefly_core_call_json", c.c_void_p, [c.c_void_p]),
        ("tf_onthefly_core_check_steps", c.c_int32, [c.c_void_p, c.c_int64, c.c_int32]),
        ("tf_onthefly_core_run_cpu", c.c_int32, [c.c_void_p, c.POINTER(RunArgs), c.c_int32]),
        (
            "tf_onthefly_core_run_gpu",
            c.c_int32,
            [c.c_void_p, c.POINTER(RunArgs), c.c_void_p, c.c_void_p, c.c_int64],
        ),
        ("tf_onthefly_core_xla_handler", c.c_void_p, [c.c_char_p, c.c_int32, c.c_char_p]),
        ("tf_onthefly_register_generator", c.c_int32, [c.c_void_p]),
        ("tf_onthefly_cuda_runtime_unavailable_reason", c.c_char_p, []),
        ("tf_onthefly_cuda_runtime_source", c.c_char_p, []),
    ]:
        f = getattr(lib, name)
        f.restype = restype
        f.argtypes = argtypes


class Core:
    """The core library, loaded (once per process: the dynamic loader keeps one copy)."""

    def __init__(self, path=None):
        self.path = path or os.path.join(HERE, LIBRARY)
        self.lib = ctypes.CDLL(self.path)
        _bind(self.lib)

    def _string(self, pointer):
        """A char* the core allocated, as str, freed."""
        if not pointer:
            return None
        try:
            return ctypes.string_at(pointer).decode()
        finally:
            self.lib.tf_onthefly_core_free(pointer)

    def check(self, code):
        if code != 0:
            raise CoreError(code, self.lib.tf_onthefly_core_last_error().decode())

    def versions(self) -> dict:
        """SDK ABI, counter contract and XLA FFI API (major * 1000 + minor) of the core."""
        lib = self.lib
        return dict(
            abi=lib.tf_onthefly_core_abi_version(),
            contract=lib.tf_onthefly_core_contract_version(),
            xla_ffi_api=lib.tf_onthefly_core_xla_ffi_api_version(),
        )

    def specs(self) -> dict:
        """Every registered generator's op spec (core_api.h: tf_onthefly_core_specs_json)."""
        return json.loads(self._string(self.lib.tf_onthefly_core_specs_json()))

    def take_registration_errors(self) -> list:
        """The registrations refused since the last call, one message each."""
        text = self._string(self.lib.tf_onthefly_core_take_registration_errors())
        return text.split("\n") if text else []

    def check_registrations(self, what: str):
        """Raises ImportError for every registration the core refused while `what` loaded."""
        errors = self.take_registration_errors()
        if errors:
            raise ImportError(
                f"{what}: the tf_onthefly core refused {len(errors)} registration(s):\n" + "\n".join(errors)
            )

    def load_library(self, path: str):
        """Loads a library of generators built against the core (its static initialisers
        register them into it); a refused registration (another SDK ABI or counter contract)
        is an ImportError naming the library and what differs."""
        ctypes.CDLL(os.path.abspath(path))
        self.check_registrations(path)

    def configure(self, op: str, **attrs) -> "Call":
        """Op `op`'s attribute checks on `attrs` (defaults fill in the rest), once."""
        handle = ctypes.c_void_p()
        self.check(self.lib.tf_onthefly_core_configure(op.encode(), json.dumps(attrs).encode(), ctypes.byref(handle)))
        return Call(self, handle)

    def xla_handler(self, op: str, variant: int, platform: str) -> int:
        """The address of a variant's XLA_FFI_Handler for "host" or "cuda"."""
        address = self.lib.tf_onthefly_core_xla_handler(op.encode(), variant, platform.encode())
        if not address:
            raise CoreError(5, self.lib.tf_onthefly_core_last_error().decode())
        return address

    def cuda_runtime(self) -> tuple:
        """(True, where the CUDA runtime came from), or (False, why there is none)."""
        why = self.lib.tf_onthefly_cuda_runtime_unavailable_reason()
        if why is not None:
            return False, why.decode()
        return True, self.lib.tf_onthefly_cuda_runtime_source().decode()


class Call:
    """A configured call (core_api.h): its description (`info`) and its runs."""

    def __init__(self, core, handle):
        self.core = core
        self.handle = handle
        self.info = json.loads(core._string(core.lib.tf_onthefly_core_call_json(handle)))

    def __del__(self):
        if getattr(self, "handle", None):
            self.core.lib.tf_onthefly_core_release(self.handle)
            self.handle = None

    def run_args(self, seed, step, first_sample, sample_offset, inputs, outputs):
        """RunArgs for buffers given by address: seed (with its size), step, sample_offset
        (or None), inputs as (address, dtype name, shape), outputs as addresses."""
        seed_address, seed_size = seed
        args = RunArgs(struct_size=ctypes.sizeof(RunArgs), seed=seed_address, seed_size=seed_size)
        args.step = step
        args.first_sample = first_sample
        args.sample_offset = sample_offset
        args.num_inputs = len(inputs)
        for i, (address, dtype, shape) in enumerate(inputs):
            args.inputs[i] = address
            args.input_dtypes[i] = DTYPES[dtype]
            args.input_ranks[i] = len(shape)
            for d, size in enumerate(shape[:MAX_RANK]):
                args.input_dims[i][d] = size
        for i, address in enumerate(outputs):
            args.outputs[i] = address
        return args

    def check_steps(self, steps: int, xla: bool = False):
        """Refuses (CoreError naming the op) a call of a vector of `steps` steps that one call
        cannot make: outputs over the per-output cap, or, for one XLA custom call (`xla`), a
        generator whose library's handlers take one step."""
        self.core.check(self.core.lib.tf_onthefly_core_check_steps(self.handle, steps, int(xla)))

    def run_cpu(self, seed, step, first_sample=0, inputs=(), threads=1):
        """One run on the CPU into new NumPy arrays: seed an int or a pair, step an int,
        inputs NumPy arrays in the op's order. Returns the outputs."""
        import numpy as np

        seed_array = np.ascontiguousarray(np.asarray(seed, np.int64).reshape(-1))
        step_array = np.asarray([step], np.int64)
        arrays = [np.ascontiguousarray(a) for a in inputs]
        outs = [np.empty(o["shape"], _numpy_dtype(np, o["dtype"])) for o in self.info["outputs"]]
        args = self.run_args(
            (seed_array.ctypes.data, seed_array.size),
            step_array.ctypes.data,
            first_sample,
            None,
            [(a.ctypes.data, _dtype_name(a.dtype), a.shape) for a in arrays],
            [o.ctypes.data for o in outs],
        )
        self.core.check(self.core.lib.tf_onthefly_core_run_cpu(self.handle, ctypes.byref(args), threads))
        return outs

    def run_gpu(self, args, stream, scratch, scratch_size):
        """One run on the GPU: `args` from run_args with device addresses, enqueued on
        `stream` (a cudaStream_t address; 0 for the default stream), with `scratch` (device
        memory of scratch_size >= info["scratch_buffer_bytes"] bytes)."""
        self.core.check(
            self.core.lib.tf_onthefly_core_run_gpu(self.handle, ctypes.byref(args), stream, scratch, scratch_size)
        )


def _numpy_dtype(np, name):
    """NumPy's dtype of that name; bfloat16 from ml_dtypes where it is installed, else its
    bits as uint16."""
    if name == "bfloat16":
        try:
            import ml_dtypes

            return ml_dtypes.bfloat16
        except ImportError:
            return np.uint16
    return np.dtype(name)


def _dtype_name(dtype):
    return "bfloat16" if dtype.name == "bfloat16" else dtype.name
