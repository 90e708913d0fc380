#include "util/output_file.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>

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

// Copies the file `from` to fd `to`; returns 0 or the errno of the failure.
int copy_to(const std::string& from, int to) {
  int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  int err = in < 0 ? errno : 0;
  char buf[1 << 16];
  while (err == 0) {
    ssize_t n = ::read(in, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) err = errno;
    if (n <= 0) break;
    err = write_all(to, buf, static_cast<size_t>(n));
  }
  if (in >= 0) ::close(in);
  return err;
}

// The test hook of tests/cli/hostile (never set it otherwise):
// NNAPI_CONVERT_TEST_SIGNAL_AFTER_TEMP=N[:TEXT] raises signal N right after
// a temporary file (whose name contains TEXT, when given) is created, so that
// a test can stop the process at exactly that point.
void test_signal_after_temp(const std::string& temp) {
  const char* env = std::getenv("NNAPI_CONVERT_TEST_SIGNAL_AFTER_TEMP");
  if (env == nullptr || *env == '\0') return;
  const char* colon = std::strchr(env, ':');
  if (colon != nullptr && temp.find(colon + 1) == std::string::npos) return;
  const int sig = std::atoi(env);
  if (sig > 0) ::raise(sig);
}

// Asks the kernel to drop the page cache of the file `path` is about to be
// replaced by: its clean pages are freed before the new file's are needed,
// as they are when a file is truncated and rewritten in place, rather than
// after the rename. The file itself is untouched (dirty pages are written
// first); this is advice only. (ViT-B/16's 346 MB output: the write phase
// took 295-780 ms when the new pages came from elsewhere, 238-248 ms with
// the old file's freed first, on the 2-CPU VM of tools/bench/run.py.)
void drop_cached_pages(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return;
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

// Six characters of [A-Za-z0-9] from the kernel's random source.
std::string random_suffix() {
  static const char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  unsigned char bytes[6];
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) {
    std::random_device rd;
    for (unsigned char& b : bytes) b = static_cast<unsigned char>(rd());
  }
  std::string s;
  for (unsigned char b : bytes) s += kChars[b % (sizeof kChars - 1)];
  return s;
}

// Creates `prefix`.tmp-XXXXXX (O_EXCL, mode 0600: a planted file or symlink
// is never followed) and returns its descriptor, or -1 with errno. Its name
// is registered for the signal handler (and told to the observer) before the
// file exists, so a stop signal at any moment leaves no temporary behind.
// A name that exists is never registered: it is someone else's.
int create_temp(const std::string& prefix, std::string* name, int* slot) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string candidate = prefix + ".tmp-" + random_suffix();
    struct stat st;
    if (::lstat(candidate.c_str(), &st) == 0) continue;
    int claimed = claim_slot(candidate);
    if (g_observer) g_observer(candidate, true);
    int fd = ::open(candidate.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
      *name = candidate;
      *slot = claimed;
      test_signal_after_temp(candidate);
      return fd;
    }
    int e = errno;
    release_slot(claimed);
    if (g_observer) g_observer(candidate, false);
    if (e != EEXIST) {
      errno = e;
      return -1;
    }
  }
  errno = EEXIST;
  return -1;
}

// The descriptor a path names: /dev/stdin, /dev/stdout, /dev/stderr,
// /dev/fd/N, /proc/self/fd/N (lexically), or -1.
int descriptor_path_number(const std::string& p) {
  if (p == "/dev/stdin") return 0;
  if (p == "/dev/stdout") return 1;
  if (p == "/dev/stderr") return 2;
  for (const char* dir : {"/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/"}) {
    const size_t n = std::strlen(dir);
    if (p.size() <= n || p.size() > n + 9 || p.compare(0, n, dir) != 0) continue;
    if (p.find_first_not_of("0123456789", n) != std::string::npos) return -1;
    return std::atoi(p.c_str() + n);
  }
  return -1;
}

// "'path'", or "to standard output" for "-".
std::string named_output(const std::string& path) {
  return path == "-" ? std::string("to standard output") : "'" + path + "'";
}

// The message of a failed write, fsync or close of an output's temporary.
OutputError write_failure(const std::string& what, const std::string& named, int err) {
  return OutputError("could not write " + what + " " + named + ": " + errno_text(err) +
                         (err == ENOSPC || err == EFBIG || err == EDQUOT
                              ? " (the existing file, if any, is unchanged)"
                              : ""),
                     false);
}

// fsync of a finished temporary (opened again: its writer closed it, maybe
// in another process); 0 or the errno of the failure.
int sync_temp(const std::string& temp) {
  const int fd = ::open(temp.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return errno;
  int err = ::fsync(fd) != 0 && errno != EINVAL ? errno : 0;
  if (::close(fd) != 0 && err == 0) err = errno;
  return err;
}

void rename_into_place(const std::string& temp, const std::string& target, const std::string& what,
                       const std::string& path) {
  if (::rename(temp.c_str(), target.c_str()) != 0) {
    throw OutputError("could not write " + what + " '" + path +
                          "': renaming its temporary file into place failed: " + errno_text(errno),
                      false);
  }
}

std::string directory_of(const std::string& target) {
  const fs::path dir = fs::path(target).parent_path();
  return dir.empty() ? "." : dir.string();
}

// The renames reach the disk with their directories, each synced once.
// renamed: (directory, the output's path as named) in commit order.
void sync_directories(const std::vector<std::pair<std::string, std::string>>& renamed) {
  std::vector<std::string> synced;
  for (const auto& [dir, path] : renamed) {
    if (std::find(synced.begin(), synced.end(), dir) != synced.end()) continue;
    synced.push_back(dir);
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int err = fd < 0 ? errno : 0;
    if (fd >= 0 && ::fsync(fd) != 0 && errno != EINVAL) err = errno;
    if (fd >= 0) ::close(fd);
    if (err != 0) {
      throw OutputError("'" + path + "' was written, but its directory '" + dir +
                            "' could not be synced to the disk (" + errno_text(err) +
                            "), so the new file may not survive a crash or power loss; check "
                            "the file system",
                        false);
    }
  }
}

}  // namespace

int output_descriptor(const std::string& path) {
  if (path == "-") return STDOUT_FILENO;
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  if (ec) return -1;
  // The name, then the names the symbolic links it leads through give, as
  // text: /proc/self/fd/N is not followed, as it names this process's own
  // descriptor N, and a worker's descriptor 1 is not the user's standard
  // output (that is set_stdout_fd's).
  for (int hop = 0; hop < 40; ++hop) {
    int n = descriptor_path_number(p.lexically_normal().string());
    if (n >= 0) return n;
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return -1;
    fs::path t = fs::read_symlink(p, ec);
    if (ec) return -1;
    p = t.is_absolute() ? t : p.parent_path() / t;
  }
  return -1;
}

bool names_standard_output(const std::string& path) {
  return !path.empty() && output_descriptor(path) == STDOUT_FILENO;
}

OutputTarget resolve_output_target(const std::string& path, const std::string& what) {
  if (path.empty()) {
    throw OutputError(what + " path is empty; name a file, or - for standard output", true);
  }
  const int n = output_descriptor(path);
  if (n >= 0) {
    const std::string name = path == "-"
                                 ? std::string("standard output")
                                 : "'" + path + "' (file descriptor " + std::to_string(n) + ")";
    const int flags = ::fcntl(n == STDOUT_FILENO ? g_stdout_fd.load() : n, F_GETFL);
    if (flags < 0) {
      throw OutputError(what + " " + name + " is not open; name a file, or open it", true);
    }
    if ((flags & O_ACCMODE) == O_RDONLY) {
      throw OutputError(what + " " + name + " is open for reading only; name a file", true);
    }
    return {OutputTarget::Kind::Descriptor, path, n};
  }
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    return {OutputTarget::Kind::File, path, -1};  // made later; its errors name it then
  }
  const bool link = S_ISLNK(st.st_mode);
  if (link && ::stat(path.c_str(), &st) != 0) {
    throw OutputError(what + " '" + path +
                          "' is a symbolic link to something that does not exist; name a "
                          "regular file, or - for standard output",
                      true);
  }
  if (S_ISDIR(st.st_mode)) {
    throw OutputError(what + " '" + path + "' is a directory; name a file inside it", true);
  }
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
    return {OutputTarget::Kind::Node, path, -1};  // written through, never replaced
  }
  if (!S_ISREG(st.st_mode)) {
    throw OutputError(what + " '" + path + "' is " + (link ? "a symbolic link to " : "") +
                          node_kind(st.st_mode) +
                          "; nnapi-convert writes to regular files (replaced atomically), "
                          "character devices and FIFOs (written through): name one of those, "
                          "or - for standard output",
                      true);
  }
  std::string target = path;
  if (link) {
    char resolved[PATH_MAX];
    if (!::realpath(path.c_str(), resolved)) {
      throw OutputError(
          what + " '" + path + "': its symbolic link cannot be resolved: " + errno_text(errno),
          true);
    }
    target = resolved;
  }
  return {OutputTarget::Kind::File, target, -1};
}

PendingFile::PendingFile(const std::string& path, const std::string& what)
    : path_(path), what_(what), target_(resolve_output_target(path, what)) {
  fs::path dir;
  std::string base;
  if (target_.kind != OutputTarget::Kind::File) {
    // Staged, and copied to the descriptor or device when committed.
    const char* tmpdir = std::getenv("TMPDIR");
    dir = tmpdir && *tmpdir ? tmpdir : "/tmp";
    base = "nnapi-convert-output";
  } else {
    fs::path t(target_.path);
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
  fd_ = create_temp((dir.empty() ? fs::path(base) : dir / base).string(), &temp_, &slot_);
  if (fd_ < 0) {
    const int e = errno;
    throw OutputError("could not write " + what_ + " " + named() +
                          ": no temporary file can be made in '" +
                          (dir.empty() ? std::string(".") : dir.string()) + "': " + errno_text(e),
                      false);
  }
  if (target_.kind == OutputTarget::Kind::File) {
    struct stat st;
    const bool exists = ::stat(target_.path.c_str(), &st) == 0;
    ::fchmod(fd_, exists ? (st.st_mode & 07777) : (0666 & ~process_umask()));
    if (exists && S_ISREG(st.st_mode)) drop_cached_pages(target_.path);
  }
}

PendingFile::~PendingFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !temp_.empty()) {
    ::unlink(temp_.c_str());
    if (g_observer) g_observer(temp_, false);
  }
  release_slot(slot_);
}

std::string PendingFile::named() const { return named_output(path_); }

void PendingFile::write_nothrow(const void* data, size_t size) noexcept {
  if (error_ == 0 && fd_ >= 0) error_ = write_all(fd_, data, size);
}

void PendingFile::write(const void* data, size_t size) {
  write_nothrow(data, size);
  if (error_ != 0) {
    throw OutputError("could not write " + what_ + " " + named() + ": " + errno_text(error_),
                      false);
  }
}

void PendingFile::finish() {
  if (fd_ >= 0 && ::close(fd_) != 0 && error_ == 0) error_ = errno;
  fd_ = -1;
  if (error_ != 0) throw write_failure(what_, named(), error_);
}

void PendingFile::commit() {
  if (committed_) return;
  if (target_.kind == OutputTarget::Kind::File) {
    rename_into_place(temp_, target_.path, what_, path_);
  } else {
    // Written through: the descriptor as it is, or the device or FIFO opened
    // for writing (never created, truncated or replaced).
    int out = target_.fd == STDOUT_FILENO ? g_stdout_fd.load() : target_.fd;
    int err = 0;
    if (target_.kind == OutputTarget::Kind::Node) {
      out = ::open(target_.path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
      struct stat st;
      if (out < 0) {
        err = errno;
      } else if (::fstat(out, &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
        ::close(out);
        throw OutputError("could not write " + what_ + " '" + path_ +
                              "': it is no longer a character device or FIFO; nothing was "
                              "written to it",
                          false);
      }
    }
    if (err == 0) err = copy_to(temp_, out);
    if (target_.kind == OutputTarget::Kind::Node && out >= 0 && ::close(out) != 0 && err == 0) {
      err = errno;
    }
    if (err != 0) {
      throw OutputError("could not write " + what_ + " " + named() + ": " + errno_text(err), false);
    }
    ::unlink(temp_.c_str());
  }
  committed_ = true;
  if (g_observer) g_observer(temp_, false);
  release_slot(slot_);
  slot_ = -1;
}

std::string PendingFile::directory_to_sync() const {
  return target_.kind == OutputTarget::Kind::File ? directory_of(target_.path) : "";
}

bool PendingFile::renamed_into_place() const { return target_.kind == OutputTarget::Kind::File; }

Staged PendingFile::hand_over() {
  if (!renamed_into_place() || fd_ >= 0 || committed_ || error_ != 0) {
    throw std::logic_error("hand_over of an output that is not a finished file");
  }
  committed_ = true;  // the destructor leaves the temporary alone
  release_slot(slot_);
  slot_ = -1;
  return {temp_, target_.path, path_, what_};
}

void commit_all(const std::vector<PendingFile*>& files) {
  for (PendingFile* f : files) {
    if (!f->renamed_into_place()) continue;  // written through: nothing to make durable
    const int err = sync_temp(f->temp_path());
    if (err != 0) throw write_failure(f->what_, f->named(), err);
  }
  for (PendingFile* f : files) f->commit();
  std::vector<std::pair<std::string, std::string>> renamed;
  for (PendingFile* f : files) {
    const std::string dir = f->directory_to_sync();
    if (!dir.empty()) renamed.emplace_back(dir, f->path());
  }
  sync_directories(renamed);
}

void commit_staged(const std::vector<Staged>& files) {
  size_t renamed = 0;
  try {
    for (const Staged& f : files) {
      const int err = sync_temp(f.temp);
      if (err != 0) throw write_failure(f.what, named_output(f.path), err);
    }
    for (const Staged& f : files) {
      rename_into_place(f.temp, f.target, f.what, f.path);
      ++renamed;
    }
  } catch (const OutputError&) {
    for (size_t i = renamed; i < files.size(); ++i) ::unlink(files[i].temp.c_str());
    throw;
  }
  std::vector<std::pair<std::string, std::string>> dirs;
  for (const Staged& f : files) dirs.emplace_back(directory_of(f.target), f.path);
  sync_directories(dirs);
}

void write_output_file(const std::string& path, const std::string& what, const std::string& data) {
  PendingFile f(path, what);
  f.write(data.data(), data.size());
  f.finish();
  commit_all({&f});
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
