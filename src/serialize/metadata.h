// The self-describing record every output carries (issue 37 item 2): an
// `_extra_files` entry `nnapi_convert.json` in the .nnapi.pt and the .ptl,
// which torch.jit.load and the lite interpreter's loader leave alone (they
// read extra files only when asked for them by name).
#pragma once

#include <string>

#include "nnapi_convert/conversion.h"
#include "nnapi_convert/writer.h"  // kMetadataFile

namespace nnapi_convert {

// The record as JSON text: the converter's version, the conversion options,
// the input specs (with the scales and zero points --quantized-io chose), the
// outputs' types, scales and zero points, --quantize's options (--mean/--std
// when images were calibrated on), the source file's SHA-256 and, per NNAPI
// model, the node each operation came from (Conversion::origins, as runs of
// operations of one node kind at one place: "nodes"). Keys are in
// a fixed order and nothing varies between runs (no time, no path of the
// files converted or written: "at" is the place the model file itself
// records for its code), so two
// conversions of the same file with the same options write the same bytes.
// `options` are the options the module was lowered with, `source_sha256`
// the model file's SHA-256 (hex).
std::string metadata_json(const Conversion& c, const ConvertOptions& options,
                          const std::string& source_sha256);

}  // namespace nnapi_convert
