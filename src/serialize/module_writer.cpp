// Wraps a conversion in the TorchScript module layout that PyTorch's NNAPI
// runtime loads (the same attributes and methods as the module
// convert_model_to_nnapi returns), and writes it, or its parts, atomically.
#include <ATen/ATen.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/frontend/resolver.h>
#include <torch/csrc/jit/frontend/sugared_value.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/custom_class.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/json.h"
#include "nnapi_convert/converter.h"

namespace nnapi_convert {
namespace {

namespace fs = std::filesystem;
using torch::jit::Module;

const char* const kPrefix = "__torch__.torch.backends._nnapi.prepare.";

// Resolves `Compilation` to PyTorch's NNAPI binding class, `Exception` to
// TorchScript's exception, everything else natively.
class NnapiResolver : public torch::jit::Resolver {
 public:
  explicit NnapiResolver(c10::ClassTypePtr compilation) : compilation_(std::move(compilation)) {}
  std::shared_ptr<torch::jit::SugaredValue> resolveValue(
      const std::string& name, torch::jit::GraphFunction& m,
      const torch::jit::SourceRange& loc) override {
    if (name == "Compilation") return std::make_shared<torch::jit::ClassValue>(compilation_);
    if (name == "Exception") return std::make_shared<torch::jit::ExceptionValue>(name);
    return torch::jit::nativeResolver()->resolveValue(name, m, loc);
  }
  c10::TypePtr resolveType(const std::string& name, const torch::jit::SourceRange& loc) override {
    if (name == "Compilation") return compilation_;
    return torch::jit::nativeResolver()->resolveType(name, loc);
  }

 private:
  c10::ClassTypePtr compilation_;
};

// NnapiModule's methods: compile on first use, then run with the inputs and
// outputs permuted to and from NHWC as their memory formats say.
const char* const kNnapiModuleSource = R"TS(
def init(self, args: List[Tensor]):
    assert self.comp is None
    self.out_templates = self.shape_compute_module.prepare(self.ser_model, args)
    self.weights = [w.contiguous() for w in self.weights]
    comp = Compilation()
    comp.init2(self.ser_model, self.weights, self.compilation_preference, self.relax_f32_to_f16)
    self.comp = comp

def forward(self, args: List[Tensor]) -> List[Tensor]:
    if self.comp is None:
        self.init(args)
    comp = self.comp
    assert comp is not None
    outs = [torch.empty_like(out) for out in self.out_templates]
    assert len(args) == len(self.inp_mem_fmts)
    fixed_args: List[Tensor] = []
    for idx in range(len(args)):
        fmt = self.inp_mem_fmts[idx]
        if fmt == 0:
            fixed_args.append(args[idx].contiguous())
        elif fmt == 1:
            fixed_args.append(args[idx].permute(0, 2, 3, 1).contiguous())
        else:
            raise Exception("Invalid mem_fmt")
    comp.run(fixed_args, outs)
    assert len(outs) == len(self.out_mem_fmts)
    for idx in range(len(self.out_templates)):
        fmt = self.out_mem_fmts[idx]
        if fmt == 0 or fmt == 2:
            pass
        elif fmt == 1:
            outs[idx] = outs[idx].permute(0, 3, 1, 2)
        else:
            raise Exception("Invalid mem_fmt")
    return outs
)TS";

std::string prepare_source(const Conversion& c, bool numeric_dtypes) {
  std::string src =
      "def prepare(self, ser_model: torch.Tensor, args: List[torch.Tensor]) -> "
      "List[torch.Tensor]:\n";
  for (const std::string& line : prepare_lines(c, numeric_dtypes)) src += "    " + line + "\n";
  return src;
}

std::string wrapper_forward_source(size_t n_inputs, int retval_count) {
  std::string args;
  for (size_t i = 0; i < n_inputs; ++i) args += (i ? ", " : "") + ("arg_" + std::to_string(i));
  std::string ret;
  if (retval_count < 0) {
    ret = "retvals[0]";
  } else {
    for (int i = 0; i < retval_count; ++i) ret += "retvals[" + std::to_string(i) + "], ";
  }
  return "def forward(self, " + args + "):\n    retvals = self.mod.forward([" + args +
         "])\n    return " + ret + "\n";
}

std::string temp_path_for(const std::string& path) {
  static std::atomic<int> counter{0};
  return path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

// Runs `write(tmp)` and renames tmp over `path`; removes tmp on failure.
template <typename F>
void write_atomically(const std::string& path, F write) {
  std::string tmp = temp_path_for(path);
  try {
    fs::path parent = fs::path(path).parent_path();
    if (!parent.empty()) fs::create_directories(parent);
    write(tmp);
    fs::rename(tmp, path);
  } catch (const c10::Error& e) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw ConvertError(1, "could not write '" + path + "': " + e.what_without_backtrace());
  } catch (const std::exception& e) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw ConvertError(1, "could not write '" + path + "': " + e.what());
  }
}

void write_bytes(const std::string& path, const void* data, size_t size) {
  write_atomically(path, [&](const std::string& tmp) {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw std::runtime_error("cannot open for writing");
    f.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
    f.close();
    if (!f) throw std::runtime_error("write failed (disk full?)");
  });
}

at::Tensor ser_model_tensor(const Conversion& c) {
  auto* data = const_cast<int32_t*>(c.ser_model.data());
  return at::from_blob(data, {static_cast<int64_t>(c.ser_model.size())}, at::kInt).clone();
}

Module build_module(const Conversion& c, const ConvertOptions& options) {
  c10::ClassTypePtr compilation =
      torch::getCustomClass("__torch__.torch.classes._nnapi.Compilation");
  if (!compilation) {
    throw ConvertError(1, "this LibTorch has no NNAPI binding (torch.classes._nnapi.Compilation)");
  }
  auto resolver = std::make_shared<NnapiResolver>(compilation);
  auto cu = std::make_shared<torch::jit::CompilationUnit>();

  // Attributes in the order PyTorch's scripted nn.Modules have them.
  auto module_of = [&](const char* name) {
    Module m(std::string(kPrefix) + name, cu, true);
    m.register_attribute("training", c10::BoolType::get(), true);
    m.register_attribute("_is_full_backward_hook", c10::NoneType::get(), c10::IValue());
    return m;
  };
  Module shape = module_of("ShapeComputeModule");
  shape.define(prepare_source(c, /*numeric_dtypes=*/true), resolver);

  Module nnapi = module_of("NnapiModule");
  nnapi.register_attribute("ser_model", c10::TensorType::get(), ser_model_tensor(c));
  c10::List<at::Tensor> weights;
  for (const at::Tensor& w : c.weights) weights.push_back(w);
  nnapi.register_attribute("weights", c10::ListType::ofTensors(), weights);
  nnapi.register_attribute("inp_mem_fmts", c10::ListType::ofInts(),
                           c10::List<int64_t>(c.inp_mem_fmts));
  nnapi.register_attribute("out_mem_fmts", c10::ListType::ofInts(),
                           c10::List<int64_t>(c.out_mem_fmts));
  nnapi.register_attribute("out_templates", c10::ListType::ofTensors(), c10::List<at::Tensor>());
  nnapi.register_attribute("comp", c10::OptionalType::create(compilation), c10::IValue());
  nnapi.register_attribute("compilation_preference", c10::IntType::get(),
                           int64_t{options.compilation_preference});
  nnapi.register_attribute("relax_f32_to_f16", c10::BoolType::get(), options.relax_f32_to_f16);
  nnapi.register_module("shape_compute_module", shape);
  nnapi.define(kNnapiModuleSource, resolver);

  Module wrapper = module_of("NnapiInterfaceWrapper");
  wrapper.register_module("mod", nnapi);
  wrapper.define(wrapper_forward_source(c.inp_mem_fmts.size(), c.retval_count), resolver);
  return wrapper;
}

std::string json_ints(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

void write_nnapi_module(const Conversion& c, const ConvertOptions& options, const std::string& path,
                        bool lite) {
  Module wrapper;
  try {
    wrapper = build_module(c, options);
  } catch (const c10::Error& e) {
    throw ConvertError(
        1, std::string("could not build the NNAPI module: ") + e.what_without_backtrace());
  }
  write_atomically(path, [&](const std::string& tmp) { wrapper.save(tmp); });
  if (lite) {
    // out.nnapi.pt -> out.nnapi.ptl; a name without .pt gets .ptl appended.
    std::string ptl = path;
    if (ptl.size() > 3 && ptl.compare(ptl.size() - 3, 3, ".pt") == 0) ptl.erase(ptl.size() - 3);
    ptl += ".ptl";
    write_atomically(ptl, [&](const std::string& tmp) { wrapper._save_for_mobile(tmp); });
  }
}

void write_file_atomically(const std::string& path, const std::string& data) {
  write_bytes(path, data.data(), data.size());
}

void write_parts(const Conversion& c, const ConvertOptions& options, const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw ConvertError(1, "could not create directory '" + dir + "': " + ec.message());
  const std::string base = (fs::path(dir) / "").string();
  write_bytes(base + "ser_model.bin", c.ser_model.data(), c.ser_model.size() * sizeof(int32_t));

  c10::List<at::Tensor> weights;
  for (const at::Tensor& w : c.weights) weights.push_back(w);
  std::vector<char> pickled = torch::jit::pickle_save(c10::IValue(weights));
  write_bytes(base + "weights.pt", pickled.data(), pickled.size());

  std::string py = "from typing import List\nimport torch\n\n\n" + prepare_source(c, false);
  write_bytes(base + "shape_compute.py", py.data(), py.size());

  std::ostringstream js;
  js << "{\n  \"inp_mem_fmts\": " << json_ints(c.inp_mem_fmts)
     << ",\n  \"out_mem_fmts\": " << json_ints(c.out_mem_fmts)
     << ",\n  \"retval_count\": " << c.retval_count << ",\n  \"inputs\": [";
  for (size_t i = 0; i < options.inputs.size(); ++i) {
    js << (i ? ", " : "") << json::quote(format_input_spec(options.inputs[i]));
  }
  js << "],\n  \"shape_compute_lines\": [";
  for (size_t i = 0; i < c.shape_lines.size(); ++i) {
    js << (i ? ", " : "") << json::quote(c.shape_lines[i]);
  }
  js << "],\n  \"operand_count\": " << c.operand_count
     << ",\n  \"operation_count\": " << c.operation_count << ",\n  \"operations\": {";
  bool first = true;
  for (const auto& kv : c.operations) {
    js << (first ? "" : ", ") << json::quote(kv.first) << ": " << kv.second;
    first = false;
  }
  js << "},\n  \"weight_bytes\": " << c.weight_bytes
     << ",\n  \"compilation_preference\": " << options.compilation_preference
     << ",\n  \"relax_f32_to_f16\": " << (options.relax_f32_to_f16 ? "true" : "false") << "\n}\n";
  std::string manifest = js.str();
  write_bytes(base + "manifest.json", manifest.data(), manifest.size());
}

}  // namespace nnapi_convert
