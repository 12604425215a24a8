#include "state/file_io.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/error.hpp"

namespace mixp::state {
namespace {

[[noreturn]] void io_fail(const char *fn, const char *what, const std::string &path, int e) {
  fail(MIXP_ERR_IO, fn, ": cannot ", what, " '", path, "': ", std::strerror(e));
}

// Closes the descriptor when the scope ends (errors of close on a read-only
// descriptor carry no information).
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

std::string dir_of(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_of(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Temporary files are "<target>.mixp-tmp.<pid>.<serial>" beside the target.
constexpr const char *kTmpTag = ".mixp-tmp.";

// Removes the temporaries of `path` left by processes that no longer exist
// (killed while saving): a save of the same target cleans up after them,
// and never touches the temporary of a writer that is still running.
void remove_stale_temporaries(const std::string &path) {
  const std::string dir = dir_of(path), prefix = base_of(path) + kTmpTag;
  DIR *d = ::opendir(dir.c_str());
  if (!d) return;  // the save itself reports an unusable directory
  while (const dirent *e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    char *end = nullptr;
    const long pid = std::strtol(name.c_str() + prefix.size(), &end, 10);
    if (pid <= 0 || *end != '.') continue;
    if (pid == long(::getpid())) continue;
    if (::kill(pid_t(pid), 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to judge
    ::unlink((dir + "/" + name).c_str());
  }
  ::closedir(d);
}

}  // namespace

std::vector<uint8_t> read_prefix(const std::string &path, size_t max, uint64_t *file_size,
                                 const char *fn) {
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd < 0) io_fail(fn, "open", path, errno);
  struct stat st;
  if (::fstat(f.fd, &st) != 0) io_fail(fn, "stat", path, errno);
  if (!S_ISREG(st.st_mode)) fail(MIXP_ERR_IO, fn, ": '", path, "' is not a regular file");
  const uint64_t size = uint64_t(st.st_size);
  if (file_size) *file_size = size;
  const size_t want = size < max ? size_t(size) : max;
  std::vector<uint8_t> buf(want);
  size_t got = 0;
  while (got < want) {
    ssize_t r = ::read(f.fd, buf.data() + got, want - got);
    if (r < 0) {
      if (errno == EINTR) continue;
      io_fail(fn, "read", path, errno);
    }
    if (r == 0) break;  // the file shrank under us: the parser reports it
    got += size_t(r);
  }
  buf.resize(got);
  return buf;
}

std::vector<uint8_t> read_file(const std::string &path, const char *fn) {
  return read_prefix(path, SIZE_MAX, nullptr, fn);
}

void write_atomic(const std::string &path, const std::vector<Piece> &pieces, const char *fn) {
  static std::atomic<unsigned> serial{0};
  remove_stale_temporaries(path);
  const std::string tmp = str(path, kTmpTag, ::getpid(), ".", serial.fetch_add(1));
  Fd f;
  f.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (f.fd < 0) io_fail(fn, "create", tmp, errno);
  auto abandon = [&](const char *what, int e) {
    ::close(f.fd);
    f.fd = -1;
    ::unlink(tmp.c_str());
    io_fail(fn, what, tmp, e);
  };
  for (const Piece &p : pieces) {
    const auto *b = static_cast<const uint8_t *>(p.data);
    size_t done = 0;
    while (done < p.size) {
      ssize_t w = ::write(f.fd, b + done, p.size - done);
      if (w < 0) {
        if (errno == EINTR) continue;
        abandon("write", errno);
      }
      done += size_t(w);
    }
  }
  if (::fsync(f.fd) != 0) abandon("fsync", errno);
  int fd = f.fd;
  f.fd = -1;
  if (::close(fd) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    io_fail(fn, "close", tmp, e);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    fail(MIXP_ERR_IO, fn, ": cannot rename '", tmp, "' to '", path, "': ", std::strerror(e));
  }
  // The rename is durable only once the directory entry is on disk.
  const std::string dir = dir_of(path);
  Fd d;
  d.fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d.fd < 0) io_fail(fn, "open the directory", dir, errno);
  if (::fsync(d.fd) != 0) io_fail(fn, "fsync the directory", dir, errno);
}

}  // namespace mixp::state
