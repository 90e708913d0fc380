// Strict parser of PyTorch's serialized NNAPI model blob; see blob.h for the
// layout. Every check the device loader (nnapi_model_loader.cpp) makes is made
// here too, plus the ones NNAPI itself would make when the model is built and
// a few that only a corrupted blob can fail (trailing bytes, padding).
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <type_traits>
#include <utility>

#include "nnapi_convert/blob.h"

namespace nnapi_convert {

namespace {

constexpr size_t kHeaderBytes = 24;
constexpr size_t kOperandBytes = 16;
constexpr size_t kValueBytes = 12;
constexpr size_t kOperationBytes = 12;
// The device loader rejects any count at or above this, to avoid overflow.
constexpr int32_t kCountLimit = 1 << 24;

template <typename... Args>
[[noreturn]] void fail(Args&&... args) {
  std::ostringstream s;
  (s << ... << std::forward<Args>(args));
  throw BlobError(s.str());
}

uint32_t load_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

int32_t load_i32(const uint8_t* p) {
  uint32_t u = load_u32(p);
  int32_t i;
  std::memcpy(&i, &u, sizeof i);
  return i;
}

float load_f32(const uint8_t* p) {
  uint32_t u = load_u32(p);
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// What a check is about, for its message: a string, or a callable that makes
// one, so that the text is built only when the check fails.
template <typename What>
std::string what_text(const What& what) {
  if constexpr (std::is_invocable_v<const What&>) {
    return what();
  } else {
    return std::string(what);
  }
}

// Stored size of a value: its length rounded up to a multiple of 4.
uint64_t physical_size(uint32_t len) { return (static_cast<uint64_t>(len) + 3) & ~uint64_t{3}; }

std::string dims_text(const std::vector<uint32_t>& dims) {
  std::ostringstream s;
  s << '[';
  for (size_t i = 0; i < dims.size(); ++i) s << (i ? ", " : "") << dims[i];
  s << ']';
  return s.str();
}

bool is_scalar_type(nnapi::OperandType t) {
  switch (t) {
    case nnapi::OperandType::Float32:
    case nnapi::OperandType::Int32:
    case nnapi::OperandType::UInt32:
    case nnapi::OperandType::Bool:
    case nnapi::OperandType::Float16:
      return true;
    default:
      return false;
  }
}

int scalar_size(nnapi::OperandType t) {
  switch (t) {
    case nnapi::OperandType::Float32:
    case nnapi::OperandType::Int32:
    case nnapi::OperandType::UInt32:
      return 4;
    case nnapi::OperandType::Float16:
      return 2;
    case nnapi::OperandType::Bool:
      return 1;
    default:
      return 0;
  }
}

// The quantization parameters NNAPI accepts for each operand type
// (ANeuralNetworksModel_addOperand rejects the others).
void check_quant_params(const BlobOperand& op, size_t index, size_t offset) {
  const float s = op.scale;
  const int32_t z = op.zero_point;
  if (!std::isfinite(s))
    fail("operand ", index, " (byte offset ", offset, "): scale is not finite");
  auto need_positive_scale = [&] {
    if (!(s > 0.0f))
      fail("operand ", index, " (byte offset ", offset, "): ", nnapi::operand_type_name(op.type),
           " needs a positive scale, got ", s);
  };
  auto zero_point_range = [&](int64_t lo, int64_t hi) {
    if (z < lo || z > hi)
      fail("operand ", index, " (byte offset ", offset + 12,
           "): ", nnapi::operand_type_name(op.type), " zero point ", z, " is outside [", lo, ", ",
           hi, "]");
  };
  switch (op.type) {
    case nnapi::OperandType::TensorQuant8Asymm:
      need_positive_scale();
      zero_point_range(0, 255);
      break;
    case nnapi::OperandType::TensorQuant16Symm:
    case nnapi::OperandType::TensorQuant8Symm:
      need_positive_scale();
      zero_point_range(0, 0);
      break;
    case nnapi::OperandType::TensorQuant16Asymm:
      need_positive_scale();
      zero_point_range(0, 65535);
      break;
    case nnapi::OperandType::TensorInt32:
      // A quantized bias (qint32) carries a scale; plain int32 tensors have 0.
      if (s < 0.0f) fail("operand ", index, " (byte offset ", offset, "): negative scale ", s);
      break;
    default:
      // Float, bool and scalar types (and per-channel quant8, whose
      // parameters live elsewhere) take no quantization parameters.
      if (s != 0.0f || z != 0)
        fail("operand ", index, " (byte offset ", offset, "): ", nnapi::operand_type_name(op.type),
             " must have scale 0 and zero point 0, got scale ", s, " and zero point ", z);
      break;
  }
}

class Parser {
 public:
  Parser(const uint8_t* data, size_t size, const std::vector<int64_t>* weight_sizes)
      : data_(data), size_(size), weights_(weight_sizes) {}

  Blob run() {
    read_header();
    read_operand_table();
    read_value_table();
    read_operation_table();
    read_dims();
    read_value_data();
    read_operation_args();
    read_model_io();
    if (pos_ != size_)
      fail(size_ - pos_, " trailing byte(s) after the model outputs, starting at byte offset ",
           pos_, " (blob has ", size_, " bytes, the model ends at ", pos_, ")");
    return std::move(blob_);
  }

 private:
  // Fails unless `bytes` more bytes are available at pos_.
  template <typename What>
  void need(uint64_t bytes, const What& what) const {
    if (bytes > size_ - pos_)
      fail(what_text(what), " needs ", bytes, " bytes at byte offset ", pos_,
           " but the blob ends at byte ", size_);
  }

  int32_t word_at(size_t offset) const { return load_i32(data_ + offset); }

  void read_header() {
    if (size_ < kHeaderBytes)
      fail("truncated header: the blob has ", size_, " bytes but the header needs ", kHeaderBytes,
           " (byte offset 0)");
    blob_.version = word_at(0);
    if (blob_.version != 1)
      fail("unsupported version ", blob_.version, " at byte offset 0 (expected 1)");
    static const char* const names[5] = {"operand", "value", "operation", "input", "output"};
    for (int i = 0; i < 5; ++i) {
      const int32_t c = word_at(4 + 4 * i);
      if (c < 0) fail("negative ", names[i], " count ", c, " in header at byte offset ", 4 + 4 * i);
      if (c >= kCountLimit)
        fail(names[i], " count ", c, " in header at byte offset ", 4 + 4 * i,
             " exceeds the loader's limit of ", kCountLimit);
      counts_[i] = c;
    }
    pos_ = kHeaderBytes;
    // Everything with a fixed size per item must fit before anything is
    // allocated; this bounds every vector below by the blob length.
    const uint64_t fixed =
        kHeaderBytes + uint64_t{kOperandBytes} * counts_[0] + uint64_t{kValueBytes} * counts_[1] +
        uint64_t{kOperationBytes} * counts_[2] + uint64_t{4} * (uint64_t(counts_[3]) + counts_[4]);
    if (fixed > size_)
      fail("header counts (", counts_[0], " operands, ", counts_[1], " values, ", counts_[2],
           " operations, ", counts_[3], " inputs, ", counts_[4],
           " outputs, header at byte offsets 4-23) need at least ", fixed,
           " bytes but the blob has ", size_);
  }

  void read_operand_table() {
    const size_t n = static_cast<size_t>(counts_[0]);
    need(uint64_t{kOperandBytes} * n, "operand table");
    blob_.operands.resize(n);
    ranks_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      const size_t off = pos_ + kOperandBytes * i;
      BlobOperand& op = blob_.operands[i];
      const int32_t type = word_at(off);
      if (!nnapi::operand_type_name_or_null(type))
        fail("operand ", i, " (byte offset ", off, "): unknown operand type ", type);
      op.type = static_cast<nnapi::OperandType>(type);
      const int32_t rank = word_at(off + 4);
      if (rank < 0) fail("operand ", i, " (byte offset ", off + 4, "): negative rank ", rank);
      if (rank != 0 && is_scalar_type(op.type))
        fail("operand ", i, " (byte offset ", off + 4, "): scalar type ",
             nnapi::operand_type_name(op.type), " has rank ", rank, " (must be 0)");
      ranks_[i] = static_cast<uint32_t>(rank);
      required_ += uint64_t{4} * ranks_[i];
      if (required_ > size_)
        fail("operand ", i, " (byte offset ", off + 4, "): rank ", rank,
             " makes the dimension lists longer than the blob (", size_, " bytes)");
      op.scale = load_f32(data_ + off + 8);
      op.zero_point = word_at(off + 12);
      check_quant_params(op, i, off + 8);
    }
    pos_ += kOperandBytes * n;
  }

  void read_value_table() {
    const size_t n = static_cast<size_t>(counts_[1]);
    need(uint64_t{kValueBytes} * n, "value table");
    blob_.values.resize(n);
    for (size_t v = 0; v < n; ++v) {
      const size_t off = pos_ + kValueBytes * v;
      BlobValue& val = blob_.values[v];
      val.operand = word_at(off);
      if (val.operand < 0 || val.operand >= counts_[0])
        fail("value ", v, " (byte offset ", off, ") refers to operand ", val.operand,
             ", out of range (there are ", counts_[0], " operands)");
      const int32_t source = word_at(off + 4);
      switch (source) {
        case static_cast<int32_t>(nnapi::ValueSource::Immediate):
        case static_cast<int32_t>(nnapi::ValueSource::NumberedBuffer):
          break;
        case static_cast<int32_t>(nnapi::ValueSource::NumberedMemory):
          fail("value ", v, " (byte offset ", off + 4, ", operand ", val.operand,
               "): numbered memory (source type 3) is not implemented by the device loader");
        default:
          fail("value ", v, " (byte offset ", off + 4, ", operand ", val.operand,
               "): unknown source type ", source);
      }
      val.source = static_cast<nnapi::ValueSource>(source);
      const int32_t len = word_at(off + 8);
      if (len < 0)
        fail("value ", v, " (byte offset ", off + 8, ", operand ", val.operand,
             "): negative source length ", len);
      if (val.source == nnapi::ValueSource::NumberedBuffer && len != 12)
        fail("value ", v, " (byte offset ", off + 8, ", operand ", val.operand,
             "): a numbered-buffer value must have length 12, got ", len);
      val.length = static_cast<uint32_t>(len);
      required_ += physical_size(val.length);
      if (required_ > size_)
        fail("value ", v, " (byte offset ", off + 8, ", operand ", val.operand, "): source length ",
             len, " runs past the end of the blob (", size_, " bytes)");
    }
    pos_ += kValueBytes * n;
  }

  void read_operation_table() {
    const size_t n = static_cast<size_t>(counts_[2]);
    need(uint64_t{kOperationBytes} * n, "operation table");
    blob_.operations.resize(n);
    arg_counts_.resize(n);
    for (size_t k = 0; k < n; ++k) {
      const size_t off = pos_ + kOperationBytes * k;
      BlobOperation& op = blob_.operations[k];
      op.opcode = word_at(off);
      if (!nnapi::op_name_or_null(op.opcode))
        fail("operation ", k, " (byte offset ", off, "): unknown operation code ", op.opcode);
      const int32_t in = word_at(off + 4);
      const int32_t out = word_at(off + 8);
      if (in < 0)
        fail("operation ", k, " (", nnapi::op_name(static_cast<nnapi::Op>(op.opcode)),
             ", byte offset ", off + 4, "): negative input count ", in);
      if (out < 0)
        fail("operation ", k, " (", nnapi::op_name(static_cast<nnapi::Op>(op.opcode)),
             ", byte offset ", off + 8, "): negative output count ", out);
      arg_counts_[k] = {static_cast<uint32_t>(in), static_cast<uint32_t>(out)};
      required_ += uint64_t{4} * (uint64_t(in) + uint64_t(out));
      if (required_ > size_)
        fail("operation ", k, " (", nnapi::op_name(static_cast<nnapi::Op>(op.opcode)),
             ", byte offset ", off + 4, "): ", in, " inputs and ", out,
             " outputs run past the end of the blob (", size_, " bytes)");
    }
    pos_ += kOperationBytes * n;
    // Same total the device loader computes before reading the variable part.
    required_ += pos_ + uint64_t{4} * (uint64_t(counts_[3]) + counts_[4]);
    if (required_ > size_)
      fail("the operand, value and operation tables (ending at byte offset ", pos_,
           ") describe a model of ", required_, " bytes but the blob has only ", size_);
  }

  void read_dims() {
    for (size_t i = 0; i < blob_.operands.size(); ++i) {
      const uint32_t rank = ranks_[i];
      need(uint64_t{4} * rank, [&] { return "dimensions of operand " + std::to_string(i); });
      auto& dims = blob_.operands[i].dims;
      dims.resize(rank);
      for (uint32_t d = 0; d < rank; ++d) {
        const int32_t dim = word_at(pos_);
        if (dim < 0)
          fail("operand ", i, " dimension ", d, " (byte offset ", pos_, "): negative size ", dim);
        dims[d] = static_cast<uint32_t>(dim);
        pos_ += 4;
      }
    }
  }

  void read_value_data() {
    for (size_t v = 0; v < blob_.values.size(); ++v) {
      BlobValue& val = blob_.values[v];
      const size_t idx = static_cast<size_t>(val.operand);
      BlobOperand& op = blob_.operands[idx];
      const uint64_t phys = physical_size(val.length);
      need(phys, [&] {
        return "data of value " + std::to_string(v) + " (operand " + std::to_string(idx) + ")";
      });
      val.data_offset = pos_;
      const uint8_t* p = data_ + pos_;
      if (op.value >= 0)
        fail("value ", v, " (byte offset ", pos_, ") sets operand ", idx, " again; value ",
             op.value, " already set it");
      op.value = static_cast<int32_t>(v);
      uint64_t value_bytes = 0;
      if (val.source == nnapi::ValueSource::Immediate) {
        val.immediate.assign(p, p + val.length);
        for (uint64_t b = val.length; b < phys; ++b)
          if (p[b] != 0)
            fail("value ", v, " (operand ", idx, "): non-zero padding byte at byte offset ",
                 pos_ + b);
        value_bytes = val.length;
      } else {
        const int32_t buffer = load_i32(p);
        const int32_t offset = load_i32(p + 4);
        const int32_t length = load_i32(p + 8);
        if (buffer < 0)
          fail("value ", v, " (byte offset ", pos_, ", operand ", idx,
               "): negative weight buffer number ", buffer);
        if (offset < 0)
          fail("value ", v, " (byte offset ", pos_ + 4, ", operand ", idx,
               "): negative weight buffer offset ", offset);
        if (length < 0)
          fail("value ", v, " (byte offset ", pos_ + 8, ", operand ", idx,
               "): negative weight length ", length);
        val.buffer = static_cast<uint32_t>(buffer);
        val.buffer_offset = static_cast<uint32_t>(offset);
        val.buffer_length = static_cast<uint32_t>(length);
        if (weights_) {
          if (static_cast<size_t>(buffer) >= weights_->size())
            fail("value ", v, " (byte offset ", pos_, ", operand ", idx,
                 ") refers to weight buffer ", buffer, " but only ", weights_->size(),
                 " weight buffer(s) are given");
          const int64_t have = (*weights_)[static_cast<size_t>(buffer)];
          const int64_t end = int64_t{offset} + int64_t{length};
          if (end > have)
            fail("value ", v, " (byte offset ", pos_ + 4, ", operand ", idx, "): bytes [", offset,
                 ", ", end, ") run past the end of weight buffer ", buffer, " (", have, " bytes)");
        }
        value_bytes = val.buffer_length;
      }
      const int64_t expected = operand_byte_size(op.type, op.dims);
      if (expected < 0)
        fail("value ", v, " (byte offset ", pos_, "): constant operand ", idx, " of type ",
             nnapi::operand_type_name(op.type), " has flexible or unspecified dimensions ",
             dims_text(op.dims));
      if (static_cast<uint64_t>(expected) != value_bytes)
        fail("value ", v, " (byte offset ", pos_, "): operand ", idx, " (",
             nnapi::operand_type_name(op.type), " ", dims_text(op.dims), ") needs ", expected,
             " bytes but its value has ", value_bytes);
      pos_ += phys;
    }
  }

  template <typename What>
  uint32_t read_operand_index(const What& what) {
    const int32_t i = word_at(pos_);
    if (i < 0 || i >= counts_[0])
      fail(what_text(what), " (byte offset ", pos_, ") refers to operand ", i,
           ", out of range (there are ", counts_[0], " operands)");
    pos_ += 4;
    return static_cast<uint32_t>(i);
  }

  void read_operation_args() {
    for (size_t k = 0; k < blob_.operations.size(); ++k) {
      BlobOperation& op = blob_.operations[k];
      const auto [in, out] = arg_counts_[k];
      const auto label = [&] {
        return "operation " + std::to_string(k) + " (" +
               nnapi::op_name(static_cast<nnapi::Op>(op.opcode)) + ")";
      };
      need(uint64_t{4} * (uint64_t(in) + out), [&] { return "arguments of " + label(); });
      op.inputs.reserve(in);
      for (uint32_t j = 0; j < in; ++j)
        op.inputs.push_back(
            read_operand_index([&] { return label() + " input " + std::to_string(j); }));
      op.outputs.reserve(out);
      for (uint32_t j = 0; j < out; ++j) {
        const size_t at = pos_;
        const uint32_t o =
            read_operand_index([&] { return label() + " output " + std::to_string(j); });
        BlobOperand& operand = blob_.operands[o];
        if (operand.value >= 0)
          fail(label(), " output ", j, " (byte offset ", at, ") writes operand ", o,
               ", which has a constant value");
        if (operand.producer >= 0)
          fail(label(), " output ", j, " (byte offset ", at, ") writes operand ", o,
               ", which operation ", operand.producer, " already writes");
        operand.producer = static_cast<int32_t>(k);
        op.outputs.push_back(o);
      }
    }
  }

  void read_model_io() {
    need(uint64_t{4} * counts_[3], "model input list");
    blob_.inputs.reserve(static_cast<size_t>(counts_[3]));
    for (int32_t j = 0; j < counts_[3]; ++j) {
      const size_t at = pos_;
      const uint32_t o = read_operand_index([&] { return "model input " + std::to_string(j); });
      const BlobOperand& operand = blob_.operands[o];
      if (operand.value >= 0)
        fail("model input ", j, " (byte offset ", at, ") is operand ", o,
             ", which has a constant value");
      if (operand.producer >= 0)
        fail("model input ", j, " (byte offset ", at, ") is operand ", o, ", which operation ",
             operand.producer, " writes");
      for (size_t e = 0; e < blob_.inputs.size(); ++e)
        if (blob_.inputs[e] == o)
          fail("model input ", j, " (byte offset ", at, ") repeats operand ", o, " (model input ",
               e, ")");
      blob_.inputs.push_back(o);
    }
    need(uint64_t{4} * counts_[4], "model output list");
    blob_.outputs.reserve(static_cast<size_t>(counts_[4]));
    for (int32_t j = 0; j < counts_[4]; ++j) {
      const size_t at = pos_;
      const uint32_t o = read_operand_index([&] { return "model output " + std::to_string(j); });
      if (blob_.operands[o].value >= 0)
        fail("model output ", j, " (byte offset ", at, ") is operand ", o,
             ", which has a constant value");
      blob_.outputs.push_back(o);
    }
  }

  const uint8_t* data_;
  size_t size_;
  const std::vector<int64_t>* weights_;
  size_t pos_ = 0;
  int32_t counts_[5] = {0, 0, 0, 0, 0};
  uint64_t required_ = 0;  // bytes of the variable-length sections, then of the whole model
  std::vector<uint32_t> ranks_;
  std::vector<std::pair<uint32_t, uint32_t>> arg_counts_;
  Blob blob_;
};

}  // namespace

int64_t operand_byte_size(nnapi::OperandType type, const std::vector<uint32_t>& dims) {
  if (!nnapi::is_tensor_type(type)) {
    const int s = scalar_size(type);
    return (s != 0 && dims.empty()) ? s : -1;
  }
  if (dims.empty()) return -1;
  int64_t bytes = nnapi::element_size(type);
  for (uint32_t d : dims) {
    if (d == 0) return -1;
    if (bytes > std::numeric_limits<int64_t>::max() / d) return -1;
    bytes *= d;
  }
  return bytes;
}

Blob parse_blob(const uint8_t* data, size_t size, const std::vector<int64_t>* weight_sizes) {
  if (data == nullptr && size != 0) throw BlobError("no blob data (null pointer)");
  if (data == nullptr) {
    static const uint8_t empty[1] = {0};
    data = empty;
  }
  return Parser(data, size, weight_sizes).run();
}

}  // namespace nnapi_convert
