#include "xla/pjrt_client.hpp"

#include <dlfcn.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include <fmt/format.h>

#include "backplane/convert.hpp"
#include "backplane/error.hpp"
#include "pjrt_c_api.h"

namespace backplane::xla {
namespace {

constexpr const char* kOp = "xla";

[[noreturn]] void Unavailable(const std::string& path, const std::string& detail) {
  throw Error(ErrorCode::DeviceUnavailable, kOp, fmt::format("PJRT plugin '{}': {}", path, detail));
}

PJRT_Buffer_Type BufferType(DType dtype) {
  switch (dtype) {
    case DType::Float64: return PJRT_Buffer_Type_F64;
    case DType::Float32: return PJRT_Buffer_Type_F32;
    case DType::Float16: return PJRT_Buffer_Type_F16;
    case DType::BFloat16: return PJRT_Buffer_Type_BF16;
    case DType::Float8E4M3: return PJRT_Buffer_Type_F8E4M3FN;
    case DType::Float8E5M2: return PJRT_Buffer_Type_F8E5M2;
    case DType::Int64: return PJRT_Buffer_Type_S64;
    case DType::Int32: return PJRT_Buffer_Type_S32;
    case DType::Int16: return PJRT_Buffer_Type_S16;
    case DType::Int8: return PJRT_Buffer_Type_S8;
    case DType::Uint64: return PJRT_Buffer_Type_U64;
    case DType::Uint32: return PJRT_Buffer_Type_U32;
    case DType::Uint16: return PJRT_Buffer_Type_U16;
    case DType::Uint8: return PJRT_Buffer_Type_U8;
    case DType::Bool: return PJRT_Buffer_Type_PRED;
    case DType::Complex64: return PJRT_Buffer_Type_C64;
    case DType::Complex128: return PJRT_Buffer_Type_C128;
    default: break;
  }
  throw Error(ErrorCode::UnsupportedDType, kOp, fmt::format("dtype {} has no PJRT buffer type", DTypeName(dtype)));
}

// The last PJRT_Api entry this file calls; older plugins whose table ends before it are refused.
constexpr size_t kRequiredApiSize = offsetof(PJRT_Api, PJRT_Buffer_ToHostBuffer) + sizeof(void*);
constexpr int kMinMinor = 40;

// CompileOptionsProto{executable_build_options{num_replicas: 1, num_partitions: 1}}, encoded by
// hand (field 3, length 4: field 4 = 1, field 5 = 1). Empty options abort some plugins.
const std::string kCompileOptions("\x1a\x04\x20\x01\x28\x01", 6);

}  // namespace

std::string DefaultPluginPath() {
  if (const char* env = std::getenv("BACKPLANE_PJRT_PLUGIN"); env != nullptr && *env != '\0') return env;
#ifdef BACKPLANE_PJRT_DEFAULT_PLUGIN
  return BACKPLANE_PJRT_DEFAULT_PLUGIN;
#else
  return "";
#endif
}

void PjrtClient::Check(PJRT_Error* error, const char* call) const {
  if (error == nullptr) return;
  PJRT_Error_Message_Args msg{};
  msg.struct_size = PJRT_Error_Message_Args_STRUCT_SIZE;
  msg.error = error;
  api_->PJRT_Error_Message(&msg);
  std::string text(msg.message, msg.message_size);
  PJRT_Error_Destroy_Args destroy{};
  destroy.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE;
  destroy.error = error;
  api_->PJRT_Error_Destroy(&destroy);
  throw Error(ErrorCode::Internal, kOp, fmt::format("{} failed: {}", call, text));
}

std::shared_ptr<PjrtClient> PjrtClient::Open(const std::string& plugin_path, int device_index) {
  if (plugin_path.empty()) {
    Unavailable("(none)", "no plugin path; set BACKPLANE_PJRT_PLUGIN or run scripts/fetch-models.sh");
  }
  std::shared_ptr<PjrtClient> c(new PjrtClient());
  c->path_ = plugin_path;
  c->handle_ = dlopen(plugin_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (c->handle_ == nullptr) Unavailable(plugin_path, fmt::format("dlopen failed: {}", dlerror()));
  using GetApi = const PJRT_Api* (*)();
  auto get_api = reinterpret_cast<GetApi>(dlsym(c->handle_, "GetPjrtApi"));
  if (get_api == nullptr) Unavailable(plugin_path, "no GetPjrtApi symbol (not a PJRT plugin)");
  c->api_ = get_api();
  if (c->api_ == nullptr) Unavailable(plugin_path, "GetPjrtApi returned null");
  const PJRT_Api_Version& v = c->api_->pjrt_api_version;
  if (v.major_version != PJRT_API_MAJOR || v.minor_version < kMinMinor) {
    Unavailable(plugin_path, fmt::format("PJRT C API {}.{} is incompatible (need {}.{} or a newer minor)",
                                         v.major_version, v.minor_version, PJRT_API_MAJOR, kMinMinor));
  }
  if (c->api_->struct_size < kRequiredApiSize) {
    Unavailable(plugin_path, fmt::format("PJRT_Api struct_size {} is smaller than the {} bytes used",
                                         c->api_->struct_size, kRequiredApiSize));
  }
  try {
    PJRT_Plugin_Initialize_Args init{};
    init.struct_size = PJRT_Plugin_Initialize_Args_STRUCT_SIZE;
    c->Check(c->api_->PJRT_Plugin_Initialize(&init), "PJRT_Plugin_Initialize");

    // The CPU plugin makes one device per core unless told otherwise; other plugins may reject the
    // option, so a refusal retries without it.
    const char kCount[] = "cpu_device_count";
    PJRT_NamedValue option{};
    option.struct_size = PJRT_NamedValue_STRUCT_SIZE;
    option.name = kCount;
    option.name_size = sizeof(kCount) - 1;
    option.type = PJRT_NamedValue_kInt64;
    option.int64_value = 1;
    option.value_size = 1;
    PJRT_Client_Create_Args create{};
    create.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE;
    create.create_options = &option;
    create.num_options = 1;
    if (PJRT_Error* error = c->api_->PJRT_Client_Create(&create); error != nullptr) {
      PJRT_Error_Destroy_Args destroy{};
      destroy.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE;
      destroy.error = error;
      c->api_->PJRT_Error_Destroy(&destroy);
      create.create_options = nullptr;
      create.num_options = 0;
      c->Check(c->api_->PJRT_Client_Create(&create), "PJRT_Client_Create");
    }
    c->client_ = create.client;

    PJRT_Client_AddressableDevices_Args devs{};
    devs.struct_size = PJRT_Client_AddressableDevices_Args_STRUCT_SIZE;
    devs.client = c->client_;
    c->Check(c->api_->PJRT_Client_AddressableDevices(&devs), "PJRT_Client_AddressableDevices");
    c->devices_.assign(devs.addressable_devices, devs.addressable_devices + devs.num_addressable_devices);
  } catch (const Error& e) {
    Unavailable(plugin_path, e.what());
  }
  if (c->devices_.empty()) Unavailable(plugin_path, "no visible devices");
  if (device_index < 0 || device_index >= static_cast<int>(c->devices_.size())) {
    Unavailable(plugin_path, fmt::format("device xla:{} requested, {} visible", device_index, c->devices_.size()));
  }
  c->device_index_ = device_index;
  return c;
}

PjrtClient::~PjrtClient() {
  if (client_ != nullptr) {
    PJRT_Client_Destroy_Args args{};
    args.struct_size = PJRT_Client_Destroy_Args_STRUCT_SIZE;
    args.client = client_;
    if (PJRT_Error* e = api_->PJRT_Client_Destroy(&args); e != nullptr) {
      PJRT_Error_Destroy_Args d{};
      d.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE;
      d.error = e;
      api_->PJRT_Error_Destroy(&d);
    }
  }
  // The plugin stays loaded: its static destructors may still run at exit (unloading XLA
  // mid-process is not supported by it).
}

std::string PjrtClient::platform_name() const {
  PJRT_Client_PlatformName_Args args{};
  args.struct_size = PJRT_Client_PlatformName_Args_STRUCT_SIZE;
  args.client = client_;
  Check(api_->PJRT_Client_PlatformName(&args), "PJRT_Client_PlatformName");
  return std::string(args.platform_name, args.platform_name_size);
}

std::string PjrtClient::platform_version() const {
  PJRT_Client_PlatformVersion_Args args{};
  args.struct_size = PJRT_Client_PlatformVersion_Args_STRUCT_SIZE;
  args.client = client_;
  Check(api_->PJRT_Client_PlatformVersion(&args), "PJRT_Client_PlatformVersion");
  return std::string(args.platform_version, args.platform_version_size);
}

std::string PjrtClient::plugin_attribute(const std::string& name) const {
  if (api_->struct_size < offsetof(PJRT_Api, PJRT_Plugin_Attributes) + sizeof(void*)) return "";
  PJRT_Plugin_Attributes_Args args{};
  args.struct_size = PJRT_Plugin_Attributes_Args_STRUCT_SIZE;
  Check(api_->PJRT_Plugin_Attributes(&args), "PJRT_Plugin_Attributes");
  for (size_t i = 0; i < args.num_attributes; ++i) {
    const PJRT_NamedValue& v = args.attributes[i];
    if (std::string_view(v.name, v.name_size) != name) continue;
    switch (v.type) {
      case PJRT_NamedValue_kString: return std::string(v.string_value, v.value_size);
      case PJRT_NamedValue_kInt64: return std::to_string(v.int64_value);
      case PJRT_NamedValue_kInt64List: {
        std::string s;
        for (size_t k = 0; k < v.value_size; ++k) s += (k ? "." : "") + std::to_string(v.int64_array_value[k]);
        return s;
      }
      case PJRT_NamedValue_kBool: return v.bool_value ? "true" : "false";
      case PJRT_NamedValue_kFloat: return fmt::format("{}", v.float_value);
      default: return "";
    }
  }
  return "";
}

int PjrtClient::api_major() const { return api_->pjrt_api_version.major_version; }
int PjrtClient::api_minor() const { return api_->pjrt_api_version.minor_version; }

namespace {

void AwaitAndDestroy(const PjrtClient& c, PJRT_Event* event, const char* call) {
  if (event == nullptr) return;
  PJRT_Event_Await_Args await{};
  await.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE;
  await.event = event;
  PJRT_Error* error = c.api()->PJRT_Event_Await(&await);
  PJRT_Event_Destroy_Args destroy{};
  destroy.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE;
  destroy.event = event;
  c.api()->PJRT_Event_Destroy(&destroy);
  c.Check(error, call);
}

}  // namespace

std::shared_ptr<PjrtBuffer> PjrtClient::Upload(const Tensor& host) const {
  const Tensor h = host.ToHost();
  PJRT_Client_BufferFromHostBuffer_Args args{};
  args.struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE;
  args.client = client_;
  static const std::byte kEmpty[64] = {};
  std::vector<uint8_t> bytes;  // bools unpacked to PRED bytes
  if (h.dtype() == DType::Bool) {
    bytes.resize(static_cast<size_t>(h.numel()));
    for (int64_t i = 0; i < h.numel(); ++i) bytes[static_cast<size_t>(i)] = LoadBool(h.data(), i) ? 1 : 0;
  }
  args.data = h.numel() == 0 ? kEmpty : (bytes.empty() ? h.data() : bytes.data());
  args.type = BufferType(h.dtype());
  args.dims = h.shape().data();
  args.num_dims = h.shape().size();
  args.host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableOnlyDuringCall;
  args.device = pjrt_device();
  Check(api_->PJRT_Client_BufferFromHostBuffer(&args), "PJRT_Client_BufferFromHostBuffer");
  auto buffer = std::make_shared<PjrtBuffer>(shared_from_this(), args.buffer, h.dtype(), h.numel());
  AwaitAndDestroy(*this, args.done_with_host_buffer, "PJRT_Client_BufferFromHostBuffer");
  return buffer;
}

std::unique_ptr<PjrtExecutable> PjrtClient::Compile(const std::string& mlir, const std::string& what) const {
  PJRT_Program program{};
  program.struct_size = PJRT_Program_STRUCT_SIZE;
  std::string code = mlir;
  program.code = code.data();
  program.code_size = code.size();
  static const char kFormat[] = "mlir";
  program.format = kFormat;
  program.format_size = sizeof(kFormat) - 1;
  PJRT_Client_Compile_Args args{};
  args.struct_size = PJRT_Client_Compile_Args_STRUCT_SIZE;
  args.client = client_;
  args.program = &program;
  args.compile_options = kCompileOptions.data();
  args.compile_options_size = kCompileOptions.size();
  try {
    Check(api_->PJRT_Client_Compile(&args), "PJRT_Client_Compile");
  } catch (const Error& e) {
    throw Error(ErrorCode::InvalidArgument, kOp, fmt::format("{} was rejected by the plugin: {}", what, e.what()));
  }
  PJRT_LoadedExecutable_GetExecutable_Args get{};
  get.struct_size = PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE;
  get.loaded_executable = args.executable;
  Check(api_->PJRT_LoadedExecutable_GetExecutable(&get), "PJRT_LoadedExecutable_GetExecutable");
  PJRT_Executable_NumOutputs_Args n{};
  n.struct_size = PJRT_Executable_NumOutputs_Args_STRUCT_SIZE;
  n.executable = get.executable;
  PJRT_Error* error = api_->PJRT_Executable_NumOutputs(&n);
  PJRT_Executable_Destroy_Args destroy{};
  destroy.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE;
  destroy.executable = get.executable;
  api_->PJRT_Executable_Destroy(&destroy);
  Check(error, "PJRT_Executable_NumOutputs");
  return std::make_unique<PjrtExecutable>(shared_from_this(), args.executable, n.num_outputs);
}

PjrtBuffer::PjrtBuffer(std::shared_ptr<const PjrtClient> client, PJRT_Buffer* buffer, DType dtype, int64_t numel)
    : client_(std::move(client)), buffer_(buffer), dtype_(dtype), numel_(numel) {}

PjrtBuffer::~PjrtBuffer() {
  PJRT_Buffer_Destroy_Args args{};
  args.struct_size = PJRT_Buffer_Destroy_Args_STRUCT_SIZE;
  args.buffer = buffer_;
  if (PJRT_Error* e = client_->api()->PJRT_Buffer_Destroy(&args); e != nullptr) {
    PJRT_Error_Destroy_Args d{};
    d.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE;
    d.error = e;
    client_->api()->PJRT_Error_Destroy(&d);
  }
}

Device PjrtBuffer::device() const { return client_->device(); }

void PjrtBuffer::CopyToHost(void* dst, size_t bytes) const {
  const size_t host_bytes = DTypeStorageBytes(dtype_, numel_);
  if (bytes != host_bytes) {
    throw Error(ErrorCode::Internal, kOp, fmt::format("device buffer holds {} bytes, copy asked for {}", host_bytes, bytes));
  }
  if (numel_ == 0) return;
  std::vector<uint8_t> pred;
  if (dtype_ == DType::Bool) pred.resize(static_cast<size_t>(numel_));
  PJRT_Buffer_ToHostBuffer_Args args{};
  args.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE;
  args.src = buffer_;
  args.dst = pred.empty() ? dst : pred.data();
  args.dst_size = pred.empty() ? bytes : pred.size();
  client_->Check(client_->api()->PJRT_Buffer_ToHostBuffer(&args), "PJRT_Buffer_ToHostBuffer");
  AwaitAndDestroy(*client_, args.event, "PJRT_Buffer_ToHostBuffer");
  if (!pred.empty()) {
    std::memset(dst, 0, bytes);
    for (int64_t i = 0; i < numel_; ++i) StoreBool(dst, i, pred[static_cast<size_t>(i)] != 0);
  }
}

PjrtExecutable::PjrtExecutable(std::shared_ptr<const PjrtClient> client, PJRT_LoadedExecutable* exe,
                               size_t num_outputs)
    : client_(std::move(client)), exe_(exe), num_outputs_(num_outputs) {}

PjrtExecutable::~PjrtExecutable() {
  PJRT_LoadedExecutable_Destroy_Args args{};
  args.struct_size = PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE;
  args.executable = exe_;
  if (PJRT_Error* e = client_->api()->PJRT_LoadedExecutable_Destroy(&args); e != nullptr) {
    PJRT_Error_Destroy_Args d{};
    d.struct_size = PJRT_Error_Destroy_Args_STRUCT_SIZE;
    d.error = e;
    client_->api()->PJRT_Error_Destroy(&d);
  }
}

std::vector<Tensor> PjrtExecutable::Execute(const std::vector<const PjrtBuffer*>& args,
                                            const std::vector<std::pair<DType, Shape>>& output_types) const {
  if (output_types.size() != num_outputs_) {
    throw Error(ErrorCode::Internal, kOp,
                fmt::format("executable has {} outputs, {} expected", num_outputs_, output_types.size()));
  }
  std::vector<PJRT_Buffer*> arg_buffers;
  arg_buffers.reserve(args.size());
  for (const PjrtBuffer* b : args) arg_buffers.push_back(b->get());
  PJRT_Buffer* const* arg_list = arg_buffers.data();
  std::vector<PJRT_Buffer*> outputs(num_outputs_, nullptr);
  PJRT_Buffer** output_list = outputs.data();
  PJRT_Event* done = nullptr;
  PJRT_ExecuteOptions options{};
  options.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE;
  PJRT_LoadedExecutable_Execute_Args exec{};
  exec.struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE;
  exec.executable = exe_;
  exec.options = &options;
  exec.argument_lists = &arg_list;
  exec.num_devices = 1;
  exec.num_args = arg_buffers.size();
  exec.output_lists = &output_list;
  exec.device_complete_events = &done;
  client_->Check(client_->api()->PJRT_LoadedExecutable_Execute(&exec), "PJRT_LoadedExecutable_Execute");
  std::vector<Tensor> result;
  result.reserve(num_outputs_);
  for (size_t i = 0; i < num_outputs_; ++i) {
    const auto& [dtype, shape] = output_types[i];
    auto storage = std::make_shared<PjrtBuffer>(client_, outputs[i], dtype, NumElements(shape));
    result.push_back(Tensor::OnDevice(dtype, shape, std::move(storage)));
  }
  AwaitAndDestroy(*client_, done, "PJRT_LoadedExecutable_Execute");
  return result;
}

}  // namespace backplane::xla
