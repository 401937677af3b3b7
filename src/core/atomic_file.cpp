#include "backplane/atomic_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <system_error>

#include "backplane/error.hpp"

namespace backplane::io {
namespace {

// Temporary files being written, for the signal handler: a slot is free (0), being filled (1)
// or holds a path (2). Writes beyond kSlots at once are not registered (their temps may stay).
constexpr int kSlots = 32;
constexpr size_t kPathBytes = 4096;
struct Slot {
  std::atomic<int> state{0};
  char path[kPathBytes];
};
Slot g_slots[kSlots];
std::atomic<unsigned> g_counter{0};

int Register(const std::string& tmp) {
  if (tmp.size() >= kPathBytes) return -1;
  for (int k = 0; k < kSlots; ++k) {
    int expected = 0;
    if (g_slots[k].state.compare_exchange_strong(expected, 1)) {
      std::memcpy(g_slots[k].path, tmp.c_str(), tmp.size() + 1);
      g_slots[k].state.store(2);
      return k;
    }
  }
  return -1;
}

void Unregister(int slot) {
  if (slot >= 0) g_slots[slot].state.store(0);
}

// Async-signal-safe: unlink, signal and raise only.
void OnSignal(int sig) {
  for (Slot& s : g_slots) {
    if (s.state.load() == 2) ::unlink(s.path);
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

[[noreturn]] void Fail(const std::string& path, const std::string& detail) {
  throw Error(ErrorCode::InvalidArgument, path, detail);
}

std::string SystemMessage(int err) { return std::error_code(err, std::generic_category()).message(); }

}  // namespace

void WriteFileAtomically(const std::string& path, std::initializer_list<std::string_view> parts) {
  const std::string tmp = fmt::format("{}.tmp.{}.{}", path, ::getpid(), g_counter.fetch_add(1));
  const int slot = Register(tmp);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    Unregister(slot);
    Fail(path, fmt::format("cannot create the file: {}", SystemMessage(err)));
  }
  auto abandon = [&](const std::string& why) {
    ::close(fd);
    ::unlink(tmp.c_str());
    Unregister(slot);
    Fail(path, why);
  };
  for (std::string_view part : parts) {
    const char* p = part.data();
    size_t left = part.size();
    while (left > 0) {
      const ssize_t n = ::write(fd, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        abandon(fmt::format("write failed: {}", SystemMessage(n < 0 ? errno : EIO)));
      } else {
        p += n;
        left -= static_cast<size_t>(n);
      }
    }
  }
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    Unregister(slot);
    Fail(path, fmt::format("write failed: {}", SystemMessage(err)));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    Unregister(slot);
    Fail(path, fmt::format("cannot move the finished file into place: {}", SystemMessage(err)));
  }
  Unregister(slot);
}

void RemoveTempFilesOnSignal() {
  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
}

}  // namespace backplane::io
