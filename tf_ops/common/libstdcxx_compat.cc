// The op libraries need no newer libstdc++ (or glibc) than TensorFlow's own libraries
// (GLIBCXX_3.4.22, what the manylinux_2_24 tag promises; docs/packaging.md). gcc 12's headers,
// through XLA's FFI header, make the library call two functions that libstdc++ only added later
// (GLIBCXX_3.4.26 and 3.4.29). They are defined here, hidden, doing what libstdc++'s do, so
// the static linker binds the library's calls to these copies and no newer version is
// imported. (The same idea as the libstdc++_nonshared.a of the manylinux toolchains.)
#include <new>
#include <sstream>

// std::__throw_bad_array_new_length() (GLIBCXX_3.4.29): what allocators call when asked for
// more elements than fit in memory.
extern "C" [[noreturn]] __attribute__((visibility("hidden"))) void
_ZSt28__throw_bad_array_new_lengthv() {
  throw std::bad_array_new_length();
}

// std::stringstream::stringstream() (GLIBCXX_3.4.26; the C++20 default constructor): the
// constructor with in | out, the default it delegates to.
extern "C" __attribute__((visibility("hidden"))) void
_ZNSt7__cxx1118basic_stringstreamIcSt11char_traitsIcESaIcEEC1Ev(std::stringstream* self) {
  new (self) std::stringstream(std::ios_base::in | std::ios_base::out);
}

// glibc's __libc_single_threaded (GLIBC_2.32), which gcc 12's shared_ptr reads to skip atomic
// reference counts in a process with one thread (through PyTorch's stable-ABI Tensor, in the
// PyTorch op library). This copy says "not single-threaded", always: the counts stay atomic,
// which is correct in every process, and no glibc 2.32 symbol is imported.
extern "C" __attribute__((visibility("hidden"))) char __libc_single_threaded = 0;
