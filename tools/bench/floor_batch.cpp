// The parallel floor of issue 24's batch: what any LibTorch-based converter
// of a batch must do at least -- load each TorchScript model, freeze it, save
// it -- on J threads of one process (LibTorch started once), each thread
// taking the next model from a shared queue in the order given. Nothing else.
//
//   floor_batch J MODEL.pt OUT.pt [MODEL.pt OUT.pt ...]
//
// Prints each model's load, freeze and save milliseconds on standard error.
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/passes/freeze_module.h>
#include <torch/csrc/jit/serialization/import.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || (argc - 2) % 2 != 0 || std::atoi(argv[1]) < 1) {
    std::fprintf(stderr, "usage: %s J MODEL.pt OUT.pt [MODEL.pt OUT.pt ...]\n", argv[0]);
    return 2;
  }
  const int threads = std::atoi(argv[1]);
  std::vector<std::pair<std::string, std::string>> jobs;
  for (int i = 2; i + 1 < argc; i += 2) jobs.emplace_back(argv[i], argv[i + 1]);
  std::atomic<size_t> next{0};
  std::atomic<int> failed{0};
  auto worker = [&] {
    for (size_t i = next++; i < jobs.size(); i = next++) {
      try {
        auto t0 = std::chrono::steady_clock::now();
        torch::jit::Module module = torch::jit::load(jobs[i].first);
        const double load = ms_since(t0);
        t0 = std::chrono::steady_clock::now();
        torch::jit::Module frozen = torch::jit::freeze(module);
        const double freeze = ms_since(t0);
        t0 = std::chrono::steady_clock::now();
        frozen.save(jobs[i].second);
        std::fprintf(stderr, "%s: load %.1f, freeze %.1f, save %.1f ms\n", jobs[i].first.c_str(),
                     load, freeze, ms_since(t0));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", jobs[i].first.c_str(), e.what());
        ++failed;
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (std::thread& t : pool) t.join();
  return failed == 0 ? 0 : 1;
}
