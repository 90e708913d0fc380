// RANDOM_MULTINOMIAL: for each row of logits [batches, classes], `samples`
// independent draws of a class index with probability softmax(row), as
// NeuralNetworks.h defines it. NNAPI fixes no generator: this runtime draws
// with LibTorch's CPU generator (at::multinomial with replacement) seeded by
// a mix (splitmix64's finalizer) of (seed0 << 32) | seed1, since the
// generator keeps only 32 bits of its seed: equal non-zero seeds give equal
// samples in every execution, and changing either seed changes them; when
// both seeds are 0 a fresh seed is taken per execution, as the spec asks
// ("both will be randomly generated").
#include <ATen/CPUGeneratorImpl.h>

#include <random>

#include "../kernel.h"

namespace nnrt {
namespace {

void execute_random_multinomial(ExecContext& ctx) {
  const at::Tensor logits = ctx.in(0).t.to(at::kFloat);
  if (logits.dim() != 2) fail(Result::BadData, "logits must be 2-D");
  const int64_t samples = ctx.i32(1);
  if (samples < 1) fail(Result::BadData, "the number of samples must be >= 1");
  const std::vector<int64_t> seeds = ctx.int_list(2);
  if (seeds.size() != 2) fail(Result::BadData, "seeds must have 2 values");
  uint64_t seed = (static_cast<uint64_t>(static_cast<uint32_t>(seeds[0])) << 32) |
                  static_cast<uint32_t>(seeds[1]);
  if (seed == 0)
    seed = (static_cast<uint64_t>(std::random_device{}()) << 32) | std::random_device{}();
  seed ^= seed >> 30;
  seed *= 0xbf58476d1ce4e5b9ULL;
  seed ^= seed >> 27;
  seed *= 0x94d049bb133111ebULL;
  seed ^= seed >> 31;
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  at::Tensor probs = at::softmax(logits.to(at::kDouble), 1);
  at::Tensor drawn = at::multinomial(probs, samples, /*replacement=*/true, gen);
  ctx.set_output(0, drawn.to(at::kInt).contiguous());
}

}  // namespace

void add_random_kernels(std::vector<OpKernel>& table) {
  table.push_back({Op::RandomMultinomial, "RANDOM_MULTINOMIAL", execute_random_multinomial});
}

}  // namespace nnrt
