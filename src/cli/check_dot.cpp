// `nnapi-convert check --dot`: the model's graph as check walked it, in
// Graphviz DOT, each node coloured by what becomes of it (docs/cli.md).
#include <sstream>
#include <vector>

#include "cli/cli.h"
#include "util/dot.h"

namespace nnapi_convert::cli {
namespace {

constexpr size_t kReasonChars = 60;  // of a reason in a label

// The start of `reason` for a label (the tooltip has all of it).
std::string brief(const std::string& reason) {
  std::string s = reason.substr(0, reason.find('\n'));
  if (s.size() > kReasonChars) s = s.substr(0, kReasonChars - 3) + "...";
  return s;
}

std::string verdict_line(const CheckNode& n, bool converts) {
  switch (n.verdict) {
    case CheckNode::Verdict::Nnapi:
      if (!converts) return "supported";
      if (n.part >= 0) return "NNAPI model " + std::to_string(n.part + 1);
      return std::to_string(n.operations) + " NNAPI operation" + (n.operations == 1 ? "" : "s");
    case CheckNode::Verdict::Folded:
      return converts ? "no NNAPI operation of its own" : "computed during conversion";
    case CheckNode::Verdict::TorchScript:
      return "stays TorchScript: " + brief(n.reason);
    case CheckNode::Verdict::Unsupported:
      break;
  }
  return "NOT SUPPORTED: " + brief(n.reason);
}

const char* colour(CheckNode::Verdict v) {
  switch (v) {
    case CheckNode::Verdict::Nnapi:
      return dot::kConvertsFill;
    case CheckNode::Verdict::Folded:
      return dot::kFoldedFill;
    case CheckNode::Verdict::TorchScript:
      return dot::kTorchScriptFill;
    case CheckNode::Verdict::Unsupported:
      break;
  }
  return dot::kUnsupportedFill;
}

// One node of a table, a row per colour (its texts hold no HTML markup).
void legend(std::ostream& out, bool converts, bool split) {
  std::vector<std::pair<const char*, const char*>> rows;
  if (split) {
    rows = {{dot::kConvertsFill, "runs in the NNAPI model boxed around it"},
            {dot::kFoldedFill, "computed during conversion"},
            {dot::kTorchScriptFill, "stays TorchScript, --cpu-fallback (the tooltip says why)"}};
  } else {
    rows = {
        {dot::kConvertsFill,
         converts ? "lowered to NNAPI operations" : "a kind that lowers to NNAPI"},
        {dot::kFoldedFill, converts ? "no NNAPI operation of its own: computed during conversion, "
                                      "an alias, or fused into a neighbour"
                                    : "a kind only computed during conversion"}};
  }
  rows.emplace_back(dot::kUnsupportedFill, "does not convert (the tooltip says why)");
  out << "  legend [shape=plaintext, label=<<table border=\"0\" cellborder=\"1\" "
         "cellspacing=\"0\"><tr><td>legend</td></tr>";
  for (const auto& [fill, text] : rows) {
    out << "<tr><td bgcolor=\"" << fill << "\">" << text << "</td></tr>";
  }
  out << "</table>>];\n";
}

void node_statement(std::ostream& out, size_t k, const CheckNode& n, bool converts,
                    const char* indent) {
  const std::string label =
      n.kind + (n.location.empty() ? "" : "\n" + n.location) + "\n" + verdict_line(n, converts);
  const std::string tooltip = n.text + (n.reason.empty() ? "" : "\n" + n.reason);
  out << indent << "n" << k << " [shape=box, style=filled, fillcolor=\"" << colour(n.verdict)
      << "\", label=" << dot::quoted(label) << ", tooltip=" << dot::quoted(tooltip) << "];\n";
}

}  // namespace

std::string check_dot(const CheckReport& r, const CheckGraph& g) {
  std::ostringstream out;
  std::string title = r.model + (r.converts ? ": converts, " + std::to_string(r.operation_count) +
                                                  " NNAPI operations"
                                            : ": does not convert");
  if (g.parts > 0) title += " in " + std::to_string(g.parts) + " NNAPI models (--cpu-fallback)";
  out << "digraph check {\n  label=" << dot::quoted(title)
      << ";\n  labelloc=t;\n  fontname=\"Helvetica\";\n  node [fontname=\"Helvetica\"];\n";
  legend(out, r.converts, g.parts > 0);
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    out << "  in" << i << " [shape=invhouse, label="
        << dot::quoted("input " + std::to_string(i) + "\n" + g.inputs[i]) << "];\n";
  }
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (g.nodes[k].part < 0) node_statement(out, k, g.nodes[k], r.converts, "  ");
  }
  // --cpu-fallback: a box (cluster) per NNAPI model.
  for (int part = 0; part < g.parts; ++part) {
    out << "  subgraph cluster_part" << part << " {\n    label="
        << dot::quoted("NNAPI model " + std::to_string(part + 1) + " of " + std::to_string(g.parts))
        << ";\n";
    for (size_t k = 0; k < g.nodes.size(); ++k) {
      if (g.nodes[k].part == part) node_statement(out, k, g.nodes[k], r.converts, "    ");
    }
    out << "  }\n";
  }
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    out << "  out" << i << " [shape=house";
    if (g.return_fails) {
      out << ", style=filled, fillcolor=\"" << dot::kUnsupportedFill
          << "\", tooltip=" << dot::quoted(r.error);
    }
    out << ", label=" << dot::quoted("output " + std::to_string(i)) << "];\n";
  }
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    for (const std::string& from : g.nodes[k].from) out << "  " << from << " -> n" << k << ";\n";
  }
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    if (!g.outputs[i].empty()) out << "  " << g.outputs[i] << " -> out" << i << ";\n";
  }
  out << "}\n";
  return out.str();
}

}  // namespace nnapi_convert::cli
