// The generated matrices: T1.3 (CPU dispatch), T1.4 (devices) and T1.5 (coverage), from the
// catalog, the kernel tables and a verification record. Registered and verified are separate.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <set>
#include <sstream>

#include "backplane/conformance.hpp"
#include "backplane/cpu/cpu_backend.hpp"

namespace backplane::conformance {
namespace {

// Columns of the dispatch matrix, as named by BACKPLANE_CPU_TARGET.
const std::vector<std::pair<std::string, std::string>>& Columns() {
  static const std::vector<std::pair<std::string, std::string>> columns = {
      {"scalar", "Scalar"}, {"sse4", "SSE4"}, {"avx2", "AVX2"}, {"avx512", "AVX-512"}, {"neon", "NEON"}, {"sve", "SVE"}};
  return columns;
}

bool IsArmTarget(const std::string& t) { return t == "neon" || t == "sve"; }

// Canonical ops that run one Backend method (the ones a kernel can be registered for).
std::vector<const catalog::OpInfo*> ComputeOps() {
  std::vector<const catalog::OpInfo*> ops;
  for (const catalog::OpInfo& op : catalog::Ops()) {
    if (op.alias_of.empty() && op.link == catalog::LinkKind::Direct && op.methods.size() == 1) ops.push_back(&op);
  }
  return ops;
}

struct OpStatus {
  int verified = 0, failed = 0, cells = 0;
  double max_error = 0.0;
};

// Per (op, target): how its dtype cells ended.
std::map<std::string, std::map<std::string, OpStatus>> Summarize(const Record& r) {
  std::map<std::string, std::map<std::string, OpStatus>> s;
  for (const Cell& c : r.cells) {
    OpStatus& st = s[c.op][c.target];
    ++st.cells;
    if (c.status == "verified") ++st.verified;
    if (c.status == "failed") ++st.failed;
    if (c.status != "not_run") st.max_error = std::max(st.max_error, c.max_error);
  }
  return s;
}

std::string Header(const Record& r, const std::string& title, const std::string& what) {
  return fmt::format(
      "# {}\n\nGenerated from the catalog, the kernel tables and the verification record "
      "`docs/verify-cpu.json` (written by `{}` on {}, CPU: {}). `make docs` regenerates it; a "
      "test fails when it is stale. {}\n\n"
      "\"Registered\" means a fast (Highway SIMD) kernel exists for the op; \"verified\" means it "
      "matched the scalar reference in every accepted dtype on that target in the recorded run. "
      "Targets this machine cannot run say \"not run here\", never \"yes\".\n\n",
      title, r.command, r.date, r.cpu_model, what);
}

bool Runnable(const Record& r, const std::string& target) {
  return std::find(r.targets.begin(), r.targets.end(), target) != r.targets.end();
}

}  // namespace

std::string CpuDispatchMatrixMarkdown(const Record& r) {
  std::ostringstream md;
  md << Header(r, "CPU dispatch matrix (T1.3)", "Rows are catalog domains; counts are ops.");
  const auto status = Summarize(r);
  std::map<std::string, std::vector<const catalog::OpInfo*>> by_domain;
  for (const catalog::OpInfo* op : ComputeOps()) by_domain[op->domain].push_back(op);
  md << "| Domain | Ops | SIMD registered |";
  for (const auto& [key, title] : Columns()) md << " " << title << " |";
  md << "\n|---|---|---|";
  for (size_t i = 0; i < Columns().size(); ++i) md << "---|";
  md << "\n";
  for (const auto& [domain, ops] : by_domain) {
    int registered = 0;
    for (const catalog::OpInfo* op : ops) registered += cpu::HasFastKernel(op->methods[0]) ? 1 : 0;
    md << "| " << domain << " | " << ops.size() << " | " << registered << " |";
    for (const auto& [target, title] : Columns()) {
      if (IsArmTarget(target)) {
        md << " not built (x86 build); not run here |";
        continue;
      }
      if (!Runnable(r, target)) {
        md << fmt::format(" registered {}; not run here |", registered);
        continue;
      }
      int verified = 0, failed = 0;
      for (const catalog::OpInfo* op : ops) {
        const auto it = status.find(op->id);
        if (it == status.end() || !it->second.contains(target)) continue;
        const OpStatus& st = it->second.at(target);
        if (st.failed > 0) ++failed;
        else if (st.verified > 0 && st.verified == st.cells) ++verified;
      }
      md << fmt::format(" registered {}, verified {}{} |", registered, verified,
                        failed ? fmt::format(", **failed {}**", failed) : "");
    }
    md << "\n";
  }
  md << "\n## Ops with a SIMD kernel\n\n| Op | Method |";
  for (const std::string& t : r.targets) md << " " << t << " |";
  md << "\n|---|---|";
  for (size_t i = 0; i < r.targets.size(); ++i) md << "---|";
  md << "\n";
  for (const catalog::OpInfo* op : ComputeOps()) {
    if (!cpu::HasFastKernel(op->methods[0])) continue;
    md << "| `" << op->id << "` | " << catalog::Method(op->methods[0]).QualifiedName() << " |";
    for (const std::string& t : r.targets) {
      const auto it = status.find(op->id);
      if (it == status.end() || !it->second.contains(t)) {
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
  md << "\nOps without a SIMD kernel run the scalar reference on every target; the reference is "
        "tested against independent goldens by the unit tests (tests/cpu/reference).\n";
  return md.str();
}

std::string DeviceBackendMatrixMarkdown(const Record& r) {
  std::ostringstream md;
  md << Header(r, "Device backend matrix (T1.4)", "Rows are the seed's 119 required operation IDs.");
  const auto status = Summarize(r);
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
      bool fast = canonical->methods.size() == 1 && cpu::HasFastKernel(canonical->methods[0]);
      if (fast) {
        std::vector<std::string> verified;
        const auto it = status.find(canonical->id);
        for (const std::string& t : r.targets) {
          if (it != status.end() && it->second.contains(t) && it->second.at(t).failed == 0 &&
              it->second.at(t).verified == it->second.at(t).cells) {
            verified.push_back(t);
          }
        }
        cpu = fmt::format("implemented, SIMD verified here on {}",
                          verified.empty() ? std::string("no target") : fmt::format("{}", fmt::join(verified, ", ")));
      }
    }
    md << fmt::format("| {} | `{}` | {} | not built | not built | not built (Linux) |\n", op.required_index + 1, op.id, cpu);
  }
  md << "\nCUDA and XLA backends are not built yet; Metal cannot be built or run on Linux.\n";
  return md.str();
}

std::string BackendCoverageMarkdown(const Record& r) {
  std::ostringstream md;
  md << Header(r, "Backend coverage (T1.5)", "Rows are SIMD targets and devices.");
  const auto status = Summarize(r);
  const auto ops = ComputeOps();
  int registered = 0;
  for (const catalog::OpInfo* op : ops) registered += cpu::HasFastKernel(op->methods[0]) ? 1 : 0;
  md << "| Target | Applicable ops | Registered | Verified here | Failed |\n|---|---|---|---|---|\n";
  for (const auto& [target, title] : Columns()) {
    if (IsArmTarget(target)) {
      md << fmt::format("| {} | {} | not built (x86 build) | not run here | — |\n", title, ops.size());
      continue;
    }
    if (!Runnable(r, target)) {
      md << fmt::format("| {} | {} | {} | not run here | — |\n", title, ops.size(), registered);
      continue;
    }
    int verified = 0, failed = 0;
    for (const catalog::OpInfo* op : ops) {
      const auto it = status.find(op->id);
      if (it == status.end() || !it->second.contains(target)) continue;
      const OpStatus& st = it->second.at(target);
      if (st.failed > 0) ++failed;
      else if (st.verified > 0 && st.verified == st.cells) ++verified;
    }
    md << fmt::format("| {} | {} | {} | {} | {} |\n", title, ops.size(), registered, verified, failed);
  }
  int implemented = 0;
  for (const catalog::OpInfo* op : ops) implemented += cpu::Implements(op->methods[0]) ? 1 : 0;
  md << fmt::format("| CPU scalar reference | {} | {} | golden-tested by unit tests | — |\n", ops.size(), implemented);
  md << fmt::format("| CUDA | {} | not built | not run here | — |\n", ops.size());
  md << fmt::format("| XLA | {} | not built | not run here | — |\n", ops.size());
  md << fmt::format("| Metal | {} | not built (Linux) | not run here | — |\n", ops.size());
  return md.str();
}

std::string CellsMarkdown(const std::vector<Cell>& cells) {
  std::ostringstream md;
  md << "| Op | Target | dtype | Status | Max error | Note |\n|---|---|---|---|---|---|\n";
  for (const Cell& c : cells) {
    if (c.status == "not_run") continue;
    md << fmt::format("| `{}` | {} | {} | {} | {:.3g} | {} |\n", c.op, c.target, c.dtype, c.status, c.max_error, c.note);
  }
  int not_run = 0;
  for (const Cell& c : cells) not_run += c.status == "not_run" ? 1 : 0;
  md << fmt::format("\n{} further cells not run (no SIMD kernel, composite or graph-only ops).\n", not_run);
  return md.str();
}

}  // namespace backplane::conformance
