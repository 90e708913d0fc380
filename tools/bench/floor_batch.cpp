// The parallel floor of issue 24's batch: what any LibTorch-based converter
// of a batch must do at least -- load each TorchScript model, freeze it, save
// it -- on J threads of one process (LibTorch started once), each thread
// taking the next model from a shared queue in the order given. Nothing else.
//
//   floor_batch [--durable] J MODEL.pt OUT.pt [MODEL.pt OUT.pt ...]
//
// --durable: each save is followed by an fsync of the file and of its
// directory, as nnapi-convert makes each output durable. Prints each model's
// load, freeze and save milliseconds on standard error.
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/passes/freeze_module.h>
#include <torch/csrc/jit/serialization/import.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "durable.h"

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const bool durable = argc > 1 && std::string(argv[1]) == "--durable";
  const int first = durable ? 2 : 1;  // J
  if (argc < first + 3 || (argc - first - 1) % 2 != 0 || std::atoi(argv[first]) < 1) {
    std::fprintf(stderr, "usage: %s [--durable] J MODEL.pt OUT.pt [MODEL.pt OUT.pt ...]\n",
                 argv[0]);
    return 2;
  }
  const int threads = std::atoi(argv[first]);
  std::vector<std::pair<std::string, std::string>> jobs;
  for (int i = first + 1; i + 1 < argc; i += 2) jobs.emplace_back(argv[i], argv[i + 1]);
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
        if (durable && !bench::sync_file_and_directory(jobs[i].second)) {
          throw std::runtime_error("fsync of " + jobs[i].second + " failed");
        }
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
