// PyTorch's packed quantized parameters (LinearPackedParamsBase,
// Conv2dPackedParamsBase, CellParamsBase), read through their __getstate__.
#pragma once

#include <ATen/core/ivalue.h>

#include <string>
#include <utility>
#include <vector>

namespace nnapi_convert {

// The state tuple of a packed-params object (its __getstate__).
c10::IValue packed_state(const c10::IValue& packed);

// A ConvNdPackedParamsBase's state (PyTorch's conv_serialization.h, version
// 2): `config` is the spatial rank, then its stride, padding, dilation and
// output_padding per spatial dim, groups and the transposed flag; `weight`
// the quantized weight; `bias` a float tensor or None. `cls` is the class
// expected ("Conv2dPackedParamsBase", "Conv3dPackedParamsBase").
struct PackedConv {
  std::vector<int64_t> config;
  at::Tensor weight;
  c10::IValue bias;
};
PackedConv packed_conv_params(const c10::IValue& packed, const std::string& cls);

// The weight and bias of a LinearPackedParamsBase as float32: the weight
// dequantized (per tensor or per channel), the bias as stored (zeros of the
// weight's rows when it has none). `what` names the node in messages.
std::pair<at::Tensor, at::Tensor> dequantized_linear_params(const c10::IValue& packed,
                                                            const std::string& what);

}  // namespace nnapi_convert
