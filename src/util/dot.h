// Graphviz DOT text shared by the commands that draw (inspect --dot, and
// whatever else draws a model): quoting and the colours that tell the parts
// of a drawing apart. Header-only and torch-free (the blob fuzzer compiles
// inspect's report with it).
#pragma once

#include <string>

namespace nnapi_convert::dot {

// Fill colours, one per kind of thing drawn, so every drawing reads alike.
inline constexpr const char* kNnapiFill = "#cfe2f3";         // an NNAPI operation (blue)
inline constexpr const char* kInputFill = "#d9ead3";         // a model input (green)
inline constexpr const char* kOutputFill = "#fce5cd";        // a model output (orange)
inline constexpr const char* kTorchScriptFill = "#f9cb9c";   // a node left to TorchScript (orange)
inline constexpr const char* kNnapiClusterFill = "#eef5fb";  // the box around one NNAPI model
// check --dot's verdicts on the TorchScript graph (a node left to TorchScript
// by --cpu-fallback is kTorchScriptFill there too).
inline constexpr const char* kConvertsFill = "#b6d7a8";     // lowers to NNAPI (green)
inline constexpr const char* kFoldedFill = "#d9d9d9";       // no NNAPI operation of its own (grey)
inline constexpr const char* kUnsupportedFill = "#ea9999";  // does not convert (red)

// `text` as a DOT quoted string ("..."), with `"` and `\` escaped; a
// newline in `text` becomes a centred line break of the label.
inline std::string quoted(const std::string& text) {
  std::string q = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      q += '\\';
      q += c;
    } else if (c == '\n') {
      q += "\\n";
    } else if (c == '\r') {
      continue;
    } else {
      q += c;
    }
  }
  return q + "\"";
}

}  // namespace nnapi_convert::dot
