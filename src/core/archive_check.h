// Checks a TorchScript archive before LibTorch's loader sees it. LibTorch 1.13
// trusts the file: a pickle with too few stack items, deep nesting, or a
// storage record shorter than its tensor crash it or read past the record.
// This reads the zip's central directory, scans every pickle as the
// TorchScript unpickler would run it (without building anything), and checks
// code nesting, so that such files are refused with a message instead.
#pragma once

#include <string>

namespace nnapi_convert {

// Throws ConvertError(1) naming `path` and the problem. `what` names the file
// in messages ("model file"); empty, the message starts at the problem (for a
// caller that names the file itself).
void check_torchscript_archive(const std::string& path, const std::string& what);

}  // namespace nnapi_convert
