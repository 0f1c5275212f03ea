// The floating-point environment our CPU code computes in. No TensorFlow headers.
#ifndef TF_ONTHEFLY_COMMON_FLOAT_ENV_H_
#define TF_ONTHEFLY_COMMON_FLOAT_ENV_H_

#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace tf_onthefly {

// Honours IEEE 754 subnormals for the lifetime of the scope, then restores the thread's
// previous mode. TensorFlow runs CPU kernels with subnormals flushed to zero (x86 FTZ and
// DAZ), so without this a range like [-1.5e-38, 1.5e-38) would compute zeros where the
// counter contract (and the GPU, which keeps subnormals) gives 5.3e-39, and an argument
// check like `p >= 0` would read a negative subnormal p as -0 in a kernel but not in a
// shape function. Every attribute check and every CPU generator runs inside one.
class ScopedIeeeSubnormals {
 public:
  ScopedIeeeSubnormals() {
#if defined(__x86_64__) || defined(__i386__)
    saved_ = _mm_getcsr();
    _mm_setcsr(saved_ & ~(kFlushToZero | kDenormalsAreZero));
#elif defined(__aarch64__)
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(saved_));
    const uint64_t ieee = saved_ & ~kFlushToZero;
    __asm__ __volatile__("msr fpcr, %0" : : "r"(ieee));
#endif
  }
  ~ScopedIeeeSubnormals() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_setcsr(saved_);
#elif defined(__aarch64__)
    __asm__ __volatile__("msr fpcr, %0" : : "r"(saved_));
#endif
  }
  ScopedIeeeSubnormals(const ScopedIeeeSubnormals&) = delete;
  ScopedIeeeSubnormals& operator=(const ScopedIeeeSubnormals&) = delete;

 private:
#if defined(__x86_64__) || defined(__i386__)
  static constexpr unsigned kFlushToZero = 1u << 15, kDenormalsAreZero = 1u << 6;
  unsigned saved_ = 0;
#elif defined(__aarch64__)
  static constexpr uint64_t kFlushToZero = uint64_t{1} << 24;
  uint64_t saved_ = 0;
#endif
};

}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_COMMON_FLOAT_ENV_H_
