// backplane op OP_ID: run one catalog operation on .npy files (or describe it).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>
#include <string>
#include <vector>

#include "backplane/catalog/catalog.hpp"
#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/error.hpp"
#include "backplane/io.hpp"
#include "backplane/runtime/executor.hpp"
#include "backplane/runtime/run_op.hpp"
#include "cli_util.hpp"
#include "commands.hpp"

namespace backplane::cli {
namespace {

struct OpOptions {
  std::string op;
  std::vector<std::string> attrs;
  std::vector<std::string> ins;
  std::vector<std::string> outs;
  bool describe = false;
  std::string device = "cpu";
};

void Describe(const catalog::OpInfo& op, const runtime::OpImpl* impl) {
  std::vector<std::string> dtypes;
  for (DType d : AllDTypes()) {
    if (op.dtypes.Contains(d)) dtypes.emplace_back(DTypeName(d));
  }
  fmt::print("{}{}\n", op.id, op.alias_of.empty() ? "" : fmt::format(" (alias of {})", op.alias_of));
  fmt::print("  {}\n", op.summary);
  fmt::print("  inputs:  {}\n", op.inputs.empty() ? "(none)" : fmt::format("{}", fmt::join(op.inputs, ", ")));
  fmt::print("  outputs: {}\n", fmt::join(op.outputs, ", "));
  fmt::print("  attributes:\n");
  if (op.attrs.empty()) fmt::print("    (none)\n");
  for (const catalog::AttrSpec& a : op.attrs) {
    fmt::print("    {}: {}{}\n", a.name, catalog::AttrTypeName(a.type),
               a.required ? " (required)" : fmt::format(" = {}", a.default_value.empty() ? "\"\"" : a.default_value));
  }
  fmt::print("  dtypes: {}\n", fmt::join(dtypes, ", "));
  if (impl != nullptr && !impl->state.empty()) {
    fmt::print("  state (extra inputs and outputs, in order): {}\n", fmt::join(impl->state, ", "));
  }
  std::vector<std::string> methods;
  for (catalog::MethodId id : op.methods) methods.push_back(catalog::Method(id).QualifiedName());
  fmt::print("  runs: {}{}\n", catalog::LinkKindName(op.link),
             methods.empty() ? "" : fmt::format(" -> {}", fmt::join(methods, ", ")));
}

void RunOp(const OpOptions& o) {
  const catalog::OpInfo* op = catalog::ResolveOp(o.op);
  if (op == nullptr) ThrowInvalidArgument("backplane op", "OP_ID", "a catalog operation ID", "'" + o.op + "'");
  const runtime::OpImpl* impl = runtime::Registry().Find(op->id);
  if (o.describe) {
    Describe(*catalog::FindOp(o.op), impl);
    return;
  }
  if (impl == nullptr) ThrowNotImplemented(op->id, "cpu (no graph lowering)");
  const runtime::Arity arity = runtime::OpArity(*op);
  const int n_in = static_cast<int>(o.ins.size());
  const int max_in = arity.max_inputs < 0 ? n_in : std::min(arity.max_inputs, n_in);
  runtime::OpCall call;
  call.op = op->id;
  const DTypeSet accepted = op->dtypes;
  for (int i = 0; i < n_in; ++i) {
    Tensor t = io::ReadNpy(o.ins[static_cast<size_t>(i)]);
    // .npy has no int4: int8 files feed int4 inputs (values must fit in [-8, 7]).
    if (i < max_in && t.dtype() == DType::Int8 && accepted.Contains(DType::Int4) && !accepted.Contains(DType::Int8)) {
      Tensor packed(DType::Int4, t.shape());
      for (int64_t k = 0; k < t.numel(); ++k) {
        const double v = t.GetDouble(k);
        if (v < -8 || v > 7) ThrowInvalidArgument("backplane op", o.ins[static_cast<size_t>(i)], "int4 values in [-8, 7]", fmt::format("{}", v));
        packed.SetDouble(k, v);
      }
      t = packed;
    }
    call.inputs.push_back(std::move(t));
  }
  // As many main outputs as --out files name (at least the required ones); the rest are state.
  const int n_out_ports = arity.max_outputs < 0 ? std::max<int>(1, static_cast<int>(o.outs.size()) - static_cast<int>(impl->state.size()))
                                                : arity.max_outputs;
  call.num_outputs = std::max(std::min<int>(n_out_ports, static_cast<int>(o.outs.size())), arity.min_outputs);
  for (const std::string& text : o.attrs) {
    const auto eq = text.find('=');
    if (eq == std::string::npos) ThrowInvalidArgument("backplane op", "--attr", "KEY=VALUE", "'" + text + "'");
    const std::string key = text.substr(0, eq);
    const catalog::AttrSpec* spec = nullptr;
    for (const catalog::AttrSpec& a : op->attrs) {
      if (a.name == key) spec = &a;
    }
    if (spec == nullptr) ThrowInvalidArgument("backplane op", "--attr", fmt::format("an attribute of {}", op->id), "'" + key + "'");
    call.attrs[key] = ParseAttrText(*spec, text.substr(eq + 1));
  }
  auto backend = cpu::CreateBackend();
  const std::unique_ptr<runtime::GraphDevice> device = OpenDeviceOption(o.device);
  call.device = device.get();
  const runtime::OpResult result = runtime::RunOp(call, *backend);
  std::vector<Tensor> outs = result.outputs;
  outs.insert(outs.end(), result.state.begin(), result.state.end());
  if (o.outs.size() > outs.size()) {
    ThrowInvalidArgument("backplane op", "--out", fmt::format("at most {} files", outs.size()), std::to_string(o.outs.size()));
  }
  for (size_t i = 0; i < o.outs.size(); ++i) {
    Tensor t = outs[i];
    if (t.dtype() == DType::Int4) {
      Tensor unpacked(DType::Int8, t.shape());
      for (int64_t k = 0; k < t.numel(); ++k) unpacked.SetDouble(k, t.GetDouble(k));
      t = unpacked;
    }
    io::WriteNpy(o.outs[i], t);
  }
  if (o.outs.empty()) {
    for (size_t i = 0; i < result.outputs.size(); ++i) {
      const size_t port = std::min(i, op->outputs.size() - 1);
      fmt::print("{}_out{} {}\n", runtime::PortName(op->outputs[port]), i, Summarize(result.outputs[i]));
    }
  }
}

}  // namespace

void AddOpCommand(CLI::App& app) {
  auto o = std::make_shared<OpOptions>();
  CLI::App* cmd = app.add_subcommand("op", "Run one catalog operation on .npy files");
  cmd->add_option("op", o->op, "Operation ID or alias, e.g. activation.gelu")->required();
  cmd->add_option("--attr", o->attrs, "KEY=VALUE attribute (repeatable)");
  cmd->add_option("--in", o->ins, "Input .npy file, in the op's input order, then state (repeatable)");
  cmd->add_option("--out", o->outs, "Output .npy file, in the op's output order, then state (repeatable)");
  cmd->add_flag("--describe", o->describe, "Print the op's inputs, outputs, attributes and dtypes");
  cmd->add_option("--device", o->device, "cpu (default), xla[:N] or cuda[:N] (an op without a lowering falls back to the CPU)");
  cmd->callback([o] { RunOp(*o); });
}

}  // namespace backplane::cli
