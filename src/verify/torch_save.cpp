// torch.save's archives for LibTorch's unpickler (see torch_save.h). The
// opcodes, their arguments and their effect on the stack are those of
// Python's pickle protocols 0 to 5 (Python's Lib/pickletools.py documents
// each).
#include "verify/torch_save.h"

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/unpickler.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

namespace nnapi_convert {
namespace {

bool one_of(std::string_view set, uint8_t op) {
  return set.find(static_cast<char>(op)) != std::string_view::npos;
}

// The length of the argument of the opcode at p[i] (after the opcode byte),
// or nullopt for an opcode this reader does not know or data that ends early.
std::optional<size_t> argument_length(const std::string& p, size_t i) {
  const uint8_t op = static_cast<uint8_t>(p[i]);
  const size_t rest = p.size() - i - 1;
  auto fixed = [&](size_t n) -> std::optional<size_t> {
    return rest >= n ? std::optional<size_t>(n) : std::nullopt;
  };
  auto length_prefixed = [&](size_t width) -> std::optional<size_t> {
    if (rest < width) return std::nullopt;
    uint64_t n = 0;
    for (size_t b = 0; b < width; ++b) n |= uint64_t(uint8_t(p[i + 1 + b])) << (8 * b);
    if (n > rest - width) return std::nullopt;
    return width + static_cast<size_t>(n);
  };
  auto lines = [&](int count) -> std::optional<size_t> {
    size_t at = i + 1;
    for (int k = 0; k < count; ++k) {
      size_t nl = p.find('\n', at);
      if (nl == std::string::npos) return std::nullopt;
      at = nl + 1;
    }
    return at - i - 1;
  };
  if (one_of("(.012NRQ]abdelostu})\x81\x85\x86\x87\x88\x89\x8f\x90\x91\x92\x93\x94\x97\x98", op)) {
    return 0;
  }
  if (one_of("Khq\x80\x82", op)) return fixed(1);
  if (one_of("M\x83", op)) return fixed(2);
  if (one_of("Jjr\x84", op)) return fixed(4);
  if (one_of("G\x95", op)) return fixed(8);
  if (one_of("UC\x8c\x8a", op)) return length_prefixed(1);
  if (one_of("TBX\x8b", op)) return length_prefixed(4);
  if (one_of("\x8d\x8e\x96", op)) return length_prefixed(8);
  if (one_of("ILFSVPgp", op)) return lines(1);
  if (one_of("ci", op)) return lines(2);
  return std::nullopt;
}

// How many stack items (not marks) an opcode pops and pushes; the
// mark-taking opcodes are handled apart. nullopt: not followed (DUP, FRAME).
struct StackEffect {
  int pops, pushes;
};
std::optional<StackEffect> stack_effect(uint8_t op) {
  if (one_of("pqr\x94\x80", op)) return StackEffect{0, 0};  // memo puts, PROTO
  if (op == '0') return StackEffect{1, 0};                  // POP
  if (one_of("Q\x85\x98", op)) return StackEffect{1, 1};    // BINPERSID, TUPLE1, ...
  // APPEND, REDUCE, BUILD, NEWOBJ, TUPLE2, STACK_GLOBAL
  if (one_of("aRb\x81\x86\x93", op)) return StackEffect{2, 1};
  if (one_of("\x87\x92s", op)) return StackEffect{3, 1};  // TUPLE3, NEWOBJ_EX, SETITEM
  // Constants, empty containers, memo gets, globals, extensions, buffers.
  if (one_of("KMJILFGSTUVXBC\x8a\x8b\x8c\x8d\x8e\x96N\x88\x89])}\x8fghjcP\x82\x83\x84\x97", op)) {
    return StackEffect{0, 1};
  }
  return std::nullopt;
}

}  // namespace

std::string pickle_with_batch_opcodes(const std::string& p) {
  // Per stack entry, the offset where the opcodes that made it begin; marks
  // are entries of their own (kMark) whose offset is kept in `marks`.
  constexpr size_t kMark = SIZE_MAX;
  std::vector<size_t> stack, marks;
  std::vector<size_t> insert_mark_at;   // offsets to put a MARK before
  std::vector<size_t> batch_opcode_at;  // APPEND/SETITEM offsets
  auto pop_to_mark = [&]() -> std::optional<size_t> {
    while (!stack.empty() && stack.back() != kMark) stack.pop_back();
    if (stack.empty() || marks.empty()) return std::nullopt;
    stack.pop_back();
    size_t at = marks.back();
    marks.pop_back();
    return at;
  };
  size_t i = 0;
  while (i < p.size()) {
    const uint8_t op = static_cast<uint8_t>(p[i]);
    std::optional<size_t> arg = argument_length(p, i);
    if (!arg) return p;
    if (op == '.') {
      if (insert_mark_at.empty()) return p;
      std::string out;
      out.reserve(p.size() + insert_mark_at.size());
      std::sort(insert_mark_at.begin(), insert_mark_at.end());
      size_t next = 0;
      for (size_t k = 0; k < p.size(); ++k) {
        while (next < insert_mark_at.size() && insert_mark_at[next] == k) {
          out += '(';
          ++next;
        }
        out += p[k];
      }
      for (size_t at : batch_opcode_at) {
        size_t shift =
            static_cast<size_t>(std::upper_bound(insert_mark_at.begin(), insert_mark_at.end(), at) -
                                insert_mark_at.begin());
        out[at + shift] = out[at + shift] == 'a' ? 'e' : 'u';  // APPENDS, SETITEMS
      }
      return out;
    }
    if (op == '(') {
      marks.push_back(i);
      stack.push_back(kMark);
    } else if (op == 't' || op == 'l' || op == 'd' || op == 'o' || op == 'i') {
      std::optional<size_t> at = pop_to_mark();  // TUPLE, LIST, DICT, OBJ, INST
      if (!at) return p;
      stack.push_back(*at);
    } else if (op == 'e' || op == 'u' || op == 0x90 || op == '1') {
      if (!pop_to_mark()) return p;  // APPENDS, SETITEMS, ADDITEMS, POP_MARK
      if (op != '1' && (stack.empty() || stack.back() == kMark)) return p;
    } else {
      std::optional<StackEffect> effect = stack_effect(op);
      if (!effect) return p;
      if (stack.size() < static_cast<size_t>(effect->pops)) return p;
      const size_t first = stack.size() - effect->pops;
      for (size_t k = first; k < stack.size(); ++k) {
        if (stack[k] == kMark) return p;
      }
      if (op == 'a' || op == 's') {
        // The container stays; its new item (or key and value) begins at
        // the entry above it.
        insert_mark_at.push_back(stack[first + 1]);
        batch_opcode_at.push_back(i);
      }
      const size_t start = effect->pops > 0 ? stack[first] : i;
      stack.resize(first);
      for (int k = 0; k < effect->pushes; ++k) stack.push_back(start);
    }
    i += 1 + *arg;
  }
  return p;  // no STOP
}

c10::IValue load_torch_save(const std::string& path) {
  caffe2::serialize::PyTorchStreamReader archive(path);
  at::DataPtr data;
  size_t size = 0;
  std::tie(data, size) = archive.getRecord("data.pkl");
  const std::string pickle =
      pickle_with_batch_opcodes(std::string(static_cast<const char*>(data.get()), size));
  size_t read = 0;
  auto reader = [&](char* buffer, size_t len) -> size_t {
    len = std::min(len, pickle.size() - read);
    std::memcpy(buffer, pickle.data() + read, len);
    read += len;
    return len;
  };
  auto read_record = [&](const std::string& name) {
    return std::get<0>(archive.getRecord("data/" + name));
  };
  torch::jit::Unpickler unpickler(reader, nullptr, nullptr, read_record, c10::nullopt);
  unpickler.set_version(archive.version());
  return unpickler.parse_ivalue();
}

}  // namespace nnapi_convert
