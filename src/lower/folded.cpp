// Tensor operations nnapi-convert only folds: run during conversion when all
// their inputs are constant (core/folding.h), with no lowering. Masks and
// index tables a model builds from its (fixed) sizes, e.g. Swin's
// shifted-window attention mask (new_zeros, slice assignments, masked_fill),
// a positional embedding read at arange(sequence length), a causal mask cut
// from a tril buffer, a window built in forward (hann_window). The new_* and
// *_like factories read only the dtype of their first input (and the *_like
// ones its shape), so that may be computed. The kinds that are folded as
// well as lowered say so in their own specs (KindSpec::folds): the factories
// of sizes known only at load time (zeros, ones, full, new_*, *_like) are
// factory.cpp's.
#include "lower/registry.h"

namespace nnapi_convert {

void register_folded_ops(LoweringTable& t) {
  for (const char* kind :
       {"aten::arange", "aten::index", "aten::fill_", "aten::zero_", "aten::copy_",
        "aten::masked_fill_", "aten::tril", "aten::triu", "aten::hann_window"}) {
    t.add(kind, nullptr)
        .with_folds()
        .with_note(
            "computed during conversion when its inputs are constant (masks and index tables "
            "built from fixed sizes; in-place writes only into such tensors)");
  }
}

}  // namespace nnapi_convert
