// The daemon's side of the gRPC module (collectors/grpc_module.h): the
// loader, and the two entry points the collectors call, which load the
// module only when they are called.
#include "collectors/grpc_module.h"

#include <dlfcn.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#ifndef FABRICMON_GRPC_MODULE_BUILD
#error "FABRICMON_GRPC_MODULE_BUILD (version-revision) comes from CMake"
#endif
#ifndef FABRICMON_GRPC_MODULE_RELDIR
#error \
    "FABRICMON_GRPC_MODULE_RELDIR (libdir relative to bindir) comes from CMake"
#endif

namespace fabric {
namespace {

constexpr const char* kFile = "libfabricmon_grpc.so";

std::string Join(const std::vector<std::string>& paths) {
  std::string out;
  for (const auto& p : paths) out += (out.empty() ? "" : ", ") + p;
  return out;
}

// The stream of a switch when there is no module: fails at once with the
// loader's reason, so the collector marks the switch down, logs it once and
// backs off as for any failed stream.
class NoModuleCall final : public gnmi_switch::SubscribeCall {
 public:
  explicit NoModuleCall(std::string error) : error_(std::move(error)) {}
  std::string Run(const Handlers&) override { return error_; }
  void Cancel() override {}

 private:
  const std::string error_;
};

}  // namespace

std::vector<std::string> GrpcModulePaths(const std::string& env_file,
                                         const std::string& exe) {
  if (!env_file.empty()) return {env_file};
  if (exe.empty()) return {};
  const std::filesystem::path dir = std::filesystem::path(exe).parent_path();
  return {
      (dir / kFile).string(),
      (dir / FABRICMON_GRPC_MODULE_RELDIR / kFile).lexically_normal().string()};
}

const GrpcModuleApi* LoadGrpcModule(const std::vector<std::string>& candidates,
                                    std::string* error) {
  for (const auto& path : candidates) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) continue;
    // RTLD_NOW: a module that cannot resolve a symbol fails here, with
    // dlerror's reason, not later in a collector's thread.
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* why = ::dlerror();
      *error = path + ": " + (why ? why : "dlopen failed");
      return nullptr;
    }
    using Entry = const GrpcModuleApi* (*)();
    auto entry =
        reinterpret_cast<Entry>(::dlsym(handle, "fabricmon_grpc_module"));
    const GrpcModuleApi* api = entry ? entry() : nullptr;
    if (!api) {
      *error =
          path + ": not a fabricmon gRPC module (no fabricmon_grpc_module)";
    } else if (api->abi != kGrpcModuleAbi || api->layout != kGrpcModuleLayout ||
               !api->build ||
               std::strcmp(api->build, FABRICMON_GRPC_MODULE_BUILD) != 0) {
      *error = path + ": built from " + (api->build ? api->build : "?") +
               ", this fabricmon is " + FABRICMON_GRPC_MODULE_BUILD +
               " (install the module of the same build)";
    } else if (!api->subscribe || !api->list_pod_resources) {
      *error = path + ": incomplete module";
    } else {
      spdlog::info("gRPC module {} loaded", path);
      return api;  // never dlclose'd: its code and static data stay in use
    }
    ::dlclose(handle);
    return nullptr;
  }
  *error = "gRPC module " + std::string(kFile) + " not found (looked for " +
           (candidates.empty() ? std::string("nothing: no executable path")
                               : Join(candidates)) +
           "); it comes with fabricmon's package";
  return nullptr;
}

const GrpcModuleApi* GrpcModule(std::string* error) {
  struct Load {
    const GrpcModuleApi* api = nullptr;
    std::string error;
  };
  static const Load load = [] {
    Load l;
    const char* env = std::getenv("FABRICMON_GRPC_MODULE");
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    l.api = LoadGrpcModule(GrpcModulePaths(env ? env : "", ec ? "" : exe),
                           &l.error);
    return l;
  }();
  if (!load.api) *error = load.error;
  return load.api;
}

// The entry points the collectors call (declared in gnmi_client.h and
// pod_resources.h; the module's own are GrpcSubscribe and
// ListPodResourcesOverGrpc).

std::unique_ptr<gnmi_switch::SubscribeCall> gnmi_switch::NewGrpcSubscribeCall(
    const std::string& address, const ClientOptions& options) {
  std::string error;
  const GrpcModuleApi* api = GrpcModule(&error);
  if (!api) return std::make_unique<NoModuleCall>(error);
  return api->subscribe(address, options);
}

PodResourcesReply ListPodResources(const std::string& socket,
                                   std::chrono::milliseconds deadline) {
  PodResourcesReply reply;
  struct stat st {};
  if (::stat(socket.c_str(), &st) != 0) {
    // No kubelet socket (and no directory for it): not a Kubernetes node,
    // and no reason to load gRPC.
    if (errno != ENOENT && errno != ENOTDIR) {
      reply.error = socket + ": " + std::strerror(errno);
    }
    return reply;
  }
  if (!S_ISSOCK(st.st_mode)) {
    reply.error = socket + ": not a socket";
    return reply;
  }
  const GrpcModuleApi* api = GrpcModule(&reply.error);
  if (!api) return reply;
  return api->list_pod_resources(socket, deadline);
}

}  // namespace fabric
