// The shape-compute script (`prepare`): the names it gives sizes fixed when the
// model is loaded. Lowerings write lines with them; the writer adds the return.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nnapi_convert {

// The script variable that holds dimension `dim` of operand `id` (a flexible
// size, known at load time), as PyTorch's converter names it.
std::string flex_name(int32_t id, int64_t dim);

// The dims an input of PyTorch shape `dims` has as an NNAPI model input:
// `dims` itself up to rank 4; of rank r > 4 (NNAPI operations take rank <= 4)
// its first r - 3 dims merged into one, as the converted module's forward
// hands it over (`flatten(0, r - 4)`); with a flexible dim 0 (a load-time
// batch), that dim kept and dims 1 to r - 3 merged (`flatten(1, r - 3)`).
std::vector<int64_t> nnapi_input_dims(const std::vector<int64_t>& dims);

}  // namespace nnapi_convert
