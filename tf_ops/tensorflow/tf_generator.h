// What the TensorFlow front end's two files share (generator_ops.cc: ops, shape functions,
// CPU and GPU kernels; generator_xla.cc: the XLA kernel and handlers).
#ifndef TF_ONTHEFLY_TENSORFLOW_TF_GENERATOR_H_
#define TF_ONTHEFLY_TENSORFLOW_TF_GENERATOR_H_

#include <string>
#include <vector>

#include "tensorflow/core/framework/node_def_util.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tf_ops/core/registry.h"
#include "tf_ops/sdk/attrs.h"

namespace tf_onthefly {
namespace tf_front {

inline const tensorflow::AttrValue* Find(const tensorflow::AttrSlice& node,
                                         const std::string& name) {
  return node.Find(name);
}
inline const tensorflow::AttrValue* Find(const tensorflow::shape_inference::InferenceContext& node,
                                         const std::string& name) {
  return node.GetAttr(name);
}

// A node's attributes as the SDK reads them: every attribute of generator `g`'s op that
// the node has (TensorFlow has filled in the defaults). `node` is an AttrSlice, or a shape
// function's InferenceContext (its GetAttr(name) finds one the same way).
template <typename Node>
sdk::Attrs AttrsOf(const Node& node, const core::Generator& g) {
  sdk::Attrs attrs;
  for (const core::AttrSpec& a : g.attrs) {
    const tensorflow::AttrValue* v = Find(node, a.name);
    if (v == nullptr) continue;  // GetAttr says so, if the Config reads it
    switch (a.kind) {
      case sdk::AttrValue::Kind::kInt:
        attrs.SetInt(a.name, v->i());
        break;
      case sdk::AttrValue::Kind::kFloat:
        attrs.SetFloat(a.name, v->f());
        break;
      case sdk::AttrValue::Kind::kBool:
        attrs.SetBool(a.name, v->b());
        break;
      case sdk::AttrValue::Kind::kString:
        attrs.SetString(a.name, v->s());
        break;
      case sdk::AttrValue::Kind::kType:
        attrs.SetType(a.name, static_cast<sdk::DType>(v->type()));
        break;
      case sdk::AttrValue::Kind::kIntList:
        attrs.SetIntList(a.name, std::vector<int64_t>(v->list().i().begin(), v->list().i().end()));
        break;
    }
  }
  return attrs;
}

#if OTF_WITH_XLA
// Registers generator `g`'s XLA handlers into TensorFlow's XLA and its XLA kernel
// (generator_xla.cc).
void RegisterXla(const core::Generator& g);
#endif

}  // namespace tf_front
}  // namespace tf_onthefly

#endif  // TF_ONTHEFLY_TENSORFLOW_TF_GENERATOR_H_
