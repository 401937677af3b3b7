// Runs the backplane CLI built beside the tests (BACKPLANE_CLI) and captures its output.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace backplane::test {

struct CommandResult {
  int exit_code;
  std::string output;  // stdout and stderr
};

inline CommandResult RunCli(const std::string& args) {
  const std::string command = std::string(BACKPLANE_CLI) + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {-1, "popen failed"};
  std::string output;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) output.append(buffer.data(), n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

}  // namespace backplane::test
