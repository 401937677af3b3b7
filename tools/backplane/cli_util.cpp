#include "cli_util.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <sstream>

#include "backplane/error.hpp"

namespace backplane::cli {

std::unique_ptr<runtime::GraphDevice> OpenDeviceOption(const std::string& name) {
  return runtime::OpenGraphDevice(name);
}

std::string ExplainPlacement(const std::vector<runtime::NodePlacement>& placement) {
  std::string text;
  int on_device = 0, fallback = 0, segments = -1;
  for (const runtime::NodePlacement& p : placement) {
    text += fmt::format("  {} ({}): {}", p.node, p.op, p.device);
    if (!p.fallback.empty()) {
      text += ", fallback: " + p.fallback;
      ++fallback;
    }
    if (p.segment >= 0) {
      text += fmt::format(" [program {}]", p.segment);
      ++on_device;
      segments = std::max(segments, p.segment);
    }
    text += "\n";
  }
  text += fmt::format("{} nodes: {} on the device in {} programs, {} on the CPU ({} fallbacks)\n", placement.size(),
                      on_device, segments + 1, static_cast<int>(placement.size()) - on_device, fallback);
  return text;
}

std::pair<std::string, std::string> SplitAssignment(const std::string& option, const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    ThrowInvalidArgument("backplane", option, "NAME=FILE", "'" + text + "'");
  }
  return {text.substr(0, eq), text.substr(eq + 1)};
}

namespace {

std::vector<std::string> ListItems(std::string text) {
  if (!text.empty() && text.front() == '[' && text.back() == ']') text = text.substr(1, text.size() - 2);
  std::vector<std::string> items;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.find_first_not_of(' ') != std::string::npos) items.push_back(item);
  }
  return items;
}

int64_t ParseInt(const std::string& name, const std::string& text) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty()) ThrowInvalidArgument("backplane op", "--attr " + name, "an integer", "'" + text + "'");
  return v;
}

double ParseFloat(const std::string& name, const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty()) ThrowInvalidArgument("backplane op", "--attr " + name, "a number", "'" + text + "'");
  return v;
}

}  // namespace

ir::AttrValue ParseAttrText(const catalog::AttrSpec& spec, const std::string& text) {
  switch (spec.type) {
    case catalog::AttrType::Int: return ParseInt(spec.name, text);
    case catalog::AttrType::Float: return ParseFloat(spec.name, text);
    case catalog::AttrType::Bool:
      if (text == "true" || text == "1") return true;
      if (text == "false" || text == "0") return false;
      ThrowInvalidArgument("backplane op", "--attr " + spec.name, "true or false", "'" + text + "'");
    case catalog::AttrType::String:
      // Graph attributes are JSON strings: UTF-8 only (nlohmann's dump validates it).
      try {
        (void)nlohmann::json(text).dump();
      } catch (const nlohmann::json::type_error&) {
        ThrowInvalidArgument("backplane op", "--attr " + spec.name, "UTF-8 text", "bytes that are not valid UTF-8");
      }
      return text;
    case catalog::AttrType::IntList: {
      std::vector<int64_t> v;
      for (const std::string& item : ListItems(text)) v.push_back(ParseInt(spec.name, item));
      return v;
    }
    case catalog::AttrType::FloatList: {
      std::vector<double> v;
      for (const std::string& item : ListItems(text)) v.push_back(ParseFloat(spec.name, item));
      return v;
    }
  }
  return text;
}

std::string Summarize(const Tensor& t, int max_values) {
  std::string s = fmt::format("{}{}", DTypeName(t.dtype()), ShapeToString(t.shape()));
  if (t.numel() == 0 || IsComplex(t.dtype())) return s;
  if (t.numel() > max_values) {
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double v = t.GetDouble(i);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      sum += v;
    }
    return s + fmt::format(" min {:.6g} max {:.6g} mean {:.6g}", lo, hi, sum / static_cast<double>(t.numel()));
  }
  std::vector<std::string> values;
  for (int64_t i = 0; i < t.numel(); ++i) values.push_back(fmt::format("{:.6g}", t.GetDouble(i)));
  return s + fmt::format(" = [{}]", fmt::join(values, ", "));
}

}  // namespace backplane::cli
