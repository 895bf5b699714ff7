// The pods source's mapping (sources/pod_resources.h): which device IDs are
// PCI addresses, a VF's and a PF's RDMA device through sysfs, and the
// (namespace, pod, container, device) set List's containers give.
#include "sources/pod_resources.h"

#include <gtest/gtest.h>

#include "tests/support/fake_sysfs.h"

namespace fabric {
namespace {

using testing::FakeSysfs;

TEST(PodResourcesTest, PciAddresses) {
  EXPECT_TRUE(IsPciAddress("0000:3b:00.2"));
  EXPECT_TRUE(IsPciAddress("10000:e1:1f.7"));  // a VMD domain
  EXPECT_TRUE(IsPciAddress("0000:AF:00.0"));
  EXPECT_FALSE(IsPciAddress("3b:00.2"));       // no domain
  EXPECT_FALSE(IsPciAddress("0000:3b:00.8"));  // function 0-7
  EXPECT_FALSE(IsPciAddress("0000:3b:00.2x"));
  EXPECT_FALSE(IsPciAddress("0"));  // the shared plugin's slot
  EXPECT_FALSE(IsPciAddress("GPU-6f1a2b3c-0000-1111-2222-333344445555"));
  EXPECT_FALSE(IsPciAddress("../../../../etc"));
  EXPECT_FALSE(IsPciAddress("0000:3b/../0.2"));
  EXPECT_FALSE(IsPciAddress(""));
}

// A PF 0000:3b:00.0 (mlx5_0) with a VF 0000:3b:00.2 that has an RDMA device
// of its own (mlx5_4), a second PF (mlx5_1), and a GPU without one.
FakeSysfs Tree() {
  FakeSysfs fs;
  fs.Dir("bus/pci/devices/0000:3b:00.0/infiniband/mlx5_0");
  fs.Dir("bus/pci/devices/0000:3b:00.2/infiniband/mlx5_4");
  fs.Link("bus/pci/devices/0000:3b:00.2/physfn", "../0000:3b:00.0");
  fs.Dir("bus/pci/devices/0000:86:00.0/infiniband/mlx5_1");
  fs.File("bus/pci/devices/0000:17:00.0/vendor", "0x10de\n");
  return fs;
}

TEST(PodResourcesTest, AVfMapsToItsPfsDeviceAPfToItsOwn) {
  FakeSysfs fs = Tree();
  EXPECT_EQ(PciRdmaDevices(fs, "0000:3b:00.2"),
            std::vector<std::string>{"mlx5_0"});
  EXPECT_EQ(PciRdmaDevices(fs, "0000:86:00.0"),
            std::vector<std::string>{"mlx5_1"});
  EXPECT_TRUE(PciRdmaDevices(fs, "0000:17:00.0").empty());  // the GPU
  EXPECT_TRUE(PciRdmaDevices(fs, "0000:99:00.0").empty());  // not there
}

TEST(PodResourcesTest, AnIdThatIsNotAPciAddressIsNeverLookedUp) {
  FakeSysfs fs = Tree();
  EXPECT_TRUE(PciRdmaDevices(fs, "../0000:3b:00.0").empty());
  EXPECT_TRUE(fs.calls().empty());
}

TEST(PodResourcesTest, ContainersMapToTheirDevicesSortedAndOnce) {
  FakeSysfs fs = Tree();
  const std::vector<PodContainerDevices> containers = {
      {"ml",
       "trainer-1",
       "worker",
       "nvidia.com/sriov_rdma_vf",
       {"0000:86:00.0"}},
      {"ml",
       "trainer-0",
       "worker",
       "nvidia.com/sriov_rdma_vf",
       {"0000:3b:00.2", "0000:86:00.0"}},
      // Its GPU: not an RDMA device.
      {"ml",
       "trainer-0",
       "worker",
       "nvidia.com/gpu",
       {"GPU-6f1a2b3c-0000-1111-2222-333344445555"}},
      // The same device through the shared plugin: one series.
      {"ml", "trainer-0", "worker", "rdma/hca_shared_devices_a", {"3"}},
      // A shared resource not configured: its slot numbers name nothing.
      {"batch", "eval", "main", "rdma/hca_shared_devices_b", {"0"}},
      {"batch", "idle", "main", "rdma/hca_shared_devices_a", {}},
  };
  const SharedResources shared = {{"rdma/hca_shared_devices_a", {"mlx5_0"}}};
  EXPECT_EQ(MapPodDevices(fs, containers, shared),
            (std::vector<PodDevice>{{"ml", "trainer-0", "worker", "mlx5_0"},
                                    {"ml", "trainer-0", "worker", "mlx5_1"},
                                    {"ml", "trainer-1", "worker", "mlx5_1"}}));
}

TEST(PodResourcesTest, ASharedResourceGivesEveryHolderAllItsDevices) {
  FakeSysfs fs;
  const SharedResources shared = {
      {"rdma/hca_shared_devices_a", {"mlx5_0", "mlx5_1"}}};
  EXPECT_EQ(MapPodDevices(fs,
                          {{"a", "p", "c", "rdma/hca_shared_devices_a", {"0"}},
                           {"b", "q", "c", "rdma/hca_shared_devices_a", {"1"}}},
                          shared),
            (std::vector<PodDevice>{{"a", "p", "c", "mlx5_0"},
                                    {"a", "p", "c", "mlx5_1"},
                                    {"b", "q", "c", "mlx5_0"},
                                    {"b", "q", "c", "mlx5_1"}}));
  EXPECT_TRUE(fs.calls().empty());
}

}  // namespace
}  // namespace fabric
