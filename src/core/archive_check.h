// Checks a TorchScript archive before LibTorch's loader sees it. LibTorch 1.13
// trusts the file: a pickle with too few stack items, deep nesting, a storage
// record shorter than its storage, or a tensor whose offset, sizes and strides
// reach past its storage crash it or read past the record (into the weights).
// This reads the zip's central directory, scans every pickle a loader reads as
// LibTorch's unpickler would run it (without building anything), checking each
// tensor it rebuilds against its storage, and checks the code's nesting, so
// that such files are refused with a message instead. What PyTorch writes
// passes (tests/cli/archive_forms.py).
#pragma once

#include <string>

namespace nnapi_convert {

// Throws ConvertError(1) naming `path` and the problem. `what` names the file
// in messages ("model file"); empty, the message starts at the problem (for a
// caller that names the file itself).
void check_torchscript_archive(const std::string& path, const std::string& what);

}  // namespace nnapi_convert
