"""The TensorFlow releases the wheel holds an op library for (build_pip_pkg.sh builds one per
entry; the newest is what configure.sh installs by default). The newest patch of each minor:
within a minor, TensorFlow keeps its C++ ABI."""

TF_VERSIONS = [
    "2.16.2",
    "2.17.1",
    "2.18.1",
    "2.19.1",
    "2.20.0",
    "2.21.0",
]
