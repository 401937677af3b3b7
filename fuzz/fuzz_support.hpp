// Shared by the libFuzzer targets: the readers that take a path read the input through a memfd
// ("/proc/self/fd/N"), and every exception other than backplane::Error is a finding (bad input
// must get a named error, never a library exception or a crash).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <typeinfo>

#include "backplane/error.hpp"

namespace backplane::fuzz {

// One in-memory file reused across runs; Path() opens a fresh description of it each time.
class MemFile {
 public:
  explicit MemFile(const char* name) : fd_(memfd_create(name, 0)) {
    if (fd_ < 0) {
      std::perror("memfd_create");
      std::abort();
    }
  }
  ~MemFile() { close(fd_); }
  const std::string& Write(const uint8_t* data, size_t size) {
    if (ftruncate(fd_, 0) != 0 || (size > 0 && pwrite(fd_, data, size, 0) != static_cast<ssize_t>(size))) {
      std::perror("memfd write");
      std::abort();
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
    return path_;
  }

 private:
  int fd_;
  std::string path_;
};

// Runs `body`; a backplane::Error is the expected outcome for bad input, anything else aborts.
template <class F>
void ExpectNamedErrors(F&& body) {
  try {
    body();
  } catch (const backplane::Error&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: unexpected %s: %s\n", typeid(e).name(), e.what());
    std::abort();
  }
}

}  // namespace backplane::fuzz
