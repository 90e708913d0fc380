// The contract between the runtime core and the per-family operation files:
// each NNAPI operation code maps to an executor (run by compute, on ATen
// tensors). The rules a model must follow are the validator's
// (nnapi_convert/validate.h), which addOperation and finish run.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

#include "model.h"
#include "nnapi_convert/op_signature.h"

namespace nnrt {

using nnapi::Fuse;
using nnapi::Op;
using R = nnapi::Role;  // an input's role (op_signature.h)

// A tensor flowing between operations during one execution. Element types:
// float for TENSOR_FLOAT32/FLOAT32, int for TENSOR_INT32/INT32/UINT32,
// uint8 for TENSOR_QUANT8_ASYMM, bool for BOOL/TENSOR_BOOL8, half for
// FLOAT16 types, int16 for QUANT16 types (TENSOR_QUANT16_ASYMM: unsigned values
// in int16 storage, see quant16_asymm_values).
struct Value {
  at::Tensor t;
  OperandType type = OperandType::Float32;
  float scale = 0.f;
  int32_t zero_point = 0;
  bool present = false;
};

// What one operation sees. An operation with FLOAT16 operands (TENSOR_FLOAT16
// or FLOAT16) runs on the float32 kernels, as Android's reference CPU
// implementation runs most of them: its FLOAT16 inputs read as float32
// (exact), its FLOAT16 outputs are declared float32 to the kernel and rounded
// to float16 (to nearest, ties to even) when stored. So every operation whose
// kernel takes TENSOR_FLOAT32 takes TENSOR_FLOAT16 too.
class ExecContext {
 public:
  ExecContext(const Operation& op, const Model& model, std::vector<Value>& values);

  size_t num_inputs() const { return op_.inputs.size(); }
  size_t num_outputs() const { return op_.outputs.size(); }
  // False when the input index is past the end or the operand was omitted.
  bool has(size_t i) const;
  const Value& in(size_t i) const;
  // Input i as stored, float16 included (in() gives float16 widened to
  // float32 for kernels that compute in float32).
  const Value& stored_in(size_t i) const;
  int32_t i32(size_t i) const;
  float f32(size_t i) const;
  bool flag(size_t i) const;
  int32_t i32_or(size_t i, int32_t fallback) const { return has(i) ? i32(i) : fallback; }
  bool flag_or(size_t i, bool fallback) const { return has(i) ? flag(i) : fallback; }
  std::vector<int64_t> int_list(size_t i) const;
  // Where each input's role is (op_signature.h): the form of this operation
  // its input count and types make; BAD_DATA when the table has none.
  const nnapi::Form& form() const;
  const Operand& out_operand(size_t i) const;
  // The model's operand at input i (e.g. its per-channel scales).
  const Operand& in_operand(size_t i) const;
  // Stores the result for output i; `t` must have the element type of the
  // output's operand type and a shape compatible with its declared dims.
  void set_output(size_t i, at::Tensor t);

 private:
  const Operation& op_;
  const Model& model_;
  std::vector<Value>& values_;
  bool widened_ = false;                // the operation has FLOAT16 operands
  mutable std::vector<Value> wide_in_;  // float32 copies of its FLOAT16 inputs
  std::vector<Operand> wide_out_;       // its outputs with FLOAT16 types made float32
};

struct OpKernel {
  Op code;
  const char* name;
  void (*execute)(ExecContext&);
};

// The registry: every operation this runtime implements.
const OpKernel* find_kernel(int32_t code);
const std::vector<OpKernel>& all_kernels();

// Registration hooks, one per file under ops/.
void add_elementwise_kernels(std::vector<OpKernel>& table);
void add_activation_kernels(std::vector<OpKernel>& table);
void add_conv_kernels(std::vector<OpKernel>& table);
void add_pool_kernels(std::vector<OpKernel>& table);
void add_shape_kernels(std::vector<OpKernel>& table);
void add_resize_kernels(std::vector<OpKernel>& table);
void add_quant_kernels(std::vector<OpKernel>& table);
void add_logical_kernels(std::vector<OpKernel>& table);        // ops/logical.cpp
void add_reduce_kernels(std::vector<OpKernel>& table);         // ops/reduce.cpp
void add_space_batch_kernels(std::vector<OpKernel>& table);    // ops/space_batch.cpp
void add_lookup_kernels(std::vector<OpKernel>& table);         // ops/lookup.cpp
void add_normalization_kernels(std::vector<OpKernel>& table);  // ops/normalization.cpp
void add_random_kernels(std::vector<OpKernel>& table);         // ops/random.cpp
void add_detection_kernels(std::vector<OpKernel>& table);      // ops/detection.cpp
void add_recurrent_kernels(std::vector<OpKernel>& table);      // ops/recurrent.cpp

// ---- Helpers shared by the kernels (kernel.cpp) ----

at::ScalarType dtype_for(OperandType type);
bool is_quant8(OperandType type);
// Real values of a tensor: dequantized for quantized types.
at::Tensor real_values(const Value& v, at::ScalarType dtype = at::kFloat);
// TENSOR_QUANT16_ASYMM holds unsigned 16-bit values (0 to 65535), which
// LibTorch 1.13 has no dtype for: they are stored as int16 with the same bits.
// The values of such storage as int32 (0 to 65535), and the storage of int32
// values (saturated to 0 to 65535).
at::Tensor quant16_asymm_values(const at::Tensor& stored);
at::Tensor quant16_asymm_storage(const at::Tensor& values);
// Converts real values into the representation of `out`, applying a fused
// activation: clamps in real space for floats; for QUANT8_ASYMM rounds to
// nearest (half away from zero), adds the zero point and clamps to the
// activation's range intersected with [0, 255]; for QUANT16_ASYMM (no
// activation) rounds the same way and saturates to [0, 65535].
at::Tensor to_operand(const at::Tensor& real, const Operand& out, int32_t fuse = 0);
// The integer accumulator domain of quantized convolutions and
// FULLY_CONNECTED: q - zero_point of a QUANT8 operand, the raw values of an
// INT32 bias, as double (exact for every sum of 8-bit products).
at::Tensor accumulator_values(const Value& v);
// Requantizes an accumulator of `in_scale * w_scale` into QUANT8 `out` with a
// fused activation, in the arithmetic of PyTorch's QNNPACK kernels: the
// multiplier is (w_scale * in_scale) * (1 / out_scale) in float32, the
// accumulator is converted to float32, multiplied, and rounded half to even.
// NNAPI allows any rounding within one quantum; this choice makes converted
// quantized convolutions reproduce eager PyTorch (QNNPACK) exactly.
at::Tensor requantize_accumulator(const at::Tensor& acc, float in_scale, float w_scale,
                                  const Operand& out, int32_t fuse);
// The same with a per-channel filter: `w_scales` (float32) broadcasts against
// `acc`, one multiplier (w_scale[c] * in_scale) * (1 / out_scale) per channel.
at::Tensor requantize_accumulator(const at::Tensor& acc, float in_scale, const at::Tensor& w_scales,
                                  const Operand& out, int32_t fuse);
// A per-channel operand's scales as a float32 tensor of `rank` dims, sized
// along `dim` (the other dims 1), for broadcasting.
at::Tensor channel_scales(const Operand& op, int64_t rank, int64_t dim);
// Quantizes real values into QUANT8 `out` as torch.quantize_per_tensor does:
// the values as float32 times float32(1 / scale), rounded half to even, plus
// the zero point, saturated to [0, 255]. QUANTIZE, and CONCATENATION of
// inputs with other parameters (PyTorch's quantized cat dequantizes and
// quantizes so), and a broadcasting quantized ADD round this way. A fused
// activation clamps the result to its range.
at::Tensor quantize_like_pytorch(const at::Tensor& real, const Operand& out, int32_t fuse = 0);
// Quantizes with the given parameters (no activation).
at::Tensor quantize_u8(const at::Tensor& real, float scale, int32_t zero_point, int32_t lo = 0,
                       int32_t hi = 255);
// Activation bounds for a fuse code in the quantized domain of `out`.
std::pair<int32_t, int32_t> quant_activation_range(int32_t fuse, float scale, int32_t zero_point);
void check_fuse_code(int32_t fuse);
at::Tensor nhwc_to_nchw(const at::Tensor& t);
at::Tensor nchw_to_nhwc(const at::Tensor& t);
// Normalizes an axis in [-rank, rank) to [0, rank); BAD_DATA otherwise.
int64_t wrap_axis(int64_t axis, int64_t rank);

// The window of a convolution or pool: paddings (explicit, or from an
// implicit scheme resolved later) and strides.
struct Window {
  int64_t pad_l = 0, pad_r = 0, pad_t = 0, pad_b = 0;
  int64_t stride_w = 1, stride_h = 1;
  int32_t implicit_scheme = 0;  // 0 = explicit padding
};

// Reads the implicit padding scheme or the four explicit paddings, and the
// strides, where the operation's form has them.
Window read_window(const ExecContext& ctx, const nnapi::Form& form);

// The operation's optional NCHW layout flag: false when it is left out.
bool nchw_flag(const ExecContext& ctx);

}  // namespace nnrt
