#include "core/archive_check.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "nnapi_convert/conversion.h"

namespace nnapi_convert {
namespace {

// Limits no file written by PyTorch comes near.
constexpr int kMaxPickleDepth = 10000;                // nested containers and objects
constexpr int kMaxCodeNesting = 256;                  // ( [ { in one TorchScript statement
constexpr int kMaxOperatorsPerLine = 4000;            // infix operators in one line of code
constexpr uint64_t kMaxScannedRecord = 256ull << 20;  // a pickle or code record, inflated

// ------------------------------------------------------------------ the zip

struct Entry {
  std::string name;
  uint16_t method = 0;
  uint64_t compressed = 0, size = 0, local_offset = 0;
};

class Archive {
 public:
  Archive(const std::string& path, const std::string& what) : path_(path), what_(what) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) fail(std::string("cannot be opened: ") + std::strerror(errno));
    struct stat st;
    if (::fstat(fd_, &st) != 0) fail(std::string("cannot be read: ") + std::strerror(errno));
    file_size_ = static_cast<uint64_t>(st.st_size);
    read_directory();
  }
  ~Archive() {
    if (fd_ >= 0) ::close(fd_);
  }
  Archive(const Archive&) = delete;
  Archive& operator=(const Archive&) = delete;

  // "<what> '<path>' <why>"; with no `what`, the caller names the file and
  // the message starts at the problem.
  [[noreturn]] void fail(const std::string& why) const {
    if (what_.empty()) throw ConvertError(1, why.compare(0, 3, "is ") == 0 ? why.substr(3) : why);
    throw ConvertError(1, what_ + " '" + path_ + "' " + why);
  }
  [[noreturn]] void malformed(const std::string& why) const {
    fail("is not a valid TorchScript archive: " + why +
         ". PyTorch never writes such a file: it was damaged or crafted; save the model again "
         "with torch.jit.save");
  }

  const std::vector<Entry>& entries() const { return entries_; }

  // A record's bytes, inflated when it is deflated (as PyTorch writes code
  // and debug records).
  std::string read(const Entry& e) const {
    if (e.size > kMaxScannedRecord) malformed("record '" + e.name + "' is over 256 MiB");
    std::string raw(e.compressed, '\0');
    read_at(data_offset(e), raw.data(), e.compressed);
    if (e.method == 0) return raw;
    std::string out(e.size, '\0');
    z_stream z;
    std::memset(&z, 0, sizeof z);
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK) fail("cannot be read: zlib failed to start");
    z.next_in = reinterpret_cast<Bytef*>(raw.data());
    z.avail_in = static_cast<uInt>(raw.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    int rc = inflate(&z, Z_FINISH);
    uint64_t produced = z.total_out;
    inflateEnd(&z);
    if (rc != Z_STREAM_END || produced != e.size) {
      malformed("record '" + e.name + "' does not inflate to its declared size");
    }
    return out;
  }

 private:
  void read_at(uint64_t offset, void* dst, uint64_t n) const {
    if (offset > file_size_ || n > file_size_ - offset) malformed("a record lies past the end");
    char* p = static_cast<char*>(dst);
    while (n > 0) {
      ssize_t got = ::pread(fd_, p, n, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) fail(std::string("cannot be read: ") + std::strerror(errno));
      if (got == 0) malformed("it ends early");
      p += got;
      offset += static_cast<uint64_t>(got);
      n -= static_cast<uint64_t>(got);
    }
  }

  static uint64_t le(const unsigned char* p, int bytes) {
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
    return v;
  }

  uint64_t data_offset(const Entry& e) const {
    unsigned char h[30];
    read_at(e.local_offset, h, sizeof h);
    if (le(h, 4) != 0x04034b50) malformed("record '" + e.name + "' has no local header");
    return e.local_offset + 30 + le(h + 26, 2) + le(h + 28, 2);
  }

  void read_directory() {
    if (file_size_ < 22) malformed("it is too short to be a zip archive (is it truncated?)");
    uint64_t tail = std::min<uint64_t>(file_size_, 22 + 65535);
    std::vector<unsigned char> buf(tail);
    read_at(file_size_ - tail, buf.data(), tail);
    int64_t at = -1;
    for (int64_t i = static_cast<int64_t>(tail) - 22; i >= 0; --i) {
      if (le(&buf[i], 4) == 0x06054b50) {
        at = i;
        break;
      }
    }
    if (at < 0) malformed("it has no zip end-of-central-directory record (is it truncated?)");
    const unsigned char* eocd = &buf[at];
    uint64_t eocd_offset = file_size_ - tail + static_cast<uint64_t>(at);
    uint64_t count = le(eocd + 10, 2), cd_size = le(eocd + 12, 4), cd_offset = le(eocd + 16, 4);
    if (eocd_offset >= 20) {
      unsigned char loc[20];
      read_at(eocd_offset - 20, loc, sizeof loc);
      if (le(loc, 4) == 0x07064b50) {  // zip64 end-of-central-directory locator
        unsigned char z[56];
        read_at(le(loc + 8, 8), z, sizeof z);
        if (le(z, 4) != 0x06064b50) malformed("bad zip64 end-of-central-directory record");
        count = le(z + 32, 8);
        cd_size = le(z + 40, 8);
        cd_offset = le(z + 48, 8);
      }
    }
    if (cd_offset > file_size_ || cd_size > file_size_ - cd_offset)
      malformed("the zip central directory lies past the end");
    if (count > cd_size / 46) malformed("the zip central directory is too short for its entries");
    std::vector<unsigned char> cd(cd_size);
    read_at(cd_offset, cd.data(), cd_size);
    std::set<std::string> names;
    size_t p = 0;
    for (uint64_t i = 0; i < count; ++i) {
      if (p + 46 > cd.size() || le(&cd[p], 4) != 0x02014b50)
        malformed("zip central directory entry " + std::to_string(i) + " is damaged");
      Entry e;
      e.method = static_cast<uint16_t>(le(&cd[p + 10], 2));
      e.compressed = le(&cd[p + 20], 4);
      e.size = le(&cd[p + 24], 4);
      uint64_t name_len = le(&cd[p + 28], 2), extra_len = le(&cd[p + 30], 2),
               comment_len = le(&cd[p + 32], 2);
      e.local_offset = le(&cd[p + 42], 4);
      if (p + 46 + name_len + extra_len + comment_len > cd.size())
        malformed("zip central directory entry " + std::to_string(i) + " is damaged");
      e.name.assign(reinterpret_cast<const char*>(&cd[p + 46]), name_len);
      // zip64 sizes and offset, in this order, for the fields saturated above
      const unsigned char* x = &cd[p + 46 + name_len];
      for (uint64_t q = 0; q + 4 <= extra_len;) {
        uint64_t id = le(x + q, 2), len = le(x + q + 2, 2);
        if (q + 4 + len > extra_len) break;
        if (id == 1) {
          const unsigned char* v = x + q + 4;
          uint64_t left = len;
          for (uint64_t* field : {&e.size, &e.compressed, &e.local_offset}) {
            if (*field != 0xffffffffu) continue;
            if (left < 8) malformed("record '" + e.name + "' has a short zip64 field");
            *field = le(v, 8);
            v += 8;
            left -= 8;
          }
        }
        q += 4 + len;
      }
      if (!names.insert(e.name).second) {
        malformed("it holds two records named '" + e.name +
                  "'; which one a reader takes is not defined");
      }
      entries_.push_back(std::move(e));
      p += 46 + name_len + extra_len + comment_len;
    }
    for (const Entry& e : entries_) {
      if (e.method != 0 && e.method != 8) {
        malformed("record '" + e.name + "' uses zip compression method " +
                  std::to_string(e.method) + "; PyTorch writes records stored or deflated");
      }
      if (e.method == 0 && e.compressed != e.size) {
        malformed("record '" + e.name + "' is stored with two different sizes");
      }
      if (e.local_offset > file_size_ || e.compressed > file_size_ - e.local_offset)
        malformed("record '" + e.name + "' lies past the end of the file");
    }
  }

  std::string path_, what_;
  int fd_ = -1;
  uint64_t file_size_ = 0;
  std::vector<Entry> entries_;
};

// ------------------------------------------------------------------ pickles

// What the TorchScript unpickler would hold on its stack, without the values.
struct Item {
  enum Kind { Other, Int, Str, Functor, StorageType, Tuple, Object } kind = Other;
  int depth = 1;
  int64_t num = 0;          // Int; StorageType: the item size
  std::string str;          // Str (short ones only)
  std::vector<Item> parts;  // a Tuple of up to 5 scalars: its items
};

struct StorageRef {
  std::string key;
  int64_t item_size;
  int64_t numel;
};

int64_t storage_item_size(const std::string& class_name) {
  static const std::map<std::string, int64_t> sizes = {
      {"ByteStorage", 1},         {"CharStorage", 1},           {"ShortStorage", 2},
      {"IntStorage", 4},          {"LongStorage", 8},           {"HalfStorage", 2},
      {"FloatStorage", 4},        {"DoubleStorage", 8},         {"ComplexHalfStorage", 4},
      {"ComplexFloatStorage", 8}, {"ComplexDoubleStorage", 16}, {"BoolStorage", 1},
      {"QInt8Storage", 1},        {"QUInt8Storage", 1},         {"QInt32Storage", 4},
      {"BFloat16Storage", 2},     {"QUInt4x2Storage", 1},       {"QUInt2x4Storage", 1},
  };
  auto it = sizes.find(class_name);
  return it == sizes.end() ? 0 : it->second;
}

class PickleScan {
 public:
  PickleScan(const std::string& bytes, const std::string& name, const Archive& archive)
      : b_(bytes), name_(name), archive_(archive) {}

  // The storages the pickle refers to; `want_object`: its value must be an
  // object (data.pkl holds the module).
  std::vector<StorageRef> run(bool want_object) {
    if (b_.size() < 2 || static_cast<unsigned char>(b_[0]) != 0x80) {
      bad("it does not start with PROTO");
    }
    pos_ = 2;
    while (true) {
      if (pos_ >= b_.size()) bad("it ends without STOP");
      size_t at = pos_;
      unsigned char op = static_cast<unsigned char>(b_[pos_++]);
      if (op == '.') {
        if (stack_.size() != 1) bad("STOP with " + std::to_string(stack_.size()) + " items", at);
        if (want_object && stack_[0].kind != Item::Object) bad("its value is not a module object");
        return storages_;
      }
      step(op, at);
    }
  }

 private:
  [[noreturn]] void bad(const std::string& why, size_t at = std::string::npos) const {
    archive_.malformed("its pickle '" + name_ + "' is malformed (" + why +
                       (at == std::string::npos ? "" : " at byte " + std::to_string(at)) + ")");
  }

  uint64_t take(int n) {
    if (b_.size() - pos_ < static_cast<size_t>(n)) bad("it ends inside an instruction");
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b_[pos_ + i]);
    pos_ += n;
    return v;
  }
  std::string take_bytes(uint64_t n) {
    if (b_.size() - pos_ < n) bad("a string runs past the end");
    std::string s = n <= 256 ? b_.substr(pos_, n) : std::string();
    pos_ += n;
    return s;
  }
  std::string take_line() {
    size_t nl = b_.find('\n', pos_);
    if (nl == std::string::npos || nl - pos_ > 1024) bad("a GLOBAL name is not terminated");
    std::string s = b_.substr(pos_, nl - pos_);
    pos_ = nl + 1;
    return s;
  }

  void need(size_t n, size_t at) const {
    if (stack_.size() < n) {
      bad("an instruction needs " + std::to_string(n) + " stack item(s), " +
              std::to_string(stack_.size()) + " there",
          at);
    }
  }
  size_t take_mark(size_t at) {
    if (marks_.empty()) bad("an instruction needs a MARK, none there", at);
    size_t m = marks_.back();
    marks_.pop_back();
    if (m > stack_.size()) bad("a MARK lies above the stack", at);
    return m;
  }
  Item pop() {
    Item it = std::move(stack_.back());
    stack_.pop_back();
    return it;
  }
  void push(Item it, size_t at) {
    if (it.depth > kMaxPickleDepth) {
      bad("values nested more than " + std::to_string(kMaxPickleDepth) + " levels deep", at);
    }
    stack_.push_back(std::move(it));
  }
  static Item scalar(Item::Kind k, int64_t v = 0) {
    Item it;
    it.kind = k;
    it.num = v;
    return it;
  }
  // A container of the items from `from` to the top, which are removed.
  Item collect(size_t from, Item::Kind kind) {
    Item c;
    c.kind = kind;
    int depth = 0;
    for (size_t i = from; i < stack_.size(); ++i) depth = std::max(depth, stack_[i].depth);
    c.depth = depth + 1;
    // Storage references are tuples of 5 scalars: only such small tuples keep
    // their items, so no copy below is ever deep.
    bool small = kind == Item::Tuple && stack_.size() - from <= 5 &&
                 std::all_of(stack_.begin() + from, stack_.end(),
                             [](const Item& x) { return x.parts.empty(); });
    if (small) {
      c.parts.assign(std::make_move_iterator(stack_.begin() + from),
                     std::make_move_iterator(stack_.end()));
    }
    stack_.erase(stack_.begin() + from, stack_.end());
    return c;
  }
  // Items from `from` to the top go into the container just below them.
  void fill(size_t from, size_t at, bool pairs) {
    if (from == 0) bad("no container below the MARK", at);
    if (pairs && (stack_.size() - from) % 2 != 0) bad("an odd number of dict items", at);
    Item items = collect(from, Item::Other);
    Item& target = stack_.back();
    target.depth = std::max(target.depth, items.depth);
    if (target.depth > kMaxPickleDepth) bad("values nested too deeply", at);
  }

  void step(unsigned char op, size_t at) {
    switch (op) {
      case '(':  // MARK
        marks_.push_back(stack_.size());
        break;
      case ']':  // EMPTY_LIST
      case '}':  // EMPTY_DICT
        push(scalar(Item::Other), at);
        break;
      case ')':  // EMPTY_TUPLE
        push(scalar(Item::Tuple), at);
        break;
      case 'q':    // BINPUT
      case 'r': {  // LONG_BINPUT
        uint64_t id = take(op == 'q' ? 1 : 4);
        need(1, at);
        if (id > memo_.size()) bad("a memo id out of order", at);
        if (id == memo_.size())
          memo_.push_back(stack_.back());
        else
          memo_[id] = stack_.back();
        break;
      }
      case 'h':    // BINGET
      case 'j': {  // LONG_BINGET
        uint64_t id = take(op == 'h' ? 1 : 4);
        if (id >= memo_.size()) bad("a memo id that was never stored", at);
        push(memo_[id], at);
        break;
      }
      case 0x88:  // NEWTRUE
      case 0x89:  // NEWFALSE
      case 'N':   // NONE
        push(scalar(Item::Other), at);
        break;
      case 'K':
        push(scalar(Item::Int, static_cast<int64_t>(take(1))), at);
        break;
      case 'M':
        push(scalar(Item::Int, static_cast<int64_t>(take(2))), at);
        break;
      case 'J':
        push(scalar(Item::Int, static_cast<int32_t>(take(4))), at);
        break;
      case 0x8a: {  // LONG1
        uint64_t n = take(1);
        if (n != 8) bad("a LONG1 of " + std::to_string(n) + " bytes (TorchScript reads 8)", at);
        push(scalar(Item::Int, static_cast<int64_t>(take(8))), at);
        break;
      }
      case 'G':  // BINFLOAT
        take(8);
        push(scalar(Item::Other), at);
        break;
      case 'X': {  // BINUNICODE
        Item s = scalar(Item::Str);
        s.str = take_bytes(take(4));
        push(std::move(s), at);
        break;
      }
      case 't':  // TUPLE
        push(collect(take_mark(at), Item::Tuple), at);
        break;
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1..3
        size_t n = op - 0x84;
        need(n, at);
        push(collect(stack_.size() - n, Item::Tuple), at);
        break;
      }
      case 'l':  // LIST
        push(collect(take_mark(at), Item::Other), at);
        break;
      case 'd': {  // DICT
        size_t m = take_mark(at);
        if ((stack_.size() - m) % 2 != 0) bad("an odd number of dict items", at);
        push(collect(m, Item::Other), at);
        break;
      }
      case 'e':  // APPENDS
        fill(take_mark(at), at, false);
        break;
      case 'u':  // SETITEMS
        fill(take_mark(at), at, true);
        break;
      case 's':  // SETITEM
        need(3, at);
        fill(stack_.size() - 2, at, true);
        break;
      case 'c': {  // GLOBAL
        std::string module = take_line();
        std::string cls = take_line();
        if (module == "torch" && storage_item_size(cls) > 0) {
          push(scalar(Item::StorageType, storage_item_size(cls)), at);
        } else {
          push(scalar(Item::Functor), at);
        }
        break;
      }
      case 0x81:  // NEWOBJ
        need(1, at);
        pop();
        break;
      case 'b':    // BUILD
      case 'R': {  // REDUCE
        need(2, at);
        Item arg = pop();
        Item fn = pop();
        if (fn.kind != Item::Functor && fn.kind != Item::Int) {
          bad(std::string(op == 'R' ? "REDUCE" : "BUILD") + " without a GLOBAL to call", at);
        }
        Item result = scalar(fn.kind == Item::Functor ? Item::Object : Item::Other);
        result.depth = arg.depth + 1;
        push(std::move(result), at);
        break;
      }
      case 'Q': {  // BINPERSID
        need(1, at);
        Item ref = pop();
        if (ref.kind != Item::Tuple || ref.parts.size() != 5 || ref.parts[0].kind != Item::Str ||
            ref.parts[0].str != "storage" || ref.parts[1].kind != Item::StorageType ||
            ref.parts[2].kind != Item::Str || ref.parts[3].kind != Item::Str ||
            ref.parts[4].kind != Item::Int) {
          bad("a storage reference that is not ('storage', type, key, device, numel)", at);
        }
        storages_.push_back({ref.parts[2].str, ref.parts[1].num, ref.parts[4].num});
        push(scalar(Item::Other), at);
        break;
      }
      default: {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", op);
        bad(std::string("opcode ") + hex + " that TorchScript's unpickler does not read", at);
      }
    }
  }

  const std::string& b_;
  const std::string& name_;
  const Archive& archive_;
  size_t pos_ = 0;
  std::vector<Item> stack_;
  std::vector<size_t> marks_;
  std::vector<Item> memo_;
  std::vector<StorageRef> storages_;
};

// ------------------------------------------------------------------ code

// The characters check_code counts as infix operators: + - * / % & | ^ < >,
// and NUL (which std::strchr("+-*/%&|^<>", c), used before, matched as the
// string's end). A switch rather than a strchr call per character of code:
// that call was a twentieth of the check's time.
constexpr bool counts_as_operator(char c) {
  switch (c) {
    case '+':
    case '-':
    case '*':
    case '/':
    case '%':
    case '&':
    case '|':
    case '^':
    case '<':
    case '>':
    case '\0':
      return true;
    default:
      return false;
  }
}

// Bracket nesting and infix-operator runs in TorchScript source, which
// LibTorch's parser and compiler follow by recursion.
void check_code(const std::string& src, const std::string& name, const Archive& archive) {
  int depth = 0, line = 1, operators = 0;
  for (size_t i = 0; i < src.size(); ++i) {
    char c = src[i];
    if (c == '#') {
      while (i < src.size() && src[i] != '\n') ++i;
      --i;
    } else if (c == '"' || c == '\'') {
      for (++i; i < src.size() && src[i] != c && src[i] != '\n'; ++i) {
        if (src[i] == '\\') ++i;
      }
    } else if (c == '(' || c == '[' || c == '{') {
      if (++depth > kMaxCodeNesting) {
        archive.malformed("its code '" + name + "' nests brackets more than " +
                          std::to_string(kMaxCodeNesting) + " deep at line " +
                          std::to_string(line));
      }
    } else if (c == ')' || c == ']' || c == '}') {
      if (depth > 0) --depth;
    } else if (c == '\n') {
      ++line;
      operators = 0;
    } else if (counts_as_operator(c)) {
      if (++operators > kMaxOperatorsPerLine) {
        archive.malformed("its code '" + name + "' has more than " +
                          std::to_string(kMaxOperatorsPerLine) + " operators on line " +
                          std::to_string(line));
      }
    }
  }
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

void check_torchscript_archive(const std::string& path, const std::string& what) {
  Archive archive(path, what);
  const std::vector<Entry>& entries = archive.entries();
  if (entries.empty()) archive.malformed("the zip archive is empty");
  // Records are "<archive name>/<record>"; LibTorch takes the archive name from
  // the first record.
  const std::string& first = entries.front().name;
  size_t slash = first.find('/');
  if (slash == std::string::npos) archive.malformed("its first record has no folder");
  const std::string prefix = first.substr(0, slash + 1);
  std::map<std::string, const Entry*> records;
  for (const Entry& e : entries) {
    if (e.name.compare(0, prefix.size(), prefix) == 0) records[e.name.substr(prefix.size())] = &e;
  }
  for (const auto& [name, entry] : records) {
    if (ends_with(name, ".pkl") || ends_with(name, ".debug_pkl")) {
      std::string bytes = archive.read(*entry);
      std::vector<StorageRef> storages = PickleScan(bytes, name, archive).run(name == "data.pkl");
      std::string folder = name.substr(0, name.rfind('.'));
      for (const StorageRef& s : storages) {
        if (s.numel < 0 || s.numel > (int64_t{1} << 50) / s.item_size) {
          archive.malformed("its pickle '" + name + "' declares a storage of " +
                            std::to_string(s.numel) + " elements");
        }
        if (s.numel == 0) continue;
        auto it = records.find(folder + "/" + s.key);
        uint64_t need = static_cast<uint64_t>(s.numel * s.item_size);
        if (it == records.end()) {
          archive.malformed("storage record '" + folder + "/" + s.key + "' is missing");
        }
        if (it->second->method != 0) {
          archive.malformed("storage record '" + folder + "/" + s.key +
                            "' is compressed; torch.jit.save stores tensor data uncompressed "
                            "(re-save the model with torch.jit.save)");
        }
        if (it->second->size < need) {
          archive.malformed("storage record '" + folder + "/" + s.key + "' holds " +
                            std::to_string(it->second->size) + " bytes, but its tensor needs " +
                            std::to_string(need));
        }
      }
    } else if (name.compare(0, 5, "code/") == 0 && ends_with(name, ".py")) {
      check_code(archive.read(*entry), name, archive);
    }
  }
}

}  // namespace nnapi_convert
