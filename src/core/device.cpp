#include "backplane/device.hpp"

#include <charconv>

#include "backplane/error.hpp"

namespace backplane {

std::string DeviceName(Device device) {
  switch (device.kind) {
    case DeviceKind::Cpu: return "cpu";
    case DeviceKind::Xla: return "xla:" + std::to_string(device.index);
    case DeviceKind::Cuda: return "cuda:" + std::to_string(device.index);
  }
  return "unknown";
}

Device ParseDevice(std::string_view text, std::string_view arg) {
  const size_t colon = text.find(':');
  const std::string_view kind = text.substr(0, colon);
  Device device;
  if (kind == "cpu") {
    device.kind = DeviceKind::Cpu;
  } else if (kind == "xla") {
    device.kind = DeviceKind::Xla;
  } else if (kind == "cuda") {
    device.kind = DeviceKind::Cuda;
  } else {
    ThrowInvalidArgument("device", arg, "cpu, xla[:N] or cuda[:N]", "'" + std::string(text) + "'");
  }
  if (colon != std::string_view::npos) {
    const std::string_view digits = text.substr(colon + 1);
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), device.index);
    if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty() || device.index < 0 ||
        (device.kind == DeviceKind::Cpu && device.index != 0)) {
      ThrowInvalidArgument("device", arg, "cpu, xla[:N] or cuda[:N] with N >= 0", "'" + std::string(text) + "'");
    }
  }
  return device;
}

}  // namespace backplane
