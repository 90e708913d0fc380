// --calibration FILE / --calibration-dir DIR: the samples --quantize
// calibrates on (tensors saved with torch.save, or images: images.cpp),
// checked against the --input specs before any work.
#include <ATen/ATen.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/diagnostics.h"
#include "quantize/progress.h"
#include "quantize/quantize.h"
#include "verify/torch_save.h"

namespace nnapi_convert {
namespace {

namespace fs = std::filesystem;

std::string dims_text(at::IntArrayRef dims) {
  std::string s;
  for (int64_t d : dims) s += (s.empty() ? "" : "x") + std::to_string(d);
  return s.empty() ? "scalar" : s;
}

// Reads one file's samples: a tensor is a batch along dim 0 of a one-input
// model (split into runs of the spec's batch size); a list or tuple holds
// one sample per element, each a tensor (one input) or a tuple or list of
// tensors (one per input).
class SampleReader {
 public:
  SampleReader(const std::string& path, const std::vector<InputSpec>& specs)
      : path_(path), specs_(specs) {}

  void read(std::vector<Sample>* out) {
    std::ifstream f(path_, std::ios::binary);
    if (!f) refuse(std::string("cannot be read: ") + std::strerror(errno));
    f.close();
    c10::IValue v;
    try {
      v = load_torch_save(path_);
    } catch (const std::exception& e) {
      refuse("is not a file written by torch.save (" + script_error_text(e) + "); " + how());
    }
    if (v.isTensor()) {
      if (specs_.size() != 1) {
        refuse("holds one tensor, but the model has " + std::to_string(specs_.size()) +
               " inputs; " + how());
      }
      batch(v.toTensor(), out);
      return;
    }
    if (!v.isTuple() && !v.isList()) refuse("holds a " + v.tagKind() + "; " + how());
    const std::vector<c10::IValue> items =
        v.isTuple() ? v.toTupleRef().elements().vec() : v.toListRef().vec();
    for (size_t k = 0; k < items.size(); ++k) {
      const c10::IValue& item = items[k];
      Sample s;
      if (item.isTensor()) {
        s.push_back(item.toTensor());
      } else if (item.isTuple() || item.isList()) {
        for (const c10::IValue& t :
             item.isTuple() ? item.toTupleRef().elements().vec() : item.toListRef().vec()) {
          if (!t.isTensor()) refuse("sample " + std::to_string(k) + " holds a " + t.tagKind());
          s.push_back(t.toTensor());
        }
      } else {
        refuse("sample " + std::to_string(k) + " is a " + item.tagKind() + "; " + how());
      }
      if (s.size() != specs_.size()) {
        refuse("sample " + std::to_string(k) + " has " + std::to_string(s.size()) +
               " tensor(s), but the model has " + std::to_string(specs_.size()) + " inputs");
      }
      for (size_t i = 0; i < s.size(); ++i) s[i] = checked(s[i], i, "sample " + std::to_string(k));
      out->push_back(std::move(s));
    }
  }

 private:
  [[noreturn]] void refuse(const std::string& why) const {
    throw ConvertError(1, "calibration file '" + path_ + "' " + why +
                              ". Nothing was written; fix the calibration data and run again.");
  }
  std::string how() const {
    return "save a float32 tensor whose dim 0 runs over the samples (one-input models), or a "
           "list with one tuple of input tensors per sample: torch.save([(x1,), (x2,)], '" +
           path_ + "')";
  }

  void batch(const at::Tensor& t, std::vector<Sample>* out) const {
    const InputSpec& spec = specs_[0];
    const int64_t b = spec.dims.empty() || spec.dims[0] == 0 ? 1 : spec.dims[0];
    bool fits = t.dim() == static_cast<int64_t>(spec.dims.size()) && t.dim() > 0;
    for (int64_t d = 1; fits && d < t.dim(); ++d) {
      fits = spec.dims[d] == 0 || spec.dims[d] == t.size(d);
    }
    if (!fits || t.size(0) % b != 0 || t.size(0) == 0) {
      refuse("holds a tensor of shape " + dims_text(t.sizes()) + ", which is not a batch of " +
             "samples of --input '" + spec.text + "' along dim 0 (" +
             std::string(t.size(0) == 0 ? "it holds no samples" : "its size must be") +
             (t.size(0) == 0 ? "" : " a multiple of " + std::to_string(b) + ", the rest equal") +
             ")");
    }
    for (int64_t i = 0; i < t.size(0); i += b) {
      out->push_back({checked(t.narrow(0, i, b), 0, "sample " + std::to_string(i / b))});
    }
  }

  at::Tensor checked(const at::Tensor& t, size_t i, const std::string& where) const {
    const InputSpec& spec = specs_[i];
    if (spec.dtype != InputDType::Float32) {
      refuse("is for a model with a " + std::string(dtype_name(spec.dtype)) + " input (--input '" +
             spec.text + "'): --quantize calibrates float32 inputs only");
    }
    if (t.scalar_type() != at::kFloat) {
      refuse(where + ", tensor " + std::to_string(i) + " is " + c10::toString(t.scalar_type()) +
             ", not float32; save it with .float()");
    }
    bool fits = static_cast<size_t>(t.dim()) == spec.dims.size();
    for (size_t d = 0; fits && d < spec.dims.size(); ++d) {
      fits = spec.dims[d] == 0 || spec.dims[d] == t.size(static_cast<int64_t>(d));
    }
    if (!fits) {
      refuse(where + ", tensor " + std::to_string(i) + " has shape " + dims_text(t.sizes()) +
             ", which --input '" + spec.text + "' does not allow (only its 0 dimensions may vary)");
    }
    if (!at::isfinite(t).all().item<bool>()) {
      refuse(where + ", tensor " + std::to_string(i) +
             " holds NaN or infinite values; calibrate on real inputs");
    }
    return t.contiguous();
  }

  const std::string& path_;
  const std::vector<InputSpec>& specs_;
};

// The files of a --calibration-dir by kind, each list in name order: .pt
// files and PNG/JPEG images (the extension in any case); other files and
// subdirectories are ignored.
struct DirectoryFiles {
  std::vector<std::string> pt, images;
};

DirectoryFiles list_directory(const std::string& source, const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw ConvertError(1, source +
                              " is not a directory; give a directory of .pt files written by "
                              "torch.save, or of PNG/JPEG images. Nothing was written.");
  }
  DirectoryFiles files;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file(ec)) continue;
    std::string ext = e.path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (ext == ".pt") files.pt.push_back(e.path().string());
    if (ext == ".png" || ext == ".jpg" || ext == ".jpeg") files.images.push_back(e.path().string());
  }
  if (ec) throw ConvertError(1, source + " cannot be listed: " + ec.message());
  std::sort(files.pt.begin(), files.pt.end());
  std::sort(files.images.begin(), files.images.end());
  return files;
}

void read_directory(const std::string& source, const QuantizeOptions& q,
                    const std::vector<InputSpec>& specs, std::vector<Sample>* samples) {
  const DirectoryFiles files = list_directory(source, q.calibration_dir);
  if (files.pt.empty() && files.images.empty()) {
    throw ConvertError(1, source +
                              " holds no .pt files and no PNG or JPEG images (.png, .jpg, "
                              ".jpeg); save each sample (a tensor, or a tuple of input tensors) "
                              "with torch.save as NAME.pt there, or put images there. Nothing "
                              "was written.");
  }
  if (!files.pt.empty() && !files.images.empty()) {
    throw ConvertError(1, source + " holds both .pt files ('" + files.pt[0] +
                              "', ...) and images ('" + files.images[0] +
                              "', ...); calibrate on one kind: move the others out. Nothing was "
                              "written.");
  }
  if (!files.images.empty()) {
    check_image_calibration(source, q, specs);
    *samples = read_calibration_images(files.images, q, specs);
    return;
  }
  if (!q.mean.empty() || !q.stddev.empty()) {
    throw ConvertError(2, "--mean and --std normalize images, but " + source +
                              " holds .pt files, which are used as saved; leave them out");
  }
  Progress progress("reading calibration files", files.pt.size());
  for (size_t i = 0; i < files.pt.size(); ++i) {
    progress.step(i);
    SampleReader(files.pt[i], specs).read(samples);
  }
}

// A test hook: NNAPI_CONVERT_TEST_DUMP_CALIBRATION=FILE saves the samples'
// tensors (a list with a list of input tensors per sample) with
// torch::jit::pickle_save, which Python's torch.load reads.
void dump_for_tests(const std::vector<Sample>& samples) {
  const char* path = std::getenv("NNAPI_CONVERT_TEST_DUMP_CALIBRATION");
  if (!path || !*path) return;
  c10::impl::GenericList all(c10::AnyType::get());
  for (const Sample& s : samples) all.push_back(c10::List<at::Tensor>(s));
  const std::vector<char> bytes = torch::jit::pickle_save(all);
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

std::vector<Sample> load_calibration_samples(const QuantizeOptions& q,
                                             const std::vector<InputSpec>& specs) {
  std::vector<Sample> samples;
  std::string source;
  if (!q.calibration_file.empty()) {
    SampleReader(q.calibration_file, specs).read(&samples);
    source = "calibration file '" + q.calibration_file + "'";
  }
  if (!q.calibration_dir.empty()) {
    source = "--calibration-dir '" + q.calibration_dir + "'";
    read_directory(source, q, specs, &samples);
  }
  if (samples.empty()) {
    throw ConvertError(1, source +
                              " holds no samples; --quantize needs at least one. Nothing "
                              "was written.");
  }
  if (q.holdout >= static_cast<int64_t>(samples.size())) {
    throw ConvertError(1, source + " holds " + std::to_string(samples.size()) +
                              " sample(s), and --calibration-holdout " + std::to_string(q.holdout) +
                              " would leave none to calibrate on; give more samples or a "
                              "smaller holdout. Nothing was written.");
  }
  dump_for_tests(samples);
  return samples;
}

}  // namespace nnapi_convert
