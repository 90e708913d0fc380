// --calibration-dir of PNG/JPEG images: each image decoded with stb_image
// (Debian's libstb), made the model's channel count, resized and center
// cropped to the --input's H x W, scaled to 0..1 and normalized with --mean
// and --std, as torchvision's ToTensor, Resize(antialias=True), CenterCrop
// and Normalize do on a tensor.
#include <ATen/ATen.h>
#include <stb_image.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>

#include "core/diagnostics.h"
#include "quantize/progress.h"
#include "quantize/quantize.h"

namespace nnapi_convert {
namespace {

[[noreturn]] void refuse_image(const std::string& file, const std::string& why) {
  throw ConvertError(1, "calibration image '" + file + "' " + why +
                            ". Nothing was written; fix or remove the image and run again.");
}

// The decoded pixels (uint8, h x w x n interleaved) as a float C x h x w
// tensor in 0..1: gray (and gray+alpha) repeated for C = 3, alpha dropped,
// and color made gray for C = 1 with ITU-R 601-2 luma in PIL's integer form
// (Image.convert("L")).
at::Tensor to_chw(const unsigned char* px, int h, int w, int n, int64_t c) {
  at::Tensor hwc = at::from_blob(const_cast<unsigned char*>(px), {h, w, n}, at::kByte).to(at::kInt);
  at::Tensor out;
  if (c == 3) {
    out = n < 3 ? hwc.narrow(2, 0, 1).expand({h, w, 3}) : hwc.narrow(2, 0, 3);
  } else if (n < 3) {
    out = hwc.narrow(2, 0, 1);
  } else {
    at::Tensor r = hwc.select(2, 0), g = hwc.select(2, 1), b = hwc.select(2, 2);
    out = at::floor_divide(r * 19595 + g * 38470 + b * 7471 + 0x8000, 65536).unsqueeze(2);
  }
  return out.permute({2, 0, 1}).to(at::kFloat).div(255.0).contiguous();
}

// The size the image is resized to before the center crop: it covers
// H x W with its aspect ratio kept (the constraining side becomes H or W
// exactly, the other floor(side x scale)).
std::pair<int64_t, int64_t> cover_size(int64_t h, int64_t w, int64_t H, int64_t W) {
  if (H * w >= W * h) return {H, w * H / h};
  return {h * W / w, W};
}

// torchvision's center_crop offset: int(round((size - crop) / 2.0)), Python's
// round halving to even.
int64_t crop_offset(int64_t size, int64_t crop) {
  return static_cast<int64_t>(std::nearbyint(static_cast<double>(size - crop) / 2.0));
}

class ImageReader {
 public:
  // Normalize's mean and std are float32 tensors, as torchvision makes them.
  ImageReader(const QuantizeOptions& q, const InputSpec& spec)
      : c_(spec.dims[1]),
        h_(spec.dims[2]),
        w_(spec.dims[3]),
        mean_(per_channel(q.mean, 0)),
        std_(per_channel(q.stddev, 1)) {}

  // One image as a 1 x C x H x W float tensor.
  at::Tensor read(const std::string& file) const {
    std::ifstream f(file, std::ios::binary);
    if (!f) refuse_image(file, std::string("cannot be read: ") + std::strerror(errno));
    const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (f.bad()) refuse_image(file, std::string("cannot be read: ") + std::strerror(errno));
    if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
      refuse_image(file, "is larger than stb_image reads (2 GiB)");
    }
    int w = 0, h = 0, n = 0;
    std::unique_ptr<unsigned char, void (*)(void*)> px(
        stbi_load_from_memory(reinterpret_cast<const unsigned char*>(bytes.data()),
                              static_cast<int>(bytes.size()), &w, &h, &n, 0),
        stbi_image_free);
    if (!px) {
      refuse_image(file, std::string("cannot be decoded as a PNG or JPEG image (stb_image: ") +
                             (stbi_failure_reason() ? stbi_failure_reason() : "unknown") + ")");
    }
    if (n < 1 || n > 4) refuse_image(file, "has " + std::to_string(n) + " channels");
    at::Tensor x = to_chw(px.get(), h, w, n, c_).unsqueeze(0);
    const auto [rh, rw] = cover_size(h, w, h_, w_);
    if (rh != h || rw != w) {
      x = at::_upsample_bilinear2d_aa(x, {rh, rw}, /*align_corners=*/false);
    }
    x = x.narrow(2, crop_offset(rh, h_), h_).narrow(3, crop_offset(rw, w_), w_);
    return x.sub(mean_).div(std_).contiguous();
  }

 private:
  at::Tensor per_channel(const std::vector<double>& v, double otherwise) const {
    if (v.empty()) return at::full({c_, 1, 1}, otherwise, at::kFloat);
    return at::tensor(v, at::kDouble).to(at::kFloat).view({c_, 1, 1});
  }

  int64_t c_, h_, w_;
  at::Tensor mean_, std_;
};

}  // namespace

void check_image_calibration(const std::string& source, const QuantizeOptions& q,
                             const std::vector<InputSpec>& specs) {
  auto refuse = [&](const std::string& why) {
    throw ConvertError(1, source + " holds images, which calibrate " + why +
                              ". Nothing was written; save the samples as .pt files (see "
                              "--calibration) instead.");
  };
  if (specs.size() != 1) {
    refuse("a one-input model, but " + std::to_string(specs.size()) + " --input specs were given");
  }
  const InputSpec& s = specs[0];
  if (s.dtype != InputDType::Float32 || s.dims.size() != 4) {
    refuse("a 4-D float32 input (N x C x H x W), not --input '" + s.text + "'");
  }
  if (s.dims[1] != 1 && s.dims[1] != 3) {
    refuse("an input of 1 (gray) or 3 (RGB) channels, and --input '" + s.text + "' has " +
           std::to_string(s.dims[1]) + " at dim 1");
  }
  if (s.dims[2] == 0 || s.dims[3] == 0) {
    refuse("an input of fixed height and width (they are resized to it), and --input '" + s.text +
           "' leaves them flexible");
  }
  for (const auto* list : {&q.mean, &q.stddev}) {
    const std::string flag = list == &q.mean ? "--mean" : "--std";
    if (!list->empty() && static_cast<int64_t>(list->size()) != s.dims[1]) {
      throw ConvertError(2, flag + " gives " + std::to_string(list->size()) +
                                " value(s), but --input '" + s.text + "' has " +
                                std::to_string(s.dims[1]) +
                                " channel(s); give one value per channel, comma-separated");
    }
    for (double v : *list) {
      if (!std::isfinite(v) || (list == &q.stddev && v <= 0)) {
        throw ConvertError(2, flag + " holds " + std::to_string(v) + "; give finite values" +
                                  (list == &q.stddev ? ", each above 0" : ""));
      }
    }
  }
}

std::vector<Sample> read_calibration_images(const std::vector<std::string>& files,
                                            const QuantizeOptions& q,
                                            const std::vector<InputSpec>& specs) {
  const InputSpec& spec = specs[0];
  const int64_t b = spec.dims[0] == 0 ? 1 : spec.dims[0];
  if (static_cast<int64_t>(files.size()) % b != 0) {
    throw ConvertError(1, "--calibration-dir holds " + std::to_string(files.size()) +
                              " images, which do not make whole batches of --input '" + spec.text +
                              "' (" + std::to_string(b) + " images a sample); add or remove " +
                              "images. Nothing was written.");
  }
  ImageReader reader(q, spec);
  Progress progress("reading calibration images", files.size());
  std::vector<Sample> samples;
  std::vector<at::Tensor> batch;
  for (size_t i = 0; i < files.size(); ++i) {
    progress.step(i);
    batch.push_back(reader.read(files[i]));
    if (static_cast<int64_t>(batch.size()) == b) {
      samples.push_back({at::cat(batch)});
      batch.clear();
    }
  }
  return samples;
}

}  // namespace nnapi_convert
