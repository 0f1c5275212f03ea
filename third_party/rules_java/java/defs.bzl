"""Offline stand-in for @rules_java//java:defs.bzl (see docs/build.md).

Bazel 4.2.3's built-in tools load it during analysis of any py_test; we build
no Java, so re-exporting the native rules is enough.
"""

java_binary = native.java_binary
java_import = native.java_import
java_library = native.java_library
java_runtime = native.java_runtime
java_test = native.java_test
java_toolchain = native.java_toolchain
