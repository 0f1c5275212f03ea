// Included first in every .cu.cc (cuda.bzl's -include), after clang's CUDA runtime wrapper.
//
// The CUDA SDK's crt/host_defines.h defines __noinline__ as a macro for nvcc. libstdc++ 12
// spells the attribute __attribute__((__noinline__)) (<memory>, which Thrust includes), and
// the macro turns that into a syntax error under clang. clang knows __noinline__ as an
// attribute keyword in CUDA itself (since clang 15), so the macro is not needed.
#undef __noinline__
