// backplane bench --device: graphs on a graph device beside the CPU backend.
#pragma once

#include <string>

namespace backplane::cli {

void RunDeviceBench(const std::string& device_name, const std::string& onnx_model, double min_time,
                    const std::string& format);

}  // namespace backplane::cli
