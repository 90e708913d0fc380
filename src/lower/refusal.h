// How a lowering refuses a node: LoweringError, fail and check. The driver
// catches LoweringError and adds the node and its source place.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace nnapi_convert {

// A node that cannot be lowered. The driver adds the node and its source range.
class LoweringError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] inline void fail(const std::string& message) { throw LoweringError(message); }
inline void check(bool ok, const char* message) {
  if (!ok) fail(message);
}
inline void check(bool ok, const std::string& message) {
  if (!ok) fail(message);
}
// For messages that take work to build (names, shapes): `make_message` runs
// only when the check fails, so the passing path of a lowering stays cheap.
template <typename MakeMessage, typename = decltype(std::declval<MakeMessage>()())>
inline void check(bool ok, MakeMessage&& make_message) {
  if (!ok) fail(make_message());
}

}  // namespace nnapi_convert
