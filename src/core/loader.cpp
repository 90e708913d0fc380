#include "core/loader.h"

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/freeze_module.h>
#include <torch/csrc/jit/passes/remove_mutation.h>
#include <torch/csrc/jit/serialization/import.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/archive_check.h"
#include "nnapi_convert/conversion.h"
#include "util/timing.h"

namespace nnapi_convert {
namespace {

namespace fs = std::filesystem;

void check_file(const std::string& path) {
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) {
    throw ConvertError(1, "model file '" + path +
                              "' does not exist; give the path of a "
                              "TorchScript model saved with torch.jit.save");
  }
  if (fs::is_directory(st)) {
    throw ConvertError(1, "model file '" + path + "' is a directory, not a TorchScript model file");
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    throw ConvertError(1, "model file '" + path + "' cannot be read: " + std::strerror(errno));
  }
  char magic[2] = {0, 0};
  f.read(magic, 2);
  if (f.gcount() == 0) throw ConvertError(1, "model file '" + path + "' is empty");
  if (f.gcount() < 2 || magic[0] != 'P' || magic[1] != 'K') {
    throw ConvertError(1, "model file '" + path +
                              "' is not a TorchScript archive (a TorchScript "
                              "model is a zip file written by torch.jit.save)");
  }
}

}  // namespace

namespace {

// LibTorch's internal checks read "cond INTERNAL ASSERT FAILED at "file":N,
// please report a bug to PyTorch. details": for a malformed file the file is
// at fault, so say what failed without the bug-report plea.
std::string plain_loader_message(std::string why) {
  const std::string marker = " INTERNAL ASSERT FAILED at ";
  size_t at = why.find(marker);
  if (at == std::string::npos) return why;
  size_t rest = why.find(", ", at + marker.size());
  std::string details = rest == std::string::npos ? "" : why.substr(rest + 2);
  const std::string plea = "please report a bug to PyTorch. ";
  if (details.compare(0, plea.size(), plea) == 0) details.erase(0, plea.size());
  return "LibTorch's check `" + why.substr(0, at) + "` failed" +
         (details.empty() ? "" : ": " + details);
}

// For TorchScript's "Unknown builtin op: ns::name": what to do about it.
std::string unknown_op_hint(const std::string& message) {
  const std::string marker = "Unknown builtin op: ";
  const size_t at = message.find(marker);
  if (at == std::string::npos) return "";
  const size_t begin = at + marker.size();
  const size_t end = message.find_first_of(". \n", message.find("::", begin));
  const std::string op = message.substr(begin, end - begin);
  const std::string ns = op.substr(0, op.find("::"));
  return " The model uses the operator " + op +
         ", which is registered by a library this process has not loaded: give that library "
         "with --ops-library PATH (" +
         (ns == "torchvision" ? std::string("torchvision's ops are in its _C.so, e.g. "
                                            "/usr/lib/python3/dist-packages/torchvision/"
                                            "_C.cpython-*.so")
                              : std::string("the .so that torch.ops.load_library loads in "
                                            "Python")) +
         ").";
}

// PyTorch 1.3 and 1.4 saved a quantized layer's packed weights as a plain
// Tensor attribute (`_packed_params`) and passed it to quantized::conv2d or
// quantized::linear; since 1.5 they are a Conv2dPackedParamsBase (or
// Conv3d..., LinearPackedParamsBase) object, the only type LibTorch 1.13's
// operators take, so compiling such a file's code fails with "Expected a
// value of type '...PackedParamsBase ...' ... but instead found type 'Tensor'".
void refuse_old_quantized(const std::string& file, const std::string& why) {
  if (why.find("PackedParamsBase") == std::string::npos ||
      why.find("but instead found type 'Tensor'") == std::string::npos) {
    return;
  }
  throw ConvertError(
      1, file +
             "was saved by an old PyTorch (1.3 or 1.4, 2019), whose quantized layers keep their "
             "packed weights as a plain Tensor; LibTorch 1.13 cannot read those layers. Load "
             "the model in PyTorch 1.5 or later and save it again with torch.jit.save (or "
             "quantize the float model again), then convert the new file");
}

}  // namespace

torch::jit::Module load_torchscript(const std::string& path, const std::string& what) {
  const std::string file = what.empty() ? "" : what + " '" + path + "' ";
  try {
    return torch::jit::load(path);
  } catch (const std::bad_alloc&) {
    throw ConvertError(1, file +
                              "could not be loaded: out of memory (is the machine's memory, "
                              "or ulimit -v, smaller than the model?)");
  } catch (const c10::Error& e) {
    refuse_old_quantized(file, e.what_without_backtrace());
    throw ConvertError(1, file +
                              "could not be loaded as TorchScript (was it saved by torch.save "
                              "rather than torch.jit.save, or damaged?): " +
                              plain_loader_message(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    refuse_old_quantized(file, e.what());
    throw ConvertError(
        1, file + "could not be loaded as TorchScript: " + e.what() + unknown_op_hint(e.what()));
  }
}

namespace {

// An in-place operation on a model input that is that input's first use
// (`x.relu_()` opening forward) made functional: RemoveTensorMutation leaves
// mutations of graph inputs alone, since the caller could see them, but the
// converted module never writes into its inputs. The functional node
// (aten::relu for aten::relu_) takes the in-place one's inputs, and every
// later use of the input reads its result instead.
void functionalize_input_mutations(torch::jit::Graph& graph) {
  for (torch::jit::Value* input : graph.inputs()) {
    if (!input->type()->cast<c10::TensorType>() || input->uses().empty()) continue;
    torch::jit::Node* first = nullptr;
    for (const torch::jit::Use& use : input->uses()) {
      if (use.user->owningBlock() != graph.block()) {
        first = nullptr;
        break;
      }
      if (!first || use.user->isBefore(first)) first = use.user;
    }
    if (!first || !first->kind().is_aten() || first->outputs().size() != 1 ||
        first->input(0) != input) {
      continue;
    }
    const std::string kind = first->kind().toQualString();
    const c10::FunctionSchema* schema = first->maybeSchema();
    if (kind.back() != '_' || !schema || !schema->is_mutable()) continue;
    torch::jit::Node* functional = graph.create(
        c10::Symbol::fromQualString(kind.substr(0, kind.size() - 1)), first->inputs(), 1);
    functional->insertBefore(first);
    if (!functional->maybeSchema()) {
      functional->destroy();
      continue;
    }
    functional->output()->setType(first->output()->type());
    functional->copyMetadata(first);
    first->output()->replaceAllUsesWith(functional->output());
    input->replaceAllUsesAfterNodeWith(functional, functional->output());
    first->destroy();
  }
}

}  // namespace

void specialize_omitted_inputs(torch::jit::Module& module, size_t given) {
  torch::jit::Method forward = module.get_method("forward");
  std::shared_ptr<torch::jit::Graph> graph = forward.graph();
  const std::vector<c10::Argument>& args = forward.function().getSchema().arguments();
  const size_t n = graph->inputs().size() - 1;  // after `self`
  if (given >= n || args.size() != n + 1) return;
  for (size_t i = given; i < n; ++i) {
    const auto& d = args[i + 1].default_value();
    if (!d || !d->isNone()) return;  // the input count check reports it
  }
  torch::jit::WithInsertPoint guard(graph->block()->nodes().front());
  for (size_t i = n; i-- > given;) {
    graph->inputs()[i + 1]->replaceAllUsesWith(graph->insertConstant(c10::IValue()));
    graph->eraseInput(i + 1);
  }
  torch::jit::ConstantPropagation(graph);
  torch::jit::EliminateDeadCode(graph);
}

torch::jit::Module load_frozen_model(const std::string& path, double* load_ms, double* freeze_ms) {
  check_file(path);
  auto t0 = std::chrono::steady_clock::now();
  check_torchscript_archive(path, "model file");
  torch::jit::Module module = load_torchscript(path, "model file");
  *load_ms = ms_since(t0);
  if (module.hasattr("mod") && module.attr("mod").isModule() &&
      module.attr("mod").toModule().hasattr("ser_model")) {
    throw ConvertError(1, "model '" + path +
                              "' is already a converted NNAPI module (it holds a serialized "
                              "NNAPI model, 'mod.ser_model'); convert the original TorchScript "
                              "model instead, or run `nnapi-convert inspect " +
                              path + "` to see what this one holds");
  }
  if (module.hasattr("training") && module.is_training()) {
    throw ConvertError(1, "model '" + path +
                              "' was saved in training mode; call .eval() on the "
                              "module before tracing or scripting it, then save it again");
  }
  if (!module.find_method("forward")) {
    throw ConvertError(1, "model '" + path + "' has no forward method");
  }
  t0 = std::chrono::steady_clock::now();
  torch::jit::Module frozen;
  try {
    frozen = torch::jit::freeze(module);
    auto graph = frozen.get_method("forward").graph();
    functionalize_input_mutations(*graph);
    torch::jit::RemoveListMutation(graph);
    torch::jit::RemoveTensorMutation(graph);
  } catch (const c10::Error& e) {
    throw ConvertError(1,
                       "model '" + path + "' could not be frozen: " + e.what_without_backtrace());
  }
  *freeze_ms = ms_since(t0);
  return frozen;
}

}  // namespace nnapi_convert
