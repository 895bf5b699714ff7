// The gRPC module's loader (collectors/grpc_module.h): where it looks, and
// what it says about a file that is absent, not a shared library, or a
// library that is not the module; the real module (built beside fabricmon)
// loads and answers. The daemon's side, end to end:
// tests/integration/kubelet_grpc_module_test.cc.
#include "collectors/grpc_module.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/temp_dir.h"

namespace fabric {
namespace {

using testing::TempDir;

TEST(GrpcModulePaths, BesideTheBinaryThenTheInstalledLibdir) {
  const auto paths = GrpcModulePaths("", "/usr/bin/fabricmon");
  ASSERT_EQ(paths.size(), 2u);
  EXPECT_EQ(paths[0], "/usr/bin/libfabricmon_grpc.so");
  EXPECT_TRUE(paths[1].starts_with("/usr/lib/")) << paths[1];
  EXPECT_TRUE(paths[1].ends_with("/fabricmon/libfabricmon_grpc.so"))
      << paths[1];
  EXPECT_EQ(paths[1].find(".."), std::string::npos) << paths[1];
}

TEST(GrpcModulePaths, TheEnvironmentNamesTheOnlyFile) {
  EXPECT_EQ(GrpcModulePaths("/opt/m.so", "/usr/bin/fabricmon"),
            std::vector<std::string>{"/opt/m.so"});
  EXPECT_TRUE(GrpcModulePaths("", "").empty());
}

TEST(LoadGrpcModule, NoneFoundNamesWhereItLooked) {
  std::string error;
  EXPECT_EQ(LoadGrpcModule({"/nonexistent/a.so", "/nonexistent/b.so"}, &error),
            nullptr);
  EXPECT_NE(error.find("not found (looked for /nonexistent/a.so, "
                       "/nonexistent/b.so)"),
            std::string::npos)
      << error;
}

TEST(LoadGrpcModule, AFileThatIsNoLibraryIsAnErrorNotASkip) {
  TempDir dir("grpc-module");
  const std::string bad = dir.path() + "/libfabricmon_grpc.so";
  std::ofstream(bad) << "not an ELF file\n";
  std::string error;
  // The good module after it is not tried: a broken install is reported.
  EXPECT_EQ(LoadGrpcModule({bad, FABRICMON_BINARY_DIR "/libfabricmon_grpc.so"},
                           &error),
            nullptr);
  EXPECT_TRUE(error.starts_with(bad + ": ")) << error;
}

TEST(LoadGrpcModule, ALibraryWithoutTheEntryIsNotTheModule) {
  std::string error;
  EXPECT_EQ(LoadGrpcModule({"/lib/x86_64-linux-gnu/libm.so.6",
                            "/usr/lib/x86_64-linux-gnu/libm.so.6"},
                           &error),
            nullptr);
  EXPECT_NE(error.find("not a fabricmon gRPC module"), std::string::npos)
      << error;
}

TEST(LoadGrpcModule, TheBuiltModuleLoadsAndAnswers) {
  std::string error;
  const GrpcModuleApi* api =
      LoadGrpcModule({FABRICMON_BINARY_DIR "/libfabricmon_grpc.so"}, &error);
  ASSERT_NE(api, nullptr) << error;
  EXPECT_EQ(api->abi, kGrpcModuleAbi);
  // A real gRPC call, through the module: nobody listens there.
  const PodResourcesReply reply = api->list_pod_resources(
      "/nonexistent/kubelet.sock", std::chrono::milliseconds(500));
  EXPECT_TRUE(reply.error.starts_with("List on /nonexistent/kubelet.sock: "))
      << reply.error;
}

}  // namespace
}  // namespace fabric
