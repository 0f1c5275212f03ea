// Philox4x32-10 and the tf_onthefly counter contract, shared by CPU and GPU code.
//
// Every value a generator emits is a pure function of (seed, stream, step, global sample
// index, block). The exact mapping is documented in docs/counter-contract.md and pinned
// by golden values in tests/; changing anything here is a breaking change that needs a
// new contract version (kContractVersion).
#ifndef TF_ONTHEFLY_COMMON_PHILOX_H_
#define TF_ONTHEFLY_COMMON_PHILOX_H_

// NVRTC (CuPy's RawModule, a user's Python-authored kernel) has no C++ standard library:
// the fixed-width types come from the compiler's own, inside this namespace.
#if defined(__CUDACC_RTC__)
namespace tf_onthefly {
using uint16_t = unsigned short;
using uint32_t = unsigned int;
using uint64_t = unsigned long long;
using int32_t = int;
using int64_t = long long;
}  // namespace tf_onthefly
#else
#include <cstdint>
#endif

#if defined(__CUDACC__)
#define OTF_HD __host__ __device__ __forceinline__
#else
#define OTF_HD inline
#endif

// Before a loop of a compile-time count that a GPU thread should run unrolled (straight-line
// code its scheduler can interleave); nothing on the CPU.
#if defined(__CUDA_ARCH__)
#define OTF_UNROLL _Pragma("unroll")
#else
#define OTF_UNROLL
#endif

namespace tf_onthefly {

// Bumped whenever a rule of the contract changes (docs/counter-contract.md, "Versions").
constexpr uint32_t kContractVersion = 2;
// Counter word 3 of the first key-derivation round: "OTF" + 1, the version that introduced
// the key derivation. Fixed: it changes only if the key derivation or the per-element
// counter changes, which would change every value; a change to one mapping from words to
// numbers (version 2: normals) leaves the words, and every other mapping's values, alone.
constexpr uint32_t kKeyDomain = 0x4F544601u;

struct PhiloxKey {
  uint32_t k0, k1;
};

struct Words4 {
  uint32_t w0, w1, w2, w3;
  // Word i (0..3); with a constant i this is a register, not a load.
  OTF_HD uint32_t operator[](int i) const { return i == 0 ? w0 : i == 1 ? w1 : i == 2 ? w2 : w3; }
};

OTF_HD uint32_t MulHi32(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __umulhi(a, b);
#else
  return static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32);
#endif
}

// Philox4x32 with 10 rounds (Salmon et al., SC'11), the generator TensorFlow's
// stateless random ops use. Checked against Random123's known-answer vectors in tests.
OTF_HD Words4 Philox4x32_10(Words4 c, PhiloxKey k) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int round = 0; round < 10; ++round) {
    const uint32_t hi0 = MulHi32(kM0, c.w0), lo0 = kM0 * c.w0;
    const uint32_t hi1 = MulHi32(kM1, c.w2), lo1 = kM1 * c.w2;
    c = Words4{hi1 ^ c.w1 ^ k.k0, lo1, hi0 ^ c.w3 ^ k.k1, lo0};
    k.k0 += kW0;
    k.k1 += kW1;
  }
  return c;
}

OTF_HD uint32_t Lo32(uint64_t x) { return static_cast<uint32_t>(x); }
OTF_HD uint32_t Hi32(uint64_t x) { return static_cast<uint32_t>(x >> 32); }

// Key for one (seed, stream, step): two Philox evaluations used as a key-derivation
// function, so the full 128-bit seed, the 32-bit stream id and the 64-bit step all reach
// the key, and the per-element counter keeps 64 bits for the sample index. Computed once
// per op call on the host; CPU and GPU kernels get the same key.
OTF_HD PhiloxKey DeriveKey(uint64_t seed0, uint64_t seed1, uint32_t stream, uint64_t step) {
  const Words4 a = Philox4x32_10(Words4{Lo32(seed1), Hi32(seed1), stream, kKeyDomain},
                                 PhiloxKey{Lo32(seed0), Hi32(seed0)});
  const Words4 b = Philox4x32_10(Words4{Lo32(step), Hi32(step), a.w2, a.w3}, PhiloxKey{a.w0, a.w1});
  return PhiloxKey{b.w0, b.w1};
}

// The four random words of block `block` of global sample `sample` under `key`.
OTF_HD Words4 SampleBlock(PhiloxKey key, uint64_t sample, uint32_t block) {
  return Philox4x32_10(Words4{block, Lo32(sample), Hi32(sample), 0u}, key);
}

}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_COMMON_PHILOX_H_
