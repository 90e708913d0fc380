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
#include <memory>
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

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A record name as LibTorch 1.13 looks it up: its zip reader (miniz's
// mz_zip_reader_locate_file, called without MZ_ZIP_FLAG_CASE_SENSITIVE)
// compares names with ASCII letters folded to lower case.
std::string fold_case(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

// ------------------------------------------------------------------ the zip

struct Entry {
  std::string name;
  uint16_t method = 0;
  uint64_t compressed = 0, size = 0, local_offset = 0;
};

class Archive {
 public:
  Archive(const std::string& path, const std::string& what) : path_(path), what_(what) {
    fd_.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_.fd < 0) fail(std::string("cannot be opened: ") + std::strerror(errno));
    struct stat st;
    if (::fstat(fd_.fd, &st) != 0) fail(std::string("cannot be read: ") + std::strerror(errno));
    file_size_ = static_cast<uint64_t>(st.st_size);
    read_directory();
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
      ssize_t got = ::pread(fd_.fd, p, n, static_cast<off_t>(offset));
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

  // Closed by its own destructor, so also when the constructor throws (a
  // malformed zip directory): the fuzzer found that leak (docs/reliability.md).
  struct Fd {
    int fd = -1;
    Fd() = default;
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() {
      if (fd >= 0) ::close(fd);
    }
  };
  std::string path_, what_;
  Fd fd_;
  uint64_t file_size_ = 0;
  std::vector<Entry> entries_;
};

// ------------------------------------------------------------------ pickles

// What the TorchScript unpickler (LibTorch 1.13, torch/csrc/jit/serialization/
// unpickler.cpp) would hold on its stack, without the values: enough to follow
// its table of GLOBALs, the tensors it rebuilds and the storages they view.
struct Item;
using Parts = std::shared_ptr<const std::vector<Item>>;

// A list of a debug pickle, shared as the unpickler shares it (APPENDS through
// any reference changes it): what its elements are, in summary.
struct ListInfo {
  bool all_int = true;
  int64_t count = 0, min = 0, max = 0;
  // Its first elements, while they are integers, tensors or None: the lists
  // of a quantized convolution's packed parameters (check_conv_packed).
  std::vector<Item> head;
};

// The shapes a tuple of a debug pickle (code/*.debug_pkl) can have, as
// LibTorch 1.13's ConcreteSourceRangeUnpickler reads them (bits of Item::debug).
enum DebugShape : uint8_t {
  kAllStrings = 1,   // (str, ...): a text table
  kSourceTable = 2,  // (List[int] text-table indices, int file index, int line)
  kSourceText = 4,   // (str text, Optional[str] file, int line): before the table
  kRange = 8,        // (source, int start, int end)
  kRecord = 16,      // (int byte offset, range[, int tag])
  kAllRecords = 32,  // (record, ...)
};

struct Item {
  enum Kind { Other, Int, Str, Tuple, Object, Tensor, Nil, List, IntList } kind = Other;
  int depth = 1;
  int weight = 1;      // this item and the items kept in its parts
  int64_t num = 0;     // Int
  bool whole = false;  // Str: `str` holds all of the string
  std::string str;     // Str: its first bytes
  Parts parts;         // Tuple: its items, for small tuples only
  // Tensor: its storage (bytes < 0: a tensor of the legacy tensor table, whose
  // bounds LibTorch checks itself), element size and element count.
  int64_t storage_bytes = 0, item_size = 0, numel = 0;
  std::string storage;  // Tensor: its storage record, for messages
  // Tensor: its storage's scalar type (kScalarTypes' index), its storage
  // offset in elements, its rank, and its first size (-1: none) and stride.
  int64_t scalar_type = -1, offset = 0, dims = 0, size0 = -1, stride0 = 0;
  // Debug pickles only. List, IntList: its elements. Tuple (num: its size):
  // the shapes it has and, for sources, ranges and records, what their
  // sources use: text-table indices or text, and the file indices.
  std::shared_ptr<ListInfo> list;
  uint8_t debug = 0;
  bool uses_table = false, uses_text = false, tag_first = false;
  int64_t min_file = INT64_MAX, max_file = INT64_MIN;
};

// Tuples of up to this many items, holding up to kMaxKept items in all, keep
// their items: tensor arguments, storage references and quantizer
// parameters are such tuples. Larger ones only count.
constexpr size_t kMaxKeptTuple = 64;
constexpr int kMaxKept = 1024;
constexpr size_t kMaxKeptString = 4096;
// The elements a list keeps (ListInfo::head).
constexpr size_t kMaxListHead = 64;

// c10::ScalarType in LibTorch 1.13's order: the storage GLOBAL's name and its
// element size. The unpickler pushes the index for "torch.<name>".
struct ScalarType {
  const char* storage;
  int64_t size;
};
constexpr ScalarType kScalarTypes[] = {
    {"ByteStorage", 1},         {"CharStorage", 1},           {"ShortStorage", 2},
    {"IntStorage", 4},          {"LongStorage", 8},           {"HalfStorage", 2},
    {"FloatStorage", 4},        {"DoubleStorage", 8},         {"ComplexHalfStorage", 4},
    {"ComplexFloatStorage", 8}, {"ComplexDoubleStorage", 16}, {"BoolStorage", 1},
    {"QInt8Storage", 1},        {"QUInt8Storage", 1},         {"QInt32Storage", 4},
    {"BFloat16Storage", 2},     {"QUInt4x2Storage", 1},       {"QUInt2x4Storage", 1},
};
constexpr int64_t kNumScalarTypes = sizeof kScalarTypes / sizeof kScalarTypes[0];

// c10::QScheme names, in order; "torch.<name>" pushes the index.
constexpr const char* kQSchemes[] = {"per_tensor_affine", "per_channel_affine",
                                     "per_tensor_symmetric", "per_channel_symmetric",
                                     "per_channel_affine_float_qparams"};

// What a GLOBAL registers in the unpickler's table, for REDUCE and BUILD to call.
enum class Global {
  Class,
  Rebuild,
  RebuildQuantized,
  FromTypeV2,
  TableTensor,
  Value,
  TypeTag,
  BuildIntList,
  BuildTensorList,
  ConvPacked2d,  // torch.classes.quantized.Conv2dPackedParamsBase (also Conv1d's)
  ConvPacked3d
};

// A storage a pickle refers to: its record (in the pickle's tensor folder)
// and the bytes LibTorch takes from it.
struct StorageRef {
  std::string key;
  uint64_t bytes;
};

std::string join(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// A quantized convolution's parameters as LibTorch 1.13 packs them while it
// loads (conv_prepack and ConvPackedParamsBase's __setstate__, in
// aten/src/ATen/native/quantized/cpu/): the weight's first size is its
// channel count (output channels, or input channels when transposed), -1 when
// unknown.
struct ConvParams {
  std::vector<int64_t> stride, padding, dilation, output_padding;
  int64_t groups = 1, channels = -1;
};

// Values PyTorch never writes for a quantized convolution: a stride of 0 kills
// LibTorch 1.13 with SIGFPE while it packs the weights (it divides by it);
// the others make no convolution PyTorch can build (its modules refuse groups
// that do not divide the channels, and LibTorch's packing takes strides and
// dilations of 1 or more, paddings of 0 or more).
void check_conv(const ConvParams& c, const std::string& where, const Archive& archive) {
  auto refuse = [&](const std::string& what, const std::string& rule) {
    archive.malformed(where + ", whose " + what + ": " + rule);
  };
  auto each = [&](const std::vector<int64_t>& v, int64_t least, const char* name,
                  const char* rule) {
    for (int64_t x : v)
      if (x < least) refuse(std::string(name) + " is " + join(v), rule);
  };
  each(c.stride, 1, "stride",
       "a stride is 1 or more; LibTorch 1.13 divides by it while it packs the weights "
       "(a stride of 0 kills it with SIGFPE)");
  each(c.dilation, 1, "dilation", "a dilation is 1 or more");
  each(c.padding, 0, "padding", "a padding is 0 or more");
  each(c.output_padding, 0, "output padding", "an output padding is 0 or more");
  if (c.groups < 1) {
    refuse("groups is " + std::to_string(c.groups),
           "a convolution has 1 group or more; LibTorch 1.13 divides the channels by it");
  }
  if (c.channels >= 0 && c.channels % c.groups != 0) {
    refuse("groups is " + std::to_string(c.groups) + " over a weight of " +
               std::to_string(c.channels) + " channels",
           "groups divides the channels in every convolution PyTorch builds");
  }
}

// ConvPackedParamsBase's version-2 state keeps its configuration in an int16
// tensor, whose values the check reads once the pickle is scanned: `count`
// values, `stride` elements apart, from `byte_offset` of `record`.
struct ConvConfigTensor {
  std::string record, where;
  uint64_t byte_offset;
  int64_t count, stride, spatial, channels;
};

// The configuration values of a ConvPackedParamsBase state (versions 2 and 3
// of conv_serialization.h): kSpatialDim, then stride, padding, dilation and
// output padding (kSpatialDim each), groups and flags. False when LibTorch
// would refuse their number itself.
bool conv_config(const std::vector<int64_t>& v, int64_t spatial, int64_t channels, ConvParams* c) {
  if (static_cast<int64_t>(v.size()) != 4 * spatial + 3) return false;
  auto part = [&](int64_t i) {
    return std::vector<int64_t>(v.begin() + 1 + i * spatial, v.begin() + 1 + (i + 1) * spatial);
  };
  c->stride = part(0);
  c->padding = part(1);
  c->dilation = part(2);
  c->output_padding = part(3);
  c->groups = v[4 * spatial + 1];
  c->channels = channels;
  return true;
}

class PickleScan {
 public:
  // `tensor_dir`: the folder LibTorch reads this pickle's storages from.
  PickleScan(const std::string& bytes, const std::string& name, const std::string& tensor_dir,
             const Archive& archive)
      : b_(bytes),
        name_(name),
        tensor_dir_(tensor_dir),
        archive_(archive),
        debug_(ends_with(fold_case(name), ".debug_pkl")) {}

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
        if (debug_) check_source_ranges(stack_[0]);
        return storages_;
      }
      step(op, at);
    }
  }

  // The version-2 convolution configurations `run` found, to check against
  // their storage records.
  const std::vector<ConvConfigTensor>& conv_configs() const { return conv_configs_; }

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
  Item take_string(uint64_t n) {
    if (b_.size() - pos_ < n) bad("a string runs past the end");
    Item s = scalar(Item::Str);
    s.whole = n <= kMaxKeptString;
    s.str = b_.substr(pos_, std::min<uint64_t>(n, kMaxKeptString));
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
  // An empty list: in a debug pickle, one whose elements are followed.
  Item new_list() const {
    Item l = scalar(Item::Other);
    l.list = std::make_shared<ListInfo>();
    if (debug_) l.kind = Item::List;
    return l;
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
    int depth = 0, weight = 1;
    for (size_t i = from; i < stack_.size(); ++i) {
      depth = std::max(depth, stack_[i].depth);
      weight = std::min(weight + stack_[i].weight, kMaxKept + 1);
    }
    c.depth = depth + 1;
    const size_t n = stack_.size() - from;
    if (debug_ && kind == Item::Tuple) classify(&c, from);
    // Only small tuples keep their items (shared, so copies stay cheap); in a
    // debug pickle, the triples of its format always do.
    if (kind == Item::Tuple && n <= kMaxKeptTuple && (weight <= kMaxKept || (debug_ && n <= 3))) {
      c.weight = weight;
      c.parts = std::make_shared<const std::vector<Item>>(
          std::make_move_iterator(stack_.begin() + from), std::make_move_iterator(stack_.end()));
    }
    stack_.erase(stack_.begin() + from, stack_.end());
    return c;
  }
  // Items from `from` to the top go into the container just below them.
  void fill(size_t from, size_t at, bool pairs) {
    if (from == 0) bad("no container below the MARK", at);
    if (pairs && (stack_.size() - from) % 2 != 0) bad("an odd number of dict items", at);
    if (ListInfo* list = stack_[from - 1].list.get(); list && !pairs) {
      for (size_t i = from; i < stack_.size(); ++i) {
        const Item& x = stack_[i];
        if (list->head.size() < kMaxListHead &&
            static_cast<int64_t>(list->head.size()) == list->count &&
            (x.kind == Item::Int || x.kind == Item::Tensor || x.kind == Item::Nil)) {
          list->head.push_back(x);
        }
        if (x.kind != Item::Int) list->all_int = false;
        list->min = list->count == 0 ? x.num : std::min(list->min, x.num);
        list->max = list->count == 0 ? x.num : std::max(list->max, x.num);
        ++list->count;
      }
    }
    Item items = collect(from, Item::Other);
    Item& target = stack_.back();
    target.depth = std::max(target.depth, items.depth);
    if (target.depth > kMaxPickleDepth) bad("values nested too deeply", at);
  }

  // The debug shapes of the tuple `c` of the items from `from` to the top.
  void classify(Item* c, size_t from) {
    const Item* x = stack_.data() + from;  // not &stack_[from]: the tuple may be empty
    const size_t n = stack_.size() - from;
    c->num = static_cast<int64_t>(n);
    bool strings = true, records = true;
    auto inherit = [c](const Item& part) {
      c->uses_table |= part.uses_table;
      c->uses_text |= part.uses_text;
      c->tag_first |= part.tag_first;
      c->min_file = std::min(c->min_file, part.min_file);
      c->max_file = std::max(c->max_file, part.max_file);
    };
    for (size_t i = 0; i < n; ++i) {
      strings &= x[i].kind == Item::Str;
      records &= (x[i].debug & kRecord) != 0;
    }
    if (strings) c->debug |= kAllStrings;
    if (records) {
      c->debug |= kAllRecords;
      for (size_t i = 0; i < n; ++i) inherit(x[i]);
    }
    if (n == 3 && x[0].kind == Item::IntList && x[1].kind == Item::Int && x[2].kind == Item::Int) {
      c->debug |= kSourceTable;
      c->uses_table = true;
      c->min_file = c->max_file = x[1].num;
      source_lists_.push_back(x[0].list);
    }
    if (n == 3 && x[0].kind == Item::Str && (x[1].kind == Item::Str || x[1].kind == Item::Nil) &&
        x[2].kind == Item::Int) {
      c->debug |= kSourceText;
      c->uses_text = true;
    }
    if (n == 3 && (x[0].debug & (kSourceTable | kSourceText)) && x[1].kind == Item::Int &&
        x[2].kind == Item::Int) {
      c->debug |= kRange;
      inherit(x[0]);
    }
    if ((n == 2 || (n == 3 && x[2].kind == Item::Int)) && x[0].kind == Item::Int &&
        (x[1].debug & kRange)) {
      c->debug |= kRecord;
      inherit(x[1]);
    }
    // (byte offset, tag, range): the order PyTorch wrote for a while before
    // the text table (source_range_serialization.cpp at 05019ea). LibTorch
    // 1.13 reads the tag as the range and throws (inside an error message,
    // so the process aborts), but reads nothing out of bounds, and the file
    // loads and converts when its code has no error: accepted.
    if (n == 3 && x[0].kind == Item::Int && x[1].kind == Item::Int && (x[2].debug & kRange) &&
        !x[2].uses_table) {
      c->debug |= kRecord;
      inherit(x[2]);
      c->tag_first = true;
    }
  }

  // A debug pickle's value, as LibTorch 1.13's ConcreteSourceRangeUnpickler
  // (source_range_serialization.cpp) reads it when an error message
  // highlights the code: ('FORMAT_WITH_STRING_TABLE', (text, ...), records)
  // or, before PyTorch 1.11, records alone, where records are (byte offset,
  // (source, start, end)[, tag]) and a source is (text-table indices, file
  // index, line) or (text, file, line). It reads the first item without
  // looking whether there is one, and indexes its text table without a bounds
  // check; any other mismatch throws inside an error message that cannot
  // throw. Either way the process dies, so each is refused here.
  void check_source_ranges(const Item& top) {
    auto refuse = [&](const std::string& why) {
      archive_.malformed("its debug record '" + name_ + "' (the source ranges LibTorch reads " +
                         "when it reports an error in the code) " + why);
    };
    if (top.kind != Item::Tuple || top.num == 0) refuse("is not a non-empty tuple");
    const Item* records = &top;
    int64_t table = 0;
    const std::vector<Item>* p = tuple(top, 1);
    if (p && (*p)[0].kind == Item::Str && (*p)[0].whole &&
        (*p)[0].str == "FORMAT_WITH_STRING_TABLE") {
      if (p->size() < 3 || !((*p)[1].debug & kAllStrings))
        refuse("is not ('FORMAT_WITH_STRING_TABLE', a tuple of strings, source ranges)");
      table = (*p)[1].num;
      records = &(*p)[2];
    }
    if (!(records->debug & kAllRecords)) {
      refuse("holds something other than (byte offset, (source, start, end), tag) records");
    }
    if (table == 0) {  // no table (an empty one reads as none): sources are text
      if (records->uses_table) refuse("gives source text as text-table indices, with no table");
      return;
    }
    if (records->uses_text || records->tag_first)
      refuse("gives source text as a string, where its format has indices");
    const std::string of_table = " outside its text table of " + std::to_string(table) + " strings";
    if (records->uses_table && (records->min_file < 0 || records->max_file >= table)) {
      refuse("names a file by index " +
             std::to_string(records->min_file < 0 ? records->min_file : records->max_file) +
             of_table);
    }
    for (const std::shared_ptr<ListInfo>& list : source_lists_) {
      if (!list->all_int) refuse("has a list of text-table indices that are not all integers");
      if (list->count > 0 && (list->min < 0 || list->max >= table)) {
        refuse("has source text at index " + std::to_string(list->min < 0 ? list->min : list->max) +
               of_table);
      }
    }
  }

  // The items of a tuple the scan kept, at least `n` of them; null otherwise.
  static const std::vector<Item>* tuple(const Item& it, size_t n) {
    if (it.kind != Item::Tuple || !it.parts || it.parts->size() < n) return nullptr;
    return it.parts.get();
  }
  bool int_tuple(const Item& it, std::vector<int64_t>* out) const {
    const std::vector<Item>* p = tuple(it, 0);
    if (!p) return false;
    for (const Item& x : *p) {
      if (x.kind != Item::Int) return false;
      out->push_back(x.num);
    }
    return true;
  }

  // GLOBAL, as Unpickler::readGlobal: a table entry and its index on the
  // stack, or (storage types, quantization schemes) just an integer.
  void global(const std::string& module, const std::string& cls, size_t at) {
    if (skip_globals_ > 0 && --skip_globals_ == 0) {
      // The tensor type after _rebuild_from_type_v2's function: no entry.
      push(scalar(Item::Int, static_cast<int64_t>(globals_.size()) - 1), at);
      return;
    }
    Global g = Global::Class;
    auto is = [&](const char* m, std::initializer_list<const char*> names) {
      if (module != m) return false;
      for (const char* n : names)
        if (cls == n) return true;
      return false;
    };
    if (module == "__main__") {
      if (cls == "TensorID") {
        g = Global::TableTensor;
      } else if (cls == "IntList") {
        g = Global::Value;
      } else {
        bad("GLOBAL __main__." + cls + ", which TorchScript's unpickler does not know", at);
      }
    } else if (module == "torch.jit._pickle") {
      if (cls == "build_tensor_from_id") {
        g = Global::TableTensor;
      } else if (cls == "build_intlist") {
        g = Global::BuildIntList;
      } else if (cls == "restore_type_tag") {
        g = Global::TypeTag;
      } else if (cls == "build_tensorlist") {
        g = Global::BuildTensorList;
      } else if (is("torch.jit._pickle", {"build_doublelist", "build_boollist"})) {
        g = Global::Value;
      } else {
        bad("GLOBAL torch.jit._pickle." + cls + ", which TorchScript's unpickler does not know",
            at);
      }
    } else if (is("torch._utils", {"_rebuild_tensor_v2"})) {
      g = Global::Rebuild;
    } else if (is("torch._utils", {"_rebuild_qtensor"})) {
      g = Global::RebuildQuantized;
    } else if (is("torch._tensor", {"_rebuild_from_type_v2"})) {
      g = Global::FromTypeV2;
      skip_globals_ = 2;
    } else if (is("torch._utils", {"_rebuild_sparse_tensor"}) || is("builtins", {"complex"}) ||
               is("collections", {"OrderedDict"}) || is("torch", {"device"})) {
      g = Global::Value;
    } else if (module == "torch.distributed.rpc") {
      bad("GLOBAL torch.distributed.rpc." + cls + " (a remote reference; a model file holds none)",
          at);
    } else if (module == "torch") {
      for (int64_t i = 0; i < kNumScalarTypes; ++i) {
        if (cls == kScalarTypes[i].storage) return push(scalar(Item::Int, i), at);
      }
      for (int64_t i = 0; i < 5; ++i) {
        if (cls == kQSchemes[i]) return push(scalar(Item::Int, i), at);
      }
      bad("GLOBAL torch." + cls + ", which TorchScript's unpickler does not know", at);
    } else if (module == "__torch__.torch.classes.quantized") {
      if (cls == "Conv2dPackedParamsBase") g = Global::ConvPacked2d;
      if (cls == "Conv3dPackedParamsBase") g = Global::ConvPacked3d;
    }
    globals_.push_back(g);
    global_names_.push_back(module + "." + cls);
    push(scalar(Item::Int, static_cast<int64_t>(globals_.size()) - 1), at);
  }

  // REDUCE or BUILD of table entry `index` on `arg`, as the entry would.
  Item call(size_t index, const Item& arg, size_t at, int nesting) {
    switch (globals_[index]) {
      case Global::Rebuild:
        return rebuild(arg, false, at);
      case Global::RebuildQuantized:
        return rebuild(arg, true, at);
      case Global::FromTypeV2: {
        // (function, type, arguments, state): the function read after this
        // GLOBAL (the next table entry) rebuilds the tensor from `arguments`.
        const std::vector<Item>* p = tuple(arg, 4);
        if (!p) bad("_rebuild_from_type_v2 without (function, type, arguments, state)", at);
        if (index + 1 >= globals_.size() || nesting > 8)
          bad("_rebuild_from_type_v2 with no function read after it", at);
        return call(index + 1, (*p)[2], at, nesting + 1);
      }
      case Global::TableTensor: {
        Item t = scalar(Item::Tensor);
        t.storage_bytes = -1;
        return t;
      }
      case Global::TypeTag:
        if (const std::vector<Item>* p = tuple(arg, 1)) return (*p)[0];
        return scalar(Item::Other);
      case Global::Class:
      case Global::ConvPacked2d:
      case Global::ConvPacked3d:
        return scalar(Item::Object);
      case Global::BuildIntList:
      case Global::BuildTensorList:
        // The list (arguments[0]) becomes a List[int] or List[Tensor],
        // without a look at its elements: the same list, shared.
        if (const std::vector<Item>* p = tuple(arg, 1); p && (*p)[0].list) {
          Item l = scalar(globals_[index] == Global::BuildIntList ? Item::IntList : Item::Other);
          l.list = (*p)[0].list;
          return l;
        }
        return scalar(Item::Other);
      case Global::Value:
        break;
    }
    return scalar(Item::Other);
  }

  // BUILD of an object of table entry `index` from `state`. A quantized
  // convolution's parameters are packed while LibTorch loads, and it divides
  // by them (check_conv): the state of PyTorch's quantized convolution
  // modules (_ConvNd.__getstate__ of torch/ao/nn/quantized/modules/conv.py,
  // known by its form, whatever its class is called), and the state of
  // ConvPackedParamsBase (conv_serialization.h), which torch.jit.freeze keeps.
  void check_state(size_t index, const Item& state) {
    const Global g = globals_[index];
    auto where = [&](const char* what) {
      std::string s = "its pickle '" + name_ + "' holds " + what;
      if (!stack_.empty() && stack_.back().kind == Item::Str && stack_.back().whole &&
          stack_.back().str.size() <= 200) {
        s += " '" + stack_.back().str + "'";
      }
      return s + " (class " + global_names_[index] + ")";
    };
    ConvParams c;
    const std::vector<Item>* p = tuple(state, 3);
    if (g == Global::Class) {
      // (in_channels, out_channels, kernel_size, stride, padding, dilation,
      // transposed, output_padding, groups, padding_mode, weight, bias, scale,
      // zero_point, training)
      if (!p || p->size() != 15 || (*p)[8].kind != Item::Int || (*p)[9].kind != Item::Str ||
          (*p)[10].kind != Item::Tensor || !int_tuple((*p)[3], &c.stride) ||
          !int_tuple((*p)[4], &c.padding) || !int_tuple((*p)[5], &c.dilation) ||
          !int_tuple((*p)[7], &c.output_padding)) {
        return;
      }
      c.groups = (*p)[8].num;
      c.channels = (*p)[10].size0;
      check_conv(c, where("a quantized convolution"), archive_);
      return;
    }
    if ((g != Global::ConvPacked2d && g != Global::ConvPacked3d) || !p) return;
    const int64_t spatial = g == Global::ConvPacked2d ? 2 : 3;
    const ListInfo* first = (*p)[1].list.get();
    const ListInfo* second = (*p)[2].list.get();
    const Item& version = (*p)[0];
    auto tensor = [](const ListInfo* l, size_t i) {
      return l && l->head.size() > i && l->head[i].kind == Item::Tensor ? &l->head[i] : nullptr;
    };
    if (version.kind == Item::Int && version.num == 3 && first &&
        static_cast<int64_t>(first->head.size()) == first->count) {
      // (3, configuration values, [None, weight, bias])
      std::vector<int64_t> v;
      for (const Item& x : first->head) {
        if (x.kind != Item::Int) return;
        v.push_back(x.num);
      }
      const Item* weight = tensor(second, 1);
      if (conv_config(v, spatial, weight ? weight->size0 : -1, &c)) {
        check_conv(c, where("the packed parameters of a quantized convolution"), archive_);
      }
    } else if (version.kind == Item::Str && version.whole && version.str == "2") {
      // ("2", [configuration values as an int16 tensor, weight], [bias])
      const Item* config = tensor(first, 0);
      const Item* weight = tensor(first, 1);
      if (!config || config->scalar_type != 2 || config->dims != 1 || config->size0 <= 0) return;
      conv_configs_.push_back({config->storage,
                               where("the packed parameters of a quantized convolution"),
                               static_cast<uint64_t>(config->offset) * 2, config->size0,
                               config->stride0, spatial, weight ? weight->size0 : -1});
    }
  }

  // _rebuild_tensor_v2(storage, offset, sizes, strides, requires_grad, hooks)
  // and _rebuild_qtensor(storage, offset, sizes, strides, qparams, ...): LibTorch
  // sets the sizes and strides without a check, so the check is here.
  Item rebuild(const Item& arg, bool quantized, size_t at) {
    const std::string fn = quantized ? "_rebuild_qtensor" : "_rebuild_tensor_v2";
    const std::vector<Item>* p = tuple(arg, quantized ? 6 : 5);
    std::vector<int64_t> sizes, strides;
    if (!p || (*p)[1].kind != Item::Int || !int_tuple((*p)[2], &sizes) ||
        !int_tuple((*p)[3], &strides) || sizes.size() != strides.size()) {
      bad(fn + " without (storage, offset, sizes, strides, ...) arguments", at);
    }
    const Item& storage = (*p)[0];
    if (storage.kind != Item::Tensor) bad(fn + " of something that is not a storage", at);
    if (storage.storage_bytes < 0) bad(fn + " of a tensor from the legacy tensor table", at);
    const int64_t offset = (*p)[1].num;
    const std::string tensor = tensor_name();
    auto lie = [&](const std::string& why) {
      archive_.malformed("tensor " + tensor + " of its pickle '" + name_ + "' (sizes " +
                         join(sizes) + ", strides " + join(strides) + ", storage offset " +
                         std::to_string(offset) + ", over storage record '" + storage.storage +
                         "' of " + std::to_string(storage.storage_bytes) + " bytes) " + why);
    };
    if (offset < 0) lie("has a negative storage offset");
    int64_t numel = 1, last = offset;  // last: the highest element index it reaches
    bool empty = false, overflow = false;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] < 0 || strides[i] < 0) lie("has a negative size or stride");
      if (sizes[i] == 0) empty = true;
      int64_t reach;
      overflow |= __builtin_mul_overflow(sizes[i] == 0 ? 0 : sizes[i] - 1, strides[i], &reach) ||
                  __builtin_add_overflow(last, reach, &last);
      if (__builtin_mul_overflow(numel, sizes[i], &numel)) numel = INT64_MAX;
    }
    int64_t need = 0;  // bytes the tensor reads from its storage
    if (!empty && (overflow || __builtin_add_overflow(last, 1, &last) ||
                   __builtin_mul_overflow(last, storage.item_size, &need))) {
      lie("reaches past 2^63 bytes");
    }
    if (need > storage.storage_bytes) {
      lie("reaches " + std::to_string(need) + " bytes into its storage: past its end");
    }
    if (quantized) check_qparams((*p)[4], sizes, lie);
    Item t = storage;
    t.depth = arg.depth + 1;
    t.numel = empty ? 0 : numel;
    t.offset = offset;
    t.dims = static_cast<int64_t>(sizes.size());
    t.size0 = sizes.empty() ? -1 : sizes[0];
    t.stride0 = strides.empty() ? 0 : strides[0];
    return t;
  }

  // Per-channel quantizer parameters: one scale and zero point per channel of
  // the axis, read later without a check.
  template <typename Lie>
  void check_qparams(const Item& qparams, const std::vector<int64_t>& sizes, Lie& lie) {
    const std::vector<Item>* q = tuple(qparams, 1);
    if (!q || (*q)[0].kind != Item::Int) lie("has quantizer parameters the check cannot read");
    const int64_t scheme = (*q)[0].num;
    if (scheme == 0 || scheme == 2) return;  // per tensor: a scale and a zero point
    if (scheme != 1 && scheme != 3 && scheme != 4) lie("has an unknown quantization scheme");
    q = tuple(qparams, 4);
    if (!q || (*q)[1].kind != Item::Tensor || (*q)[2].kind != Item::Tensor ||
        (*q)[3].kind != Item::Int) {
      lie("has per-channel parameters that are not (scheme, scales, zero points, axis)");
    }
    const int64_t axis = (*q)[3].num;
    if (axis < 0 || axis >= static_cast<int64_t>(sizes.size()))
      lie("has its channel axis out of range");
    for (const Item* t : {&(*q)[1], &(*q)[2]}) {
      if (t->storage_bytes < 0 || t->numel < sizes[axis])
        lie("has fewer per-channel scales or zero points than channels");
    }
  }

  // The attribute name just below a tensor being rebuilt (a state dict's key),
  // or its number in the pickle.
  std::string tensor_name() {
    ++tensors_;
    if (!stack_.empty() && stack_.back().kind == Item::Str && stack_.back().whole &&
        stack_.back().str.size() <= 200) {
      return "'" + stack_.back().str + "'";
    }
    return "#" + std::to_string(tensors_);
  }

  // BINPERSID of ('storage', scalar type, key, device, numel[, view metadata]):
  // the whole storage as a tensor of its scalar type. PyTorch 1.3 to 1.5 wrote
  // a sixth item (None).
  Item storage(const Item& ref, size_t at) {
    const std::vector<Item>* p = tuple(ref, 5);
    if (!p || (*p)[0].kind != Item::Str || (*p)[0].str != "storage" || (*p)[1].kind != Item::Int ||
        (*p)[2].kind != Item::Str || !(*p)[2].whole || (*p)[3].kind != Item::Str ||
        (*p)[4].kind != Item::Int) {
      bad("a storage reference that is not ('storage', type, key, device, numel)", at);
    }
    const int64_t type = (*p)[1].num, numel = (*p)[4].num;
    if (type < 0 || type >= kNumScalarTypes) bad("a storage of an unknown scalar type", at);
    const int64_t item_size = kScalarTypes[type].size;
    const std::string& key = (*p)[2].str;
    if (numel < 0 || numel > (int64_t{1} << 50) / item_size) {
      archive_.malformed("its pickle '" + name_ + "' declares storage '" + key + "' of " +
                         std::to_string(numel) + " elements");
    }
    Item t = scalar(Item::Tensor);
    t.storage_bytes = numel * item_size;
    t.item_size = item_size;
    t.numel = numel;
    t.storage = tensor_dir_ + key;
    t.scalar_type = type;
    storages_.push_back({key, static_cast<uint64_t>(t.storage_bytes)});
    return t;
  }

  void step(unsigned char op, size_t at) {
    switch (op) {
      case '(':  // MARK
        marks_.push_back(stack_.size());
        break;
      case ']':  // EMPTY_LIST
        push(new_list(), at);
        break;
      case '}':  // EMPTY_DICT
        push(scalar(Item::Other), at);
        break;
      case ')':  // EMPTY_TUPLE
        push(collect(stack_.size(), Item::Tuple), at);
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
        push(scalar(Item::Other), at);
        break;
      case 'N':  // NONE
        push(scalar(Item::Nil), at);
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
      case 'X':  // BINUNICODE
        push(take_string(take(4)), at);
        break;
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
      case 'l': {  // LIST
        const size_t m = take_mark(at);
        push(new_list(), at);
        std::rotate(stack_.begin() + m, stack_.end() - 1, stack_.end());
        fill(m + 1, at, false);
        break;
      }
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
        global(module, cls, at);
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
        const char* what = op == 'R' ? "REDUCE" : "BUILD";
        if (fn.kind != Item::Int) bad(std::string(what) + " without a GLOBAL to call", at);
        if (fn.num < 0 || static_cast<uint64_t>(fn.num) >= globals_.size()) {
          bad(std::string(what) + " of GLOBAL #" + std::to_string(fn.num) +
                  ", which was never read",
              at);
        }
        if (op == 'b') check_state(static_cast<size_t>(fn.num), arg);
        Item result = call(static_cast<size_t>(fn.num), arg, at, 0);
        result.depth = std::max(result.depth, arg.depth + 1);
        push(std::move(result), at);
        break;
      }
      case 'Q': {  // BINPERSID
        need(1, at);
        Item ref = pop();
        push(storage(ref, at), at);
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
  const std::string tensor_dir_;
  const Archive& archive_;
  const bool debug_;  // a code/*.debug_pkl: its value is checked against its format
  std::vector<std::shared_ptr<ListInfo>> source_lists_;  // the text-table index lists
  size_t pos_ = 0;
  std::vector<Item> stack_;
  std::vector<size_t> marks_;
  std::vector<Item> memo_;
  std::vector<Global> globals_;
  std::vector<std::string> global_names_;  // "module.class", as globals_
  int skip_globals_ = 0;
  int tensors_ = 0;
  std::vector<StorageRef> storages_;
  std::vector<ConvConfigTensor> conv_configs_;
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

// A class body's `name = value` without a type: LibTorch 1.13's importer
// (import_source.cpp) takes every assignment in a class other than
// __parameters__, __buffers__, __forward_pre_hooks__ and __forward_hooks__ for
// a constant `name : Final[T] = value` and reads its type without looking
// whether there is one: it reads memory it does not own (fuzz_archive saw
// SIGSEGV under AddressSanitizer; without it the read happens to end in "is
// an Atom"; docs/reliability.md). TorchScript's printer writes such lines only
// in enum classes (`class Color(Enum):`), which take another path.
void check_class_assignments(const std::string& src, const std::string& name,
                             const Archive& archive) {
  static const std::set<std::string> kSpecial = {"__parameters__", "__buffers__",
                                                 "__forward_pre_hooks__", "__forward_hooks__"};
  int depth = 0, line_no = 0;
  bool in_class = false, enum_class = false;
  size_t class_indent = 0, body_indent = std::string::npos;
  for (size_t begin = 0; begin < src.size();) {
    size_t end = src.find('\n', begin);
    if (end == std::string::npos) end = src.size();
    const std::string line = src.substr(begin, end - begin);
    begin = end + 1;
    ++line_no;
    const size_t indent = line.find_first_not_of(' ');
    const bool continued = depth > 0;
    // Brackets opened on this line (outside strings and comments).
    for (size_t i = 0; i < line.size(); ++i) {
      char c = line[i];
      if (c == '#') break;
      if (c == '"' || c == '\'') {
        for (++i; i < line.size() && line[i] != c; ++i) {
          if (line[i] == '\\') ++i;
        }
      } else if (c == '(' || c == '[' || c == '{') {
        ++depth;
      } else if ((c == ')' || c == ']' || c == '}') && depth > 0) {
        --depth;
      }
    }
    if (continued || indent == std::string::npos || line[indent] == '#') continue;
    if (in_class && indent <= class_indent) in_class = false;
    if (line.compare(indent, 6, "class ") == 0) {
      in_class = true;
      enum_class = line.find("(Enum)") != std::string::npos;
      class_indent = indent;
      body_indent = std::string::npos;
      continue;
    }
    if (!in_class || enum_class) continue;
    if (body_indent == std::string::npos) body_indent = indent;
    if (indent != body_indent) continue;
    // `target = value`: an '=' (not '==') before any ':', '[' or '(' (any
    // bytes in the target: the fuzzer's `__parameter\xff__ = []` is one).
    const size_t op = line.find_first_of(":=[(", indent);
    if (op == std::string::npos || line[op] != '=' || line.compare(op, 2, "==") == 0) continue;
    const size_t last = line.find_last_not_of(' ', op - 1);
    if (last == std::string::npos || last < indent) continue;
    const std::string target = line.substr(indent, last + 1 - indent);
    if (kSpecial.count(target)) continue;
    archive.malformed(
        "its code '" + name + "' gives class attribute '" + target + "' (line " +
        std::to_string(line_no) +
        ") a value without a type; TorchScript writes `name : Final[type] = value`, and "
        "LibTorch 1.13's importer can read memory it does not own on such a line");
  }
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
  // Records are keyed as LibTorch finds them: by name with case folded (so
  // 'A/data.pkl' is the data.pkl of an archive whose first record is 'a/0').
  const std::string prefix = fold_case(first.substr(0, slash + 1));
  std::map<std::string, const Entry*> records;
  for (const Entry& e : entries) {
    const std::string folded = fold_case(e.name);
    if (folded.compare(0, prefix.size(), prefix) != 0) continue;
    auto [it, added] = records.emplace(folded.substr(prefix.size()), &e);
    if (!added) {
      archive.malformed("it holds records '" + it->second->name + "' and '" + e.name +
                        "', whose names differ only in case; LibTorch's zip reader ignores case "
                        "when it looks a record up, so which one it reads is not defined");
    }
  }
  // PyTorch 1.0 to 1.2 wrote model.json (a protobuf ModelDef as JSON, naming
  // tensors/<n>, attributes.pkl and the code's records). LibTorch 1.13 takes
  // any archive that holds model.json to its legacy importer (import.cpp),
  // which Debian's build leaves out: it says "Legacy model format is not
  // supported on mobile". Such a file is old, not damaged.
  if (records.count("model.json")) {
    archive.fail(
        "was saved in the layout of PyTorch 1.0, 1.1 or 1.2 (a 'model.json' record; PyTorch "
        "1.3 replaced it with data.pkl), which this build of LibTorch 1.13 cannot load: it has "
        "no importer for that layout. Load the model in a PyTorch that still reads it and save "
        "it again with torch.jit.save from PyTorch 1.5 or later, then convert the new file");
  }
  // The lite interpreter's loader (torch/csrc/jit/mobile/import.cpp) reads
  // bytecode.pkl's storages from bytecode/ when any record's name holds
  // "bytecode/" (bytecode version 4), else from constants/, where
  // _save_for_lite_interpreter puts the tensors it shares with constants.pkl
  // (bytecode version 5 on). Every other pickle's are in the folder of its name.
  const bool bytecode_folder = std::any_of(records.begin(), records.end(), [](const auto& r) {
    return r.first.find("bytecode/") != std::string::npos;
  });
  for (const auto& [key, entry] : records) {
    // _extra_files are the user's bytes, which no loader unpickles.
    if (key.compare(0, 6, "extra/") == 0) continue;
    const std::string name = entry->name.substr(prefix.size());  // for messages
    if (ends_with(key, ".pkl") || ends_with(key, ".debug_pkl")) {
      std::string bytes = archive.read(*entry);
      std::string folder = name.substr(0, name.rfind('.'));
      if (key == "bytecode.pkl" && !bytecode_folder) folder = "constants";
      PickleScan scan(bytes, name, folder + "/", archive);
      std::vector<StorageRef> storages = scan.run(key == "data.pkl");
      for (const StorageRef& s : storages) {
        if (s.bytes == 0) continue;  // LibTorch reads no record for an empty storage
        const std::string record = folder + "/" + s.key;
        auto it = records.find(fold_case(record));
        if (it == records.end()) {
          archive.malformed("its pickle '" + name + "' refers to storage record '" + record +
                            "', which is missing");
        }
        if (it->second->method != 0) {
          archive.malformed("storage record '" + record +
                            "' is compressed; torch.jit.save stores tensor data uncompressed "
                            "(re-save the model with torch.jit.save)");
        }
        if (it->second->size < s.bytes) {
          archive.malformed("storage record '" + record + "' holds " +
                            std::to_string(it->second->size) + " bytes, but its pickle '" + name +
                            "' declares " + std::to_string(s.bytes));
        }
      }
      // Storage records are whole now: the int16 configurations they hold.
      for (const ConvConfigTensor& t : scan.conv_configs()) {
        const std::string data = archive.read(*records.at(fold_case(t.record)));
        std::vector<int64_t> v;
        for (int64_t i = 0; i < t.count; ++i) {
          const uint64_t at = t.byte_offset + 2 * static_cast<uint64_t>(i * t.stride);
          v.push_back(static_cast<int16_t>(static_cast<unsigned char>(data[at]) |
                                           static_cast<unsigned char>(data[at + 1]) << 8));
        }
        ConvParams c;
        if (conv_config(v, t.spatial, t.channels, &c)) check_conv(c, t.where, archive);
      }
    } else if (key.compare(0, 5, "code/") == 0 && ends_with(key, ".py")) {
      const std::string code = archive.read(*entry);
      check_code(code, name, archive);
      check_class_assignments(code, name, archive);
    }
  }
}

}  // namespace nnapi_convert
