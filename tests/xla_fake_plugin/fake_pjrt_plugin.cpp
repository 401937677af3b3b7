// A fake PJRT plugin for the loader's error paths. FAKE_PJRT_MODE selects what it pretends:
//   "major": API major version 1; "old": API 0.1; "small": a truncated PJRT_Api table;
//   "noclient": a valid table whose PJRT_Client_Create fails with a message.
#include <cstdlib>
#include <cstring>
#include <string>

#include "pjrt_c_api.h"

namespace {

struct FakeError {
  std::string message;
};

void ErrorDestroy(PJRT_Error_Destroy_Args* args) { delete reinterpret_cast<FakeError*>(args->error); }

void ErrorMessage(PJRT_Error_Message_Args* args) {
  const auto* e = reinterpret_cast<const FakeError*>(args->error);
  args->message = e->message.c_str();
  args->message_size = e->message.size();
}

PJRT_Error* PluginInitialize(PJRT_Plugin_Initialize_Args*) { return nullptr; }

PJRT_Error* ClientCreate(PJRT_Client_Create_Args*) {
  return reinterpret_cast<PJRT_Error*>(new FakeError{"fake plugin: no devices can be created"});
}

PJRT_Api MakeApi() {
  PJRT_Api api;
  std::memset(&api, 0, sizeof api);
  api.struct_size = PJRT_Api_STRUCT_SIZE;
  api.pjrt_api_version.struct_size = PJRT_Api_Version_STRUCT_SIZE;
  api.pjrt_api_version.major_version = PJRT_API_MAJOR;
  api.pjrt_api_version.minor_version = PJRT_API_MINOR;
  api.PJRT_Error_Destroy = ErrorDestroy;
  api.PJRT_Error_Message = ErrorMessage;
  api.PJRT_Plugin_Initialize = PluginInitialize;
  api.PJRT_Client_Create = ClientCreate;
  const char* mode = std::getenv("FAKE_PJRT_MODE");
  const std::string m = mode ? mode : "";
  if (m == "major") api.pjrt_api_version.major_version = 1;
  if (m == "old") api.pjrt_api_version.minor_version = 1;
  if (m == "small") api.struct_size = 64;
  return api;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const PJRT_Api* GetPjrtApi() {
  static PJRT_Api api;
  api = MakeApi();
  return &api;
}
