"""The framework-neutral core (libtf_onthefly_core.so) through its C API, from a Python process
that never imports TensorFlow: it reads the generators' specs, configures them, runs them
on the CPU and gets, byte for byte, what the TensorFlow ops give for the same arguments
(computed in a second process that imports TensorFlow). Errors name the op and the argument.

The JAX and PyTorch front ends reach the core exactly this way (python/tf_onthefly/_core.py).
"""

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

# --test_device=gpu (the requires-gpu variant, gpu_run.py's tests mode) adds the GPU runs.
DEVICE = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--test_device=")), "cpu")


def package_folder():
    """The tf_onthefly package's folder, found without importing it (its __init__ imports
    TensorFlow): the built package's, or the installed wheel's."""
    return importlib.util.find_spec("tf_onthefly").submodule_search_locations[0]


def load_core_module():
    """tf_onthefly/_core.py by its path."""
    spec = importlib.util.spec_from_file_location("otf_core", os.path.join(package_folder(), "_core.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_core = load_core_module()
CORE = _core.Core(os.path.join(package_folder(), _core.LIBRARY))

# (op, attributes, inputs, seed, step, first_sample): every built-in generator, several
# dtypes (variants), a shard, inputs, walks of several tiles.
CASES = [
    ("OnTheFly>RandomBatch", dict(batch_size=33, feature_dim=7), [], [1, 2], 3, 0),
    (
        "OnTheFly>RandomBatch",
        dict(
            batch_size=40,
            num_samples=9,
            feature_dim=13,
            distribution="normal",
            dtype="bfloat16",
            label_mode="classes",
            num_classes=5,
            label_dtype="int64",
        ),
        [],
        7,
        11,
        20,
    ),
    ("OnTheFly>RandomBatch", dict(batch_size=6, feature_dim=9, low=-2.5, high=3.0, dtype="float16"), [], 5, 0, 0),
    ("OnTheFly>RandomWalk", dict(batch_size=10, length=77), [], [3, 4], 5, 0),
    ("OnTheFly>DriftWalk", dict(batch_size=12, num_samples=5, length=5000), [np.float32([0.2, 0.7, 0.9])], 1, 2, 4),
    ("OnTheFly>TabularMixture", dict(batch_size=16, feature_dim=6, num_classes=4, task_seed=9), [], 8, 1, 0),
    (
        "OnTheFly>TeacherTask",
        dict(batch_size=8, feature_dim=5, hidden=7, label_dtype="float32", task="regression"),
        [],
        2,
        6,
        0,
    ),
    ("OnTheFly>ProceduralShapes", dict(batch_size=3, height=16, width=12, channels=3, dtype="uint8"), [], 4, 9, 0),
    ("OnTheFly>ProceduralShapes", dict(batch_size=2, height=8, width=8, channels=1, dtype="bfloat16"), [], 4, 9, 0),
]

# The TensorFlow side, in its own process: the ops' generated functions with the same
# attributes, each output's bytes written as .npy.
TF_SCRIPT = r"""
import json, sys
import numpy as np
import tensorflow as tf
from tf_onthefly import _generator

cases = json.load(open(sys.argv[1]))
for k, (op, attrs, inputs, seed, step, first) in enumerate(cases):
    attrs = {n: tf.as_dtype(v) if n.endswith("dtype") else v for n, v in attrs.items()}
    spec_inputs = [i for i in json.load(open(sys.argv[2]))[op]]
    named = {name: np.asarray(v, np.float32) for name, v in zip(spec_inputs, inputs)}
    with tf.device("/CPU:0"):
        outs = _generator.op_function(op)(
            seed=tf.constant(seed, tf.int64), step=tf.constant(step, tf.int64),
            first_sample=tf.constant(first, tf.int64), **named, **attrs)
    for i, t in enumerate(outs):
        np.save(f"{sys.argv[3]}/{k}_{i}.npy", t.numpy().view(np.uint8).reshape(-1))
"""


# The GPU side, in its own process (no TensorFlow either): the CUDA runtime loaded into the
# process's global scope first, where the core's forwarders find it; every case run with
# run_gpu on a stream of its own (device seed, step, inputs, scratch buffer; drift_walk's
# first sample as a device-side offset), its bytes written as .npy.
GPU_SCRIPT = r"""
import ctypes, importlib.util, json, os, sys
import numpy as np

cudart = None
for name in [os.environ.get("OTF_CUDART", ""), "libcudart.so.12"]:
    try:
        cudart = ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL) if name else None
    except OSError:
        continue
    if cudart:
        break
if cudart is None:
    try:
        import nvidia.cuda_runtime
        folder = os.path.join(list(nvidia.cuda_runtime.__path__)[0], "lib")
        cudart = ctypes.CDLL(os.path.join(folder, "libcudart.so.12"), mode=ctypes.RTLD_GLOBAL)
    except (ImportError, OSError):
        print("SKIP: no libcudart.so.12 to load (set OTF_CUDART to its path)")
        sys.exit(0)
spec = importlib.util.spec_from_file_location("otf_core", sys.argv[1])
_core = importlib.util.module_from_spec(spec)
spec.loader.exec_module(_core)
core = _core.Core(sys.argv[2])
ok, where = core.cuda_runtime()
assert ok, where
cudart.cudaGetErrorString.restype = ctypes.c_char_p

def check(err):
    assert err == 0, cudart.cudaGetErrorString(err).decode()

def device(array):
    p = ctypes.c_void_p()
    check(cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(max(array.nbytes, 1))))
    check(cudart.cudaMemcpy(p, array.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(array.nbytes), 1))
    return p.value

stream = ctypes.c_void_p()
check(cudart.cudaStreamCreate(ctypes.byref(stream)))
cases = json.load(open(sys.argv[3]))
for k, (op, attrs, inputs, seed, step, first) in enumerate(cases):
    call = core.configure(op, **attrs)
    arrays = [np.ascontiguousarray(np.asarray(x, np.float32)) for x in inputs]
    # bfloat16 outputs as their bits: the bytes are what is compared
    outs = [np.zeros(o["shape"], np.uint16 if o["dtype"] == "bfloat16" else o["dtype"]) for o in call.info["outputs"]]
    seed_array = np.asarray(seed, np.int64).reshape(-1)
    offset = device(np.int64([first])) if first else None  # the first sample, on the device
    args = call.run_args(
        (device(seed_array), seed_array.size), device(np.int64([step])), 0, offset,
        [(device(a), "float32", a.shape) for a in arrays], [device(o) for o in outs])
    scratch_size = call.info["scratch_buffer_bytes"]
    scratch = device(np.zeros(scratch_size, np.uint8)) if scratch_size else None
    call.run_gpu(args, stream.value, scratch, scratch_size)
    check(cudart.cudaStreamSynchronize(stream))
    for i, o in enumerate(outs):
        check(cudart.cudaMemcpy(o.ctypes.data_as(ctypes.c_void_p), ctypes.c_void_p(args.outputs[i]),
                                ctypes.c_size_t(o.nbytes), 2))
        np.save(f"{sys.argv[4]}/{k}_{i}.npy", o.view(np.uint8).reshape(-1))
print("GPU runs:", len(cases))
"""


def own_input_names(specs):
    return {g["name"]: [i["name"] for i in g["inputs"][3:]] for g in specs["generators"]}


class CoreTest(unittest.TestCase):
    def tearDown(self):
        self.assertNotIn("tensorflow", sys.modules)

    def test_no_tensorflow(self):
        self.assertNotIn("tensorflow", sys.modules)
        self.assertEqual(CORE.take_registration_errors(), [])

    def test_specs(self):
        specs = CORE.specs()
        self.assertEqual(specs["abi_version"], CORE.versions()["abi"])
        self.assertEqual(specs["contract_version"], 2)
        by_name = {g["name"]: g for g in specs["generators"]}
        self.assertLessEqual(
            {
                "OnTheFly>DriftWalk",
                "OnTheFly>ProceduralShapes",
                "OnTheFly>RandomBatch",
                "OnTheFly>RandomWalk",
                "OnTheFly>TabularMixture",
                "OnTheFly>TeacherTask",
            },
            set(by_name),
        )
        walk = by_name["OnTheFly>DriftWalk"]
        self.assertEqual([i["name"] for i in walk["inputs"]], ["seed", "step", "first_sample", "up_probability"])
        self.assertEqual(walk["inputs"][3]["dtype"], "float32")
        self.assertEqual(walk["input_specs"], ["up_probability: float"])
        self.assertTrue(walk["variants"][0]["scratch"])  # ScratchBytes: its XLA scratch result
        batch = by_name["OnTheFly>RandomBatch"]
        self.assertEqual(len(batch["variants"]), 9)  # 3 feature x 3 label dtypes
        dtype = next(a for a in batch["attrs"] if a["name"] == "dtype")
        self.assertEqual((dtype["type"], dtype["default"]), ("type", "float32"))
        self.assertEqual(dtype["allowed"], ["float32", "bfloat16", "float16"])
        self.assertEqual([a["name"] for a in batch["attrs"][:3]], ["Tindex", "batch_size", "num_samples"])
        low = next(a for a in batch["attrs"] if a["name"] == "low")
        self.assertEqual(low["default"], 0.0)

    def test_outputs_equal_the_tensorflow_ops(self):
        """Every case's outputs, byte for byte, against the TensorFlow op's (second process)."""
        names = own_input_names(CORE.specs())
        with tempfile.TemporaryDirectory() as tmp:
            cases = os.path.join(tmp, "cases.json")
            with open(cases, "w") as f:
                json.dump([[op, a, [x.tolist() for x in i], s, st, first] for op, a, i, s, st, first in CASES], f)
            with open(os.path.join(tmp, "inputs.json"), "w") as f:
                json.dump(names, f)
            out = subprocess.run(
                [sys.executable, "-c", TF_SCRIPT, cases, os.path.join(tmp, "inputs.json"), tmp],
                capture_output=True,
                text=True,
                timeout=600,
            )
            self.assertEqual(out.returncode, 0, msg=out.stderr[-3000:])
            for k, (op, attrs, inputs, seed, step, first) in enumerate(CASES):
                with self.subTest(op=op, attrs=attrs):
                    call = CORE.configure(op, **attrs)
                    outs = call.run_cpu(seed, step, first_sample=first, inputs=inputs, threads=3)
                    self.assertEqual([list(o.shape) for o in outs], [o["shape"] for o in call.info["outputs"]])
                    for i, o in enumerate(outs):
                        want = np.load(os.path.join(tmp, f"{k}_{i}.npy"))
                        got = np.ascontiguousarray(o).view(np.uint8).reshape(-1)
                        np.testing.assert_array_equal(got, want, err_msg=f"{op} output {i}")

    def test_gpu_runs_equal_the_cpu(self):
        """run_gpu (what PyTorch's front end calls) on a stream of its own with caller-provided
        scratch and a device-side sample offset gives the CPU's bytes, every case."""
        if DEVICE != "gpu":
            self.skipTest("the GPU variant (--test_device=gpu) runs the core on a GPU")
        with tempfile.TemporaryDirectory() as tmp:
            cases = os.path.join(tmp, "cases.json")
            with open(cases, "w") as f:
                json.dump([[op, a, [x.tolist() for x in i], s, st, first] for op, a, i, s, st, first in CASES], f)
            out = subprocess.run(
                [sys.executable, "-c", GPU_SCRIPT, _core.__file__, CORE.path, cases, tmp],
                capture_output=True,
                text=True,
                timeout=600,
            )
            self.assertEqual(out.returncode, 0, msg=out.stdout[-2000:] + out.stderr[-3000:])
            if out.stdout.startswith("SKIP"):
                self.skipTest(out.stdout.strip())
            for k, (op, attrs, inputs, seed, step, first) in enumerate(CASES):
                with self.subTest(op=op, attrs=attrs):
                    outs = CORE.configure(op, **attrs).run_cpu(seed, step, first_sample=first, inputs=inputs)
                    for i, o in enumerate(outs):
                        got = np.load(os.path.join(tmp, f"{k}_{i}.npy"))
                        np.testing.assert_array_equal(got, np.ascontiguousarray(o).view(np.uint8).reshape(-1))

    def test_threads_and_sample_offset(self):
        """Rows shared over any number of threads, and a sample offset, give the same bytes as
        one thread with the offset in first_sample."""
        call = CORE.configure("OnTheFly>RandomBatch", batch_size=64, num_samples=20, feature_dim=5)
        want = call.run_cpu([1, 2], 3, first_sample=30, threads=1)
        for threads in (2, 7, 64):
            got = call.run_cpu([1, 2], 3, first_sample=30, threads=threads)
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g, w)
        seed, step, offset = np.int64([1, 2]), np.int64([3]), np.int64([25])
        outs = [np.empty(o["shape"], o["dtype"]) for o in call.info["outputs"]]
        args = call.run_args(
            (seed.ctypes.data, 2), step.ctypes.data, 5, offset.ctypes.data, [], [o.ctypes.data for o in outs]
        )
        CORE.check(CORE.lib.tf_onthefly_core_run_cpu(call.handle, _core.ctypes.byref(args), 2))
        for g, w in zip(outs, want):
            np.testing.assert_array_equal(g, w)

    def test_call_description(self):
        call = CORE.configure("OnTheFly>DriftWalk", batch_size=8, length=5000)
        info = call.info
        self.assertEqual(info["outputs"][0], {"name": "walks", "dtype": "int32", "shape": [8, 5000]})
        self.assertEqual(info["inputs"][0]["dims"], [-2])  # any size >= 1
        self.assertEqual(info["inputs"][0]["rule"], {"finite": True, "low": 0, "high": 1})
        self.assertEqual(info["input_names"], "up_probability")
        self.assertEqual(len(info["params"]), 16)  # 8 bytes of Params, in hex
        # Three tiles of 2048 steps: 8 rows x 3 tiles of int32 sums, aligned; the buffer that
        # serves it, wherever it starts, one alignment unit more.
        self.assertEqual((info["scratch_bytes"], info["scratch_buffer_bytes"]), (256, 512))
        self.assertFalse(info["command_buffer_compatible"])
        self.assertEqual(CORE.configure("OnTheFly>DriftWalk", batch_size=8, length=100).info["scratch_bytes"], 0)
        if CORE.versions()["xla_ffi_api"] >= 0:
            self.assertTrue(CORE.xla_handler("OnTheFly>DriftWalk", info["variant"], "host"))
            self.assertTrue(CORE.xla_handler("OnTheFly>DriftWalk", info["variant"], "cuda"))

    def test_errors_name_the_op_and_the_argument(self):
        for op, attrs, message in [
            (
                "OnTheFly>RandomWalk",
                dict(batch_size=4, length=0),
                "OnTheFly>RandomWalk: length must be in [1, 1048576], got 0",
            ),
            ("OnTheFly>RandomWalk", dict(batch_size=0, length=3), "batch_size must be >= 1, got 0"),
            ("OnTheFly>RandomWalk", dict(batch_size=4), "attribute 'length' (int) is required"),
            ("OnTheFly>RandomWalk", dict(batch_size=4, length=3, lenght=2), "it has no attribute 'lenght'"),
            ("OnTheFly>RandomWalk", dict(batch_size=4, length=2.5), "attribute 'length' must be an integer"),
            (
                "OnTheFly>RandomBatch",
                dict(batch_size=4, feature_dim=3, distribution="gamma"),
                'Value for attr \'distribution\' of "gamma" is not in the list of allowed values: "uniform", "normal"',
            ),
            (
                "OnTheFly>RandomBatch",
                dict(batch_size=4, feature_dim=3, dtype="int32"),
                "Value for attr 'dtype' of int32 is not in the list of allowed values: float, bfloat16, half",
            ),
            (
                "OnTheFly>RandomBatch",
                dict(batch_size=4, feature_dim=3, low=float("nan")),
                "low and high must be finite",
            ),
            ("OnTheFly>NoSuchOp", dict(batch_size=4), "no generator op named 'OnTheFly>NoSuchOp'"),
        ]:
            with self.subTest(message=message):
                with self.assertRaises(_core.CoreError) as e:
                    CORE.configure(op, **attrs)
                self.assertIn(message, str(e.exception))
        walk = CORE.configure("OnTheFly>DriftWalk", batch_size=8, num_samples=4, length=10)
        for kwargs, code, message in [
            (
                dict(inputs=[np.float32([0.5, -1e-45])]),
                3,
                "up_probability must be in [0, 1], got -1.4013e-45 at flat index 1",
            ),
            (dict(inputs=[np.float32([[0.5]])]), 3, "up_probability must have shape [n], got [1, 1]"),
            (dict(inputs=[np.float64([0.5])]), 3, "up_probability must be a float32 tensor, got float64"),
            (dict(inputs=[]), 3, "it takes 1 tensor inputs, got 0"),
            (
                dict(inputs=[np.float32([0.5])], first_sample=5),
                3,
                "first_sample must be in [0, batch_size - num_samples] = [0, 4], got 5",
            ),
            (dict(inputs=[np.float32([0.5])], threads=0), 3, "threads must be >= 1, got 0"),
        ]:
            with self.subTest(message=message):
                with self.assertRaises(_core.CoreError) as e:
                    walk.run_cpu([1, 2], 0, **kwargs)
                self.assertEqual(e.exception.code, code)
                self.assertIn("OnTheFly>DriftWalk: " + message, str(e.exception))


class GeneratorDef(_core.ctypes.Structure):
    """OtfGeneratorDef (tf_ops/sdk/abi.h), to register as a library would."""

    c = _core.ctypes
    _fields_ = [
        ("struct_size", c.c_size_t),
        ("sdk_abi_version", c.c_uint32),
        ("contract_version", c.c_uint32),
        ("abi_flags", c.c_uint32),
        ("name", c.c_char_p),
        ("inputs", c.POINTER(c.c_char_p)),
        ("num_inputs", c.c_int32),
        ("outputs", c.POINTER(c.c_char_p)),
        ("num_outputs", c.c_int32),
        ("attrs", c.POINTER(c.c_char_p)),
        ("num_attrs", c.c_int32),
        ("doc", c.c_char_p),
        ("params_size", c.c_int64),
    ]


class RegistrationTest(unittest.TestCase):
    """The registration ABI refuses what it cannot take, naming the library and what differs."""

    def register(self, name=b"OnTheFly>AbiProbe", **fields):
        c = _core.ctypes
        outputs = (c.c_char_p * 1)(b"out: float")
        values = dict(
            struct_size=c.sizeof(GeneratorDef),
            sdk_abi_version=CORE.versions()["abi"],
            contract_version=CORE.versions()["contract"],
            abi_flags=1,
            name=name,
            outputs=outputs,
            num_outputs=1,
            doc=b"",
            params_size=8,
        )
        values.update(fields)
        code = CORE.lib.tf_onthefly_register_generator(c.byref(GeneratorDef(**values)))
        return code, CORE.take_registration_errors()

    def test_refusals_say_what_differs(self):
        abi = CORE.versions()["abi"]
        for fields, message in [
            (dict(sdk_abi_version=abi + 1), f"built for SDK ABI {abi + 1}, this tf_onthefly has SDK ABI {abi}"),
            (dict(contract_version=1), "built for counter contract v1, this tf_onthefly has counter contract v2"),
            (dict(abi_flags=0), "built with _GLIBCXX_USE_CXX11_ABI=0, this tf_onthefly with _GLIBCXX_USE_CXX11_ABI=1"),
            (dict(struct_size=16), "its registration record has 16 bytes"),
            (dict(name=b"OnTheFly>RandomWalk"), "a generator of that name is registered already, by "),
            (dict(num_outputs=0), "it has 0 outputs; a generator has 1 to 4"),
            (
                dict(doc=b"A probe.\n\ncub::BlockRadixSort sorts.\nout: the values."),
                "its doc line 'cub::BlockRadixSort sorts.' documents an argument 'cub', which it does not have",
            ),
        ]:
            with self.subTest(message=message):
                code, errors = self.register(**fields)
                self.assertNotEqual(code, 0)
                self.assertEqual(len(errors), 1, errors)
                self.assertIn(" was not registered: " + message, errors[0])
        self.assertIn("libtf_onthefly_core.so", self.register(name=b"OnTheFly>RandomWalk")[1][0])

    def test_doc_lines_naming_arguments_are_taken(self):
        doc = b"cub: the summary may start so.\n  cub:: indented is prose.\nout: the values.\nseed: its seed."
        self.assertEqual(self.register(name=b"OnTheFly>DocProbe", doc=doc), (0, []))

    def test_a_spec_without_variants_is_not_offered(self):
        code, errors = self.register(name=b"OnTheFly>NoVariants")
        self.assertEqual((code, errors), (0, []))
        self.assertNotIn("OnTheFly>NoVariants", [g["name"] for g in CORE.specs()["generators"]])


if __name__ == "__main__":
    unittest.main(argv=[a for a in sys.argv if not a.startswith("--test_device=")], verbosity=2)
