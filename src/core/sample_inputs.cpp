#include "core/sample_inputs.h"

namespace nnapi_convert {

int64_t default_verify_size(size_t rank, size_t dim) {
  if (dim == 0) return 1;
  if (rank == 4 && (dim == 2 || dim == 3)) return 224;
  return 8;
}

std::vector<std::vector<int64_t>> default_sample_shapes(const std::vector<InputSpec>& specs) {
  std::vector<std::vector<int64_t>> shapes;
  for (const InputSpec& spec : specs) {
    std::vector<int64_t> dims = spec.dims;
    for (size_t d = 0; d < dims.size(); ++d) {
      if (dims[d] == 0) dims[d] = default_verify_size(dims.size(), d);
    }
    shapes.push_back(std::move(dims));
  }
  return shapes;
}

at::Tensor sample_input(const InputSpec& spec, const std::vector<int64_t>& shape, bool nhwc_all) {
  at::Tensor t;
  switch (spec.dtype) {
    case InputDType::Float32:
      t = at::randn(shape, at::kFloat);
      break;
    case InputDType::QUInt8:
      t = at::quantize_per_tensor(at::randn(shape, at::kFloat), spec.scale, spec.zero_point,
                                  at::kQUInt8);
      break;
    case InputDType::Int32:
      t = at::randint(0, 8, shape, at::kInt);
      break;
    case InputDType::Int16:
      t = at::randint(-64, 64, shape, at::kShort);
      break;
    case InputDType::Bool:
      // A key padding mask: per row, True (padding) after a random number of
      // leading False, at least one (a row of padding only is NaN in PyTorch);
      // the first row has none, so nn.TransformerEncoder's nested fast path
      // pads its output to the full length as the converted model does.
      if (shape.empty() || shape.back() == 0) {
        t = at::zeros(shape, at::kBool);
      } else {
        const int64_t len = shape.back();
        at::Tensor kept = at::randint(1, len + 1, shape, at::kLong).narrow(-1, 0, 1);
        kept.view(-1).narrow(0, 0, 1).fill_(len);
        t = at::arange(len, at::kLong).ge(kept);
      }
      break;
  }
  if (shape.size() == 4 && (spec.nhwc || nhwc_all))
    t = t.contiguous(at::MemoryFormat::ChannelsLast);
  return t;
}

std::vector<at::Tensor> sample_inputs(const std::vector<InputSpec>& specs,
                                      const std::vector<std::vector<int64_t>>& shapes,
                                      bool nhwc_all, uint64_t seed) {
  at::manual_seed(seed);
  std::vector<at::Tensor> inputs;
  for (size_t i = 0; i < specs.size(); ++i) {
    inputs.push_back(sample_input(specs[i], shapes.at(i), nhwc_all));
  }
  return inputs;
}

std::optional<RunnableSizes> runnable_sizes(
    const std::vector<InputSpec>& specs, const std::vector<std::vector<int64_t>>& shapes,
    const std::function<bool(const std::vector<std::vector<int64_t>>&)>& runs) {
  for (int64_t m = 2; m <= kMaxSizeMultiple; ++m) {
    std::vector<std::vector<int64_t>> next = shapes;
    for (size_t i = 0; i < next.size(); ++i) {
      for (size_t d = 0; d < next[i].size(); ++d) {
        if (specs.at(i).dims.at(d) == 0) next[i][d] = (next[i][d] + m - 1) / m * m;
      }
    }
    if (runs(next)) return RunnableSizes{next, m};
  }
  return std::nullopt;
}

std::string join_dims(const std::vector<int64_t>& dims) {
  std::string s;
  for (size_t k = 0; k < dims.size(); ++k) s += (k ? "x" : "") + std::to_string(dims[k]);
  return s.empty() ? "scalar" : s;
}

}  // namespace nnapi_convert
