// Files written whole or not at all: the bytes go to "<path>.tmp.<pid>.<n>" in the same folder,
// which is renamed over `path` once complete, so a reader (or a crash, or a kill) never sees a
// half-written file under the final name, and the previous file stays intact until the rename.
// This guards against interrupted processes, not power loss (no fsync).
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

namespace backplane::io {

// Writes the concatenation of `parts` to `path` atomically; throws InvalidArgument naming the
// path when the folder is not writable or a write fails (the temporary file is removed).
void WriteFileAtomically(const std::string& path, std::initializer_list<std::string_view> parts);

// Installs SIGINT and SIGTERM handlers that delete the temporary files of writes in progress,
// then end the process by the same signal (the CLI calls it first thing). Without it, a killed
// write may leave a stale "<path>.tmp.<pid>.<n>"; nothing ever reads such a file.
void RemoveTempFilesOnSignal();

}  // namespace backplane::io
