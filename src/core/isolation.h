// Runs tasks in worker processes, so that a task that crashes (LibTorch's
// loader on a malformed archive), hangs (a model's __setstate__ that never
// returns) or is killed takes no other task down with it.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace nnapi_convert {

struct IsolationOptions {
  int parallel = 1;      // worker processes at a time
  double timeout_s = 0;  // per task; 0 = none
  // The order tasks are handed to workers in (a permutation of 0..n-1);
  // empty: 0, 1, 2, ...
  std::vector<size_t> order;
  // When set: each result a worker reports goes through settle(i, result)
  // in this process, on a thread of its own (one result at a time, in the
  // order they came), while that worker goes on with its next task; what
  // settle returns is the task's result (done gets it). The temporaries the
  // worker made for the task stay registered (a stop signal removes them)
  // until settle returns; those it did not rename are removed then. Must not
  // throw.
  std::function<std::string(size_t, const std::string&)> settle;
};

// How a worker ended a task it did not finish.
struct TaskFailure {
  bool timed_out = false;
  int signal = 0;                // the signal that ended the worker, or 0
  int exit_code = 0;             // its exit status when no signal ended it
  std::string start_error;       // no worker could be started (EMFILE, EAGAIN, ...)
  std::string describe() const;  // "crashed with SIGSEGV (segmentation fault)", ...
};

// Runs work(i) for every i < n, each in a worker process forked from this one
// (which must not be running other threads but settle's, which is idle
// whenever a worker is forked). work returns its result as one
// line of text; a task whose worker dies or runs past the timeout gets
// failed(i, how) instead. Temporaries the workers leave are removed. done(i,
// result) is called in this process, in completion order (after settle). A
// worker with no task left is sent away at once. Workers print to
// standard error; standard output is theirs only through set_stdout_fd.
// Returns the results in task order.
std::vector<std::string> run_isolated(
    size_t n, const IsolationOptions& options, const std::function<std::string(size_t)>& work,
    const std::function<std::string(size_t, const TaskFailure&)>& failed,
    const std::function<void(size_t, const std::string&)>& done);

}  // namespace nnapi_convert
