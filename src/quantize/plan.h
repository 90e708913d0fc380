// The pieces of --quantize shared by the rewrite (quantize.cpp) and the
// proof (proof.cpp); see quantize.h for the design.
#pragma once

#include <torch/csrc/jit/ir/ir.h>

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "quantize/quantize.h"

namespace nnapi_convert {

// A value of the float graph: output `output` of top-level node `node`, or
// model input `output` (node == -1; self is not counted).
struct ValueRef {
  int node = -1;
  int output = 0;
  bool operator<(const ValueRef& o) const {
    return node != o.node ? node < o.node : output < o.output;
  }
};

enum class Role {
  Float,     // computed in float (inputs dequantized)
  Conv,      // quantized::conv2d (or conv2d_relu)
  Linear,    // quantized::linear
  Add,       // quantized::add (or add_relu)
  Mul,       // quantized::mul
  Keep,      // an op that takes its quantized input as it is (relu, pools, views)
  Unary,     // sigmoid, tanh, hardsigmoid, softmax (NNAPI's and PyTorch's fixed
             // output scale) or hardswish (calibrated) of a quantized input
  Absorbed,  // a ReLU done by the conv2d_relu / add_relu before it
};

struct NodePlan {
  Role role = Role::Float;
  bool fused_relu = false;  // Conv/Add: the ReLU that is its only use is absorbed
  int range_node = -1;      // the node whose output range gives this one's scale
  QParams out;              // Conv/Linear/Add/Mul/Keep/Absorbed: its output's
  at::Tensor weight;        // Conv/Linear: qint8, per tensor
  at::Tensor bias;          // Conv/Linear: float (zeros when the model has none)
};

struct QuantizedModel {
  std::shared_ptr<torch::jit::Graph> float_graph;  // the frozen float graph, untouched
  c10::IValue self;
  std::vector<NodePlan> nodes;               // by top-level node index
  std::map<ValueRef, QParams> quantized_at;  // float values QUANTIZEd for a quantized reader
  std::vector<Sample> samples;               // calibration samples, then the holdout
  int64_t holdout = 0;
  std::vector<std::string> notes;  // what stays float and why (for the report)
  // --quantized-io: each model input's and returned value's quint8
  // parameters (empty without it).
  std::vector<std::optional<QParams>> io_inputs;  // by model input: a float tensor's
  std::vector<QParams> io_outputs;                // by returned value
};

// Quantized: the graph lowered. QuantizedEager: the same to run eagerly
// with QNNPACK, whose quantized hardtanh of a channels-last tensor (what
// quantized convolutions return) gives misordered values in PyTorch 1.13
// (docs/quantization.md): each gets a contiguous input. FakeQuant: the
// float graph with fake_quantize_per_tensor_affine at every quantized value
// and fake-quantized weights and biases. Float: the float graph.
enum class Mode { Quantized, QuantizedEager, FakeQuant, Float };

// A graph of `q` in `mode` (on a copy of the float graph), with `probes`
// (when not null) filled with the value standing for each quantized node's
// output (node index -> value): the quantized tensor (Quantized*), the
// fake-quantized one (FakeQuant), the float one (Float).
std::shared_ptr<torch::jit::Graph> build_graph(const QuantizedModel& q, Mode mode,
                                               std::map<int, torch::jit::Value*>* probes);

// The values `g` returns, in output order (a tuple's elements).
std::vector<torch::jit::Value*> returned_values(torch::jit::Graph& g);

// Runs a graph (self first) on samples, with `extra` values of it appended
// to its outputs: run() returns the model's outputs (flattened) then the
// extras (an undefined tensor for one that is not a tensor).
class GraphRunner {
 public:
  GraphRunner(const std::shared_ptr<torch::jit::Graph>& graph, c10::IValue self,
              const std::vector<torch::jit::Value*>& extra = {});
  ~GraphRunner();
  std::vector<at::Tensor> run(const Sample& sample);

 private:
  std::unique_ptr<torch::jit::Function> fn_;
  c10::IValue self_;
  bool extra_;
};

}  // namespace nnapi_convert
