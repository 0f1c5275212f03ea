"""Build macros for tf_onthefly op libraries.

One op family = otf_op_library(...): its registration and CPU/GPU kernel .cc files, its
CUDA .cu.cc files, and its headers. All families link into one shared library with
otf_ops_shared_library(...), which Python loads once. C++ flags: OTF_COPTS here, used by
every C++ target; CUDA flags: CUDA_COPTS in third_party/cuda/cuda.bzl.
"""

load("@local_config_tf//:defs.bzl", "TF_COPTS", "TF_HAS_XLA")
load("//third_party/cuda:cuda.bzl", "cuda_objects")

# TF's own flags from tf.sysconfig (ABI, C++17, Eigen alignment), plus ours:
# GOOGLE_CUDA=1 always, so GPU kernels are registered in every build (they are simply
# never picked where TensorFlow sees no GPU); -ffp-contract=off to match the CUDA side.
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

_TF_DEPS = [
    "@local_config_tf//:tf_header_lib",
    "@local_config_tf//:cuda_headers",
]

# What every family's C++ side may include (TF headers, SDK, shared helpers) and what its
# CUDA side may include (device-side headers only: no TensorFlow in .cu.cc files).
_CC_DEPS = [
    "//tf_ops/common",
    "//tf_ops/common:tf_glue",
    "//tf_ops/sdk:generator",
    "//tf_ops/sdk:generator_op",
]
_CUDA_DEPS = [
    "//tf_ops/common",
    "//tf_ops/sdk:generator",
]

def otf_op_library(name, srcs, gpu_srcs = [], hdrs = [], deps = []):
    """One op family: op registration, CPU kernel, GPU kernel glue and CUDA kernels.

    Makes <name> (the TensorFlow side, a cc_library linked into the op library of the
    configured TensorFlow) and <name>_cuda (the CUDA kernels, no TensorFlow headers, linked
    once into libtf_onthefly_kernels.so, which every TensorFlow version's op library uses).

    Args:
      name: the family's name.
      srcs: C++ sources: registration + shape function, kernels (CPU and GPU glue).
      gpu_srcs: CUDA sources (*.cu.cc), kernels and launchers only, no TF headers.
      hdrs: headers shared by the C++ and CUDA sides (generator structs, functors).
      deps: extra cc_library deps of the C++ side.
    """
    cuda_objects(
        name = name + "_cuda",
        srcs = gpu_srcs,
        hdrs = hdrs,
        deps = _CUDA_DEPS,
        visibility = ["//visibility:public"],
    )
    native.cc_library(
        name = name,
        srcs = srcs,
        hdrs = hdrs,
        copts = OTF_COPTS,
        deps = deps + _CC_DEPS + _TF_DEPS,
        alwayslink = 1,  # kernels register in static initialisers nothing else references
        visibility = ["//visibility:public"],
    )

    # The family's headers alone, for test generators built from the same structs.
    native.filegroup(
        name = name + "_hdrs",
        srcs = hdrs,
        visibility = ["//visibility:public"],
    )

    # The family's source text, for tests and docs that quote it.
    native.filegroup(
        name = name + "_files",
        srcs = srcs + gpu_srcs + hdrs + ["BUILD"],
        visibility = ["//visibility:public"],
    )

def otf_kernels_library(name, objects):
    """The GPU kernels of every family (their CUDA objects), linked once. It includes no
    TensorFlow header and links no TensorFlow library: its CUDA runtime calls go through
    //tf_ops/common:cuda_runtime, which finds the runtime at load time (TensorFlow's, where
    the GPU build exports it; none with tensorflow-cpu, and the library loads all the same).
    So one copy serves every TensorFlow version's op library, GPU build or CPU-only."""
    native.cc_binary(
        name = name,
        linkshared = 1,
        srcs = objects,
        deps = ["//tf_ops/common:cuda_runtime"],
        linkopts = ["-Wl,-z,defs", "-Wl,-soname," + name],
        visibility = ["//visibility:public"],
    )

def otf_ops_shared_library(name, deps, kernels):
    """The op library Python loads for the configured TensorFlow: every op family and the
    SDK's XLA kernel, linked against TensorFlow's framework library (and libtensorflow_cc,
    where XLA's op registry lives), and against `kernels`, found beside it ($ORIGIN).

    -z defs: any symbol that is neither ours nor TensorFlow's is a link error here rather
    than an 'undefined symbol' at import on a user's machine.
    """
    xla = ["//tf_ops/sdk:generator_xla", "@local_config_tf//:libtensorflow_cc"] if TF_HAS_XLA else []
    native.cc_binary(
        name = name,
        linkshared = 1,
        srcs = [kernels],
        deps = deps + xla + [
            "//tf_ops/common:libstdcxx_compat",
            "@local_config_tf//:libtensorflow_framework",
        ],
        linkopts = ["-Wl,-z,defs", "-Wl,--as-needed", "-Wl,-rpath,$$ORIGIN"],
        visibility = ["//visibility:public"],
    )
