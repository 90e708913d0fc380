// The shape-compute script (`prepare`): the names it gives sizes fixed when the
// model is loaded. Lowerings write lines with them; the writer adds the return.
#pragma once

#include <cstdint>
#include <string>

namespace nnapi_convert {

// The script variable that holds dimension `dim` of operand `id` (a flexible
// size, known at load time), as PyTorch's converter names it.
std::string flex_name(int32_t id, int64_t dim);

}  // namespace nnapi_convert
