#include "backplane/llama_cpp_peer.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "backplane/error.hpp"

extern char** environ;

namespace backplane::bench {
namespace {

constexpr const char* kOp = "llama-bench JSON";
// Must match VERSION in bench/llama_cpp/build.sh.
constexpr const char* kLlamaCppPythonVersion = "0.3.36";
constexpr size_t kMaxReportBytes = size_t{64} << 20;
constexpr size_t kStderrTailBytes = 2000;

std::string FieldName(size_t index, const char* field) {
  return "[" + std::to_string(index) + "]." + field;
}

const nlohmann::json& Field(const nlohmann::json& test, size_t index, const char* field) {
  const auto it = test.find(field);
  if (it == test.end()) {
    ThrowInvalidArgument(kOp, FieldName(index, field), "present", "missing");
  }
  return *it;
}

std::string StringField(const nlohmann::json& test, size_t index, const char* field) {
  const nlohmann::json& v = Field(test, index, field);
  if (!v.is_string()) {
    ThrowInvalidArgument(kOp, FieldName(index, field), "a string", v.type_name());
  }
  return v.get<std::string>();
}

int64_t NonNegativeIntField(const nlohmann::json& test, size_t index, const char* field) {
  const nlohmann::json& v = Field(test, index, field);
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      ThrowInvalidArgument(kOp, FieldName(index, field), "an integer <= 2^63-1", v.dump());
    }
    return static_cast<int64_t>(u);
  }
  if (!v.is_number_integer() || v.get<int64_t>() < 0) {
    ThrowInvalidArgument(kOp, FieldName(index, field), "a non-negative integer", v.dump());
  }
  return v.get<int64_t>();
}

double FiniteField(const nlohmann::json& v, const std::string& name, bool positive) {
  if (!v.is_number() || !std::isfinite(v.get<double>()) ||
      (positive ? v.get<double>() <= 0 : v.get<double>() < 0)) {
    ThrowInvalidArgument(kOp, name, positive ? "a positive finite number" : "a finite number >= 0",
                         v.dump());
  }
  return v.get<double>();
}

LlamaBenchTest ParseTest(const nlohmann::json& test, size_t index) {
  LlamaBenchTest t;
  t.nPrompt = NonNegativeIntField(test, index, "n_prompt");
  t.nGen = NonNegativeIntField(test, index, "n_gen");
  if (t.nPrompt == 0 && t.nGen == 0) {
    ThrowInvalidArgument(kOp, FieldName(index, "n_prompt + n_gen"), "> 0", "0");
  }
  t.nThreads = NonNegativeIntField(test, index, "n_threads");
  t.tokensPerSecond = FiniteField(Field(test, index, "avg_ts"), FieldName(index, "avg_ts"), true);
  t.tokensPerSecondStddev =
      FiniteField(Field(test, index, "stddev_ts"), FieldName(index, "stddev_ts"), false);
  const nlohmann::json& samples = Field(test, index, "samples_ts");
  if (!samples.is_array() || samples.empty()) {
    ThrowInvalidArgument(kOp, FieldName(index, "samples_ts"), "a non-empty array", samples.dump());
  }
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (size_t s = 0; s < samples.size(); ++s) {
    const double ts = FiniteField(samples[s], FieldName(index, "samples_ts") + "[" +
                                                  std::to_string(s) + "]", true);
    lo = std::min(lo, ts);
    hi = std::max(hi, ts);
  }
  // The average of the samples lies between their extremes (printed with 6 digits).
  if (t.tokensPerSecond < lo * (1 - 1e-5) || t.tokensPerSecond > hi * (1 + 1e-5)) {
    ThrowInvalidArgument(kOp, FieldName(index, "avg_ts"),
                         "within [min, max] of samples_ts = [" + std::to_string(lo) + ", " +
                             std::to_string(hi) + "]",
                         std::to_string(t.tokensPerSecond));
  }
  t.repetitions = static_cast<int64_t>(samples.size());
  return t;
}

void CheckSame(const std::string& first, const std::string& got, size_t index, const char* field) {
  if (got != first) {
    ThrowInvalidArgument(kOp, FieldName(index, field), "'" + first + "' as in test 0",
                         "'" + got + "'");
  }
}

}  // namespace

LlamaCppResult ParseLlamaBenchJson(const std::string& json) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(json);
  } catch (const nlohmann::json::parse_error& e) {
    ThrowInvalidArgument(kOp, "document", "valid JSON", e.what());
  }
  if (!doc.is_array() || doc.empty()) {
    ThrowInvalidArgument(kOp, "document", "a non-empty array of tests",
                         doc.is_array() ? "an empty array" : doc.type_name());
  }
  LlamaCppResult r;
  std::string modelFile;
  for (size_t i = 0; i < doc.size(); ++i) {
    const nlohmann::json& test = doc[i];
    if (!test.is_object()) {
      ThrowInvalidArgument(kOp, "[" + std::to_string(i) + "]", "an object", test.type_name());
    }
    const std::string commit = StringField(test, i, "build_commit");
    const int64_t number = NonNegativeIntField(test, i, "build_number");
    const std::string model = StringField(test, i, "model_filename");
    if (i == 0) {
      r.buildCommit = commit;
      r.buildNumber = number;
      r.modelType = StringField(test, i, "model_type");
      r.cpuInfo = StringField(test, i, "cpu_info");
      r.backends = StringField(test, i, "backends");
      modelFile = model;
    } else {
      CheckSame(r.buildCommit, commit, i, "build_commit");
      CheckSame(std::to_string(r.buildNumber), std::to_string(number), i, "build_number");
      CheckSame(modelFile, model, i, "model_filename");
    }
    const LlamaBenchTest t = ParseTest(test, i);
    // Tests at a KV-cache depth (-d) are neither plain prompt nor plain generation.
    const bool atDepth = test.contains("n_depth") && NonNegativeIntField(test, i, "n_depth") > 0;
    if (!atDepth && t.nGen == 0) {
      if (r.prompt) {
        ThrowInvalidArgument(kOp, FieldName(i, "n_prompt"), "one prompt-only test in the report",
                             "a second one");
      }
      r.prompt = t;
    } else if (!atDepth && t.nPrompt == 0) {
      if (r.generation) {
        ThrowInvalidArgument(kOp, FieldName(i, "n_gen"), "one generation-only test in the report",
                             "a second one");
      }
      r.generation = t;
    }
    r.tests.push_back(t);
  }
  return r;
}

std::optional<std::string> FindLlamaBench(std::string* whyNot) {
  std::string path;
  std::string origin;
  if (const char* env = std::getenv("BACKPLANE_LLAMA_BENCH"); env != nullptr && *env != '\0') {
    path = env;
    origin = "BACKPLANE_LLAMA_BENCH=" + path;
  } else {
    std::string cache;
    if (const char* c = std::getenv("BACKPLANE_CACHE"); c != nullptr && *c != '\0') {
      cache = c;
    } else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
      cache = std::string(home) + "/.cache/backplane";
    } else {
      if (whyNot != nullptr) {
        *whyNot = "peer not built: neither BACKPLANE_LLAMA_BENCH, BACKPLANE_CACHE nor HOME is set";
      }
      return std::nullopt;
    }
    path = cache + "/llama.cpp-" + kLlamaCppPythonVersion + "/build/bin/llama-bench";
    origin = path;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || ::access(path.c_str(), X_OK) != 0) {
    if (whyNot != nullptr) {
      *whyNot = "peer not built: run bench/llama_cpp/build.sh (" + origin +
                " is not an executable file)";
    }
    return std::nullopt;
  }
  return path;
}

namespace {

struct Fd {
  int fd = -1;
  Fd() = default;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Close(); }
  void Close() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

struct Pipe {
  Fd read, write;
  bool Open() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return false;
    read.fd = fds[0];
    write.fd = fds[1];
    return true;
  }
};

std::string ErrnoText(const char* what, int err) { return std::string(what) + ": " + std::strerror(err); }

// Reads both pipes to EOF; false (with *error) when stdout grows past kMaxReportBytes or a read
// fails.
bool Drain(int outFd, int errFd, std::string* out, std::string* err, std::string* error) {
  pollfd fds[2] = {{outFd, POLLIN, 0}, {errFd, POLLIN, 0}};
  std::string* sinks[2] = {out, err};
  char buf[65536];
  int open = 2;
  while (open > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      *error = ErrnoText("poll", errno);
      return false;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        *error = ErrnoText("read", errno);
        return false;
      }
      if (n == 0) {
        fds[i].fd = -1;
        --open;
        continue;
      }
      sinks[i]->append(buf, static_cast<size_t>(n));
      if (i == 0 && out->size() > kMaxReportBytes) {
        *error = "its stdout exceeded " + std::to_string(kMaxReportBytes) + " bytes";
        return false;
      }
      if (i == 1 && err->size() > 2 * kStderrTailBytes) {
        err->erase(0, err->size() - kStderrTailBytes);
      }
    }
  }
  return true;
}

std::string Tail(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.size() > kStderrTailBytes) text.erase(0, text.size() - kStderrTailBytes);
  const size_t nl = text.rfind('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

}  // namespace

std::optional<LlamaCppResult> RunLlamaBench(const std::string& model, int threads, int nPrompt,
                                            int nGen, std::string* whyNot) {
  CheckPositive("RunLlamaBench", "threads", threads);
  CheckPositive("RunLlamaBench", "nPrompt", nPrompt);
  CheckPositive("RunLlamaBench", "nGen", nGen);
  std::string reason;
  const auto fail = [&](std::string why) -> std::optional<LlamaCppResult> {
    if (whyNot != nullptr) *whyNot = std::move(why);
    return std::nullopt;
  };
  const std::optional<std::string> bin = FindLlamaBench(&reason);
  if (!bin) return fail(reason);
  struct stat st {};
  if (::stat(model.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return fail("llama-bench: model '" + model + "' is not a regular file");
  }

  std::vector<std::string> args = {*bin, "-m", model, "-t", std::to_string(threads),
                                   "-p", std::to_string(nPrompt), "-n", std::to_string(nGen),
                                   "-r", "3", "-o", "json"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  Pipe out, err;
  if (!out.Open() || !err.Open()) return fail("llama-bench: " + ErrnoText("pipe2", errno));
  posix_spawn_file_actions_t actions;
  if (int e = posix_spawn_file_actions_init(&actions); e != 0) {
    return fail("llama-bench: " + ErrnoText("posix_spawn_file_actions_init", e));
  }
  int e = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  if (e == 0) e = posix_spawn_file_actions_adddup2(&actions, out.write.fd, 1);
  if (e == 0) e = posix_spawn_file_actions_adddup2(&actions, err.write.fd, 2);
  pid_t pid = -1;
  if (e == 0) e = posix_spawn(&pid, bin->c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (e != 0) return fail("llama-bench: " + ErrnoText(("posix_spawn " + *bin).c_str(), e));
  out.write.Close();
  err.write.Close();

  std::string report, errText, readError;
  const bool drained = Drain(out.read.fd, err.read.fd, &report, &errText, &readError);
  out.read.Close();  // a child still writing gets SIGPIPE/EPIPE instead of blocking
  err.read.Close();
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return fail("llama-bench: " + ErrnoText("waitpid", errno));
  }
  if (!drained) return fail("llama-bench: " + readError);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const std::string how = WIFEXITED(status)
                                ? "exit status " + std::to_string(WEXITSTATUS(status))
                                : "signal " + std::to_string(WTERMSIG(status));
    return fail("llama-bench failed (" + how + "): " + Tail(errText));
  }
  try {
    LlamaCppResult r = ParseLlamaBenchJson(report);
    if (!r.prompt || r.prompt->nPrompt != nPrompt || r.prompt->nThreads != threads ||
        !r.generation || r.generation->nGen != nGen || r.generation->nThreads != threads) {
      return fail(std::string(kOp) + ": expected a pp" + std::to_string(nPrompt) + " and a tg" +
                  std::to_string(nGen) + " test at " + std::to_string(threads) +
                  " threads, got another set");
    }
    return r;
  } catch (const Error& ex) {
    return fail(ex.what());
  }
}

}  // namespace backplane::bench
