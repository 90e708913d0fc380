// The body of the shape-compute script `prepare`: the lowerings' lines, then
// the output templates it returns, in PyTorch's converter's text.
#include "serialize/prepare_script.h"

#include "nnapi_convert/nnapi_types.h"
#include "nnapi_convert/writer.h"
#include "serialize/pyrepr.h"

namespace nnapi_convert {

std::vector<int64_t> nnapi_input_dims(const std::vector<int64_t>& dims) {
  if (dims.size() <= 4) return dims;
  // A flexible batch stays dim 0 (the dims after it merged): the lowerings
  // read the load-time size there.
  const size_t first = dims[0] == 0 ? 1 : 0;
  std::vector<int64_t> out(dims.begin(), dims.begin() + first);
  out.push_back(1);
  for (size_t d = first; d + 3 - first < dims.size(); ++d) out.back() *= dims[d];
  out.insert(out.end(), dims.end() - 3 + first, dims.end());
  return out;
}

std::string flex_name(int32_t id, int64_t dim) {
  return "s_" + std::to_string(id) + "_" + std::to_string(dim);
}

std::vector<std::string> prepare_lines(const Conversion& c, bool numeric_dtypes) {
  std::vector<std::string> lines = c.shape_lines;
  lines.push_back("return [");
  for (const OutputTemplate& t : c.templates) {
    std::string shape = "(";
    for (size_t d = 0; d < t.shape.size(); ++d) {
      int64_t s = t.shape[d];
      if (s > 0) {
        shape += std::to_string(s);
      } else if (s == 0) {
        shape += flex_name(t.operand, static_cast<int64_t>(d));
      } else if (s == -1) {
        shape += "0";
      } else {
        throw ConvertError(2, "output shapes must be -1 or more, got " + std::to_string(s));
      }
      shape += ",";
    }
    shape += ")";
    auto dtype = [&](const char* name, int number) {
      return numeric_dtypes ? std::to_string(number) : std::string("torch.") + name;
    };
    std::string expr;
    switch (static_cast<nnapi::OperandType>(t.type)) {
      case nnapi::OperandType::TensorFloat32:
        expr = "torch.zeros(" + shape + ", dtype=" + dtype("float32", 6) + ")";
        break;
      case nnapi::OperandType::TensorInt32:
        expr = "torch.zeros(" + shape + ", dtype=" + dtype("int32", 3) + ")";
        break;
      case nnapi::OperandType::TensorFloat16:  // --float16-io
        expr = "torch.zeros(" + shape + ", dtype=" + dtype("float16", 5) + ")";
        break;
      case nnapi::OperandType::TensorQuant8Asymm:
        expr = "torch.quantize_per_tensor(torch.zeros(1), scale=" + py_float_repr(t.scale) +
               ", zero_point=" + std::to_string(t.zero_point) + ", dtype=" + dtype("quint8", 13) +
               ").expand(" + shape + ").contiguous()";
        break;
      case nnapi::OperandType::TensorQuant16Asymm:
      case nnapi::OperandType::TensorQuant16Symm:
        expr = "torch.zeros(" + shape + ", dtype=" + dtype("int16", 2) + ")";
        break;
      default:
        throw ConvertError(1,
                           std::string("unsupported output operand type ") +
                               nnapi::operand_type_name(static_cast<nnapi::OperandType>(t.type)));
    }
    lines.push_back(expr + ",");
  }
  lines.push_back("]");
  return lines;
}

}  // namespace nnapi_convert
