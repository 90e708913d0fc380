#include "core/isolation.h"

#include <fcntl.h>
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
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <iostream>
#include <mutex>
#include <system_error>
#include <thread>
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

using Temps = std::vector<std::pair<std::string, int>>;  // path, signal slot

struct Worker {
  pid_t pid = -1;
  int sock = -1;
  long task = -1;
  Clock::time_point started;
  std::string buf;
  Temps temps;
};

// IsolationOptions::settle on a thread of its own: results go in with add(),
// come out of take() once settled, and each settled one wakes poll() through
// a pipe (wake_fd). The thread starts with the first result.
class Settler {
 public:
  struct Item {
    size_t task = 0;
    std::string result;
    Temps temps;  // still registered: the caller forgets them after take()
  };

  explicit Settler(const std::function<std::string(size_t, const std::string&)>& settle)
      : settle_(settle) {}
  ~Settler() {
    if (thread_.joinable()) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
      }
      wake_.notify_all();
      thread_.join();
    }
    for (int fd : pipe_)
      if (fd >= 0) ::close(fd);
  }
  Settler(const Settler&) = delete;
  Settler& operator=(const Settler&) = delete;

  // Starts the thread (once); false when it cannot be (no descriptors or
  // threads left): the caller settles results itself.
  bool start() {
    if (thread_.joinable()) return true;
    if (pipe_[0] < 0 && ::pipe2(pipe_, O_CLOEXEC | O_NONBLOCK) != 0) return false;
    try {
      thread_ = std::thread([this] { run(); });
    } catch (const std::system_error&) {
      return false;
    }
    return true;
  }
  void add(Item item) {  // after start()
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(item));
    }
    ++outstanding_;
    wake_.notify_all();
  }
  // Results added and not yet taken.
  size_t outstanding() const { return outstanding_; }
  int wake_fd() const { return pipe_[0]; }
  std::vector<Item> take() {
    char drain[256];
    while (::read(pipe_[0], drain, sizeof drain) > 0) {
    }
    std::vector<Item> out;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      out.swap(settled_);
    }
    outstanding_ -= out.size();
    return out;
  }
  // Until nothing is being settled (before a fork: the thread holds no lock).
  void wait_idle() {
    std::unique_lock<std::mutex> lock(mutex_);
    idle_.wait(lock, [this] { return queue_.empty() && !busy_; });
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopped
      Item item = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      lock.unlock();
      item.result = settle_(item.task, item.result);
      lock.lock();
      settled_.push_back(std::move(item));
      busy_ = false;
      const char one = 1;
      [[maybe_unused]] ssize_t w = ::write(pipe_[1], &one, 1);  // full: a wake-up is pending
      idle_.notify_all();
    }
  }

  const std::function<std::string(size_t, const std::string&)>& settle_;
  std::thread thread_;
  int pipe_[2] = {-1, -1};
  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<Item> queue_;
  std::vector<Item> settled_;
  bool busy_ = false, stop_ = false;
  size_t outstanding_ = 0;  // the calling thread's count
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
  Settler settler(options.settle);

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
    settler.wait_idle();
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
  auto forget_temps = [](Temps& temps, bool remove) {
    for (auto& [path, slot] : temps) {
      if (remove) ::unlink(path.c_str());
      forget_foreign_temp(slot);
    }
    temps.clear();
  };
  // A worker that died or was stopped: its task fails, a new worker goes on.
  auto bury = [&](Worker& w, TaskFailure how) {
    int status = 0;
    while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
    }
    remove_child_process(w.pid);
    w.pid = -1;
    ::close(w.sock);
    w.sock = -1;
    forget_temps(w.temps, true);
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
    if (!any_alive && next < n) {  // no worker can be started: every remaining task fails, named
      TaskFailure how;
      how.start_error = spawn_error;
      while (next < n) {
        size_t task = task_at(next++);
        finish(task, failed(task, how));
      }
    }
    std::vector<pollfd> fds;
    std::vector<Worker*> polled;
    int wait_ms = -1;
    auto now = Clock::now();
    if (settler.outstanding() > 0) fds.push_back({settler.wake_fd(), POLLIN, 0});
    const size_t first_worker = fds.size();
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
    if (first_worker > 0 && ready > 0 && (fds[0].revents & POLLIN)) {
      for (Settler::Item& item : settler.take()) {
        forget_temps(item.temps, true);  // those settle left (none when it did its work)
        finish(item.task, std::move(item.result));
      }
    }
    for (size_t k = first_worker; k < fds.size(); ++k) {
      Worker& w = *polled[k - first_worker];
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
            size_t task = static_cast<size_t>(w.task);
            w.task = -1;
            if (options.settle && settler.start()) {
              settler.add({task, payload, std::move(w.temps)});
              w.temps.clear();
            } else {
              const std::string result = options.settle ? options.settle(task, payload) : payload;
              forget_temps(w.temps, options.settle != nullptr);
              finish(task, result);
            }
            assign(w);
            if (w.task < 0) {  // nothing left for it: end of file, it exits
              ::close(w.sock);
              w.sock = -1;
              break;
            }
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
    if (w.sock >= 0) ::close(w.sock);  // end of file: the worker exits
    if (w.pid < 0) continue;
    int status;
    while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
    }
    remove_child_process(w.pid);
  }
  return results;
}

}  // namespace nnapi_convert
