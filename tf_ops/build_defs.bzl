"""Build macros for tf_onthefly op libraries.

One op family = otf_op_library(...): its registration and CPU/GPU kernel .cc files, its
CUDA .cu.cc files, and its headers. All families link into one shared library with
otf_ops_shared_library(...), which Python loads once. C++ flags: OTF_COPTS here, used by
every C++ target; CUDA flags: CUDA_COPTS in third_party/cuda/cuda.bzl.
"""

load("@local_config_tf//:defs.bzl", "TF_COPTS")
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

    Args:
      name: the family's name (a cc_library, linked into the shared library).
      srcs: C++ sources: registration + shape function, kernels (CPU and GPU glue).
      gpu_srcs: CUDA sources (*.cu.cc), kernels and launchers only, no TF headers.
      hdrs: headers shared by the C++ and CUDA sides (generator structs, functors).
      deps: extra cc_library deps of the C++ side.
    """
    objs = []
    if gpu_srcs:
        cuda_objects(
            name = name + "_cuda",
            srcs = gpu_srcs,
            hdrs = hdrs,
            deps = _CUDA_DEPS,
        )
        objs = [":" + name + "_cuda"]
    native.cc_library(
        name = name,
        srcs = srcs + objs,
        hdrs = hdrs,
        copts = OTF_COPTS,
        deps = deps + _CC_DEPS + _TF_DEPS,
        alwayslink = 1,  # kernels register in static initialisers nothing else references
        visibility = ["//visibility:public"],
    )

    # The family's source text, for tests and docs that quote it.
    native.filegroup(
        name = name + "_files",
        srcs = srcs + gpu_srcs + hdrs + ["BUILD"],
        visibility = ["//visibility:public"],
    )

def otf_ops_shared_library(name, deps):
    """The one .so Python loads: every op family and the SDK's XLA kernel, linked against
    TF's framework library and libtensorflow_cc (XLA's op registry lives there).

    -z defs: any symbol that is neither ours nor in libtensorflow_framework.so.2 is a
    link error here rather than an 'undefined symbol' at import on a user's machine.
    """
    native.cc_binary(
        name = name,
        linkshared = 1,
        deps = deps + [
            "//tf_ops/common:libstdcxx_compat",
            "//tf_ops/sdk:generator_xla",
            "@local_config_tf//:libtensorflow_framework",
            "@local_config_tf//:libtensorflow_cc",
        ],
        linkopts = ["-Wl,-z,defs", "-Wl,--as-needed"],
        visibility = ["//visibility:public"],
    )
