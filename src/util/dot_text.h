// Graphviz DOT text: a string as a DOT quoted string (for labels and
// tooltips of any text, such as a model's file name or a node's code).
#pragma once

#include <string>

namespace nnapi_convert {

// `text` in double quotes, with " and \ escaped and each newline as DOT's
// "\n" (a centred line break in a label): Graphviz's escString reads every
// other backslash sequence (\N, \l, ...) as a directive.
inline std::string dot_quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c != '\r') {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace nnapi_convert
