// libFuzzer target: arbitrary bytes as a whole TorchScript archive (a zip),
// through the archive check that runs before torch::jit::load.
// Besides "no crash, no hang, no unbounded allocation" it checks properties:
//  - only ConvertError, with exit status 1 and a message, escapes the check;
//  - an archive the check accepts cannot make LibTorch read outside a
//    storage: when torch::jit::load then succeeds, every tensor it built (in
//    the module's attributes, at any depth, and in its constants) lies within
//    its storage's allocation. LibTorch is not instrumented, so this is
//    checked here rather than left to AddressSanitizer.
// The seed corpus is generated (make_archive_seeds.py): real files of each
// form PyTorch writes, too large to commit.
#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/serialization/import.h>
#include <torch/script.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <unordered_set>

#include "core/archive_check.h"
#include "nnapi_convert/conversion.h"

namespace {

[[noreturn]] void property_failed(const std::string& what) {
  std::fprintf(stderr, "fuzz_archive: property failed: %s\n", what.c_str());
  std::abort();
}

// The bytes past the storage's start that `t` can read.
bool fits(const at::Tensor& t, std::string* why) {
  if (!t.defined() || t.is_sparse() || t.is_mkldnn() || !t.has_storage()) return true;
  const int64_t numel = t.numel();
  if (numel == 0) return true;
  int64_t last = t.storage_offset();
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) < 0 || t.stride(d) < 0) {
      *why = "negative size or stride";
      return false;
    }
    int64_t reach;
    if (__builtin_mul_overflow(t.size(d) - 1, t.stride(d), &reach) ||
        __builtin_add_overflow(last, reach, &last)) {
      *why = "extent overflows";
      return false;
    }
  }
  int64_t bytes;
  if (__builtin_mul_overflow(last + 1, static_cast<int64_t>(t.element_size()), &bytes) ||
      static_cast<uint64_t>(bytes) > t.storage().nbytes()) {
    *why = "extent " + std::to_string(last + 1) + " elements of " +
           std::to_string(t.element_size()) + " bytes over a storage of " +
           std::to_string(t.storage().nbytes()) + " bytes";
    return false;
  }
  return true;
}

void check_value(const c10::IValue& v, std::unordered_set<const void*>& seen) {
  std::string why;
  if (v.isTensor()) {
    if (!fits(v.toTensor(), &why)) property_failed("accepted archive, loaded tensor: " + why);
    return;
  }
  if (!v.isPtrType() || !seen.insert(v.internalToPointer()).second) return;
  if (v.isObject()) {
    const auto obj = v.toObject();
    for (size_t i = 0; i < obj->slots().size(); ++i) check_value(obj->getSlot(i), seen);
  } else if (v.isTuple()) {
    for (const auto& e : v.toTupleRef().elements()) check_value(e, seen);
  } else if (v.isList()) {
    for (const auto& e : v.toListRef()) check_value(e, seen);
  } else if (v.isGenericDict()) {
    for (const auto& e : v.toGenericDict()) {
      check_value(e.key(), seen);
      check_value(e.value(), seen);
    }
  }
}

void check_constants(torch::jit::Block* block, std::unordered_set<const void*>& seen) {
  for (torch::jit::Node* n : block->nodes()) {
    if (n->kind() == c10::prim::Constant) {
      if (auto v = torch::jit::toIValue(n->output())) check_value(*v, seen);
    }
    for (torch::jit::Block* b : n->blocks()) check_constants(b, seen);
  }
}

// The file each input is written to (the check reads a path), removed after
// each input (libFuzzer ends without running atexit handlers).
const std::string& scratch_path() {
  static const std::string path = [] {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/fuzz_archive." + std::to_string(getpid()) +
           ".pt";
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // LibTorch's warnings (TORCH_WARN) would flood the fuzzer's output.
  static struct Quiet : c10::WarningHandler {
    void process(const c10::SourceLocation&, const std::string&, bool) override {}
  } quiet;
  c10::Warning::set_warning_handler(&quiet);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = scratch_path();
  {
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) property_failed("cannot write " + path);
    if (size && std::fwrite(data, 1, size, f) != size) property_failed("short write");
    std::fclose(f);
  }
  try {
    nnapi_convert::check_torchscript_archive(path, "");
    std::remove(path.c_str());
  } catch (const nnapi_convert::ConvertError& e) {
    std::remove(path.c_str());
    if (e.exit_code() != 1 || e.what()[0] == '\0') property_failed("bad ConvertError");
    return 0;
  }
  // Accepted: LibTorch may still refuse it (a c10::Error or another
  // exception), but what it loads must lie within its storages.
  torch::jit::Module m;
  try {
    std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
    m = torch::jit::load(in);
  } catch (const std::exception&) {
    return 0;
  }
  std::unordered_set<const void*> seen;
  check_value(m._ivalue(), seen);
  // The constants of its code (constants.pkl's tensors, as prim::Constant).
  for (torch::jit::Function* fn : m._ivalue()->compilation_unit()->get_functions()) {
    auto* graph_fn = dynamic_cast<torch::jit::GraphFunction*>(fn);
    if (graph_fn) check_constants(graph_fn->graph()->block(), seen);
  }
  return 0;
}
