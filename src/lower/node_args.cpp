#include "lower/node_args.h"

namespace nnapi_convert {

NodeArgs::NodeArgs(LoweringContext& cx, const Node* node)
    : cx_(cx), node_(node), schema_(node->maybeSchema()) {
  check(schema_ != nullptr && schema_->arguments().size() == node->inputs().size(), [&] {
    return std::string("malformed ") + node->kind().toQualString() +
           ": no operator schema matches its inputs";
  });
}

std::optional<size_t> NodeArgs::index(const char* name) const {
  c10::optional<int> i = schema_->argumentIndexWithName(name);
  if (!i) return std::nullopt;
  return static_cast<size_t>(*i);
}

const Value* NodeArgs::value(const char* name) const {
  std::optional<size_t> i = index(name);
  check(i.has_value(), [&] {
    return std::string(node_->kind().toQualString()) + " (overload " + schema_->overload_name() +
           ") has no argument '" + name + "'";
  });
  return node_->input(*i);
}

}  // namespace nnapi_convert
