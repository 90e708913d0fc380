// Torch-free printing for `inspect` (text and JSON), so the blob fuzzer can
// drive it too. Internal to src/inspect.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "nnapi_convert/blob.h"
#include "nnapi_convert/validate.h"

namespace nnapi_convert::inspect_detail {

struct WeightInfo {
  int64_t bytes = 0;
  std::string dtype;
  std::vector<int64_t> shape;
};

// Where an operation came from, as the file's metadata record says (its
// "nodes"): the TorchScript node's kind and place in the user's code. Both ""
// for an operation no node made.
struct Origin {
  std::string kind;
  std::string location;
};

// Everything inspect shows, independent of the output format.
struct Model {
  std::string path;
  bool torchscript = false;
  size_t blob_bytes = 0;
  Blob blob;
  std::vector<WeightInfo> weights;  // only for a .nnapi.pt
  std::vector<int64_t> inp_mem_fmts, out_mem_fmts;
  // The state a stateful model's converted module keeps between calls (its
  // `state_attributes`): the model's last inputs and outputs, in this order.
  std::vector<std::string> state;
  // Its int, float and bool attributes kept in TorchScript (`state_values`:
  // "name (Int, 0 in the file)"), whether state_prologue runs before NNAPI,
  // and the model's methods carried over (reset_states).
  std::vector<std::string> state_values;
  bool state_prologue = false;
  std::vector<std::string> state_methods;
  // The converted entry point's arguments as nnapi-convert recorded them
  // ("sr (int): int=16000"; values the model was specialized on), when it did.
  std::vector<std::string> arguments;
  // The file's nnapi_convert.json (serialize/metadata.h: how nnapi-convert
  // made it), as its JSON text; empty when it has none.
  std::string metadata;
  // Per operation, the node it came from: empty when the file does not
  // record it (written before nnapi-convert did, or by PyTorch's converter).
  std::vector<Origin> origins;
  // What the validator finds (NeuralNetworks.h's rules), see validate().
  std::vector<nnapi_validate::Finding> findings;
};

// Runs the validator on m.blob with the weight buffers (data, bytes; data
// nullptr where unknown) and keeps its findings in m.findings.
void validate(Model& m, const std::vector<std::pair<const uint8_t*, size_t>>& buffers);

// "contiguous", "channels_last", "scalar_or_vector" or "invalid".
const char* mem_fmt_name(int64_t f);

void print_text(const Model& m, std::ostream& out);
void print_json(const Model& m, std::ostream& out);  // one JSON object and a newline
// Graphviz DOT (inspect --dot): the statements of one NNAPI model, its node
// names prefixed with `prefix`, to go inside a digraph (or a cluster of one).
// A node per model input, operation (its name and feature level) and model
// output; an edge per operand an operation takes from a model input or
// another operation (labelled with the operand's index, type and dims), and
// per model output. Constant operands (immediates, weights) are counted in
// their operation's label, not drawn.
// With the model's origins, an operation's label names its node and place.
void print_dot(const Model& m, const std::string& prefix, std::ostream& out);

// The TorchScript of a --cpu-fallback module (its forward's graph) around its
// NNAPI models: the nodes that run on the CPU, and where data goes between
// them, the NNAPI models' inputs and outputs, forward's arguments and its
// return (constants, attribute reads and the list packing around each NNAPI
// call are not drawn: data is followed through them).
struct ScriptPart {
  // One end of an edge: forward's argument `index`, TorchScript node
  // `index`, input or output `port` of NNAPI model `index`, or the return.
  struct End {
    enum Kind { Argument, Script, NnapiInput, NnapiOutput, Return } kind = Script;
    size_t index = 0, port = 0;
    bool operator==(const End& o) const {
      return kind == o.kind && index == o.index && port == o.port;
    }
  };
  std::vector<std::string> arguments;      // forward's arguments after self, by name
  std::vector<Origin> nodes;               // each CPU node's kind ("aten::sort") and place, or ""
  std::vector<std::pair<End, End>> edges;  // each once, in graph order
};
// Its DOT statements, to go inside the digraph beside the NNAPI models'
// clusters (drawn by print_dot with prefixes "m0_", "m1_", ...).
void print_dot_script(const ScriptPart& s, std::ostream& out);

}  // namespace nnapi_convert::inspect_detail
