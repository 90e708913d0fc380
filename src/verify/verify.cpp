// `--verify`: the original model and the converted module, run side by side
// on seeded random inputs, the converted one on the host NNAPI runtime.
#include "nnapi_convert/verify.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>
#include <dlfcn.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/subgraph_matcher.h>
#include <torch/csrc/jit/passes/subgraph_rewrite.h>
#include <torch/csrc/jit/runtime/interpreter.h>
#include <torch/csrc/jit/serialization/import.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "core/diagnostics.h"
#include "core/loader.h"
#include "core/sample_inputs.h"
#include "core/trace.h"
#include "nnapi_convert/blob.h"
#include "runtime/nnapi_c_api.h"
#include "verify/torch_save.h"

namespace fs = std::filesystem;

namespace nnapi_convert {
namespace {

constexpr const char* kRuntimeName = "libneuralnetworks.so";

// Where `cmake --install` puts the runtime, relative to the installed binary's
// directory (set by CMake from GNUInstallDirs; the fallback is its default).
#ifndef NNAPI_CONVERT_INSTALLED_RUNTIME_DIR
#define NNAPI_CONVERT_INSTALLED_RUNTIME_DIR "../lib/nnapi-convert"
#endif

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2g", v);
  return buf;
}

std::string pct(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g%%", 100.0 * share);
  return buf;
}

void flatten(const c10::IValue& v, std::vector<at::Tensor>* out) {
  if (v.isTensor()) {
    out->push_back(v.toTensor());
  } else if (v.isTuple()) {
    for (const c10::IValue& e : v.toTupleRef().elements()) flatten(e, out);
  } else if (v.isList()) {
    for (const c10::IValue& e : v.toListRef()) flatten(e, out);
  } else {
    throw ConvertError(1, "the model returns a " + v.tagKind() +
                              ", but --verify compares only tensors and tuples/lists of them");
  }
}

}  // namespace

QnnpackEngine::QnnpackEngine() : saved_(static_cast<int>(at::globalContext().qEngine())) {
  for (at::QEngine e : at::globalContext().supportedQEngines()) {
    if (e == at::QEngine::QNNPACK) at::globalContext().setQEngine(e);
  }
}
QnnpackEngine::~QnnpackEngine() {
  at::globalContext().setQEngine(static_cast<at::QEngine>(saved_));
}

namespace {

// The model for the eager run, loaded by `load` on QNNPACK (Android's engine;
// quantized weights are packed for the engine at load), or on PyTorch's
// default engine (`*other` set) where QNNPACK cannot pack them (or `load`,
// converting, unpack them): PyTorch 1.13's QNNPACK packs few quantized 3-D
// convolutions and unpacks none ("QNNPACK only supports conv2d_unpack").
// The whole-model check and the divergence locator load their models here.
template <typename Load>
torch::jit::Module load_for_eager(const Load& load, bool* other) {
  try {
    QnnpackEngine qnnpack;
    return load();
  } catch (const std::exception& e) {  // c10::Error, or a TorchScript method's JITException
    if (std::string(e.what()).find("QNNPACK only supports") == std::string::npos) throw;
  }
  *other = true;
  return load();
}

// NeuralNetworks.h's AVERAGE_POOL_2D averages over the cells within the input,
// which is what avg_pool2d's count_include_pad=False asks; eager PyTorch's
// QNNPACK kernel (qnnpack_avg_pool2d: quint8, no ceil_mode) ignores the flag
// and divides by the whole window. In the eager model --verify compares with,
// each such node (count_include_pad and ceil_mode constant False) computes as
// PyTorch's generic kernel does, which honours the flag: the average of the
// integers less the zero point, rounded half to even, plus the zero point,
// with the input's scale and zero point (the output parameters of every
// quantized avg_pool2d); another input is left as it is.
void honour_count_include_pad(torch::jit::Module& module) {
  if (at::globalContext().qEngine() != at::QEngine::QNNPACK) return;
  static const char* const kPattern = R"IR(
graph(%x, %k, %s, %p, %c, %i, %d):
  %r = aten::avg_pool2d(%x, %k, %s, %p, %c, %i, %d)
  return (%r))IR";
  static const char* const kReplacement = R"IR(
graph(%x, %k, %s, %p, %c, %i, %d):
  %quint8 : int = prim::Constant[value=13]()
  %q : bool = prim::is_quantized(%x)
  %t : int = prim::dtype(%x)
  %u : bool = aten::eq(%t, %quint8)
  %qu : bool = aten::__and__(%q, %u)
  %r : Tensor = prim::If(%qu)
    block0():
      %none : NoneType = prim::Constant()
      %no : bool = prim::Constant[value=0]()
      %one : int = prim::Constant[value=1]()
      %float : int = prim::Constant[value=6]()
      %uint8 : int = prim::Constant[value=0]()
      %lo : int = prim::Constant[value=0]()
      %hi : int = prim::Constant[value=255]()
      %scale : float = aten::q_scale(%x)
      %zp : int = aten::q_zero_point(%x)
      %ints : Tensor = aten::int_repr(%x)
      %f : Tensor = aten::to(%ints, %float, %no, %no, %none)
      %v : Tensor = aten::sub(%f, %zp, %one)
      %y : Tensor = aten::avg_pool2d(%v, %k, %s, %p, %c, %i, %d)
      %n : Tensor = aten::round(%y)
      %a : Tensor = aten::add(%n, %zp, %one)
      %b : Tensor = aten::clamp(%a, %lo, %hi)
      %bytes : Tensor = aten::to(%b, %uint8, %no, %no, %none)
      %z : Tensor = aten::_make_per_tensor_quantized_tensor(%bytes, %scale, %zp)
      -> (%z)
    block1():
      %w : Tensor = aten::avg_pool2d(%x, %k, %s, %p, %c, %i, %d)
      -> (%w)
  return (%r))IR";
  const auto constant_false = [](const torch::jit::Match& match,
                                 const std::unordered_map<std::string, torch::jit::Value*>& vars) {
    for (const char* name : {"c", "i"}) {
      const auto v = torch::jit::toIValue(match.values_map.at(vars.at(name)));
      if (!v || !v->isBool() || v->toBool()) return false;
    }
    return true;
  };
  torch::jit::SubgraphRewriter rewriter;
  rewriter.RegisterRewritePattern(kPattern, kReplacement);
  for (const torch::jit::Module& m : module.modules()) {
    for (const torch::jit::Method& method : m.get_methods()) {
      std::shared_ptr<torch::jit::Graph> graph = method.graph();
      rewriter.runOnGraph(graph, constant_false);
    }
  }
}

// forward's arguments: the tensors (clones: a model may write into its
// inputs; both sides get the same values), or with `specs` (ConvertOptions::
// args) each argument as given, a value as itself and a List/Tuple argument
// made of its tensors.
std::vector<c10::IValue> call_arguments(const std::vector<at::Tensor>& inputs,
                                        const std::vector<ArgSpec>& specs) {
  std::vector<c10::IValue> args;
  if (specs.empty()) {
    for (const at::Tensor& t : inputs) args.emplace_back(t.clone());
    return args;
  }
  size_t next = 0;
  auto take = [&]() { return inputs.at(next++).clone(); };
  for (const ArgSpec& a : specs) {
    switch (a.kind) {
      case ArgKind::Tensor:
        args.emplace_back(take());
        break;
      case ArgKind::Int:
        args.emplace_back(a.int_value);
        break;
      case ArgKind::Float:
        args.emplace_back(a.float_value);
        break;
      case ArgKind::Bool:
        args.emplace_back(a.bool_value);
        break;
      case ArgKind::None:
        args.emplace_back();
        break;
      case ArgKind::List: {
        c10::List<at::Tensor> list;
        for (size_t k = 0; k < a.tensors.size(); ++k) list.push_back(take());
        args.emplace_back(std::move(list));
        break;
      }
      case ArgKind::Tuple: {
        std::vector<c10::IValue> items;
        for (size_t k = 0; k < a.tensors.size(); ++k) items.emplace_back(take());
        args.emplace_back(c10::ivalue::Tuple::create(std::move(items)));
        break;
      }
    }
  }
  return args;
}

std::vector<at::Tensor> run_module(torch::jit::Module& m, const std::vector<at::Tensor>& inputs,
                                   const std::vector<ArgSpec>& specs) {
  std::vector<c10::IValue> args = call_arguments(inputs, specs);
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> out;
  flatten(m.forward(args), &out);
  return out;
}

std::string shapes_text(const std::vector<at::Tensor>& inputs) {
  std::string s;
  for (const at::Tensor& t : inputs) s += (s.empty() ? "" : ", ") + join_dims(t.sizes().vec());
  return s;
}

struct LoadedRuntime {
  std::mutex mu;
  void* handle = nullptr;
  std::string path;
};

LoadedRuntime& loaded_runtime() {
  static LoadedRuntime r;
  return r;
}

std::string exe_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

// What Python calls the object torch.save wrote, with its article.
std::string python_kind(const c10::IValue& v) {
  if (v.isGenericDict()) return "a dict";
  if (v.isTuple()) return "a tuple";
  if (v.isList()) return "a list";
  if (v.isString()) return "a str";
  if (v.isInt()) return "an int";
  if (v.isDouble()) return "a float";
  if (v.isBool()) return "a bool";
  if (v.isNone()) return "None";
  return "a " + v.tagKind();
}

}  // namespace

std::vector<int64_t> parse_verify_shape(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return ConvertError(2, "--verify-shape '" + text + "': " + why +
                               "; write the run-time sizes joined by x, e.g. 1x3x224x224 (or "
                               "'scalar' for a 0-D input), one --verify-shape per --input");
  };
  if (text == "scalar") return {};
  std::vector<int64_t> dims;
  std::string why;
  if (!parse_x_dims(text, 1, &dims, &why)) throw bad(why);
  return dims;
}

std::vector<std::vector<int64_t>> verify_input_shapes(const std::vector<InputSpec>& specs,
                                                      const VerifyOptions& options) {
  if (options.shapes.empty()) return default_sample_shapes(specs);
  std::vector<std::vector<int64_t>> shapes;
  if (options.shapes.size() != specs.size()) {
    throw ConvertError(2, "--verify-shape was given " + std::to_string(options.shapes.size()) +
                              " time(s), but there are " + std::to_string(specs.size()) +
                              " --input spec(s); give one --verify-shape per input, in order, "
                              "or none for the defaults");
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    const InputSpec& spec = specs[i];
    const std::vector<int64_t>& given = options.shapes[i];
    const std::string where = "--verify-shape '" + join_dims(given) + "' for input " +
                              std::to_string(i) + " (--input '" + spec.text + "')";
    if (given.size() != spec.dims.size()) {
      throw ConvertError(2, where + " has " + std::to_string(given.size()) +
                                " dimension(s), but the input spec has " +
                                std::to_string(spec.dims.size()));
    }
    for (size_t d = 0; d < given.size(); ++d) {
      if (spec.dims[d] != 0 && spec.dims[d] != given[d]) {
        throw ConvertError(2, where + " gives dimension " + std::to_string(d) + " size " +
                                  std::to_string(given[d]) + ", but the spec fixes it at " +
                                  std::to_string(spec.dims[d]) +
                                  "; only flexible (0) dimensions can take another size");
      }
    }
    shapes.push_back(given);
  }
  return shapes;
}

std::vector<at::Tensor> make_verify_inputs(const std::vector<InputSpec>& specs, bool nhwc_all,
                                           const VerifyOptions& options) {
  return sample_inputs(specs, verify_input_shapes(specs, options), nhwc_all, options.seed);
}

std::vector<at::Tensor> load_verify_inputs(const std::string& path,
                                           const std::vector<InputSpec>& specs, bool nhwc_all) {
  auto refuse = [&](const std::string& why) {
    throw ConvertError(2, "--verify-input '" + path + "': " + why);
  };
  std::ifstream f(path, std::ios::binary);
  if (!f) refuse(std::string("cannot be read: ") + std::strerror(errno));
  f.close();
  const std::string what_to_save =
      "save the inputs in --input order as a tensor, or a tuple or list of tensors: "
      "torch.save((x, y), '" +
      path + "')";
  c10::IValue v;
  try {
    v = load_torch_save(path);
  } catch (const std::exception& e) {
    refuse("is not a file written by torch.save (" + script_error_text(e) + "); " + what_to_save);
  }
  std::vector<at::Tensor> inputs;
  if (v.isTensor()) {
    inputs.push_back(v.toTensor());
  } else if (v.isTuple() || v.isList()) {
    for (const c10::IValue& t :
         v.isTuple() ? v.toTupleRef().elements().vec() : v.toListRef().vec()) {
      if (!t.isTensor()) {
        refuse("holds " + python_kind(v) + " with " + python_kind(t) +
               " in it, not only tensors; " + what_to_save);
      }
      inputs.push_back(t.toTensor());
    }
  } else {
    refuse("holds " + python_kind(v) + ", not a tensor or a tuple or list of tensors; " +
           what_to_save);
  }
  if (inputs.size() != specs.size()) {
    refuse("holds " + std::to_string(inputs.size()) + " tensor(s), but the model has " +
           std::to_string(specs.size()) + " --input spec(s)");
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    const InputSpec& spec = specs[i];
    at::Tensor& t = inputs[i];
    const at::ScalarType want = spec.dtype == InputDType::Float32  ? at::kFloat
                                : spec.dtype == InputDType::QUInt8 ? at::kQUInt8
                                : spec.dtype == InputDType::Int32  ? at::kInt
                                : spec.dtype == InputDType::Bool   ? at::kBool
                                                                   : at::kShort;
    if (t.scalar_type() != want) {
      refuse("tensor " + std::to_string(i) + " is " + c10::toString(t.scalar_type()) +
             ", but --input '" + spec.text + "' says " + c10::toString(want));
    }
    bool fits = static_cast<size_t>(t.dim()) == spec.dims.size();
    for (size_t d = 0; fits && d < spec.dims.size(); ++d) {
      fits = spec.dims[d] == 0 || spec.dims[d] == t.size(static_cast<int64_t>(d));
    }
    if (!fits) {
      refuse("tensor " + std::to_string(i) + " has shape " + join_dims(t.sizes().vec()) +
             ", which --input '" + spec.text + "' does not allow (only its 0 dimensions may vary)");
    }
    if (t.dim() == 4 && (spec.nhwc || nhwc_all)) t = t.contiguous(at::MemoryFormat::ChannelsLast);
  }
  return inputs;
}

std::string load_nnapi_runtime(const std::string& explicit_path, const std::string& purpose) {
  LoadedRuntime& rt = loaded_runtime();
  std::lock_guard<std::mutex> lock(rt.mu);
  if (rt.handle) return rt.path;

  std::vector<std::string> looked;  // "where: what happened", one per place
  std::string last;
  auto attempt = [&](const std::string& where, const std::string& path) -> void* {
    last = path;
    dlerror();
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
      const char* e = dlerror();
      looked.push_back(where + " (" + (e ? e : "cannot be loaded") + ")");
    }
    return h;
  };

  void* handle = nullptr;
  if (!explicit_path.empty()) {
    handle = attempt(explicit_path, explicit_path);
  } else {
    // Beside the binary: the build tree's runtime/, then the installed layout.
    std::string dir = exe_dir();
    std::error_code ec;
    for (const char* sub : {"runtime", NNAPI_CONVERT_INSTALLED_RUNTIME_DIR}) {
      if (handle) break;
      fs::path candidate = (fs::path(dir) / sub / kRuntimeName).lexically_normal();
      if (!dir.empty() && fs::exists(candidate, ec)) {
        handle = attempt(candidate.string(), candidate.string());
      } else {
        looked.push_back(candidate.string() + " (no such file)");
      }
    }
    const char* env = std::getenv("NNAPI_CONVERT_RUNTIME");
    if (!handle && env && *env) {
      fs::path p(env);
      if (fs::is_directory(p, ec)) p /= kRuntimeName;
      handle = attempt("$NNAPI_CONVERT_RUNTIME " + p.string(), p.string());
    } else if (!handle) {
      looked.push_back("$NNAPI_CONVERT_RUNTIME (not set)");
    }
    // The dynamic loader's own search: LD_LIBRARY_PATH, the cache, /usr/lib.
    if (!handle) handle = attempt("the loader's search path", kRuntimeName);
  }
  if (!handle) {
    std::string where;
    for (const std::string& l : looked) where += (where.empty() ? "" : "; ") + l;
    throw ConvertError(1, purpose + " runs the converted module on the host NNAPI runtime " +
                              kRuntimeName +
                              " (build target `neuralnetworks`, written to "
                              "<build dir>/runtime/, installed to <dir of "
                              "nnapi-convert>/" NNAPI_CONVERT_INSTALLED_RUNTIME_DIR
                              "/), but could not load it. Looked at: " +
                              where +
                              ". Set NNAPI_CONVERT_RUNTIME to the file (or its "
                              "directory), or put its directory on LD_LIBRARY_PATH.");
  }
  void* sym = dlsym(handle, "ANeuralNetworksModel_create");
  Dl_info info{};
  std::string path = last;
  if (sym && dladdr(sym, &info) && info.dli_fname) path = info.dli_fname;
  if (!sym) {
    dlclose(handle);
    throw ConvertError(1,
                       "'" + path + "' is not an NNAPI runtime (no ANeuralNetworksModel_create)");
  }
  // PyTorch's NNAPI binding dlopens the library by name. The loader hands
  // back an already loaded object whose SONAME matches; make sure it will.
  void* by_name = dlopen(kRuntimeName, RTLD_LAZY | RTLD_NOLOAD);
  if (by_name) dlclose(by_name);
  if (by_name != handle) {
    throw ConvertError(1, "loaded '" + path + "', but dlopen(\"" + kRuntimeName +
                              "\") does not return it (its SONAME is not " + kRuntimeName +
                              "?), so PyTorch's NNAPI binding would not use it; put the "
                              "runtime's directory on LD_LIBRARY_PATH");
  }
  rt.handle = handle;
  rt.path = path;
  return rt.path;
}

namespace {

// The blob of a ser_model (int32 words, little-endian). Throws BlobError.
Blob parse_ser_model(const std::vector<int32_t>& ser_model) {
  std::vector<uint8_t> bytes(ser_model.size() * 4);
  for (size_t i = 0; i < ser_model.size(); ++i) {
    uint32_t w = static_cast<uint32_t>(ser_model[i]);
    for (int b = 0; b < 4; ++b) bytes[i * 4 + b] = static_cast<uint8_t>(w >> (8 * b));
  }
  return parse_blob(bytes);
}

}  // namespace

std::vector<double> dequantized_output_quanta(const std::vector<int32_t>& ser_model) {
  Blob blob;
  try {
    blob = parse_ser_model(ser_model);
  } catch (const BlobError&) {
    return {};
  }
  std::vector<double> quanta;
  for (uint32_t o : blob.outputs) {
    double q = 0;
    int32_t producer = blob.operands[o].producer;
    // Through the layout operations that move a DEQUANTIZE's values
    // unchanged (a video's frames unfolded to 5-D: TRANSPOSE, RESHAPE).
    while (producer >= 0) {
      const BlobOperation& op = blob.operations[producer];
      if (op.inputs.empty()) break;
      if (op.opcode == static_cast<int32_t>(nnapi::Op::Dequantize)) {
        q = blob.operands[op.inputs[0]].scale;
        break;
      }
      if (op.opcode != static_cast<int32_t>(nnapi::Op::Transpose) &&
          op.opcode != static_cast<int32_t>(nnapi::Op::Reshape)) {
        break;
      }
      producer = blob.operands[op.inputs[0]].producer;
    }
    quanta.push_back(q);
  }
  return quanta;
}

std::string constant_output_would_pass(const at::Tensor& eager, double quantum,
                                       const VerifyOptions& options) {
  if (eager.numel() == 0) return "";
  const std::string little = ", so the check proves little; give real inputs with --verify-input";
  if (eager.is_quantized()) {
    at::Tensor q = eager.int_repr().to(at::kLong);
    const int64_t lo = q.min().item<int64_t>(), hi = q.max().item<int64_t>();
    if (eager.numel() > 1 && hi - lo <= 2) {
      return "the model's output integers only span " + std::to_string(lo) + " to " +
             std::to_string(hi) +
             " on these inputs: a constant output would pass within one "
             "quantum" +
             little;
    }
    return "";
  }
  at::Tensor b = eager.to(at::kDouble).reshape(-1);
  if (!b.isfinite().all().item<bool>()) return "";  // compare_output fails it anyway
  const double lo = b.min().item<double>(), hi = b.max().item<double>();
  if (eager.numel() > 1 && hi - lo <= 1e-7 * std::max(1.0, std::abs(hi))) {
    return "every element of the model's output is " + num(hi + 0.0) + " on these inputs" + little;
  }
  // The tolerance each element is compared with (0: compared exactly).
  at::Tensor tol = at::zeros_like(b);
  if (at::isFloatingType(eager.scalar_type())) {
    tol = b.abs() * options.rtol + options.atol;
    if (quantum > 0) tol = at::clamp_min(tol, quantum);
  }
  if ((b.abs() <= tol).all().item<bool>()) {
    return "every element of the model's output is within the tolerance of 0 on these inputs "
           "(the largest is " +
           num(b.abs().max().item<double>()) + "): an all-zero output would pass" + little +
           " or a smaller --atol";
  }
  // Some constant c is within every element's tolerance when the intervals
  // [b - tol, b + tol] overlap.
  if (eager.numel() > 1 && (b - tol).max().item<double>() <= (b + tol).min().item<double>()) {
    return "the model's output only spans " + num(lo) + " to " + num(hi) +
           " on these inputs, within the tolerance of one value: a constant output would pass" +
           little + " or a smaller --atol";
  }
  return "";
}

OutputCheck compare_output(const at::Tensor& nnapi, const at::Tensor& eager, double quantum,
                           const VerifyOptions& options) {
  OutputCheck c;
  c.shape = eager.sizes().vec();
  c.dtype = c10::toString(eager.scalar_type());
  c.numel = eager.numel();
  c.quantized = eager.is_quantized();
  c.quantum = c.quantized ? eager.q_scale() : quantum;
  if (nnapi.sizes() != eager.sizes()) {
    c.problem = "shape " + join_dims(nnapi.sizes().vec()) + " differs from the model's " +
                join_dims(c.shape);
    return c;
  }
  if (nnapi.scalar_type() != eager.scalar_type()) {
    c.problem = std::string("dtype ") + c10::toString(nnapi.scalar_type()) +
                " differs from the model's " + c.dtype;
    return c;
  }
  if (c.numel == 0) {
    c.ok = true;
    return c;
  }
  const bool dequantized = c.quantum > 0;  // quantized, or a float from DEQUANTIZE
  auto quanta_ok = [&]() {
    return c.max_quanta <= 1 && static_cast<double>(c.off_by_one) <=
                                    options.max_off_by_one_share * static_cast<double>(c.numel);
  };
  auto quanta_problem = [&]() {
    return std::to_string(c.off_by_one) + " of " + std::to_string(c.numel) +
           " elements off by one quantum or more (" + pct(c.off_by_one_share()) + ", at most " +
           pct(options.max_off_by_one_share) + " allowed), the largest by " +
           std::to_string(c.max_quanta) + " quanta (at most 1 allowed; quantum " + num(c.quantum) +
           ")";
  };

  if (c.quantized) {
    if (nnapi.q_scale() != eager.q_scale() || nnapi.q_zero_point() != eager.q_zero_point()) {
      c.problem = "quantized with scale " + num(nnapi.q_scale()) + ", zero point " +
                  std::to_string(nnapi.q_zero_point()) + ", but the model's output has scale " +
                  num(eager.q_scale()) + ", zero point " + std::to_string(eager.q_zero_point());
      return c;
    }
    at::Tensor diff = (nnapi.int_repr().to(at::kInt) - eager.int_repr().to(at::kInt)).abs();
    c.max_quanta = diff.max().item<int64_t>();
    c.off_by_one = diff.ge(1).sum().item<int64_t>();
  }
  at::Tensor a = c.quantized ? nnapi.dequantize().to(at::kDouble) : nnapi.to(at::kDouble);
  at::Tensor b = c.quantized ? eager.dequantize().to(at::kDouble) : eager.to(at::kDouble);
  const int64_t bad_a = a.isfinite().logical_not().sum().item<int64_t>();
  const int64_t bad_b = b.isfinite().logical_not().sum().item<int64_t>();
  if (bad_a + bad_b > 0) {
    c.problem = "NaN or infinity in the output (" + std::to_string(bad_b) +
                " elements of the "
                "model's, " +
                std::to_string(bad_a) +
                " of the converted module's), so nothing "
                "can be compared; give inputs in the model's range with --verify-input";
    return c;
  }
  c.warning = constant_output_would_pass(eager, quantum, options);
  at::Tensor diff = (a - b).abs();
  diff.masked_fill_(a.isnan().logical_and(b.isnan()), 0.0);
  diff = at::nan_to_num(diff, std::numeric_limits<double>::infinity());
  c.max_abs_err = diff.max().item<double>();
  at::Tensor babs = b.abs();
  at::Tensor nonzero = babs.gt(0);
  if (nonzero.any().item<bool>()) {
    c.max_rel_err =
        (diff.masked_select(nonzero) / babs.masked_select(nonzero)).max().item<double>();
  }

  if (c.quantized) {
    c.ok = quanta_ok();
    if (!c.ok) c.problem = quanta_problem();
    return c;
  }
  if (!at::isFloatingType(eager.scalar_type())) {
    c.ok = c.max_abs_err == 0;
    if (!c.ok) c.problem = "integer values differ, by up to " + num(c.max_abs_err);
    return c;
  }
  const double rms_model = b.pow(2).mean().sqrt().item<double>();
  if (rms_model > 0) c.rms_rel_err = (a - b).pow(2).mean().sqrt().item<double>() / rms_model;
  at::Tensor bound = babs * options.rtol + options.atol;
  at::Tensor over = diff.gt(bound);
  int64_t n_over = over.sum().item<int64_t>();
  bool float_ok = n_over == 0;
  c.rule = "elementwise";
  // float16 computation: error that fails element by element is judged
  // against the output's RMS (float16_rms_bound).
  if (!float_ok && !dequantized && options.float16_roundings > 0) {
    c.rule = "float16 rms";
    c.rms_bound = float16_rms_bound(options);
    float_ok = rms_model > 0 && c.rms_rel_err <= c.rms_bound;
  }
  if (dequantized) {
    at::Tensor quanta = (diff / c.quantum).round();
    c.max_quanta = static_cast<int64_t>(std::min(quanta.max().item<double>(), 1e18));
    c.off_by_one = quanta.ge(1).sum().item<int64_t>();
  }
  c.ok = float_ok || (dequantized && quanta_ok());
  if (!c.ok) {
    int64_t worst = (diff - bound).argmax().item<int64_t>();
    std::ostringstream os;
    os << n_over << " of " << c.numel << " elements differ by more than atol + rtol * |model| "
       << "(atol " << num(options.atol) << ", rtol " << num(options.rtol) << "); the worst, "
       << "flat index " << worst << ": " << std::setprecision(9)
       << a.reshape(-1)[worst].item<double>() << " vs " << b.reshape(-1)[worst].item<double>();
    if (dequantized) os << "; as a dequantized output: " << quanta_problem();
    if (c.rule == "float16 rms") {
      os << "; and its RMS error is " << num(c.rms_rel_err)
         << " of the model output's RMS, over float16 computation's bound " << num(c.rms_bound)
         << " (" << options.float16_roundings << " operations x float16's unit roundoff 2^-11)";
    }
    c.problem = os.str();
  }
  return c;
}

namespace {

// A host hook of nnapi-convert's runtime, or null (another runtime).
template <class F>
F runtime_symbol(const char* name) {
  void* handle = loaded_runtime().handle;
  return handle ? reinterpret_cast<F>(dlsym(handle, name)) : nullptr;
}

// What the host runtime recorded of the last ANeuralNetworks* call that
// failed (ANeuralNetworksHost_getLastError); code 0 when none did.
struct RuntimeFailure {
  int code = 0;
  std::string function, message;
  int32_t operation = -1;

  // The NNAPI model was refused while PyTorch's binding built it (on a
  // device: when the app loads it), not while it ran.
  bool at_load() const { return function.rfind("ANeuralNetworksExecution", 0) != 0; }
};

void clear_runtime_failure() {
  using Clear = decltype(&ANeuralNetworksHost_clearLastError);
  if (Clear clear = runtime_symbol<Clear>("ANeuralNetworksHost_clearLastError")) clear();
}

RuntimeFailure last_runtime_failure() {
  using Get = decltype(&ANeuralNetworksHost_getLastError);
  RuntimeFailure f;
  Get get = runtime_symbol<Get>("ANeuralNetworksHost_getLastError");
  if (!get) return f;
  const char* function = nullptr;
  const char* message = nullptr;
  f.code = get(&function, &message, &f.operation);
  if (f.code != 0) {
    f.function = function ? function : "";
    f.message = message ? message : "";
  }
  return f;
}

// A run of the converted module that raised: its error (one paragraph) and
// what the runtime recorded.
struct RunFailure {
  std::string error;
  RuntimeFailure runtime;
};

torch::jit::Module load_converted(const std::string& module_path) {
  try {
    return torch::jit::load(module_path);
  } catch (const std::exception& e) {
    throw ConvertError(
        1, "cannot load the converted module '" + module_path + "': " + script_error_text(e));
  }
}

// Runs the converted module on the runtime (loaded) with QNNPACK, as the
// eager model runs: the TorchScript parts a --cpu-fallback module keeps
// (quantized::linear_dynamic, ...) compute with the engine's kernels, and
// quantized weights are packed for the engine when the module is loaded.
// Returns false and fills `failure` when the run raises.
bool try_run_converted(const std::string& module_path, const std::vector<at::Tensor>& inputs,
                       const std::vector<ArgSpec>& specs, std::vector<at::Tensor>* outputs,
                       RunFailure* failure) {
  QnnpackEngine qnnpack;
  torch::jit::Module m = load_converted(module_path);
  clear_runtime_failure();
  try {
    *outputs = run_module(m, inputs, specs);
    return true;
  } catch (const ConvertError&) {
    throw;  // outputs --verify cannot compare
  } catch (const std::exception& e) {
    failure->error = script_error_text(e);
    failure->runtime = last_runtime_failure();
    return false;
  }
}

// The failure, as one paragraph; `origin` names the operation's node when
// it is known ("" otherwise).
std::string run_failure_text(const RunFailure& f, const std::vector<at::Tensor>& inputs,
                             const std::string& origin) {
  std::string s = "failed on the NNAPI runtime with inputs of shape " + shapes_text(inputs) + ": ";
  const RuntimeFailure& r = f.runtime;
  if (r.code == 0) {
    return s + f.error +
           ". If these input sizes are ones the model cannot take, give others (--verify-shape "
           "or --verify-input); else please report it with the model";
  }
  if (r.operation >= 0) {
    s += "NNAPI operation #" + std::to_string(r.operation) + (origin.empty() ? "" : " " + origin) +
         (r.at_load() ? " was refused when the NNAPI model was built"
                      : " failed when the NNAPI model ran") +
         ": ";
  }
  s += r.function + " returned " + nnapi::result_name(r.code) + ": " + r.message;
  if (r.at_load()) {
    return s +
           ". The runtime refuses what nnapi-convert wrote, so a device may too: this is a fault "
           "of nnapi-convert, not of the model; please report it with the model";
  }
  return s +
         ". A device would fail the same way: if these input sizes are ones the model cannot "
         "take, give others (--verify-shape or --verify-input); else please report it with "
         "the model";
}

// Where operation `k` of a whole conversion came from; `blob` and `trace`
// from trace_conversion.
struct OperationOrigin {
  std::string type = "?";  // its NNAPI operation type, e.g. "CONV_2D"
  std::string node;        // the node kind it was lowered from
  std::string source;      // where the user's code made that node, or ""
  std::string code;        // the code there
};

OperationOrigin operation_origin(const Blob& blob, const LoweringTrace& trace, int64_t k,
                                 const torch::jit::Node* fallback) {
  OperationOrigin o;
  if (k < 0 || k >= static_cast<int64_t>(blob.operations.size())) return o;
  if (const char* type = nnapi::op_name_or_null(blob.operations[k].opcode)) o.type = type;
  const torch::jit::Node* node =
      k < static_cast<int64_t>(trace.operations.size()) ? trace.operations[k] : nullptr;
  if (!node) node = fallback;
  if (!node) return o;
  NodePlace place = node_place(node);
  o.node = node->kind().toQualString();
  o.source = place.location;
  o.code = place.code;
  return o;
}

// "CONV_2D, lowered from aten::_convolution at model.py:12 (`...`)"
std::string origin_text(const std::string& type, const std::string& node, const std::string& source,
                        const std::string& code) {
  std::string s = type;
  if (node.empty()) return s;
  s += ", lowered from " + node;
  if (!source.empty()) s += " at " + source;
  if (!code.empty()) s += " (`" + code + "`)";
  return s;
}

// The node an operation the runtime names came from, traced again (only
// for a whole conversion: a --cpu-fallback module's operations are numbered
// per NNAPI part). "" when it cannot be told.
std::string failed_operation_origin(const ConvertOptions& options, int64_t k) {
  try {
    QnnpackEngine qnnpack;
    LoweringTrace trace;
    Conversion conversion;
    torch::jit::Module module = trace_conversion(options, &trace, &conversion);
    const Blob blob = parse_ser_model(conversion.ser_model);
    // An operation added without a node (a layout TRANSPOSE): the node of
    // the value it computes.
    const torch::jit::Node* fallback = nullptr;
    if (k >= 0 && k < static_cast<int64_t>(blob.operations.size())) {
      for (const TracedValue& v : trace.values) {
        const auto& outs = blob.operations[k].outputs;
        if (!outs.empty() && v.operand == static_cast<int32_t>(outs[0])) fallback = v.value->node();
      }
    }
    const OperationOrigin o = operation_origin(blob, trace, k, fallback);
    return origin_text(o.type, o.node, o.source, o.code);
  } catch (const std::exception&) {
    return "";
  }
}

bool is_whole_module(const torch::jit::Module& converted) {
  return converted.hasattr("mod") && converted.attr("mod").isModule();
}

}  // namespace

std::vector<at::Tensor> run_converted(const std::string& module_path,
                                      const std::vector<at::Tensor>& inputs,
                                      const std::string& runtime_library,
                                      const std::string& purpose,
                                      const std::vector<ArgSpec>& specs) {
  load_nnapi_runtime(runtime_library, purpose);
  std::vector<at::Tensor> outputs;
  RunFailure failure;
  if (!try_run_converted(module_path, inputs, specs, &outputs, &failure)) {
    throw ConvertError(
        1, "the converted module '" + module_path + "' " + run_failure_text(failure, inputs, ""));
  }
  return outputs;
}

namespace {

// The floating-point tensors of `tensors` as `dtype` (kept as float32 after
// the conversion when `back`: rounded to it); the others as they are.
std::vector<at::Tensor> float_inputs_as(const std::vector<at::Tensor>& tensors,
                                        at::ScalarType dtype, bool back) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& t : tensors) {
    if (!t.is_floating_point()) {
      out.push_back(t);
      continue;
    }
    at::Tensor c = t.to(dtype);
    out.push_back(back ? c.to(t.scalar_type()) : c);
  }
  return out;
}

}  // namespace

VerifyOptions relaxed_tolerances(const ConvertOptions& options, const VerifyOptions& verify,
                                 const std::vector<int32_t>& ser_model) {
  VerifyOptions v = verify;
  if (options.relax_f32_to_f16 || options.float16) {
    v.atol = std::max(v.atol, kFloat16Tolerance);
    v.rtol = std::max(v.rtol, kFloat16Tolerance);
    if (!ser_model.empty()) {
      try {
        v.float16_roundings = static_cast<int64_t>(parse_ser_model(ser_model).operations.size());
      } catch (const BlobError&) {
        v.float16_roundings = 0;  // element by element only
      }
    }
  }
  return v;
}

double float16_rms_bound(const VerifyOptions& options) {
  return static_cast<double>(options.float16_roundings) * kFloat16UnitRoundoff;
}

// Dynamic quantization (quantize_dynamic: quantized::linear_dynamic,
// linear_relu_dynamic, aten::quantized_lstm/gru): eager PyTorch rounds each
// product's input to 8 bits at run time with that input's own range, while
// the conversion computes in float on the dequantized weights
// (src/lower/dynamic_quant.cpp). They differ by up to about 1% of the
// outputs' magnitude (tests/verify/test_dynamic_quant.py: at most 1.03% of
// the RMS), so such a model is checked at 5% (kDynamicQuantTolerance).
bool has_dynamic_quantization(const torch::jit::Module& model) {
  for (const torch::jit::Module& m : model.modules()) {
    for (const torch::jit::Method& method : m.get_methods()) {
      for (const torch::jit::Node* n : method.graph()->nodes()) {
        if (is_dynamic_quantization_kind(n->kind().toQualString())) return true;
      }
    }
  }
  return false;
}

namespace {

// The state a converted module keeps between calls (the names the writer
// lists in `state_attributes`); none for a module without state.
// `list`: "state_attributes" (tensors) or "state_values" (int, float, bool).
std::vector<std::string> state_attributes(const std::string& converted_module_path,
                                          const char* list = "state_attributes") {
  try {
    torch::jit::Module converted = torch::jit::load(converted_module_path);
    if (!converted.hasattr(list)) return {};
    std::vector<std::string> names;
    for (const c10::IValue& v : converted.attr(list).toListRef()) {
      names.push_back(v.toStringRef());
    }
    return names;
  } catch (const std::exception&) {
    return {};  // the run reports a module that cannot be loaded
  }
}

// A stateful model: the model and the converted module, each loaded once,
// called kStateCalls times in sequence (fresh inputs per call: seeds seed,
// seed + 1, ...; or the --verify-input tensors each time), each call's
// outputs compared, then each state attribute of the module with the
// model's. No divergence is located (it follows one call of a stateless
// model).
void verify_state_sequence(const ConvertOptions& options, const std::string& converted_module_path,
                           const VerifyOptions& verify, std::vector<at::Tensor> inputs,
                           VerifyReport* report) {
  QnnpackEngine qnnpack;
  torch::jit::Module original =
      load_for_eager([&] { return entry_module(torch::jit::load(options.model_path), options); },
                     &report->eager_default_engine);
  original.eval();
  torch::jit::Module converted = load_converted(converted_module_path);
  report->calls = kStateCalls;
  report->ok = true;
  for (int64_t call = 0; call < kStateCalls; ++call) {
    if (call > 0 && verify.input_file.empty()) {
      inputs = sample_inputs(options.inputs, report->shapes, options.nhwc,
                             verify.seed + static_cast<uint64_t>(call));
    }
    std::vector<at::Tensor> eager;
    try {
      eager = run_module(original, inputs, options.args);
    } catch (const ConvertError&) {
      throw;
    } catch (const std::exception& e) {
      throw ConvertError(1, "model '" + options.model_path + "' failed on call " +
                                std::to_string(call + 1) + " of --verify's sequence (inputs " +
                                shapes_text(inputs) + "): " + script_error_text(e));
    }
    std::vector<at::Tensor> nnapi;
    clear_runtime_failure();
    try {
      nnapi = run_module(converted, inputs, options.args);
    } catch (const ConvertError&) {
      throw;
    } catch (const std::exception& e) {
      RunFailure failure{script_error_text(e), last_runtime_failure()};
      throw ConvertError(1, "model '" + options.model_path + "': its converted module, on call " +
                                std::to_string(call + 1) + " of --verify's sequence, " +
                                run_failure_text(failure, inputs, ""));
    }
    const std::string prefix = "call " + std::to_string(call + 1) + " ";
    if (nnapi.size() != eager.size()) {
      OutputCheck c;
      c.name = prefix + "outputs";
      c.problem = "the converted module returns " + std::to_string(nnapi.size()) +
                  " tensor(s), the model " + std::to_string(eager.size());
      report->outputs.push_back(c);
      report->ok = false;
      return;
    }
    auto add = [&](OutputCheck c, const std::string& name) {
      c.name = prefix + name;
      report->ok = report->ok && c.ok;
      report->outputs.push_back(std::move(c));
    };
    for (size_t i = 0; i < eager.size(); ++i) {
      add(compare_output(nnapi[i], eager[i], 0.0, verify), "output " + std::to_string(i));
    }
    for (const std::string& name : report->state) {
      const c10::IValue mine = converted.attr(name), theirs = original.attr(name);
      if (!mine.isTensor() || !theirs.isTensor()) {
        OutputCheck c;
        c.problem = "the state is not a tensor after the call";
        add(c, "state " + name);
        continue;
      }
      add(compare_output(mine.toTensor(), theirs.toTensor(), 0.0, verify), "state " + name);
    }
    for (const std::string& name : state_attributes(converted_module_path, "state_values")) {
      const c10::IValue mine = converted.attr(name), theirs = original.attr(name);
      OutputCheck c;
      c.numel = 1;
      c.dtype = theirs.tagKind();
      c.ok = mine.tagKind() == theirs.tagKind() && mine.equals(theirs).toBool();
      if (c.ok && mine.isDouble()) c.max_abs_err = std::abs(mine.toDouble() - theirs.toDouble());
      std::ostringstream text;
      text << "the converted module holds " << mine << ", the model " << theirs;
      if (!c.ok) c.problem = text.str();
      add(c, "state " + name);
    }
  }
}

}  // namespace

VerifyReport verify_conversion(const ConvertOptions& options,
                               const std::string& converted_module_path,
                               const VerifyOptions& requested) {
  // Our one-model layout (not --cpu-fallback's): its NNAPI model, to read
  // the quanta of float outputs and count the operations.
  std::vector<int32_t> ser_model;
  bool whole = false;
  try {
    torch::jit::Module converted = torch::jit::load(converted_module_path);
    whole = is_whole_module(converted);
    if (whole) {
      at::Tensor ser = converted.attr("mod").toModule().attr("ser_model").toTensor().contiguous();
      ser_model.assign(ser.data_ptr<int32_t>(), ser.data_ptr<int32_t>() + ser.numel());
    }
  } catch (const std::exception&) {
  }
  VerifyOptions verify = relaxed_tolerances(options, requested, ser_model);
  VerifyReport report;
  report.float16_roundings = verify.float16_roundings;
  report.float16_rms_bound = float16_rms_bound(verify);
  report.runtime_library = load_nnapi_runtime(verify.runtime_library);
  std::vector<at::Tensor> inputs;
  if (verify.input_file.empty()) {
    report.shapes = verify_input_shapes(options.inputs, verify);
    inputs = make_verify_inputs(options.inputs, options.nhwc, verify);
  } else {
    inputs = load_verify_inputs(verify.input_file, options.inputs, options.nhwc);
    for (const at::Tensor& t : inputs) report.shapes.push_back(t.sizes().vec());
  }
  // --float16-io: the module takes float16; eager gets the same values.
  if (options.float16_io) inputs = float_inputs_as(inputs, at::kHalf, true);
  report.state = state_attributes(converted_module_path);
  if (!report.state.empty() || !state_attributes(converted_module_path, "state_values").empty()) {
    report.atol = verify.atol;
    report.rtol = verify.rtol;
    verify_state_sequence(options, converted_module_path, verify, inputs, &report);
    return report;
  }

  std::vector<at::Tensor> eager;
  try {
    torch::jit::Module original =
        load_for_eager([&] { return entry_module(torch::jit::load(options.model_path), options); },
                       &report.eager_default_engine);
    QnnpackEngine qnnpack;
    original.eval();
    honour_count_include_pad(original);
    if (has_dynamic_quantization(original)) {
      verify.atol = std::max(verify.atol, kDynamicQuantTolerance);
      verify.rtol = std::max(verify.rtol, kDynamicQuantTolerance);
      report.dynamic_quantization = true;
    }
    try {
      eager = run_module(original, inputs, options.args);
    } catch (const ConvertError&) {
      throw;
    } catch (const std::exception&) {
      // Without --verify-shape, a model that fails at the default sizes runs
      // where the validator checked it: at the flexible sizes rounded up to
      // the first multiple it runs at (windows of 7, pixel_unshuffle(2)).
      if (!verify.input_file.empty() || !verify.shapes.empty()) throw;
      auto runs = [&](const std::vector<std::vector<int64_t>>& shapes) {
        std::vector<at::Tensor> next =
            sample_inputs(options.inputs, shapes, options.nhwc, verify.seed);
        if (options.float16_io) next = float_inputs_as(next, at::kHalf, true);
        try {
          eager = run_module(original, next, options.args);
        } catch (const ConvertError&) {
          throw;
        } catch (const std::exception&) {
          return false;
        }
        inputs = std::move(next);
        return true;
      };
      const std::optional<RunnableSizes> fit = runnable_sizes(options.inputs, report.shapes, runs);
      if (!fit) throw;
      report.shapes = fit->shapes;
      report.shapes_multiple = fit->multiple;
    }
  } catch (const ConvertError&) {
    throw;
  } catch (const std::exception& e) {
    const bool rounded = verify.shapes.empty() && verify.input_file.empty();
    throw ConvertError(1, "model '" + options.model_path + "' failed on the --verify inputs of " +
                              "shape " + shapes_text(inputs) + " (" +
                              (rounded ? "and at each flexible size rounded up to a multiple of "
                                         "2 to " +
                                             std::to_string(kMaxSizeMultiple) + "; "
                                       : "") +
                              "use --verify-shape to choose other sizes for flexible "
                              "dimensions): " +
                              script_error_text(e));
  }
  report.atol = verify.atol;  // the tolerances used: relaxed, or dynamic quantization's
  report.rtol = verify.rtol;

  // Not our one-model layout (--cpu-fallback's): compare without knowing
  // the quanta of float outputs.
  const std::vector<double> quanta =
      whole ? dequantized_output_quanta(ser_model) : std::vector<double>();
  std::vector<at::Tensor> nnapi;
  RunFailure failure;
  const std::vector<at::Tensor> fed =
      options.float16_io ? float_inputs_as(inputs, at::kHalf, false) : inputs;
  if (!try_run_converted(converted_module_path, fed, options.args, &nnapi, &failure)) {
    const int32_t k = failure.runtime.code != 0 ? failure.runtime.operation : -1;
    const std::string origin = whole && k >= 0 ? failed_operation_origin(options, k)
                               : k >= 0 ? "of one of the module's NNAPI models (--cpu-fallback)"
                                        : "";
    throw ConvertError(1, "model '" + options.model_path + "': its converted module " +
                              run_failure_text(failure, inputs, origin));
  }

  if (options.float16_io) nnapi = float_inputs_as(nnapi, at::kFloat, false);
  report.ok = true;
  if (nnapi.size() != eager.size()) {
    OutputCheck c;
    c.problem = "the converted module returns " + std::to_string(nnapi.size()) +
                " tensor(s), the model " + std::to_string(eager.size());
    report.outputs.push_back(c);
    report.ok = false;
    return report;
  }
  bool mismatch = false;
  for (size_t i = 0; i < eager.size(); ++i) {
    double q = i < quanta.size() ? quanta[i] : 0.0;
    OutputCheck c = compare_output(nnapi[i], eager[i], q, verify);
    mismatch = mismatch || !c.ok;
    if (verify.strict && !c.warning.empty()) {
      if (c.ok) c.problem = kVerifyStrictProblem + c.warning;
      c.ok = false;
    }
    report.outputs.push_back(c);
    report.ok = report.ok && report.outputs.back().ok;
  }
  if (mismatch) {  // (not when only --verify-strict failed: nothing diverges)
    report.divergence = locate_divergence(options, converted_module_path, inputs, verify);
  }
  return report;
}

namespace {

// What the host runtime's operation observer saw: the results of the
// operations whose output operands are `wanted`, in the order computed.
struct Observation {
  const std::set<uint32_t>* wanted = nullptr;
  struct Result {
    int32_t operation;
    uint32_t operand;
    at::Tensor value;  // in the NNAPI layout; QUInt8 for TENSOR_QUANT8_ASYMM
  };
  std::vector<Result> results;
  std::string error;
};

// An operand's value as a tensor (a copy of `data`), or undefined for a type
// without a PyTorch counterpart.
at::Tensor tensor_from_operand(const ANeuralNetworksOperandType& type, const void* data) {
  using nnapi::OperandType;
  std::vector<int64_t> sizes(type.dimensions, type.dimensions + type.dimensionCount);
  auto copy = [&](at::ScalarType dtype) {
    return at::from_blob(const_cast<void*>(data), sizes, at::TensorOptions(dtype)).clone();
  };
  switch (static_cast<OperandType>(type.type)) {
    case OperandType::TensorFloat32:
      return copy(at::kFloat);
    case OperandType::TensorFloat16:
      return copy(at::kHalf).to(at::kFloat);
    case OperandType::TensorInt32:
      return copy(at::kInt);
    case OperandType::TensorBool8:
      return copy(at::kBool);
    case OperandType::TensorQuant8Asymm:
      return at::_make_per_tensor_quantized_tensor(copy(at::kByte), type.scale, type.zeroPoint);
    default:
      return at::Tensor();
  }
}

void observe(void* context, int32_t operation, uint32_t operand,
             const ANeuralNetworksOperandType* type, const void* data, size_t /*length*/) {
  auto* seen = static_cast<Observation*>(context);
  if (!seen->wanted->count(operand)) return;
  try {  // nothing may be thrown into the runtime
    at::Tensor t = tensor_from_operand(*type, data);
    if (t.defined()) seen->results.push_back({operation, operand, t});
  } catch (const std::exception& e) {
    seen->error = e.what();
  }
}

using SetObserver = decltype(&ANeuralNetworksHost_setOperationObserver);

// Clears the observer however the run ends.
class ObserverGuard {
 public:
  ObserverGuard(SetObserver set, Observation* seen) : set_(set) { set_(&observe, seen); }
  ~ObserverGuard() { set_(nullptr, nullptr); }
  ObserverGuard(const ObserverGuard&) = delete;
  ObserverGuard& operator=(const ObserverGuard&) = delete;

 private:
  SetObserver set_;
};

// Runs the frozen model's graph with `values` as extra outputs; returns
// their values in that order. Changes the module's graph.
std::vector<at::Tensor> eager_values(torch::jit::Module& module,
                                     const std::vector<const torch::jit::Value*>& values,
                                     const std::vector<at::Tensor>& inputs) {
  std::shared_ptr<torch::jit::Graph> graph = module.get_method("forward").graph();
  std::vector<torch::jit::Value*> outs = {graph->outputs().at(0)};
  // The trace's pointers are const only because lowering never changes the
  // graph; this module is ours, loaded for the diagnosis.
  for (const torch::jit::Value* v : values) outs.push_back(const_cast<torch::jit::Value*>(v));
  torch::jit::Node* all = graph->createTuple(outs);
  all->insertBefore(graph->return_node());
  graph->eraseOutput(0);
  graph->registerOutput(all->output());

  torch::jit::Code code(graph, "forward");
  torch::jit::InterpreterState state(code);
  torch::jit::Stack stack = {module._ivalue()};
  for (const at::Tensor& t : inputs) stack.emplace_back(t.clone());
  at::NoGradGuard no_grad;
  state.run(stack);
  std::vector<at::Tensor> out;
  const auto& elements = stack.back().toTupleRef().elements();
  for (size_t i = 1; i < elements.size(); ++i) {
    out.push_back(elements[i].isTensor() ? elements[i].toTensor() : at::Tensor());
  }
  return out;
}

std::string tolerance_text(const OutputCheck& c, const VerifyOptions& verify) {
  if (c.quantized || c.quantum > 0) {
    return "at most 1 quantum, on at most " + pct(verify.max_off_by_one_share) + " of elements";
  }
  if (c.dtype != "Float" && c.dtype != "Double" && c.dtype != "Half") return "exact";
  std::string s = "atol " + num(verify.atol) + " + rtol " + num(verify.rtol) + " * |model|";
  if (c.rule == "float16 rms") {
    s += ", or an RMS error of at most " + num(c.rms_bound) + " of the model value's RMS (" +
         std::to_string(verify.float16_roundings) + " float16 roundings x 2^-11)";
  }
  return s;
}

// Compares one operation result (NNAPI layout) with the eager value.
// Returns false when they cannot be compared (another shape: a record this
// diagnosis does not understand).
bool compare_result(at::Tensor nnapi, at::Tensor eager, bool nhwc, const VerifyOptions& verify,
                    OutputCheck* check) {
  if (nhwc && nnapi.dim() == 4) nnapi = nnapi.permute({0, 3, 1, 2});
  double quantum = 0;
  if (nnapi.is_quantized() != eager.is_quantized()) {
    quantum = nnapi.is_quantized() ? nnapi.q_scale() : eager.q_scale();
    if (nnapi.is_quantized()) nnapi = nnapi.dequantize();
    if (eager.is_quantized()) eager = eager.dequantize();
  }
  if (nnapi.sizes() != eager.sizes()) return false;
  if (!nnapi.is_quantized() && nnapi.scalar_type() != eager.scalar_type()) {
    nnapi = nnapi.to(eager.scalar_type());
  }
  *check = compare_output(nnapi.contiguous(), eager, quantum, verify);
  return true;
}

}  // namespace

Divergence locate_divergence(const ConvertOptions& options,
                             const std::string& converted_module_path,
                             const std::vector<at::Tensor>& inputs, const VerifyOptions& verify) {
  Divergence d;
  try {
    void* handle = loaded_runtime().handle;
    auto set_observer = handle ? reinterpret_cast<SetObserver>(
                                     dlsym(handle, "ANeuralNetworksHost_setOperationObserver"))
                               : nullptr;
    if (!set_observer) {
      throw std::runtime_error("the NNAPI runtime '" + loaded_runtime().path +
                               "' cannot report the operations' results (it is not "
                               "nnapi-convert's host runtime)");
    }
    if (!is_whole_module(load_converted(converted_module_path))) {
      throw std::runtime_error(
          "it follows one NNAPI model converted from the whole graph, and this --cpu-fallback "
          "module is split into NNAPI and TorchScript parts");
    }
    // Loaded by the whole-model check's rule (QNNPACK, unless QNNPACK cannot
    // pack the quantized weights, or, converting, unpack them: a quantized
    // 3-D convolution), and run on QNNPACK as that check runs it.
    LoweringTrace trace;
    Conversion conversion;
    bool default_engine = false;
    torch::jit::Module module = load_for_eager(
        [&] {
          trace = LoweringTrace{};  // nothing of a load that failed
          return trace_conversion(options, &trace, &conversion);
        },
        &default_engine);
    QnnpackEngine qnnpack;
    const Blob blob = parse_ser_model(conversion.ser_model);

    std::set<uint32_t> wanted;
    std::map<uint32_t, size_t> index_of;  // operand -> its trace.values index
    std::vector<const torch::jit::Value*> values;
    for (size_t i = 0; i < trace.values.size(); ++i) {
      wanted.insert(static_cast<uint32_t>(trace.values[i].operand));
      index_of[static_cast<uint32_t>(trace.values[i].operand)] = i;
      values.push_back(trace.values[i].value);
    }
    std::vector<at::Tensor> eager = eager_values(module, values, inputs);

    Observation seen;
    seen.wanted = &wanted;
    {
      ObserverGuard guard(set_observer, &seen);
      run_converted(converted_module_path, inputs, "", "--verify", options.args);
    }
    if (!seen.error.empty()) throw std::runtime_error(seen.error);
    std::stable_sort(seen.results.begin(), seen.results.end(),
                     [](const Observation::Result& a, const Observation::Result& b) {
                       return a.operation < b.operation;
                     });

    const int64_t n_ops = static_cast<int64_t>(trace.operations.size());
    std::vector<bool> compared(n_ops, false);
    for (const Observation::Result& r : seen.results) {
      if (r.operation < 0 || r.operation >= n_ops) continue;
      const size_t i = index_of.at(r.operand);
      if (!eager[i].defined()) continue;
      OutputCheck check;
      // float16 computation: the roundings up to this operation's result.
      VerifyOptions here = verify;
      if (here.float16_roundings > 0) here.float16_roundings = r.operation + 1;
      if (!compare_result(r.value, eager[i], trace.values[i].nhwc, here, &check)) continue;
      compared[r.operation] = true;
      if (check.ok) continue;
      d.operation = r.operation;
      // The node that made the operation, or (an operation added without
      // one) the node that made the value.
      const OperationOrigin o =
          operation_origin(blob, trace, r.operation, trace.values[i].value->node());
      d.type = o.type;
      d.node = o.node;
      d.source = o.source;
      d.code = o.code;
      d.value = "%" + trace.values[i].value->debugName();
      d.tolerance = tolerance_text(check, here);
      d.check = check;
      break;
    }
    const int64_t end = d.operation >= 0 ? d.operation : n_ops;
    for (int64_t k = 0; k < end; ++k) (compared[k] ? d.compared : d.uncompared)++;
    if (d.operation >= 0) ++d.compared;
  } catch (const ConvertError& e) {
    d.error = e.what();
  } catch (const std::exception& e) {
    d.error = script_error_text(e);
  }
  return d;
}

std::string format_divergence(const Divergence& d) {
  if (!d.error.empty()) return "could not locate the diverging operation: " + d.error;
  if (d.operation < 0) {
    return "no operation's result diverges beyond the tolerance (" + std::to_string(d.compared) +
           " compared, " + std::to_string(d.uncompared) +
           " without a TorchScript value to compare): the difference shows only in the final "
           "outputs";
  }
  std::string s = "first diverging operation: #" + std::to_string(d.operation) + " " +
                  origin_text(d.type, d.node, d.source, d.code);
  s += "; its result " + d.value + " has max abs err " + num(d.check.max_abs_err) +
       " (tolerance: " + d.tolerance + "): " + d.check.problem;
  const std::string uncompared =
      d.uncompared > 0 ? std::to_string(d.uncompared) + " without a TorchScript value to compare"
                       : "";
  if (d.compared > 1) {
    s += "; every earlier operation matches (" + std::to_string(d.compared - 1) + " compared" +
         (uncompared.empty() ? "" : ", " + uncompared) + ")";
  } else {
    s +=
        "; no earlier operation was compared" + (uncompared.empty() ? "" : " (" + uncompared + ")");
  }
  return s;
}

std::string format_output_check(size_t index, const OutputCheck& c) {
  std::string s = (c.name.empty() ? "output " + std::to_string(index) : c.name) + ": ";
  if (!c.shape.empty() || c.numel) s += join_dims(c.shape) + " " + c.dtype + ", ";
  s += "max abs err " + num(c.max_abs_err) + ", max rel err " + num(c.max_rel_err);
  if (c.rule == "float16 rms") {
    s += ", RMS err " + num(c.rms_rel_err) + " of the output's RMS (float16 bound " +
         num(c.rms_bound) + ")";
  }
  if (c.quantum > 0) {
    s += ", " + pct(c.off_by_one_share()) + " off by one quantum";
    if (c.max_quanta > 1) s += " (up to " + std::to_string(c.max_quanta) + ")";
  }
  s += c.ok ? ", ok" : ", FAILED: " + c.problem;
  if (!c.warning.empty()) s += " (warning: " + c.warning + ")";
  return s;
}

}  // namespace nnapi_convert
