// State kept between calls: tensor attributes that forward reads and writes
// back (`self._state = new_state`, a streaming voice activity detector's
// recurrent state and audio context). NNAPI has no state of its own, so the
// state becomes extra model inputs and outputs, and the converted module
// keeps it (src/serialize/module_writer.cpp).
#pragma once

#include <torch/csrc/jit/api/module.h>

#include <string>
#include <vector>

#include "nnapi_convert/conversion.h"
#include "serialize/state_program.h"

namespace nnapi_convert {

// Finds the attributes the frozen module's forward writes (prim::SetAttr on
// self; torch::jit::freeze keeps such attributes, with their prim::GetAttr
// and prim::SetAttr nodes) and makes forward a function of them: each
// becomes an input after the user's, read where forward read the attribute,
// and the value last written an output after the user's (forward then
// returns a tuple: the user's outputs, then the state). Returns them in the
// order forward first writes them; none for a model without state (then the
// graph is unchanged). `user_retval_count`: -1 when forward returned one
// tensor, else the length of the tuple it returned. Throws
// ConvertError(1), naming the attribute and node, for state it cannot hold:
// a non-tensor attribute, a write inside a branch or loop, a write into a
// submodule's attribute.
//
// Int, float and bool attributes forward writes (Silero's `_last_sr`), and
// the branches before the state's first write that write attributes (its
// `if not self._last_batch_size: self.reset_states(batch_size)`), are split
// off into `program`'s prologue, which the converted module runs in
// TorchScript before NNAPI on each call; they may use sizes and such values
// only, never tensor data, and NNAPI's part may not read those attributes.
// `program` is set when there is state of either kind. Each
// StateAttribute::first is the prologue's result on `options.inputs`' sizes
// (the NNAPI input's shape).
std::vector<StateAttribute> extract_state(torch::jit::Module& frozen, const ConvertOptions& options,
                                          int* user_retval_count,
                                          std::shared_ptr<StateProgram>* program);

// The methods of `model` (the entry module before freezing) other than
// forward that write the state of `c` and nothing else (`reset_states`),
// recorded in c.state_program for the converted module; a note in `notes`
// for each, and for each method that writes the state but cannot be carried
// over (it reads other attributes or calls other code).
void carry_state_methods(const torch::jit::Module& model, Conversion& c,
                         std::vector<std::string>* notes);

// Throws ConvertError(1), naming the attribute and node, when forward
// writes a tensor attribute of the module at its top level (state) and the
// options ask for --cpu-fallback or --quantize, which nnapi-convert does not
// combine with state.
void refuse_state_options(const torch::jit::Module& frozen, const ConvertOptions& options);

// `options` with one --input spec per state attribute appended: its sizes,
// float32 or int32, contiguous. Throws ConvertError(1) for a state NNAPI
// cannot take as an input (another dtype, rank 0 or above 4).
ConvertOptions with_state_inputs(const ConvertOptions& options,
                                 const std::vector<StateAttribute>& state);

// After lowering with with_state_inputs: checks that each state output has
// the state's shape and dtype (a state whose shape changes between calls is
// refused, exit 1 naming the attribute and the node that writes it), and
// records the state in `c`, its retval_count counting the user's outputs only
// (`user_retval_count`: -1 for one tensor, as forward returned before
// extract_state).
void finish_state_conversion(Conversion& c, std::vector<StateAttribute> state,
                             int user_retval_count, const std::string& path);

}  // namespace nnapi_convert
