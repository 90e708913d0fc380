// Output files written so that nothing is lost: each output is a temporary
// made beside its target (O_EXCL: a planted file or symlink is never
// followed), written, and when every output of the model is complete fsynced
// and renamed over the target, its directory fsynced after. A temporary that is not committed is
// removed, also when the process is stopped by SIGINT, SIGTERM, SIGHUP or
// SIGPIPE at any moment (its name is registered before it is created).
// Standard output ("-", /dev/stdout), other descriptors, character devices
// and FIFOs are written through when committed (see OutputTarget).
// Knows nothing of models or NNAPI.
#pragma once

#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace nnapi_convert {

// A target that can't be written, or an I/O failure; what() names the path.
// usage() is true where the user named an impossible target (exit 2).
class OutputError : public std::runtime_error {
 public:
  OutputError(const std::string& what, bool usage) : std::runtime_error(what), usage_(usage) {}
  bool usage() const { return usage_; }

 private:
  bool usage_;
};

// Where an output goes. File: a temporary beside `path` (a symlink's final
// target) renamed over it. Descriptor: file descriptor `fd` ("-" and
// /dev/stdout are 1; /dev/fd/N, /proc/self/fd/N, /dev/stderr, or a symlink
// to one of them), written through as it is. Node: a character device or
// FIFO (or a symlink to one), opened for writing and written through, never
// replaced. Both of the latter are staged in $TMPDIR (or /tmp) until committed.
struct OutputTarget {
  enum class Kind { File, Descriptor, Node };
  Kind kind = Kind::File;
  std::string path;
  int fd = -1;
};

// Where `path` really gets written. Throws OutputError(usage) for an empty
// path, a directory, a block device or socket, a dangling symlink, or a
// descriptor that is not open for writing.
OutputTarget resolve_output_target(const std::string& path, const std::string& what);

// The file descriptor `path` names (see OutputTarget), or -1.
int output_descriptor(const std::string& path);
// Whether `path` is "-", /dev/stdout or another name of standard output.
bool names_standard_output(const std::string& path);

// A finished temporary handed over (PendingFile::hand_over), as plain data
// that can travel to another process.
struct Staged {
  std::string temp;    // the finished temporary
  std::string target;  // what it is renamed over
  std::string path;    // the output as the user named it, for messages
  std::string what;    // "output", "--lite output", ...
};

// One output being written.
class PendingFile {
 public:
  // `what` names the output in messages ("output", "--report", ...).
  PendingFile(const std::string& path, const std::string& what);
  PendingFile(const PendingFile&) = delete;
  PendingFile& operator=(const PendingFile&) = delete;
  ~PendingFile();  // removes the temporary unless committed

  void write(const void* data, size_t size);  // throws OutputError
  // For writers that must not throw (LibTorch's zip writer): records the
  // first error, which finish() then throws.
  void write_nothrow(const void* data, size_t size) noexcept;
  void finish();  // flush and close (commit fsyncs); throws OutputError
  void commit();  // rename over the target (or copy to standard output); see commit_all
  // Whether commit renames a file (rather than writing through to a
  // descriptor, device or FIFO): such a finished output can be handed over.
  bool renamed_into_place() const;
  // For a finished output that is renamed into place: its temporary becomes
  // the caller's to commit with commit_staged (another process may do it);
  // this object no longer removes it. Its signal-handler slot is released
  // here, without telling the temp observer: a worker's parent keeps it.
  Staged hand_over();

  // The directory a committed file was renamed in ("" where none was).
  std::string directory_to_sync() const;

  const std::string& path() const { return path_; }       // as the user named it
  const std::string& temp_path() const { return temp_; }  // complete after finish()

 private:
  friend void commit_all(const std::vector<PendingFile*>& files);
  std::string named() const;  // "'path'", or "to standard output" for "-"

  std::string path_, what_;
  OutputTarget target_;
  std::string temp_;
  int fd_ = -1;
  int slot_ = -1;
  int error_ = 0;  // errno of the first failed write
  bool committed_ = false;
};

// Commits every file (after each has been finished): each temporary that is
// renamed is fsynced, then the renames follow one another with no I/O
// between them; then each directory renamed in is fsynced once (throws
// OutputError if that fails: the files are in place, but may not be on the
// disk).
void commit_all(const std::vector<PendingFile*>& files);

// commit_all for handed-over temporaries: the same fsyncs, renames and
// directory fsyncs, in the same order, with the same messages. If a
// temporary cannot be fsynced or renamed, those not renamed yet are removed
// before it throws.
void commit_staged(const std::vector<Staged>& files);

// Writes `data` to `path` atomically (one PendingFile).
void write_output_file(const std::string& path, const std::string& what, const std::string& data);

// Signal-safe clean-up: SIGINT, SIGTERM, SIGHUP and SIGPIPE remove every
// temporary still pending (and those registered by register_foreign_temp),
// signal the processes added with add_child_process, then end the process by
// the same signal. SIGXFSZ is ignored, so a file-size limit is a write error.
void install_output_signal_handlers();
// Temporaries made by another process (a worker) that this one must also
// remove if it is stopped; returns a slot for forget_foreign_temp.
int register_foreign_temp(const std::string& path);
void forget_foreign_temp(int slot);
void add_child_process(int pid);
void remove_child_process(int pid);
// In a new worker process: forget the parent's children and temporaries.
void reset_cleanup_for_child();
// Called (outside signal handlers) when this process makes (true) or removes
// (false) a temporary: a worker tells its parent.
void set_temp_observer(std::function<void(const std::string&, bool)> observer);
// Standard output as "-" writes it (a worker points fd 1 elsewhere).
void set_stdout_fd(int fd);

}  // namespace nnapi_convert
