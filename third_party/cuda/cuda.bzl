"""cuda_objects: compile .cu.cc files with clang's CUDA mode into PIC objects.

The objects go into a cc_library's srcs like any other object file. The .cu.cc files
hold kernels and plain launchers only (no TensorFlow headers), so they need nothing but
our own headers and CUDA's.
"""

load("@local_config_cuda//:defs.bzl", "CUDA_ARCHS", "CUDA_CLANG", "CUDA_PATH", "CUDA_SYSTEM_INCLUDES")

# -ffp-contract=off: no fused multiply-adds the CPU build would not also do, so float
# outputs can be bit-identical on CPU and GPU (docs/counter-contract.md).
# CCCL (CUB, Thrust, libcudacxx, on the include path from cuda_configure.bzl) as nvcc
# compiles it, which takes three things with clang-16:
# - -fcuda-allow-variadic-functions: CCCL declares variadic device functions (never called
#   with variadic arguments) that nvcc accepts and clang refuses without it ("CUDA device
#   code does not support variadic functions");
# - CCCL_IGNORE_DEPRECATED_API: CCCL 2.8 marks deprecated functions with [[deprecated]]
#   after their __host__ __device__ attributes, where clang reads it as applying to the
#   return type and refuses it (only the deprecation warnings are lost);
# - clang_cuda_prelude.h (-include, in the rule below): see the file.
# CCCL_DISABLE_NVTX: no NVTX ranges from CUB's device-wide algorithms, whose NVTX would
# reference dlopen@GLIBC_2.34 (tf_ops/sdk/gpu_launch.h).
CUDA_COPTS = [
    "-x",
    "cuda",
    "-Xclang",
    "-fcuda-allow-variadic-functions",
    "-DCCCL_IGNORE_DEPRECATED_API",
    "-DCCCL_DISABLE_NVTX",
    "-std=c++17",
    "-O3",
    "-fPIC",
    "-fvisibility=hidden",
    "-ffp-contract=off",
    "-D_GLIBCXX_USE_CXX11_ABI=1",
    "-Wno-unknown-cuda-version",
    "--cuda-path=" + CUDA_PATH,
] + ["-isystem" + d for d in CUDA_SYSTEM_INCLUDES] + [
    "--cuda-gpu-arch=" + a
    for a in CUDA_ARCHS
] + [
    # PTX only for the newest architecture: older ones get SASS alone.
    "--no-cuda-include-ptx=" + a
    for a in CUDA_ARCHS[:-1]
]

def _cuda_objects_impl(ctx):
    headers = depset(ctx.files.hdrs, transitive = [
        d[CcInfo].compilation_context.headers
        for d in ctx.attr.deps
    ])
    objects = []
    for src in ctx.files.srcs:
        stem = src.basename[:-len(".cu.cc")] if src.basename.endswith(".cu.cc") else src.basename
        out = ctx.actions.declare_file("_cuda_objs/%s/%s.pic.o" % (ctx.label.name, stem))
        args = ctx.actions.args()
        args.add_all(CUDA_COPTS)
        args.add("-include", ctx.file._prelude.path)
        args.add_all(ctx.attr.copts)
        args.add("-iquote", ".")
        args.add("-iquote", ctx.bin_dir.path)
        args.add("-c", src)
        args.add("-o", out)
        ctx.actions.run(
            executable = CUDA_CLANG,
            arguments = [args],
            inputs = depset([src, ctx.file._prelude], transitive = [headers]),
            outputs = [out],
            mnemonic = "CudaCompile",
            progress_message = "Compiling CUDA %s" % src.short_path,
            use_default_shell_env = True,
        )
        objects.append(out)
    return [DefaultInfo(files = depset(objects))]

cuda_objects = rule(
    implementation = _cuda_objects_impl,
    attrs = {
        "srcs": attr.label_list(allow_files = [".cu.cc"]),
        "hdrs": attr.label_list(allow_files = [".h"]),
        "deps": attr.label_list(providers = [CcInfo]),
        "copts": attr.string_list(),
        "_prelude": attr.label(default = "//third_party/cuda:clang_cuda_prelude.h", allow_single_file = True),
    },
    doc = "Compiles CUDA sources with clang for every configured GPU architecture.",
)
