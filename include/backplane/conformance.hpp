// The conformance matrix: every fast CPU kernel x every SIMD target this CPU runs x every dtype it
// accepts, against the scalar reference on seeded random inputs at awkward sizes. Feeds
// `backplane verify` and the generated matrices in docs/.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backplane/catalog/catalog.hpp"
#include "backplane/catalog/inventory.hpp"
#include "backplane/runtime/graph_device.hpp"

namespace backplane::conformance {

struct Cell {
  std::string op;      // canonical operation ID
  std::string method;  // "Surface.Method"
  std::string device;  // "cpu"
  std::string target;  // as in BACKPLANE_CPU_TARGET
  std::string dtype;
  std::string status;  // "verified", "failed" or "not_run"
  double max_error = 0.0;  // worst |fast - reference| over all cases
  std::string note;        // why not run, or the first failing case
};

struct Options {
  bool quick = false;                // fewer and smaller sizes (for unit tests)
  std::vector<std::string> targets;  // empty: every runnable target
  std::string only_op;               // empty: every op
  int shard = 0;                     // device matrix: only canonical ops with index % shards == shard
  int shards = 1;
};

// Runs the matrix on this machine. Methods without a fast kernel give "not_run" cells.
std::vector<Cell> RunCpuMatrix(const Options& options = {});

// Every canonical op as a one-node graph on `device` against the scalar CPU reference, in every
// dtype it accepts (probes: src/conformance/device_probes_*.cpp). Cells have device "xla" (the
// device kind), target `target` (e.g. "xla-cpu"), status "verified", "failed", "fallback" (the
// device does not run the node; note = reason) or "not_run" (the probe was rejected by the CPU).
std::vector<Cell> RunDeviceMatrix(runtime::GraphDevice& device, const std::string& target,
                                  const Options& options = {});

// The dispatch audit: every canonical op's device probes in
// every dtype they accept (plus the dispatch-only probes of paths taken at scale), as one-node graphs through the Executor on the CPU backend behind a
// runtime::RecordingBackend.
struct OpDispatch {
  std::string op;                     // canonical operation ID
  std::vector<std::string> linked;    // the catalog's Backplane link, "Surface.Method"
  std::vector<std::string> called;    // every method the runs reached, in catalog order
  int runs = 0;                       // probe x dtype runs that completed
  std::vector<std::string> rejected;  // probe runs the CPU refused, with the error
};
std::vector<OpDispatch> RunDispatchAudit();
// The linked methods no run reached.
std::vector<std::string> UnexercisedLinks(const OpDispatch& row);
// op -> called, for the inventory's "Executor calls (recorded)" column.
catalog::DispatchRecord ToDispatchRecord(const std::vector<OpDispatch>& audit);

// Sizes used for length-parameterised kernels: 0, 1, lanes +- 1 for every vector width, odd sizes
// and one over 64 KiB of f32.
std::vector<int64_t> ConformanceSizes(bool quick);

nlohmann::json CellsToJson(const std::vector<Cell>& cells);
std::vector<Cell> CellsFromJson(const nlohmann::json& json);

// A verification record: the cells plus the machine that produced them.
struct Record {
  std::string cpu_model;
  std::string date;
  std::string command;
  std::vector<std::string> targets;  // runnable here
  std::vector<Cell> cells;
};
nlohmann::json RecordToJson(const Record& record);
Record RecordFromJson(const nlohmann::json& json);

// A record and the file it was read from (e.g. "docs/verify-cpu.json").
struct NamedRecord {
  std::string file;
  Record record;
};

// The records the generated documents are built from, in `docs_dir`: verify-cpu.json (this
// machine's run, required) and verify-arm.json (the qemu-aarch64 run of scripts/arm-conformance.sh,
// optional). For a target in several records, the first record wins.
std::vector<NamedRecord> LoadRecords(const std::string& docs_dir);

// The generated documents (T1.3, T1.4, T1.5) from the catalog and the verification records.
std::string CpuDispatchMatrixMarkdown(const std::vector<NamedRecord>& records);
std::string DeviceBackendMatrixMarkdown(const std::vector<NamedRecord>& records);
std::string BackendCoverageMarkdown(const std::vector<NamedRecord>& records);
std::string CellsMarkdown(const std::vector<Cell>& cells);

}  // namespace backplane::conformance
