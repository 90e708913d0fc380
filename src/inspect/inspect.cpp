// `nnapi-convert inspect`: prints what the device sees in a serialized NNAPI
// model, from a raw ser_model blob or from a .nnapi.pt module written by
// torch.backends._nnapi.prepare.convert_model_to_nnapi.
#include "nnapi_convert/inspect.h"

#include <caffe2/serialize/inline_container.h>
#include <torch/script.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "core/archive_check.h"
#include "core/diagnostics.h"
#include "core/loader.h"
#include "inspect/report.h"
#include "nnapi_convert/blob.h"
#include "nnapi_convert/nnapi_types.h"
#include "nnapi_convert/writer.h"
#include "util/dot.h"

namespace nnapi_convert {

namespace {

using inspect_detail::mem_fmt_name;
using inspect_detail::Model;
using inspect_detail::Origin;
using inspect_detail::print_dot;
using inspect_detail::print_dot_script;
using inspect_detail::print_json;
using inspect_detail::print_text;
using inspect_detail::ScriptPart;
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

// NNAPI model `k`'s operations' nodes from the metadata record's "nodes"
// (serialize/metadata.h: runs of operations of one node). None when the file
// records none, or when the record does not describe the blob's operations
// (another count): nothing is shown rather than a wrong node.
std::vector<Origin> read_origins(const std::string& metadata, size_t k, size_t operations) {
  const nlohmann::json j = nlohmann::json::parse(metadata, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("nodes")) return {};
  const nlohmann::json& all = j["nodes"];
  if (!all.is_array() || k >= all.size() || !all[k].is_array()) return {};
  std::vector<Origin> origins;
  for (const nlohmann::json& run : all[k]) {
    if (!run.is_object() || !run.contains("node") || !run["node"].is_string() ||
        !run.contains("at") || !run["at"].is_string() || !run.contains("operations") ||
        !run["operations"].is_number_unsigned()) {
      return {};
    }
    const auto n = run["operations"].get<uint64_t>();
    if (n > operations - origins.size()) return {};
    origins.insert(origins.end(), n,
                   Origin{run["node"].get<std::string>(), run["at"].get<std::string>()});
  }
  if (origins.size() != operations) return {};
  return origins;
}

// The TorchScript of a --cpu-fallback module around its NNAPI models: its
// forward's graph (forward_tensors', which forward calls, for a module with
// value arguments), with the calls `self.nnapi_K.forward([...])` the writer
// made (module_writer.cpp) read as NNAPI model K's inputs and outputs.
ScriptPart script_part(const torch::jit::Module& wrapper) {
  using End = ScriptPart::End;
  const bool adapted = wrapper.find_method("forward_tensors").has_value();
  const std::shared_ptr<torch::jit::Graph> graph =
      wrapper.get_method(adapted ? "forward_tensors" : "forward").graph();
  ScriptPart s;
  std::unordered_map<const torch::jit::Value*, std::vector<End>> from;  // where data comes from
  std::unordered_map<const torch::jit::Value*, size_t> nnapi_module, nnapi_result;
  auto feed = [&](const torch::jit::Value* v, const End& to) {
    auto it = from.find(v);
    if (it == from.end()) return;
    for (const End& e : it->second) {
      const std::pair<End, End> edge{e, to};
      if (std::find(s.edges.begin(), s.edges.end(), edge) == s.edges.end()) s.edges.push_back(edge);
    }
  };
  // Every value a node reads, also inside its blocks (prim::If, prim::Loop):
  // those defined outside it are the only ones `from` knows.
  std::function<void(const torch::jit::Node*, const End&)> feed_node =
      [&](const torch::jit::Node* n, const End& to) {
        for (const torch::jit::Value* v : n->inputs()) feed(v, to);
        for (const torch::jit::Block* b : n->blocks()) {
          for (const torch::jit::Node* inner : b->nodes()) feed_node(inner, to);
          for (const torch::jit::Value* v : b->outputs()) feed(v, to);
        }
      };
  const torch::jit::Value* self = graph->inputs()[0];
  bool readable = true;  // the module's debug records (node places)
  for (size_t i = 1; i < graph->inputs().size(); ++i) {
    s.arguments.push_back(graph->inputs()[i]->debugNameBase());
    from[graph->inputs()[i]] = {End{End::Argument, i - 1}};
  }
  for (const torch::jit::Node* n : graph->nodes()) {
    const c10::Symbol kind = n->kind();
    if (kind == c10::prim::Constant) continue;
    if (kind == c10::prim::GetAttr) {
      const std::string name = n->s(c10::attr::name);
      if (n->input() == self && name.rfind("nnapi_", 0) == 0 && name.size() > 6 &&
          name.find_first_not_of("0123456789", 6) == std::string::npos) {
        nnapi_module[n->output()] = std::stoul(name.substr(6));
      }
      continue;  // an attribute read: no data drawn
    }
    if (kind == c10::prim::CallMethod && nnapi_module.count(n->input(0))) {
      const size_t k = nnapi_module.at(n->input(0));
      const torch::jit::Node* list = n->input(1)->node();
      if (list->kind() == c10::prim::ListConstruct) {
        for (size_t j = 0; j < list->inputs().size(); ++j) {
          feed(list->input(j), End{End::NnapiInput, k, j});
        }
      } else {
        feed(n->input(1), End{End::NnapiInput, k, 0});
      }
      nnapi_result[n->output()] = k;
      continue;
    }
    if (kind == c10::prim::ListUnpack && nnapi_result.count(n->input(0))) {
      const size_t k = nnapi_result.at(n->input(0));
      for (size_t j = 0; j < n->outputs().size(); ++j) {
        from[n->output(j)] = {End{End::NnapiOutput, k, j}};
      }
      continue;
    }
    if (kind == c10::prim::ListConstruct || kind == c10::prim::ListUnpack ||
        kind == c10::prim::TupleConstruct || kind == c10::prim::TupleUnpack ||
        kind == c10::prim::TupleIndex) {
      // Packing: the data of its inputs passes through.
      std::vector<End> ends;
      for (const torch::jit::Value* v : n->inputs()) {
        auto it = from.find(v);
        if (it == from.end()) continue;
        for (const End& e : it->second) {
          if (std::find(ends.begin(), ends.end(), e) == ends.end()) ends.push_back(e);
        }
      }
      if (ends.empty()) continue;
      for (const torch::jit::Value* v : n->outputs()) from[v] = ends;
      continue;
    }
    const End here{End::Script, s.nodes.size()};
    s.nodes.push_back({kind.toQualString(), readable ? place_or_empty(n, &readable) : ""});
    feed_node(n, here);
    for (const torch::jit::Value* v : n->outputs()) from[v] = {here};
  }
  for (const torch::jit::Value* v : graph->return_node()->inputs()) feed(v, End{End::Return});
  return s;
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
    std::optional<ScriptPart> script;  // a --cpu-fallback module's TorchScript, for --dot
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
        m.origins = read_origins(metadata, models.size(), m.blob.operations.size());
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
      if (format == InspectFormat::Dot && subs[0] != "mod") script = script_part(wrapper);
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
        if (script) {
          text << "subgraph cluster_" << i << " {\n  label=\"NNAPI model " << i + 1 << " of "
               << models.size() << " (--cpu-fallback)\";\n  style=filled;\n  fillcolor=\""
               << dot::kNnapiClusterFill << "\";\n";
        }
        print_dot(models[i], prefix, text);
        if (script) text << "}\n";
      }
      if (script) print_dot_script(*script, text);
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
