// Reading what Python's torch.save writes (--verify-input), with LibTorch
// 1.13's unpickler, which knows the batch opcodes APPENDS and SETITEMS but
// not APPEND and SETITEM, which Python's pickler uses for a list of one
// element (`torch.save([x])`) and a dict of one entry.
#pragma once

#include <ATen/core/ivalue.h>

#include <string>

namespace nnapi_convert {

// `pickle` (protocol 2 or 3, as torch.save writes) with every APPEND
// rewritten as MARK item APPENDS and every SETITEM as MARK key value
// SETITEMS: the same object, in opcodes LibTorch reads. Returned unchanged
// when it holds an opcode this rewrite does not follow (FRAME of protocol 4,
// DUP, an unknown byte) or does not parse.
std::string pickle_with_batch_opcodes(const std::string& pickle);

// The object in a zip archive written by torch.save (its data.pkl, tensors
// from data/). Throws c10::Error when it is not such an archive.
c10::IValue load_torch_save(const std::string& path);

}  // namespace nnapi_convert
