"""otf_py_test: one test file, a CPU variant and a GPU variant."""

def otf_py_test(name, srcs, deps = [], data = [], size = "small", tags = [], args = []):
    """<name>_cpu runs everywhere; <name>_gpu is tagged requires-gpu and skips without a GPU.
    Both run srcs[0] with `args` after --test_device."""
    for dev in ["cpu", "gpu"]:
        native.py_test(
            name = "%s_%s" % (name, dev),
            srcs = srcs + ["device_util.py"],
            main = srcs[0],
            args = ["--test_device=" + dev] + args,
            data = data,
            size = size,
            tags = tags + (["requires-gpu"] if dev == "gpu" else []),
            deps = deps + ["//python/tf_onthefly"],
            python_version = "PY3",
        )
