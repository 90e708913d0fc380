// A fixed set of node kinds, given as c10's interned symbols (c10::aten::add,
// c10::prim::Constant: compile-time constants) rather than as strings: made
// without LibTorch's locked string-to-symbol lookups, and looked up by binary
// search. Kinds outside c10's tables (quantized::add) come from
// c10::Symbol::fromQualString. Iterated in the order of the symbols' values,
// as a std::set<c10::Symbol> would be.
#pragma once

#include <ATen/core/interned_strings.h>

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <utility>
#include <vector>

namespace nnapi_convert {

class KindSet {
 public:
  KindSet(std::initializer_list<c10::Symbol> kinds) : KindSet(std::vector<c10::Symbol>(kinds)) {}
  explicit KindSet(std::vector<c10::Symbol> kinds) : kinds_(std::move(kinds)) {
    std::sort(kinds_.begin(), kinds_.end());
    kinds_.erase(std::unique(kinds_.begin(), kinds_.end()), kinds_.end());
  }
  size_t count(c10::Symbol kind) const {
    return std::binary_search(kinds_.begin(), kinds_.end(), kind) ? 1 : 0;
  }
  std::vector<c10::Symbol>::const_iterator begin() const { return kinds_.begin(); }
  std::vector<c10::Symbol>::const_iterator end() const { return kinds_.end(); }

 private:
  std::vector<c10::Symbol> kinds_;
};

}  // namespace nnapi_convert
