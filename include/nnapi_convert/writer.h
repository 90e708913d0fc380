// Writing a conversion: the TorchScript module PyTorch's NNAPI runtime loads,
// its lite-interpreter copy, and the --parts files (src/serialize/).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nnapi_convert/conversion.h"

namespace nnapi_convert {

class PendingFile;  // util/output_file.h

// The converted module's attribute that records its arguments (a list of
// "name (type): spec"), when the conversion has Conversion::arguments.
extern const char* const kArgumentsAttribute;
struct Staged;      // util/output_file.h

// The lines of `prepare` (shape lines then the return of templates), in the
// reference converter's text (`torch.float32`), or with ScalarType numbers
// (`dtype=6`) for TorchScript compiled from C++.
std::vector<std::string> prepare_lines(const Conversion& c, bool numeric_dtypes);

// The files of one conversion, written to temporaries and finished (closed),
// not yet in place: commit() fsyncs and renames them all over their targets; destroying
// them uncommitted removes the temporaries, leaving every existing file as it
// was.
// The `_extra_files` entry every output carries: how nnapi-convert made it
// (the converter's version, the options, the input specs, the source's
// SHA-256). PyTorch's loaders read extra files only when asked for them.
inline constexpr const char* kMetadataFile = "nnapi_convert.json";

struct ConversionFiles {
  std::vector<std::unique_ptr<PendingFile>> files;
  PendingFile* module = nullptr;  // the .nnapi.pt, when one was asked for
  // The SHA-256 (hex) of the .nnapi.pt's and the .ptl's bytes, when written
  // with hash_outputs.
  std::string module_sha256, lite_sha256;
  void commit();
  // When every file is renamed into place: all handed over
  // (PendingFile::hand_over), to be committed by commit_staged. Else
  // nothing is, and it returns nothing: commit() them.
  std::vector<Staged> hand_over();
  ConversionFiles();
  ConversionFiles(ConversionFiles&&) noexcept;
  ~ConversionFiles();
};

// Writes the module to `path` (none when empty), its lite-interpreter copy
// (lite_output_path) and the --parts files in `parts` (none when empty).
// Throws ConvertError: 2 for an output that cannot be a target, 1 otherwise.
// `source_sha256` is the model file's SHA-256 for the outputs' metadata
// (kMetadataFile); empty: it is read here. `hash_outputs`: the module's and
// the .ptl's SHA-256 in ConversionFiles.
ConversionFiles write_conversion(const Conversion& c, const ConvertOptions& options,
                                 const std::string& path, bool lite, const std::string& parts,
                                 const std::string& source_sha256 = "", bool hash_outputs = false);
// write_conversion, then commit.
void write_nnapi_module(const Conversion& c, const ConvertOptions& options, const std::string& path,
                        bool lite);
void write_parts(const Conversion& c, const ConvertOptions& options, const std::string& dir);
// ser_model as the device holds it once the module is loaded with `args`
// (one tensor per model input, in the model's layout): the shape-compute
// script `prepare` run on it, as NnapiModule.init runs it, filling in the
// sizes fixed at load time.
std::vector<int32_t> prepared_ser_model(const Conversion& c, const std::vector<at::Tensor>& args);
// out.nnapi.pt -> out.nnapi.ptl
std::string lite_output_path(const std::string& path);
// The bytecode versions LibTorch 1.13 writes a lite-interpreter file at: its
// own (caffe2/serialize/versions.h's kProducedBytecodeVersion, 8) and those
// torch::jit::_backport_for_mobile backports it to (4 to 7).
extern const int kOldestLiteBytecodeVersion;
extern const int kNewestLiteBytecodeVersion;
// Throws ConvertError(2) naming `option` when `version` is not one of them.
void check_lite_bytecode_version(int version, const std::string& option);
// The four files --parts writes in `dir`.
std::vector<std::string> parts_paths(const std::string& dir);

}  // namespace nnapi_convert
