// The SDK's test generators as ops (sdk_test_generators.h), in a test-only op library.
#include <cstddef>

#include "tests/sdk_ops/sdk_test_generators.h"
#include "tf_ops/sdk/generator_def.h"

namespace tf_onthefly {
namespace sdk_test {

struct FillConfig {
  using Params = FillParams;
  static sdk::Status Configure(const sdk::Attrs& a, Params* p, sdk::SampleShapes* shapes) {
    OTF_RETURN_IF_ERROR(a.GetAttr("fail", &p->fail));
    shapes->Add("out", {});
    return sdk::OkStatus();
  }
};

OTF_GENERATOR("OnTheFly>SdkTestGpuOnlyFill", FillConfig)
    .Output("out: int64")
    .Attr("fail: int = 0")
    .Doc("A GPU-only launcher generator: out[row] = the global sample index.");
OTF_GENERATOR_KERNELS(FillConfig, GpuOnlyFillGen)("OnTheFly>SdkTestGpuOnlyFill");

struct SortConfig {
  using Params = SortParams;
  static sdk::Status Configure(const sdk::Attrs&, Params* p, sdk::SampleShapes* shapes) {
    p->unused = 0;
    shapes->Add("keys", {kSortLength});
    shapes->Add("sums", {kSortLength});
    return sdk::OkStatus();
  }
};

OTF_GENERATOR("OnTheFly>SdkTestCcclSort", SortConfig)
    .Output("keys: int32")
    .Output("sums: int32")
    .Doc("Sorted random keys per sample and their prefix sums, with CUB, Thrust, libcudacxx.");
OTF_GENERATOR_KERNELS(SortConfig, CcclSortGen)("OnTheFly>SdkTestCcclSort");

struct AddRowsConfig {
  using Params = AddRowsParams;
  static sdk::Status Configure(const sdk::Attrs& a, Params* p, sdk::SampleShapes* shapes) {
    OTF_RETURN_IF_ERROR(a.GetAttr("width", &p->width));
    OTF_REQUIRE(p->width >= 1 && p->width <= 64, "width must be in [1, 64], got ", p->width);
    shapes->AddInput("rows", {sdk::kRows, p->width}, sdk::ValueRule::Finite());
    shapes->Add("out", {p->width});
    return sdk::OkStatus();
  }
};

OTF_GENERATOR("OnTheFly>SdkTestAddRows", AddRowsConfig)
    .Input("rows: float")
    .Output("out: float")
    .Attr("width: int")
    .Doc("out[row] = rows[row] + uniform [0, 1) noise of the sample: one input row per sample.");
OTF_GENERATOR_KERNELS(AddRowsConfig, AddRowsGen)("OnTheFly>SdkTestAddRows");

// AddRows again, its variant registered as a library built with the SDK before calls of
// several steps registers it: a record that ends before launch_gpu_steps (abi.h). The core
// must take it and read nothing past its size.
OTF_GENERATOR("OnTheFly>SdkTestEarlierRecord", AddRowsConfig)
    .Input("rows: float")
    .Output("out: float")
    .Attr("width: int")
    .Doc("OnTheFly>SdkTestAddRows, registered with the variant record of the earlier SDK.");
[[maybe_unused]] const bool kEarlierRecordRegistered = [] {
  OtfVariantDef def{};
  def.struct_size = offsetof(OtfVariantDef, launch_gpu_steps);
  def.sdk_abi_version = sdk::kSdkAbiVersion;
  def.contract_version = kContractVersion;
  def.abi_flags = sdk::kAbiFlags;
  def.generator = "OnTheFly>SdkTestEarlierRecord";
  def.params_size = sizeof(AddRowsParams);
  def.num_streams = AddRowsGen::kNumStreams;
  def.command_buffer_compatible = 1;
  def.configure = &sdk::ConfigureEntry<AddRowsConfig>;
  def.fill_rows_cpu = &sdk::FillRowsCpu<AddRowsGen>;
#if !defined(OTF_CPU_ONLY)
  def.launch_gpu = &sdk::LaunchGenerator<AddRowsGen>;
#endif
#if OTF_HAS_XLA_FFI
  def.xla_host_handler = reinterpret_cast<void*>(&sdk::xla_ffi::HostHandler<AddRowsGen>);
#if !defined(OTF_CPU_ONLY)
  def.xla_cuda_handler = reinterpret_cast<void*>(&sdk::xla_ffi::CudaHandler<AddRowsGen>);
#endif
  def.xla_ffi_api_version = sdk::xla_ffi::kApiVersion;
#else
  def.xla_ffi_api_version = -1;
#endif
  return tf_onthefly_register_variant(&def) == 0;
}();

// The same attribute and input as OnTheFly>DriftWalk (tf_ops/drift_walk/drift_walk_op.cc).
struct PerSampleDriftWalkConfig {
  using Params = drift_walk::Params;
  static sdk::Status Configure(const sdk::Attrs& a, Params* p, sdk::SampleShapes* shapes) {
    OTF_RETURN_IF_ERROR(a.GetAttr("length", &p->length));
    OTF_REQUIRE(p->length >= 1 && p->length <= (1 << 20), "length must be in [1, 1048576], got ",
                p->length);
    shapes->AddInput("up_probability", {sdk::kAnySize}, sdk::ValueRule::InRange(0, 1));
    shapes->Add("walks", {p->length});
    shapes->Add("labels", {1});
    return sdk::OkStatus();
  }
};

OTF_GENERATOR("OnTheFly>SdkTestPerSampleDriftWalk", PerSampleDriftWalkConfig)
    .Input("up_probability: float")
    .Output("walks: int32")
    .Output("labels: int32")
    .Attr("length: int")
    .Doc("OnTheFly>DriftWalk's walks from the per-sample form of its generator.");
OTF_GENERATOR_KERNELS(PerSampleDriftWalkConfig, PerSampleDriftWalkGen)
("OnTheFly>SdkTestPerSampleDriftWalk");

}  // namespace sdk_test
}  // namespace tf_onthefly
