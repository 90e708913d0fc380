#include "lower/operand.h"

#include <sstream>

#include "lower/context.h"

namespace nnapi_convert {

bool Operand::use_nchw() const {
  if (dim_order == DimOrder::Contiguous) return true;
  if (dim_order == DimOrder::ChannelsLast) return false;
  fail("an operand with no known memory layout (a constant or scalar) is used as an image");
}

Shape fix_shape(const Shape& shape, DimOrder order) {
  if (order == DimOrder::ChannelsLast) {
    check(shape.size() == 4, "a channels-last operand must have 4 dims, got " + shape_str(shape));
    return {shape[0], shape[2], shape[3], shape[1]};
  }
  return shape;
}

int reverse_map_dim(DimOrder order, int d) {
  if (order == DimOrder::ChannelsLast) {
    static const int kMap[] = {0, 2, 3, 1};
    return kMap[d];
  }
  return d;
}

std::string flex_name(int32_t id, int64_t dim) {
  return "s_" + std::to_string(id) + "_" + std::to_string(dim);
}

int64_t py_index(int64_t index, int64_t size) {
  int64_t i = index < 0 ? index + size : index;
  check(i >= 0 && i < size, "index " + std::to_string(index) + " is out of range for " +
                                std::to_string(size) + " dims");
  return i;
}

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << ")";
  return os.str();
}

}  // namespace nnapi_convert
