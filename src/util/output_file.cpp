#include "util/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace nnapi_convert {
namespace {

namespace fs = std::filesystem;

// --- what a signal handler may touch: fixed arrays, atomics --------------------

constexpr int kSlots = 256;
constexpr int kChildren = 256;
constexpr size_t kPathMax = 4096;

struct Slot {
  std::atomic<int> state{0};  // 0 free, 1 being filled, 2 live
  char path[kPathMax];
};
Slot g_slots[kSlots];
std::atomic<int> g_children[kChildren];
std::atomic<int> g_stdout_fd{STDOUT_FILENO};
std::function<void(const std::string&, bool)> g_observer;

int claim_slot(const std::string& path) {
  if (path.size() >= kPathMax) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (g_slots[i].state.compare_exchange_strong(expected, 1)) {
      std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
      g_slots[i].state.store(2, std::memory_order_release);
      return i;
    }
  }
  return -1;  // full: this temporary is not removed by a signal
}

void release_slot(int slot) {
  if (slot >= 0) g_slots[slot].state.store(0, std::memory_order_release);
}

extern "C" void on_stop_signal(int sig) {
  int saved = errno;
  for (auto& child : g_children) {
    int pid = child.load(std::memory_order_acquire);
    if (pid > 0) ::kill(pid, sig);
  }
  for (Slot& s : g_slots) {
    if (s.state.load(std::memory_order_acquire) == 2) ::unlink(s.path);
  }
  errno = saved;
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

mode_t process_umask() {
  static const mode_t mask = [] {
    mode_t m = ::umask(0);
    ::umask(m);
    return m;
  }();
  return mask;
}

std::string errno_text(int e) { return std::strerror(e); }

const char* node_kind(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Writes all of data to fd; returns 0 or the errno of the failure.
int write_all(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return 0;
}

}  // namespace

std::string resolve_output_target(const std::string& path, const std::string& what) {
  if (path.empty()) {
    throw OutputError(what + " path is empty; name a file, or - for standard output", true);
  }
  if (path == "-") return path;
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return path;  // made later; its errors name it then
  std::string target = path;
  if (S_ISLNK(st.st_mode)) {
    char resolved[PATH_MAX];
    if (!::realpath(path.c_str(), resolved) || ::stat(resolved, &st) != 0) {
      throw OutputError(what + " '" + path +
                            "' is a symbolic link to something that is not a file (or does "
                            "not exist); name a regular file, or - for standard output",
                        true);
    }
    target = resolved;
  }
  if (S_ISDIR(st.st_mode)) {
    throw OutputError(what + " '" + path + "' is a directory; name a file inside it", true);
  }
  if (!S_ISREG(st.st_mode)) {
    throw OutputError(what + " '" + path + "' is " + node_kind(st.st_mode) +
                          "; nnapi-convert replaces outputs atomically, which would destroy "
                          "it: name a regular file, or - for standard output",
                      true);
  }
  return target;
}

PendingFile::PendingFile(const std::string& path, const std::string& what)
    : path_(path), what_(what), target_(resolve_output_target(path, what)) {
  fs::path dir;
  std::string base;
  if (target_ == "-") {
    const char* tmpdir = std::getenv("TMPDIR");
    dir = tmpdir && *tmpdir ? tmpdir : "/tmp";
    base = "nnapi-convert-stdout";
  } else {
    fs::path t(target_);
    dir = t.parent_path();
    base = t.filename().string();
    if (!dir.empty()) {
      std::error_code ec;
      fs::create_directories(dir, ec);
      if (ec) {
        throw OutputError("could not write " + what_ + " '" + path_ + "': its directory '" +
                              dir.string() + "' cannot be created: " + ec.message(),
                          false);
      }
    }
  }
  std::string pattern = (dir.empty() ? fs::path(base) : dir / base).string() + ".tmp-XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  fd_ = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd_ < 0) {
    throw OutputError("could not write " + what_ + " '" + path_ +
                          "': no temporary file can be "
                          "made in '" +
                          (dir.empty() ? std::string(".") : dir.string()) +
                          "': " + errno_text(errno),
                      false);
  }
  temp_ = name.data();
  slot_ = claim_slot(temp_);
  if (g_observer) g_observer(temp_, true);
  struct stat st;
  mode_t mode = target_ != "-" && ::stat(target_.c_str(), &st) == 0 ? (st.st_mode & 07777)
                                                                    : (0666 & ~process_umask());
  ::fchmod(fd_, mode);
}

PendingFile::~PendingFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temp_.empty()) {
    ::unlink(temp_.c_str());
    if (g_observer) g_observer(temp_, false);
  }
  release_slot(slot_);
}

void PendingFile::write_nothrow(const void* data, size_t size) noexcept {
  if (error_ == 0 && fd_ >= 0) error_ = write_all(fd_, data, size);
}

void PendingFile::write(const void* data, size_t size) {
  write_nothrow(data, size);
  if (error_ != 0) {
    throw OutputError("could not write " + what_ + " '" + path_ + "': " + errno_text(error_),
                      false);
  }
}

void PendingFile::finish() {
  if (error_ == 0 && fd_ >= 0 && ::fsync(fd_) != 0 && errno != EINVAL) error_ = errno;
  if (fd_ >= 0 && ::close(fd_) != 0 && error_ == 0) error_ = errno;
  fd_ = -1;
  if (error_ != 0) {
    throw OutputError("could not write " + what_ + " '" + path_ + "': " + errno_text(error_) +
                          (error_ == ENOSPC || error_ == EFBIG || error_ == EDQUOT
                               ? " (the existing file, if any, is unchanged)"
                               : ""),
                      false);
  }
}

void PendingFile::commit() {
  if (committed_) return;
  if (target_ == "-") {
    int in = ::open(temp_.c_str(), O_RDONLY | O_CLOEXEC);
    int err = in < 0 ? errno : 0;
    char buf[1 << 16];
    while (err == 0) {
      ssize_t n = ::read(in, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) err = errno;
      if (n <= 0) break;
      err = write_all(g_stdout_fd.load(), buf, static_cast<size_t>(n));
    }
    if (in >= 0) ::close(in);
    if (err != 0) {
      throw OutputError("could not write " + what_ + " to standard output: " + errno_text(err),
                        false);
    }
    ::unlink(temp_.c_str());
  } else if (::rename(temp_.c_str(), target_.c_str()) != 0) {
    throw OutputError("could not write " + what_ + " '" + path_ + "': renaming its temporary " +
                          "file into place failed: " + errno_text(errno),
                      false);
  }
  committed_ = true;
  if (g_observer) g_observer(temp_, false);
  release_slot(slot_);
  slot_ = -1;
}

void commit_all(const std::vector<PendingFile*>& files) {
  for (PendingFile* f : files) f->commit();
}

void write_output_file(const std::string& path, const std::string& what, const std::string& data) {
  PendingFile f(path, what);
  f.write(data.data(), data.size());
  f.finish();
  f.commit();
}

void install_output_signal_handlers() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
    sigaddset(&sa.sa_mask, sig);
  }
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) ::sigaction(sig, &sa, nullptr);
  ::signal(SIGXFSZ, SIG_IGN);
  process_umask();
}

int register_foreign_temp(const std::string& path) { return claim_slot(path); }
void forget_foreign_temp(int slot) { release_slot(slot); }

void add_child_process(int pid) {
  for (auto& child : g_children) {
    int expected = 0;
    if (child.compare_exchange_strong(expected, pid)) return;
  }
}

void remove_child_process(int pid) {
  for (auto& child : g_children) {
    int expected = pid;
    if (child.compare_exchange_strong(expected, 0)) return;
  }
}

void reset_cleanup_for_child() {
  for (auto& child : g_children) child.store(0);
  for (Slot& s : g_slots) s.state.store(0);
}

void set_temp_observer(std::function<void(const std::string&, bool)> observer) {
  g_observer = std::move(observer);
}

void set_stdout_fd(int fd) { g_stdout_fd.store(fd); }

}  // namespace nnapi_convert
