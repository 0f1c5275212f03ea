"""Build macros for tf_onthefly's libraries (docs/build.md, "The layers").

One generator = otf_op_library(...): its <name>_op.cc (spec, attribute checks, variants;
no TensorFlow header), its CUDA .cu.cc files and its headers. The built-in generators link
into one framework-neutral core, libtf_onthefly_core.so (otf_core_library); each
TensorFlow version's op library (otf_ops_shared_library) is the TensorFlow front end over
it, and PyTorch's op library (otf_torch_shared_library) PyTorch's; a library of generators
of its own (otf_generator_shared_library: the SDK's test generators) registers into the
core when loaded after it.

C++ flags: OTF_CORE_COPTS for everything in the core (no TensorFlow flag: the core is built
once for every TensorFlow version), OTF_COPTS for the TensorFlow front end; CUDA flags:
CUDA_COPTS in third_party/cuda/cuda.bzl.
"""

load("@local_config_tf//:defs.bzl", "TF_COPTS", "TF_HAS_XLA")
load("//third_party/cuda:cuda.bzl", "cuda_objects")

# The core's flags: C++17 and the C++11 string ABI (those of every TensorFlow release the
# wheel supports, so the front ends share the core's C++ types), TensorFlow's release-build
# NDEBUG, -O3, -ffp-contract=off to match the CUDA side, hidden symbols (the core exports
# only its C ABI and the registry, explicitly).
OTF_CORE_COPTS = [
    "-std=c++17",
    "-D_GLIBCXX_USE_CXX11_ABI=1",
    "-DNDEBUG",
    "-O3",
    "-ffp-contract=off",
    "-fvisibility=hidden",
]

# The TensorFlow front end's: TF's own flags from tf.sysconfig (ABI, C++17, Eigen alignment),
# plus ours: GOOGLE_CUDA=1 always, so GPU kernels are registered in every build (they are
# simply never picked where TensorFlow sees no GPU).
OTF_COPTS = TF_COPTS + [
    "-DGOOGLE_CUDA=1",
    "-DEIGEN_USE_THREADS",
    # TensorFlow's release build: inline code of its headers (protobuf, absl, DCHECKs) must
    # match what its libraries were compiled with.
    "-DNDEBUG",
    "-O3",
    "-ffp-contract=off",
    "-fvisibility=hidden",
    # XLA kernels where the TensorFlow built against has what they need (2.20 on).
    "-DOTF_WITH_XLA=%d" % (1 if TF_HAS_XLA else 0),
]

def otf_op_library(name, srcs, gpu_srcs = [], hdrs = [], deps = []):
    """One generator: its spec and variants, CPU code, and CUDA kernels (no TensorFlow).

    Makes <name>, a cc_library of the C++ side (compiled with gcc) and the CUDA objects
    (<name>_cuda, compiled with clang; no TensorFlow headers either), linked whole into the
    library that holds the generator (the core, for the built-in ones).

    Args:
      name: the generator's name.
      srcs: C++ sources: <name>_op.cc (OTF_GENERATOR, the Config, OTF_GENERATOR_KERNELS).
      gpu_srcs: CUDA sources (*.cu.cc), kernels and launchers.
      hdrs: headers shared by the C++ and CUDA sides (generator structs).
      deps: extra cc_library deps of the C++ side.
    """
    cuda_objects(
        name = name + "_cuda",
        srcs = gpu_srcs,
        hdrs = hdrs,
        deps = [
            "//tf_ops/common",
            "//tf_ops/sdk:generator",
        ],
        visibility = ["//visibility:public"],
    )
    native.cc_library(
        name = name,
        srcs = srcs + [":" + name + "_cuda"],
        hdrs = hdrs,
        copts = OTF_CORE_COPTS,
        deps = deps + [
            "//tf_ops/common",
            "//tf_ops/sdk:generator_def",
        ],
        alwayslink = 1,  # generators register in static initialisers nothing else references
        visibility = ["//visibility:public"],
    )

    # The generator's headers alone, for test generators built from the same structs.
    native.filegroup(
        name = name + "_hdrs",
        srcs = hdrs,
        visibility = ["//visibility:public"],
    )

    # The generator's source text, for tests and docs that quote it.
    native.filegroup(
        name = name + "_files",
        srcs = srcs + gpu_srcs + hdrs + ["BUILD"],
        visibility = ["//visibility:public"],
    )

def otf_core_library(name, deps):
    """The framework-neutral core: the generators in `deps`, the registry and its C API, the
    XLA handlers and the CUDA runtime forwarders. It includes no TensorFlow header and links
    no TensorFlow library: its CUDA runtime calls go through //tf_ops/common:cuda_runtime,
    which finds the runtime at load time (TensorFlow's, where the GPU build exports it; none
    with tensorflow-cpu, and the library loads all the same). So one copy serves every
    TensorFlow version's op library and the JAX and PyTorch front ends, GPU build or
    CPU-only.

    -z defs: any symbol that is not ours, libc's or libstdc++'s is a link error here.
    """
    native.cc_binary(
        name = name,
        linkshared = 1,
        deps = deps + [
            "//tf_ops/common:cuda_runtime",
            "//tf_ops/common:libstdcxx_compat",
            "//tf_ops/core",
        ],
        linkopts = ["-Wl,-z,defs", "-Wl,-soname," + name],
        visibility = ["//visibility:public"],
    )

def otf_generator_shared_library(name, deps, core):
    """A library of generators of its own, loaded after the core (found by its soname), into
    which its static initialisers register the generators; with its own hidden copy of the
    CUDA runtime forwarders, as the core has."""
    native.cc_binary(
        name = name,
        linkshared = 1,
        srcs = [core],
        deps = deps + [
            "//tf_ops/common:cuda_runtime",
            "//tf_ops/common:libstdcxx_compat",
        ],
        linkopts = ["-Wl,-z,defs"],
        visibility = ["//visibility:public"],
    )

def _front_end_library(name, deps, core, framework):
    """A front end's op library: `deps` linked against its framework's libraries and against
    `core`, found beside it ($ORIGIN). -z defs: any symbol that is neither ours nor the
    framework's is a link error here rather than an 'undefined symbol' at import on a user's
    machine."""
    native.cc_binary(
        name = name,
        linkshared = 1,
        srcs = [core],
        deps = deps + framework + ["//tf_ops/common:libstdcxx_compat"],
        linkopts = ["-Wl,-z,defs", "-Wl,--as-needed", "-Wl,-rpath,$$ORIGIN"],
        visibility = ["//visibility:public"],
    )

def otf_ops_shared_library(name, deps, core):
    """The op library Python loads for the configured TensorFlow: the TensorFlow front end
    (and its XLA kernel, where the TensorFlow has what it needs: 2.20 on) and the other ops
    in `deps`, linked against TensorFlow's framework library (and libtensorflow_cc, where
    XLA's op registry lives) and the core."""
    xla = ["@local_config_tf//:libtensorflow_cc"] if TF_HAS_XLA else []
    _front_end_library(name, deps, core, xla + ["@local_config_tf//:libtensorflow_framework"])

def otf_torch_shared_library(name, deps, core):
    """The op library the PyTorch front end loads: its kernels in `deps`, linked against
    PyTorch's libtorch_cpu.so (found where PyTorch loaded it, by its soname: never bundled)
    and the core."""
    _front_end_library(name, deps, core, ["@local_config_torch//:libtorch_cpu"])
