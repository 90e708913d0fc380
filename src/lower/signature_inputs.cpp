#include "lower/signature_inputs.h"

#include <string>

#include "lower/refusal.h"

namespace nnapi_convert {

std::vector<int32_t> signature_inputs(nnapi::Op op,
                                      const std::vector<std::pair<nnapi::Role, int32_t>>& given) {
  std::vector<int32_t> inputs = nnapi::arrange_inputs(op, given);
  check(!inputs.empty(), [&] {
    std::string roles;
    for (const auto& g : given)
      roles += std::string(roles.empty() ? "" : ", ") + role_name(g.first);
    return std::string("internal: no form of NNAPI's ") + nnapi::op_name(op) + " has the inputs " +
           roles;
  });
  return inputs;
}

}  // namespace nnapi_convert
