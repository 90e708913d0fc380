// PyTorch's packed quantized parameters (LinearPackedParamsBase,
// Conv2dPackedParamsBase, CellParamsBase), read through their __getstate__.
#pragma once

#include <ATen/core/ivalue.h>

#include <utility>

namespace nnapi_convert {

// The state tuple of a packed-params object (its __getstate__).
c10::IValue packed_state(const c10::IValue& packed);

// The weight and bias of a LinearPackedParamsBase as float32: the weight
// dequantized (per tensor or per channel), the bias as stored (zeros of the
// weight's rows when it has none). `what` names the node in messages.
std::pair<at::Tensor, at::Tensor> dequantized_linear_params(const c10::IValue& packed,
                                                            const std::string& what);

}  // namespace nnapi_convert
