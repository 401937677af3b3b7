// The generated matrices: T1.3 (CPU dispatch), T1.4 (devices) and T1.5 (coverage), from the
// catalog, the kernel tables and the verification records. Registered and verified are separate.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "backplane/conformance.hpp"
#include "backplane/cpu/cpu_backend.hpp"
#ifdef BACKPLANE_HAVE_CUDA
#include "backplane/cuda/cuda_backend.hpp"
#endif
#include "backplane/error.hpp"

namespace backplane::conformance {
namespace {

// Columns of the dispatch matrix, as named by BACKPLANE_CPU_TARGET.
const std::vector<std::pair<std::string, std::string>>& Columns() {
  static const std::vector<std::pair<std::string, std::string>> columns = {
      {"scalar", "Scalar"}, {"sse4", "SSE4"}, {"avx2", "AVX2"}, {"avx512", "AVX-512"},
      {"neon", "NEON"},     {"sve", "SVE"},   {"sve2", "SVE2"}};
  return columns;
}

bool IsArmTarget(const std::string& t) { return t == "neon" || t == "sve" || t == "sve2"; }

// Canonical ops that run one Backend method (the ones a kernel can be registered for).
std::vector<const catalog::OpInfo*> ComputeOps() {
  std::vector<const catalog::OpInfo*> ops;
  for (const catalog::OpInfo& op : catalog::Ops()) {
    if (op.alias_of.empty() && op.link == catalog::LinkKind::Direct && op.methods.size() == 1) ops.push_back(&op);
  }
  return ops;
}

bool Registered(const catalog::OpInfo* op) { return cpu::HasFastKernel(op->methods[0]); }
bool ScalarByDesign(const catalog::OpInfo* op) { return !cpu::ScalarByDesignReason(op->methods[0]).empty(); }

struct OpStatus {
  int verified = 0, failed = 0, cells = 0;
  double max_error = 0.0;
};

// Device records (verify-xla.json) hold per-op graph cells, not SIMD-target cells.
bool IsDeviceRecord(const NamedRecord& r) {
  return r.file.find("verify-xla") != std::string::npos || r.file.find("verify-cuda") != std::string::npos;
}

// The record that speaks for each target: the first one that ran it.
std::map<std::string, const NamedRecord*> Owners(const std::vector<NamedRecord>& records) {
  std::map<std::string, const NamedRecord*> owners;
  for (const NamedRecord& r : records) {
    if (IsDeviceRecord(r)) continue;
    for (const std::string& t : r.record.targets) owners.emplace(t, &r);
  }
  return owners;
}

// Per (op, target): how its dtype cells ended, from the owning record of each target.
std::map<std::string, std::map<std::string, OpStatus>> Summarize(const std::vector<NamedRecord>& records) {
  const auto owners = Owners(records);
  std::map<std::string, std::map<std::string, OpStatus>> s;
  for (const NamedRecord& r : records) {
    for (const Cell& c : r.record.cells) {
      const auto owner = owners.find(c.target);
      if (owner == owners.end() || owner->second != &r) continue;
      OpStatus& st = s[c.op][c.target];
      ++st.cells;
      if (c.status == "verified") ++st.verified;
      if (c.status == "failed") ++st.failed;
      if (c.status != "not_run") st.max_error = std::max(st.max_error, c.max_error);
    }
  }
  return s;
}

// Registered ops of `ops` on `target`: verified in every dtype, failed, or without cells.
struct TargetCount {
  int verified = 0, failed = 0, not_run = 0;
};
TargetCount Count(const std::vector<const catalog::OpInfo*>& ops, const std::string& target,
                  const std::map<std::string, std::map<std::string, OpStatus>>& status) {
  TargetCount n;
  for (const catalog::OpInfo* op : ops) {
    if (!Registered(op)) continue;
    const auto it = status.find(op->id);
    if (it == status.end() || !it->second.contains(target) || it->second.at(target).verified +
                                                                     it->second.at(target).failed == 0) {
      ++n.not_run;
      continue;
    }
    const OpStatus& st = it->second.at(target);
    if (st.failed > 0) ++n.failed;
    else if (st.verified == st.cells) ++n.verified;
  }
  return n;
}

std::string Header(const std::vector<NamedRecord>& records, const std::string& title, const std::string& what) {
  std::string sources;
  for (const NamedRecord& r : records) {
    sources += fmt::format("\n- `{}`: written by `{}` on {}, CPU: {}; targets {}.", r.file, r.record.command,
                           r.record.date, r.record.cpu_model, fmt::join(r.record.targets, ", "));
  }
  return fmt::format(
      "# {}\n\nGenerated from the catalog, the kernel tables and the verification records below. "
      "`make docs` regenerates it from this machine's run; `scripts/arm-conformance.sh` with "
      "`ARM_RECORD=1` rewrites the Arm record. A test fails when it is stale. {}\n{}\n\n"
      "\"Registered\" means a fast (Highway SIMD) kernel exists for the op; \"verified\" means it "
      "matched the scalar reference in every accepted dtype on that target in the recorded run; "
      "\"not run\" counts registered ops the record has no result for. Targets no record ran say "
      "\"not run here\", never \"yes\".\n\n",
      title, what, sources);
}

// One device's per-op outcome from its record: dtypes verified / failed / not run, and the fallback
// reasons by dtype.
struct DeviceOpStatus {
  std::vector<std::string> verified, failed, not_run;
  std::map<std::string, std::vector<std::string>> fallback;  // reason -> dtypes
};

const NamedRecord* DeviceRecord(const std::vector<NamedRecord>& records, std::string_view kind = "xla") {
  for (const NamedRecord& r : records) {
    if (r.file.find(fmt::format("verify-{}", kind)) != std::string::npos) return &r;
  }
  return nullptr;
}


std::map<std::string, DeviceOpStatus> DeviceStatus(const NamedRecord& r) {
  std::map<std::string, DeviceOpStatus> s;
  for (const Cell& c : r.record.cells) {
    DeviceOpStatus& st = s[c.op];
    if (c.status == "verified") st.verified.push_back(c.dtype);
    else if (c.status == "failed") st.failed.push_back(c.dtype);
    else if (c.status == "fallback") st.fallback[c.note].push_back(c.dtype);
    else st.not_run.push_back(c.dtype);
  }
  return s;
}

std::string DeviceCell(const DeviceOpStatus* st) {
  if (st == nullptr) return "not in the record";
  std::vector<std::string> parts;
  if (!st->failed.empty()) parts.push_back(fmt::format("**failed** in {}", fmt::join(st->failed, ", ")));
  if (!st->verified.empty()) parts.push_back(fmt::format("verified in {}", fmt::join(st->verified, ", ")));
  for (const auto& [reason, dtypes] : st->fallback) {
    std::string why = reason;
    for (char& ch : why) {
      if (ch == '|') ch = '/';
    }
    parts.push_back(fmt::format("CPU fallback in {} ({})", fmt::join(dtypes, ", "), why));
  }
  if (!st->not_run.empty()) parts.push_back(fmt::format("not run in {} (no probe)", fmt::join(st->not_run, ", ")));
  return fmt::format("{}", fmt::join(parts, "; "));
}

// The CUDA cell of an op: its record when a GPU ran the matrix; otherwise whether this build has a
// CUDA kernel for every method the op links ("compiled" is not "verified").
std::string CudaCell(const catalog::OpInfo* op, const std::map<std::string, DeviceOpStatus>* cuda_status) {
  if (cuda_status != nullptr) {
    const auto it = cuda_status->find(op->id);
    return DeviceCell(it == cuda_status->end() ? nullptr : &it->second);
  }
#ifdef BACKPLANE_HAVE_CUDA
  if (op->methods.empty()) return "graph-only (host)";
  for (catalog::MethodId id : op->methods) {
    if (!cuda::Implements(id)) return "no CUDA kernel yet";
  }
  return "compiled, not run (no GPU here)";
#else
  return "not built";
#endif
}

std::string TargetCell(const TargetCount& n, int registered) {
  return fmt::format("registered {}, verified {}{}{}", registered, n.verified,
                     n.failed ? fmt::format(", **failed {}**", n.failed) : "",
                     n.not_run ? fmt::format(", not run {}", n.not_run) : "");
}

}  // namespace

std::vector<NamedRecord> LoadRecords(const std::string& docs_dir) {
  std::vector<NamedRecord> records;
  for (const char* name : {"verify-cpu.json", "verify-arm.json", "verify-xla.json", "verify-cuda.json"}) {
    std::ifstream f(docs_dir + "/" + name);
    if (!f) {
      if (records.empty()) throw Error(ErrorCode::InvalidArgument, "LoadRecords", fmt::format("{}/{} is missing", docs_dir, name));
      continue;
    }
    std::stringstream text;
    text << f.rdbuf();
    records.push_back({fmt::format("docs/{}", name), RecordFromJson(nlohmann::json::parse(text.str()))});
  }
  return records;
}

std::string CpuDispatchMatrixMarkdown(const std::vector<NamedRecord>& records) {
  std::ostringstream md;
  md << Header(records, "CPU dispatch matrix (T1.3)", "Rows are catalog domains; counts are ops.");
  const auto status = Summarize(records);
  const auto owners = Owners(records);
  std::map<std::string, std::vector<const catalog::OpInfo*>> by_domain;
  for (const catalog::OpInfo* op : ComputeOps()) by_domain[op->domain].push_back(op);
  md << "| Domain | Ops | SIMD registered | Scalar by design |";
  for (const auto& [key, title] : Columns()) md << " " << title << " |";
  md << "\n|---|---|---|---|";
  for (size_t i = 0; i < Columns().size(); ++i) md << "---|";
  md << "\n";
  for (const auto& [domain, ops] : by_domain) {
    int registered = 0, by_design = 0;
    for (const catalog::OpInfo* op : ops) {
      registered += Registered(op) ? 1 : 0;
      by_design += ScalarByDesign(op) ? 1 : 0;
    }
    md << "| " << domain << " | " << ops.size() << " | " << registered << " | " << by_design << " |";
    for (const auto& [target, title] : Columns()) {
      if (!owners.contains(target)) {
        md << (IsArmTarget(target) ? " not run here (no Arm record) |" : fmt::format(" registered {}; not run here |", registered));
        continue;
      }
      md << " " << TargetCell(Count(ops, target, status), registered) << " |";
    }
    md << "\n";
  }
  std::vector<std::string> targets;
  for (const auto& [target, title] : Columns()) {
    if (owners.contains(target)) targets.push_back(target);
  }
  md << "\n## Ops with a SIMD kernel\n\n| Op | Method |";
  for (const std::string& t : targets) md << " " << t << " |";
  md << "\n|---|---|";
  for (size_t i = 0; i < targets.size(); ++i) md << "---|";
  md << "\n";
  for (const catalog::OpInfo* op : ComputeOps()) {
    if (!Registered(op)) continue;
    md << "| `" << op->id << "` | " << catalog::Method(op->methods[0]).QualifiedName() << " |";
    for (const std::string& t : targets) {
      const auto it = status.find(op->id);
      if (it == status.end() || !it->second.contains(t) || it->second.at(t).verified + it->second.at(t).failed == 0) {
        md << " not run |";
        continue;
      }
      const OpStatus& st = it->second.at(t);
      if (st.failed > 0) md << fmt::format(" **failed** ({} of {} dtypes) |", st.failed, st.cells);
      else if (st.verified == st.cells) md << fmt::format(" verified, max err {:.2g} |", st.max_error);
      else md << fmt::format(" {} of {} dtypes verified |", st.verified, st.cells);
    }
    md << "\n";
  }
  md << "\n## Ops on the scalar reference by design\n\nSIMD cannot help these (the kernel file says why); "
        "they run the scalar reference on every target.\n\n| Op | Method | Reason |\n|---|---|---|\n";
  for (const catalog::OpInfo* op : ComputeOps()) {
    if (!ScalarByDesign(op)) continue;
    md << fmt::format("| `{}` | {} | {} |\n", op->id, catalog::Method(op->methods[0]).QualifiedName(),
                      cpu::ScalarByDesignReason(op->methods[0]));
  }
  int rest = 0;
  for (const catalog::OpInfo* op : ComputeOps()) rest += !Registered(op) && !ScalarByDesign(op) ? 1 : 0;
  md << fmt::format(
      "\n{} further ops have neither a SIMD kernel nor a reason yet and run the scalar reference. The "
      "reference is tested against independent goldens by the unit tests (tests/cpu/reference).\n",
      rest);
  return md.str();
}

std::string DeviceBackendMatrixMarkdown(const std::vector<NamedRecord>& records) {
  std::ostringstream md;
  md << Header(records, "Device backend matrix (T1.4)", "Rows are the seed's 119 required operation IDs.");
  const auto status = Summarize(records);
  const auto owners = Owners(records);
  const NamedRecord* xla = DeviceRecord(records);
  const auto xla_status = xla ? DeviceStatus(*xla) : std::map<std::string, DeviceOpStatus>{};
  const NamedRecord* cuda_record = DeviceRecord(records, "cuda");
  const auto cuda_status = cuda_record ? DeviceStatus(*cuda_record) : std::map<std::string, DeviceOpStatus>{};
  md << "| # | Operation ID | CPU | CUDA | XLA | Metal |\n|---|---|---|---|---|---|\n";
  for (const catalog::OpInfo& op : catalog::Ops()) {
    if (!op.required) continue;
    const catalog::OpInfo* canonical = catalog::ResolveOp(op.id);
    std::string cpu;
    if (canonical->link == catalog::LinkKind::GraphOnly) {
      cpu = "graph-only (executor)";
    } else {
      bool all = true;
      for (catalog::MethodId id : canonical->methods) all = all && cpu::Implements(id);
      cpu = all ? "implemented (reference)" : "**not implemented**";
      const bool fast = canonical->methods.size() == 1 && cpu::HasFastKernel(canonical->methods[0]);
      if (fast) {
        std::vector<std::string> verified;
        const auto it = status.find(canonical->id);
        for (const auto& [t, title] : Columns()) {
          if (!owners.contains(t) || it == status.end() || !it->second.contains(t)) continue;
          const OpStatus& st = it->second.at(t);
          if (st.failed == 0 && st.verified > 0 && st.verified == st.cells) verified.push_back(t);
        }
        cpu = fmt::format("implemented, SIMD verified on {}",
                          verified.empty() ? std::string("no target") : fmt::format("{}", fmt::join(verified, ", ")));
      } else if (canonical->methods.size() == 1 && !cpu::ScalarByDesignReason(canonical->methods[0]).empty()) {
        cpu = "implemented (reference; scalar by design)";
      }
    }
    std::string xla_cell = "not run here";
    if (xla) {
      const auto it = xla_status.find(canonical->id);
      xla_cell = DeviceCell(it == xla_status.end() ? nullptr : &it->second);
    }
    md << fmt::format("| {} | `{}` | {} | {} | {} | not built (Linux) |\n", op.required_index + 1, op.id, cpu,
                      CudaCell(canonical, cuda_record ? &cuda_status : nullptr), xla_cell);
  }
  md << fmt::format(
      "\nXLA: each op as a one-node graph through the PJRT plugin against the scalar CPU reference on the same "
      "inputs ({}). A CPU fallback means the device does not run the node and the executor runs it on the CPU "
      "with copies at the cut. CUDA: the same one-node graphs on a GPU ({}); without a record, \"compiled\" means this "
      "build has a CUDA kernel for every method the op links, never run. Metal cannot be built or run on Linux.\n",
      xla ? fmt::format("`{}`", xla->file) : std::string("no record here"),
      cuda_record ? fmt::format("`{}`", cuda_record->file) : std::string("no record here: no GPU was lent"));
  return md.str();
}

std::string BackendCoverageMarkdown(const std::vector<NamedRecord>& records) {
  std::ostringstream md;
  md << Header(records, "Backend coverage (T1.5)", "Rows are SIMD targets and devices.");
  const auto status = Summarize(records);
  const auto owners = Owners(records);
  const auto ops = ComputeOps();
  int registered = 0, by_design = 0;
  for (const catalog::OpInfo* op : ops) {
    registered += Registered(op) ? 1 : 0;
    by_design += ScalarByDesign(op) ? 1 : 0;
  }
  md << "| Target | Applicable ops | Registered | Scalar by design | Verified | Failed | Not run | Record |\n"
        "|---|---|---|---|---|---|---|---|\n";
  for (const auto& [target, title] : Columns()) {
    const auto owner = owners.find(target);
    if (owner == owners.end()) {
      md << fmt::format("| {} | {} | {} | {} | not run here | — | — | — |\n", title, ops.size(), registered, by_design);
      continue;
    }
    const TargetCount n = Count(ops, target, status);
    md << fmt::format("| {} | {} | {} | {} | {} | {} | {} | `{}` ({}) |\n", title, ops.size(), registered, by_design,
                      n.verified, n.failed, n.not_run, owner->second->file, owner->second->record.cpu_model);
  }
  int implemented = 0;
  for (const catalog::OpInfo* op : ops) implemented += cpu::Implements(op->methods[0]) ? 1 : 0;
  md << fmt::format("| CPU scalar reference | {} | {} | — | golden-tested by unit tests | — | — | — |\n", ops.size(),
                    implemented);
  {
    const NamedRecord* cuda_record = DeviceRecord(records, "cuda");
#ifdef BACKPLANE_HAVE_CUDA
    int compiled = 0;
    for (const catalog::OpInfo* op : ops) compiled += cuda::Implements(op->methods[0]) ? 1 : 0;
    const std::string built = fmt::format("{} compiled", compiled);
#else
    const std::string built = "not built";
#endif
    if (cuda_record == nullptr) {
      md << fmt::format("| CUDA | {} | {} | — | not run here (no GPU) | — | — | — |\n", ops.size(), built);
    } else {
      int verified = 0, failed = 0;
      const auto st = DeviceStatus(*cuda_record);
      for (const catalog::OpInfo* op : ops) {
        const auto it = st.find(op->id);
        if (it == st.end()) continue;
        failed += it->second.failed.empty() ? 0 : 1;
        verified += (it->second.failed.empty() && !it->second.verified.empty()) ? 1 : 0;
      }
      md << fmt::format("| CUDA | {} | {} | — | {} | {} | {} | `{}` ({}) |\n", ops.size(), built, verified, failed,
                        ops.size() - verified - failed, cuda_record->file, cuda_record->record.cpu_model);
    }
  }
  const NamedRecord* xla = DeviceRecord(records);
  if (xla == nullptr) {
    md << fmt::format("| XLA | {} | not run here | — | not run here | — | — | — |\n", ops.size());
  }
  md << fmt::format("| Metal | {} | not built (Linux) | — | not run here | — | — | — |\n", ops.size());
  if (xla != nullptr) {
    // Every canonical op, not only the single-method ones: the device runs graph nodes.
    const auto st = DeviceStatus(*xla);
    int canonical = 0, lowered = 0, all_verified = 0, any_failed = 0, all_fallback = 0, partial = 0, no_probe = 0;
    std::map<std::string, std::vector<std::string>> by_reason;
    for (const catalog::OpInfo& op : catalog::Ops()) {
      if (!op.alias_of.empty()) continue;
      ++canonical;
      const auto it = st.find(op.id);
      if (it == st.end()) {
        ++no_probe;
        continue;
      }
      const DeviceOpStatus& s = it->second;
      const bool runs = !s.verified.empty() || !s.failed.empty();
      lowered += runs ? 1 : 0;
      if (!s.failed.empty()) ++any_failed;
      else if (runs && s.not_run.empty() && s.fallback.empty()) ++all_verified;
      else if (runs && s.not_run.empty()) ++partial;
      else if (!runs && s.not_run.empty()) ++all_fallback;
      else ++no_probe;
      if (!runs) {
        for (const auto& [reason, dtypes] : s.fallback) by_reason[reason].push_back(op.id);
      }
    }
    md << fmt::format(
        "\n## XLA device\n\nFrom `{}` ({}, `{}`): every canonical op as a one-node graph on the device against the "
        "scalar CPU reference, in every dtype it accepts.\n\n"
        "| Canonical ops | Lowered (run on the device) | Verified in every dtype | Verified, some dtypes fall back | "
        "**Failed** | CPU fallback in every dtype | Not run (no probe) |\n|---|---|---|---|---|---|---|\n"
        "| {} | {} | {} | {} | {} | {} | {} |\n",
        xla->file, xla->record.cpu_model, xla->record.command, canonical, lowered, all_verified, partial, any_failed,
        all_fallback, no_probe);
    if (!by_reason.empty()) {
      md << "\nOps that run on the CPU on this device, by reason:\n\n";
      for (const auto& [reason, ids] : by_reason) {
        std::vector<std::string> quoted;
        for (const std::string& id : ids) quoted.push_back("`" + id + "`");
        md << fmt::format("- {}: {}\n", reason, fmt::join(quoted, ", "));
      }
    }
  }
  return md.str();
}

std::string CellsMarkdown(const std::vector<Cell>& cells) {
  std::ostringstream md;
  md << "| Op | Target | dtype | Status | Max error | Note |\n|---|---|---|---|---|---|\n";
  for (const Cell& c : cells) {
    if (c.status == "not_run" && c.device == "cpu") continue;
    md << fmt::format("| `{}` | {} | {} | {} | {:.3g} | {} |\n", c.op, c.target, c.dtype, c.status, c.max_error, c.note);
  }
  int not_run = 0;
  for (const Cell& c : cells) not_run += c.status == "not_run" && c.device == "cpu" ? 1 : 0;
  if (not_run > 0) {
    md << fmt::format("\n{} further cells not run (no SIMD kernel, scalar by design, composite or graph-only ops).\n",
                      not_run);
  }
  return md.str();
}

}  // namespace backplane::conformance
