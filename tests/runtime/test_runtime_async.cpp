// The asynchronous path (ANeuralNetworksExecution_startCompute,
// ANeuralNetworksEvent_wait / _free) and executions of one compilation run
// from several threads at once, as NeuralNetworks.h allows: "a compilation
// may be used by several executions at the same time", each execution by one
// thread at a time. Expected values follow from ADD's definition in
// NeuralNetworks.h (out = activation(in0 + in1), FUSED_RELU = max(0, x)).
#include <android/NeuralNetworks.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nnapi_c_api.h"

namespace {

// ADD of two float tensors of `n` elements (dims [0] when `flexible`, the
// sizes then come from setInput's types) with FUSED_RELU; operands 0, 1
// inputs, 3 the output.
ANeuralNetworksModel* add_model(uint32_t n, bool flexible) {
  ANeuralNetworksModel* m = nullptr;
  EXPECT_EQ(ANeuralNetworksModel_create(&m), ANEURALNETWORKS_NO_ERROR);
  uint32_t dims[] = {flexible ? 0u : n};
  ANeuralNetworksOperandType t{ANEURALNETWORKS_TENSOR_FLOAT32, 1, dims, 0.f, 0};
  ANeuralNetworksOperandType s{ANEURALNETWORKS_INT32, 0, nullptr, 0.f, 0};
  for (auto* type : {&t, &t, &s, &t}) ANeuralNetworksModel_addOperand(m, type);
  const int32_t relu = ANEURALNETWORKS_FUSED_RELU;
  EXPECT_EQ(ANeuralNetworksModel_setOperandValue(m, 2, &relu, sizeof relu), 0);
  uint32_t ins[] = {0, 1, 2}, out = 3;
  EXPECT_EQ(ANeuralNetworksModel_addOperation(m, ANEURALNETWORKS_ADD, 3, ins, 1, &out), 0);
  EXPECT_EQ(ANeuralNetworksModel_identifyInputsAndOutputs(m, 2, ins, 1, &out), 0);
  EXPECT_EQ(ANeuralNetworksModel_finish(m), 0);
  return m;
}

ANeuralNetworksCompilation* compile(ANeuralNetworksModel* m) {
  ANeuralNetworksCompilation* c = nullptr;
  EXPECT_EQ(ANeuralNetworksCompilation_create(m, &c), 0);
  EXPECT_EQ(ANeuralNetworksCompilation_finish(c), 0);
  return c;
}

// An execution with inputs a, b and output y bound.
ANeuralNetworksExecution* bound(ANeuralNetworksCompilation* c, const std::vector<float>& a,
                                const std::vector<float>& b, std::vector<float>& y) {
  ANeuralNetworksExecution* e = nullptr;
  EXPECT_EQ(ANeuralNetworksExecution_create(c, &e), 0);
  EXPECT_EQ(ANeuralNetworksExecution_setInput(e, 0, nullptr, a.data(), a.size() * 4), 0);
  EXPECT_EQ(ANeuralNetworksExecution_setInput(e, 1, nullptr, b.data(), b.size() * 4), 0);
  EXPECT_EQ(ANeuralNetworksExecution_setOutput(e, 0, nullptr, y.data(), y.size() * 4), 0);
  return e;
}

// The observer hook holds the run inside its first operation until the test
// releases it (or 20 s pass), and records on which thread it ran.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool released = false, entered = false, timed_out = false;
  std::thread::id thread;
};
Gate* g_gate = nullptr;

void hold(void*, int32_t, uint32_t, const ANeuralNetworksOperandType*, const void*, size_t) {
  std::unique_lock<std::mutex> lock(g_gate->mu);
  g_gate->entered = true;
  g_gate->thread = std::this_thread::get_id();
  g_gate->cv.notify_all();
  g_gate->timed_out =
      !g_gate->cv.wait_for(lock, std::chrono::seconds(20), [] { return g_gate->released; });
}

// startCompute returns while the run is still inside its operation, on
// another thread; the event's wait returns once the run has finished. (A
// synchronous startCompute would only return after the 20 s timeout.)
TEST(RuntimeAsync, StartComputeRunsOnAnotherThread) {
  ANeuralNetworksModel* m = add_model(3, false);
  ANeuralNetworksCompilation* c = compile(m);
  std::vector<float> a = {1, -5, 2.5f}, b = {2, 1, 0.25f}, y(3, -1.f);
  ANeuralNetworksExecution* e = bound(c, a, b, y);
  Gate gate;
  g_gate = &gate;
  ANeuralNetworksHost_setOperationObserver(hold, nullptr);
  ANeuralNetworksEvent* event = nullptr;
  ASSERT_EQ(ANeuralNetworksExecution_startCompute(e, &event), ANEURALNETWORKS_NO_ERROR);
  ASSERT_NE(event, nullptr);
  {
    std::unique_lock<std::mutex> lock(gate.mu);
    EXPECT_FALSE(gate.released || gate.timed_out) << "startCompute waited for the run";
    ASSERT_TRUE(gate.cv.wait_for(lock, std::chrono::seconds(20), [&] { return gate.entered; }));
    EXPECT_NE(gate.thread, std::this_thread::get_id());
    EXPECT_EQ(y[0], -1.f);  // not written yet
    gate.released = true;
    gate.cv.notify_all();
  }
  EXPECT_EQ(ANeuralNetworksEvent_wait(event), ANEURALNETWORKS_NO_ERROR);
  EXPECT_EQ(ANeuralNetworksEvent_wait(event), ANEURALNETWORKS_NO_ERROR);  // again: same result
  ANeuralNetworksHost_setOperationObserver(nullptr, nullptr);
  EXPECT_FALSE(gate.timed_out);
  EXPECT_EQ(y, (std::vector<float>{3, 0, 2.75f}));
  uint32_t rank = 0, dim = 0;
  EXPECT_EQ(ANeuralNetworksExecution_getOutputOperandRank(e, 0, &rank), 0);
  EXPECT_EQ(ANeuralNetworksExecution_getOutputOperandDimensions(e, 0, &dim), 0);
  EXPECT_EQ(rank, 1u);
  EXPECT_EQ(dim, 3u);
  // An execution runs once, synchronously or not.
  ANeuralNetworksEvent* again = nullptr;
  EXPECT_EQ(ANeuralNetworksExecution_startCompute(e, &again), ANEURALNETWORKS_BAD_STATE);
  EXPECT_EQ(again, nullptr);
  EXPECT_EQ(ANeuralNetworksExecution_compute(e), ANEURALNETWORKS_BAD_STATE);
  ANeuralNetworksEvent_free(event);
  ANeuralNetworksExecution_free(e);
  ANeuralNetworksCompilation_free(c);
  ANeuralNetworksModel_free(m);
  g_gate = nullptr;
}

// Misuse is refused by startCompute itself (no event); a failure of the run
// is the event's result, and the waiting thread's last error names it.
TEST(RuntimeAsync, ErrorsOfStartAndOfTheRun) {
  ANeuralNetworksModel* m = add_model(0, true);
  ANeuralNetworksCompilation* c = compile(m);
  ANeuralNetworksExecution* e = nullptr;
  ASSERT_EQ(ANeuralNetworksExecution_create(c, &e), 0);
  ANeuralNetworksEvent* event = nullptr;
  EXPECT_EQ(ANeuralNetworksExecution_startCompute(e, nullptr), ANEURALNETWORKS_UNEXPECTED_NULL);
  EXPECT_EQ(ANeuralNetworksExecution_startCompute(nullptr, &event),
            ANEURALNETWORKS_UNEXPECTED_NULL);
  EXPECT_EQ(ANeuralNetworksExecution_startCompute(e, &event), ANEURALNETWORKS_BAD_DATA);
  EXPECT_EQ(event, nullptr);
  // Inputs of 2 and 3 elements do not broadcast: ADD fails at run time.
  float a[2] = {1, 2}, b[3] = {1, 2, 3}, y[3];
  uint32_t d2[] = {2}, d3[] = {3};
  ANeuralNetworksOperandType t2{ANEURALNETWORKS_TENSOR_FLOAT32, 1, d2, 0.f, 0};
  ANeuralNetworksOperandType t3{ANEURALNETWORKS_TENSOR_FLOAT32, 1, d3, 0.f, 0};
  ASSERT_EQ(ANeuralNetworksExecution_setInput(e, 0, &t2, a, sizeof a), 0);
  ASSERT_EQ(ANeuralNetworksExecution_setInput(e, 1, &t3, b, sizeof b), 0);
  ASSERT_EQ(ANeuralNetworksExecution_setOutput(e, 0, nullptr, y, sizeof y), 0);
  ANeuralNetworksHost_clearLastError();
  ASSERT_EQ(ANeuralNetworksExecution_startCompute(e, &event), ANEURALNETWORKS_NO_ERROR);
  ASSERT_NE(event, nullptr);
  EXPECT_EQ(ANeuralNetworksEvent_wait(event), ANEURALNETWORKS_OP_FAILED);
  const char* function = nullptr;
  const char* message = nullptr;
  int32_t operation = -2;
  EXPECT_EQ(ANeuralNetworksHost_getLastError(&function, &message, &operation),
            ANEURALNETWORKS_OP_FAILED);
  EXPECT_STREQ(function, "ANeuralNetworksExecution_startCompute");
  EXPECT_NE(std::string(message).find("ADD (operation 0)"), std::string::npos) << message;
  EXPECT_EQ(operation, 0);
  // Freeing the execution before the event is allowed; the event keeps its result.
  ANeuralNetworksExecution_free(e);
  EXPECT_EQ(ANeuralNetworksEvent_wait(event), ANEURALNETWORKS_OP_FAILED);
  ANeuralNetworksEvent_free(event);
  ANeuralNetworksCompilation_free(c);
  ANeuralNetworksModel_free(m);
}

// kThreads threads each run kRuns executions of one compilation (even runs
// with compute, odd ones with startCompute and wait, several events in
// flight), every run with its own inputs; each result must be max(0, a + b)
// of its own inputs.
TEST(RuntimeAsync, ExecutionsOfOneCompilationOnManyThreads) {
  constexpr int kThreads = 8, kRuns = 40, kInFlight = 4;
  constexpr uint32_t kSize = 4096;
  ANeuralNetworksModel* m = add_model(kSize, false);
  ANeuralNetworksCompilation* c = compile(m);
  std::vector<int> wrong(kThreads, 0), failed(kThreads, 0);
  auto worker = [&](int t) {
    for (int r = 0; r < kRuns; r += kInFlight) {
      struct Run {
        std::vector<float> a, b, y;
        ANeuralNetworksExecution* e = nullptr;
        ANeuralNetworksEvent* event = nullptr;
      };
      std::vector<Run> runs(kInFlight);
      for (int k = 0; k < kInFlight; ++k) {
        Run& run = runs[k];
        const float seed = static_cast<float>(t * 1000 + r + k);
        run.a.resize(kSize);
        run.b.resize(kSize);
        run.y.assign(kSize, -1.f);
        for (uint32_t i = 0; i < kSize; ++i) {
          run.a[i] = seed - static_cast<float>(i % 97);
          run.b[i] = static_cast<float>(i % 13) - 0.5f * seed;
        }
        run.e = bound(c, run.a, run.b, run.y);
        if ((r + k) % 2 == 0) {
          failed[t] += ANeuralNetworksExecution_compute(run.e) != 0;
        } else {
          failed[t] += ANeuralNetworksExecution_startCompute(run.e, &run.event) != 0;
        }
      }
      for (Run& run : runs) {
        if (run.event != nullptr) {
          failed[t] += ANeuralNetworksEvent_wait(run.event) != 0;
          ANeuralNetworksEvent_free(run.event);
        }
        ANeuralNetworksExecution_free(run.e);
        for (uint32_t i = 0; i < kSize; ++i)
          wrong[t] += run.y[i] != std::max(0.f, run.a[i] + run.b[i]);
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(failed[t], 0) << "thread " << t;
    EXPECT_EQ(wrong[t], 0) << "thread " << t;
  }
  ANeuralNetworksCompilation_free(c);
  ANeuralNetworksModel_free(m);
}

}  // namespace
