// `nnapi-convert inspect`: prints what the device sees in a serialized NNAPI
// model, from a raw ser_model blob or from a .nnapi.pt module written by
// torch.backends._nnapi.prepare.convert_model_to_nnapi.
#include "nnapi_convert/inspect.h"

#include <caffe2/serialize/inline_container.h>
#include <torch/script.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <vector>

#include "core/archive_check.h"
#include "core/loader.h"
#include "inspect/report.h"
#include "nnapi_convert/blob.h"
#include "nnapi_convert/nnapi_types.h"
#include "nnapi_convert/writer.h"

namespace nnapi_convert {

namespace {

using inspect_detail::mem_fmt_name;
using inspect_detail::Model;
using inspect_detail::print_dot;
using inspect_detail::print_json;
using inspect_detail::print_text;
using inspect_detail::WeightInfo;

// A problem with the file, reported as one paragraph.
struct InspectError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// --- reading the file -----------------------------------------------------------

std::vector<uint8_t> read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InspectError("is a directory, not a file");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InspectError(std::string("cannot open the file: ") + std::strerror(errno));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), {});
  if (f.bad()) throw InspectError("cannot read the file");
  return bytes;
}

bool is_zip(const std::vector<uint8_t>& bytes) {
  return bytes.size() >= 4 && bytes[0] == 'P' && bytes[1] == 'K' && bytes[2] == 3 && bytes[3] == 4;
}

std::vector<int64_t> int_list(const torch::jit::Module& mod, const std::string& sub,
                              const char* name) {
  if (!mod.hasattr(name)) throw InspectError("submodule '" + sub + "' has no '" + name + "'");
  const c10::IValue v = mod.attr(name);
  if (!v.isIntList()) throw InspectError("'" + sub + "." + name + "' is not a list of int");
  return v.toIntVector();
}

// Reads one NnapiModule, the wrapper's submodule `sub` (`mod` in what
// convert_model_to_nnapi writes, `nnapi_K` in a --cpu-fallback module): it
// holds ser_model, weights and the memory formats
// (torch/backends/_nnapi/prepare.py, NnapiModule).
void read_module(Model& m, const torch::jit::Module& wrapper, const std::string& sub) {
  const c10::IValue mod_value = wrapper.attr(sub);
  if (!mod_value.isModule())
    throw InspectError("not an NNAPI module: attribute '" + sub + "' is not a module");
  const torch::jit::Module mod = mod_value.toModule();
  if (!mod.hasattr("ser_model"))
    throw InspectError("not an NNAPI module: submodule '" + sub + "' has no 'ser_model'");
  const c10::IValue ser_value = mod.attr("ser_model");
  if (!ser_value.isTensor()) throw InspectError("'" + sub + ".ser_model' is not a tensor");
  // nnapi_bind.cpp accepts int32 (what the serializer writes) or uint8.
  const at::Tensor ser = ser_value.toTensor().contiguous();
  if (ser.scalar_type() != at::kInt && ser.scalar_type() != at::kByte)
    throw InspectError(std::string("'" + sub + ".ser_model' has dtype ") +
                       std::string(c10::toString(ser.scalar_type())) + ", expected Int or Byte");
  const auto* begin = static_cast<const uint8_t*>(ser.data_ptr());
  const std::vector<uint8_t> bytes(begin, begin + ser.nbytes());

  if (!mod.hasattr("weights")) throw InspectError("submodule '" + sub + "' has no 'weights'");
  const c10::IValue weights = mod.attr("weights");
  if (!weights.isTensorList()) throw InspectError("'" + sub + ".weights' is not a list of tensors");
  std::vector<int64_t> sizes;
  std::vector<std::pair<const uint8_t*, size_t>> buffers;
  const std::vector<at::Tensor> tensors = weights.toTensorVector();
  for (const at::Tensor& t : tensors) {
    WeightInfo w;
    // nnapi_bind.cpp passes t.nbytes() of the contiguous weight.
    w.bytes = static_cast<int64_t>(t.numel()) * static_cast<int64_t>(t.element_size());
    w.dtype = std::string(c10::toString(t.scalar_type()));
    w.shape = t.sizes().vec();
    sizes.push_back(w.bytes);
    buffers.emplace_back(t.is_contiguous() ? static_cast<const uint8_t*>(t.data_ptr()) : nullptr,
                         static_cast<size_t>(w.bytes));
    m.weights.push_back(std::move(w));
  }
  if (sub == "mod" && wrapper.hasattr("state_attributes")) {
    const c10::IValue names = wrapper.attr("state_attributes");
    if (!names.isList()) throw InspectError("'state_attributes' is not a list of str");
    for (const c10::IValue& n : names.toListRef()) {
      if (!n.isString()) throw InspectError("'state_attributes' is not a list of str");
      m.state.push_back(n.toStringRef());
    }
  }
  if (sub == "mod" && wrapper.hasattr("state_values")) {
    const c10::IValue names = wrapper.attr("state_values");
    if (!names.isList()) throw InspectError("'state_values' is not a list of str");
    for (const c10::IValue& n : names.toListRef()) {
      if (!n.isString() || !wrapper.hasattr(n.toStringRef() + "_initial")) {
        throw InspectError("'state_values' names no attribute with its '_initial' value");
      }
      std::ostringstream value;
      const c10::IValue v = wrapper.attr(n.toStringRef() + "_initial");
      value << n.toStringRef() << " (" << v.tagKind() << ", " << v << " in the file)";
      m.state_values.push_back(value.str());
    }
    for (const torch::jit::Method& method : wrapper.get_methods()) {
      const std::string& name = method.name();
      if (name == "state_prologue") m.state_prologue = true;
      if (name != "forward" && name != "reset_state" && name != "state_prologue") {
        m.state_methods.push_back(name);
      }
    }
  }
  m.inp_mem_fmts = int_list(mod, sub, "inp_mem_fmts");
  m.out_mem_fmts = int_list(mod, sub, "out_mem_fmts");

  m.blob_bytes = bytes.size();
  try {
    m.blob = parse_blob(bytes, &sizes);
  } catch (const BlobError& e) {
    throw InspectError(std::string("invalid NNAPI model blob in '" + sub + ".ser_model': ") +
                       e.what());
  }
  validate(m, buffers);
  // NnapiModule.forward accepts input formats 0 and 1, output formats 0, 1, 2.
  if (m.inp_mem_fmts.size() != m.blob.inputs.size())
    throw InspectError("'" + sub + ".inp_mem_fmts' has " + std::to_string(m.inp_mem_fmts.size()) +
                       " entries but the model has " + std::to_string(m.blob.inputs.size()) +
                       " inputs");
  if (m.out_mem_fmts.size() != m.blob.outputs.size())
    throw InspectError("'" + sub + ".out_mem_fmts' has " + std::to_string(m.out_mem_fmts.size()) +
                       " entries but the model has " + std::to_string(m.blob.outputs.size()) +
                       " outputs");
  for (size_t i = 0; i < m.inp_mem_fmts.size(); ++i)
    if (m.inp_mem_fmts[i] != 0 && m.inp_mem_fmts[i] != 1)
      throw InspectError("'" + sub + ".inp_mem_fmts' entry " + std::to_string(i) + " is " +
                         std::to_string(m.inp_mem_fmts[i]) +
                         ", expected 0 (contiguous) or 1 (channels-last)");
  if (m.state.size() > m.blob.inputs.size() || m.state.size() > m.blob.outputs.size())
    throw InspectError("'state_attributes' names " + std::to_string(m.state.size()) +
                       " state tensors, more than the model's inputs or outputs");
  for (size_t i = 0; i < m.out_mem_fmts.size(); ++i)
    if (m.out_mem_fmts[i] < 0 || m.out_mem_fmts[i] > 2)
      throw InspectError("'" + sub + ".out_mem_fmts' entry " + std::to_string(i) + " is " +
                         std::to_string(m.out_mem_fmts[i]) + ", expected 0, 1 or 2");
}

void load_raw(Model& m, const std::vector<uint8_t>& bytes) {
  m.blob_bytes = bytes.size();
  try {
    m.blob = parse_blob(bytes);
  } catch (const BlobError& e) {
    throw InspectError(
        std::string("invalid NNAPI model blob (read as raw ser_model bytes; not a TorchScript "
                    "archive): ") +
        e.what());
  }
  validate(m, {});  // numbered-buffer values are not in a raw blob
}

// Joins a multi-line message into one paragraph.
std::string one_paragraph(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  std::string r;
  for (char c : s) {
    if (c == ' ' && !r.empty() && r.back() == ' ') continue;
    r += c;
  }
  while (!r.empty() && r.back() == ' ') r.pop_back();
  return r;
}

// The archive's extra/nnapi_convert.json (serialize/metadata.h), or "".
std::string read_metadata(const std::string& path) {
  caffe2::serialize::PyTorchStreamReader archive(path);
  const std::string name = std::string("extra/") + kMetadataFile;
  if (!archive.hasRecord(name)) return "";
  auto [data, size] = archive.getRecord(name);
  return std::string(static_cast<const char*>(data.get()), size);
}

// The NnapiModules a .nnapi.pt holds: `mod`, or a --cpu-fallback module's
// nnapi_0, nnapi_1, ...
std::vector<std::string> nnapi_submodules(const torch::jit::Module& wrapper) {
  if (wrapper.hasattr("mod")) return {"mod"};
  std::vector<std::string> subs;
  while (wrapper.hasattr("nnapi_" + std::to_string(subs.size()))) {
    subs.push_back("nnapi_" + std::to_string(subs.size()));
  }
  if (subs.empty()) {
    throw InspectError(
        "not an NNAPI module written by convert_model_to_nnapi or nnapi-convert: no submodule "
        "'mod' (nor 'nnapi_0', as --cpu-fallback writes)");
  }
  return subs;
}

}  // namespace

int inspect_main(const std::string& path, bool json, std::ostream& out, std::ostream& err) {
  return inspect_main(path, json ? InspectFormat::Json : InspectFormat::Text, out, err);
}

int inspect_main(const std::string& path, InspectFormat format, std::ostream& out,
                 std::ostream& err) {
  const bool json = format == InspectFormat::Json;
  std::string problem;
  try {
    std::vector<Model> models;
    const std::vector<uint8_t> bytes = read_file(path);
    if (is_zip(bytes)) {
      check_torchscript_archive(path, "");
      const torch::jit::Module wrapper = load_torchscript(path, "");
      const std::vector<std::string> subs = nnapi_submodules(wrapper);
      const std::string metadata = read_metadata(path);
      for (const std::string& sub : subs) {
        Model m;
        m.path = subs.size() == 1 ? path : path + " (submodule " + sub + ")";
        m.torchscript = true;
        read_module(m, wrapper, sub);
        m.metadata = metadata;
        if (wrapper.hasattr(kArgumentsAttribute)) {
          const c10::IValue record = wrapper.attr(kArgumentsAttribute);
          if (!record.isList()) {
            throw InspectError(std::string("'") + kArgumentsAttribute + "' is not a list");
          }
          for (const c10::IValue& a : record.toListRef()) {
            if (!a.isString()) {
              throw InspectError(std::string("'") + kArgumentsAttribute + "' holds a non-string");
            }
            m.arguments.push_back(a.toStringRef());
          }
        }
        models.push_back(std::move(m));
      }
    } else {
      Model m;
      m.path = path;
      load_raw(m, bytes);
      models.push_back(std::move(m));
    }
    std::ostringstream text;  // print only a complete report
    if (format == InspectFormat::Dot) {
      text << "digraph nnapi {\n  node [fontname=\"Helvetica\"];\n";
      for (size_t i = 0; i < models.size(); ++i) {
        const std::string prefix = "m" + std::to_string(i) + "_";
        if (models.size() > 1) {
          text << "subgraph cluster_" << i << " {\n  label=\"NNAPI model " << i + 1 << " of "
               << models.size() << " (--cpu-fallback)\";\n";
        }
        print_dot(models[i], prefix, text);
        if (models.size() > 1) text << "}\n";
      }
      text << "}\n";
    } else if (models.size() > 1) {
      // --cpu-fallback: one report per NNAPI model (a JSON list of objects).
      if (json) text << "[\n";
      for (size_t i = 0; i < models.size(); ++i) {
        if (json) {
          if (i) text << ",\n";
          std::ostringstream one;
          print_json(models[i], one);
          std::string s = one.str();
          while (!s.empty() && s.back() == '\n') s.pop_back();
          text << s;
        } else {
          text << (i ? "\n" : "") << "NNAPI model " << i + 1 << " of " << models.size()
               << " (the rest of the module is TorchScript, --cpu-fallback):\n";
          print_text(models[i], text);
        }
      }
      if (json) text << "\n]\n";
    } else if (json) {
      print_json(models[0], text);
    } else {
      print_text(models[0], text);
    }
    out << text.str();
    size_t findings = 0;
    for (const Model& m : models) findings += m.findings.size();
    if (findings == 0) return 0;
    err << "nnapi-convert inspect: " << path << ": the model breaks NeuralNetworks.h's rules ("
        << findings << " finding" << (findings > 1 ? "s" : "")
        << ", listed in the report), so the device would refuse it\n";
    return 1;
  } catch (const InspectError& e) {
    problem = e.what();
  } catch (const c10::Error& e) {
    problem = std::string("cannot load the TorchScript module: ") + e.what_without_backtrace();
  } catch (const std::exception& e) {
    problem = e.what();
  }
  err << "nnapi-convert inspect: " << path << ": " << one_paragraph(problem) << "\n";
  return 1;
}

}  // namespace nnapi_convert
