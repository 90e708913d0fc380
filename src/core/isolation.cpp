#include "core/isolation.h"

#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <vector>

#include "util/output_file.h"

namespace nnapi_convert {
namespace {

using Clock = std::chrono::steady_clock;

// Frames on a worker's socket: a type byte, a 4-byte length, the payload.
// Parent to worker: 'T' task index. Worker to parent: '+' a temporary made,
// '-' one removed, '=' the task's result.
bool send_frame(int fd, char type, const std::string& payload) {
  std::string frame(5, '\0');
  frame[0] = type;
  uint32_t n = static_cast<uint32_t>(payload.size());
  std::memcpy(&frame[1], &n, 4);
  frame += payload;
  const char* p = frame.data();
  size_t left = frame.size();
  while (left > 0) {
    ssize_t w = ::send(fd, p, left, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    left -= static_cast<size_t>(w);
  }
  return true;
}

// Takes one complete frame off the front of buf, if there is one.
bool take_frame(std::string& buf, char* type, std::string* payload) {
  if (buf.size() < 5) return false;
  uint32_t n;
  std::memcpy(&n, &buf[1], 4);
  if (buf.size() < 5 + static_cast<size_t>(n)) return false;
  *type = buf[0];
  *payload = buf.substr(5, n);
  buf.erase(0, 5 + static_cast<size_t>(n));
  return true;
}

// Reads until a frame is complete; false at end of file.
bool recv_frame(int fd, std::string& buf, char* type, std::string* payload) {
  while (!take_frame(buf, type, payload)) {
    char chunk[4096];
    ssize_t r = ::recv(fd, chunk, sizeof chunk, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    buf.append(chunk, static_cast<size_t>(r));
  }
  return true;
}

// LibTorch's loader and compiler recurse over nested values and code: a
// worker runs each task on a large stack of its own. It is the worker's own
// thread that switches to it (swapcontext), not a thread made for the task:
// a process with one thread takes glibc's single-threaded paths (malloc's
// main arena without locks), and a batch's workers used 6 % more CPU time
// on a thread of their own.
struct StackTask {
  const std::function<std::string()>* fn = nullptr;
  std::string result;
  std::exception_ptr error;
};
StackTask* g_stack_task = nullptr;  // the task the switched-to context runs

void run_stack_task() {
  StackTask* t = g_stack_task;
  try {
    t->result = (*t->fn)();
  } catch (...) {
    t->error = std::current_exception();
  }
}  // returns to uc_link: the caller of run_on_large_stack

// The large stack, made once per process (its pages stay for the next task),
// with a guard page below it; nullptr when none can be mapped.
char* large_stack(size_t* size) {
  static size_t stack_size = 0;
  static char* stack = [] {
    size_t n = size_t{256} << 20;
    struct rlimit as;
    if (::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
      n = std::min<size_t>(n, static_cast<size_t>(as.rlim_cur / 8));
    }
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    n = std::max<size_t>(n, 8 << 20) / page * page;
    void* p = ::mmap(nullptr, n, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (p == MAP_FAILED) return static_cast<char*>(nullptr);
    ::mprotect(p, page, PROT_NONE);  // an overflow faults here, as on a thread's stack
    stack_size = n;
    return static_cast<char*>(p);
  }();
  *size = stack_size;
  return stack;
}

std::string run_on_large_stack(const std::function<std::string()>& fn) {
  size_t size = 0;
  char* stack = large_stack(&size);
  ucontext_t caller, callee;
  if (stack == nullptr || ::getcontext(&callee) != 0) return fn();
  callee.uc_stack.ss_sp = stack;
  callee.uc_stack.ss_size = size;
  callee.uc_link = &caller;
  StackTask task;
  task.fn = &fn;
  g_stack_task = &task;
  ::makecontext(&callee, run_stack_task, 0);
  if (::swapcontext(&caller, &callee) != 0) return fn();
  if (task.error) std::rethrow_exception(task.error);
  return task.result;
}

[[noreturn]] void worker_main(int sock, pid_t parent, const std::vector<int>& inherited,
                              const std::function<std::string(size_t)>& work) {
  for (int fd : inherited) ::close(fd);
  reset_cleanup_for_child();
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) ::_exit(1);
  // What a model's own code prints while it loads goes to standard error;
  // standard output stays for the outputs written to "-".
  set_stdout_fd(::dup(STDOUT_FILENO));
  ::dup2(STDERR_FILENO, STDOUT_FILENO);
  set_temp_observer(
      [sock](const std::string& path, bool made) { send_frame(sock, made ? '+' : '-', path); });
  std::string buf, payload;
  char type;
  while (recv_frame(sock, buf, &type, &payload)) {
    size_t index = std::stoul(payload);
    std::string result = run_on_large_stack([&] { return work(index); });
    std::cout.flush();
    std::cerr.flush();
    if (!send_frame(sock, '=', result)) break;
  }
  std::fflush(nullptr);
  ::_exit(0);
}

struct Worker {
  pid_t pid = -1;
  int sock = -1;
  long task = -1;
  Clock::time_point started;
  std::string buf;
  std::vector<std::pair<std::string, int>> temps;  // path, signal slot
};

}  // namespace

std::string TaskFailure::describe() const {
  if (!start_error.empty()) {
    return "could not start: no worker process can be made (" + start_error + ")";
  }
  if (timed_out) return "did not finish within the time limit (--timeout) and was stopped";
  if (signal != 0) {
    const char* name = sigabbrev_np(signal);
    return std::string("crashed with SIG") + (name ? name : std::to_string(signal).c_str()) + " (" +
           strsignal(signal) + ")";
  }
  return "ended with exit status " + std::to_string(exit_code) + " before reporting";
}

std::vector<std::string> run_isolated(
    size_t n, const IsolationOptions& options, const std::function<std::string(size_t)>& work,
    const std::function<std::string(size_t, const TaskFailure&)>& failed,
    const std::function<void(size_t, const std::string&)>& done) {
  std::vector<std::string> results(n);
  std::vector<Worker> workers(std::min<size_t>(std::max(options.parallel, 1), n));
  size_t next = 0, finished = 0;
  const pid_t self = ::getpid();

  auto parent_fds = [&] {
    std::vector<int> fds;
    for (const Worker& w : workers)
      if (w.sock >= 0) fds.push_back(w.sock);
    return fds;
  };
  std::string spawn_error;
  // Starts a worker; false (and spawn_error) when the system refuses one.
  auto spawn = [&](Worker& w) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      spawn_error = std::strerror(errno);
      return false;
    }
    std::vector<int> inherited = parent_fds();
    inherited.push_back(sv[0]);
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    pid_t pid = ::fork();
    if (pid < 0) {
      spawn_error = std::strerror(errno);
      ::close(sv[0]);
      ::close(sv[1]);
      return false;
    }
    if (pid == 0) worker_main(sv[1], self, inherited, work);
    ::close(sv[1]);
    add_child_process(pid);
    w = Worker();
    w.pid = pid;
    w.sock = sv[0];
    return true;
  };
  auto finish = [&](size_t task, std::string result) {
    results[task] = std::move(result);
    ++finished;
    if (done) done(task, results[task]);
  };
  auto task_at = [&](size_t k) { return options.order.empty() ? k : options.order.at(k); };
  auto assign = [&](Worker& w) {
    if (next >= n) return;
    w.task = static_cast<long>(task_at(next++));
    w.started = Clock::now();
    send_frame(w.sock, 'T', std::to_string(w.task));  // a dead worker shows as end of file
  };
  auto forget_temps = [](Worker& w, bool remove) {
    for (auto& [path, slot] : w.temps) {
      if (remove) ::unlink(path.c_str());
      forget_foreign_temp(slot);
    }
    w.temps.clear();
  };
  // A worker that died or was stopped: its task fails, a new worker goes on.
  auto bury = [&](Worker& w, TaskFailure how) {
    int status = 0;
    while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
    }
    remove_child_process(w.pid);
    ::close(w.sock);
    w.sock = -1;
    forget_temps(w, true);
    if (!how.timed_out) {
      how.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      how.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
    }
    long task = w.task;
    w.task = -1;
    if (task >= 0) finish(static_cast<size_t>(task), failed(static_cast<size_t>(task), how));
    if (next < n && spawn(w)) assign(w);
  };

  // As many workers as the system allows, up to `parallel`.
  for (Worker& w : workers) {
    if (!spawn(w)) break;
    assign(w);
  }
  while (finished < n) {
    bool any_alive =
        std::any_of(workers.begin(), workers.end(), [](const Worker& w) { return w.sock >= 0; });
    if (!any_alive && next < n && spawn(workers[0])) {
      assign(workers[0]);
      any_alive = true;
    }
    if (!any_alive) {  // no worker can be started: every remaining task fails, named
      TaskFailure how;
      how.start_error = spawn_error;
      while (next < n) {
        size_t task = task_at(next++);
        finish(task, failed(task, how));
      }
      break;
    }
    std::vector<pollfd> fds;
    std::vector<Worker*> polled;
    int wait_ms = -1;
    auto now = Clock::now();
    for (Worker& w : workers) {
      if (w.sock < 0) continue;
      fds.push_back({w.sock, POLLIN, 0});
      polled.push_back(&w);
      if (w.task >= 0 && options.timeout_s > 0) {
        double left = options.timeout_s - std::chrono::duration<double>(now - w.started).count();
        int ms = static_cast<int>(std::max(0.0, left) * 1000) + 1;
        wait_ms = wait_ms < 0 ? ms : std::min(wait_ms, ms);
      }
    }
    if (fds.empty()) break;
    int ready = ::poll(fds.data(), fds.size(), wait_ms);
    if (ready < 0 && errno != EINTR) throw std::runtime_error("poll failed");
    for (size_t k = 0; k < fds.size(); ++k) {
      Worker& w = *polled[k];
      if (ready > 0 && (fds[k].revents & (POLLIN | POLLHUP | POLLERR))) {
        char chunk[65536];
        ssize_t r = ::recv(w.sock, chunk, sizeof chunk, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
          bury(w, TaskFailure{});
          continue;
        }
        w.buf.append(chunk, static_cast<size_t>(r));
        char type;
        std::string payload;
        while (take_frame(w.buf, &type, &payload)) {
          if (type == '+') {
            w.temps.emplace_back(payload, register_foreign_temp(payload));
          } else if (type == '-') {
            for (auto it = w.temps.begin(); it != w.temps.end(); ++it) {
              if (it->first == payload) {
                forget_foreign_temp(it->second);
                w.temps.erase(it);
                break;
              }
            }
          } else if (type == '=' && w.task >= 0) {
            forget_temps(w, false);
            size_t task = static_cast<size_t>(w.task);
            w.task = -1;
            finish(task, payload);
            assign(w);
          }
        }
      } else if (w.task >= 0 && options.timeout_s > 0 &&
                 std::chrono::duration<double>(Clock::now() - w.started).count() >
                     options.timeout_s) {
        ::kill(w.pid, SIGKILL);
        TaskFailure how;
        how.timed_out = true;
        bury(w, how);
      }
    }
  }
  for (Worker& w : workers) {
    if (w.sock < 0) continue;
    ::close(w.sock);  // end of file: the worker exits
    int status;
    while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
    }
    remove_child_process(w.pid);
  }
  return results;
}

}  // namespace nnapi_convert
