// Identifies NVIDIA/Mellanox ConnectX and BlueField devices, and the
// nic_identity collector that exports the result as
// fabric_device_model_info{device,model,family,pci_device_id,mode,bond}.
//
// The model comes from sources/nic_model.h (PCI device id, then hca_type);
// a bond device (mlx5_bond_N) identifies like its PFs and bond="1" marks it.
//
// DPU vs NIC mode: mode="dpu" only when a netdev of the device
// (device/net/*) has its eswitch in switchdev (class/net/<if>/compat/devlink/
// mode == "switchdev", MLNX_OFED) or is the host-PF representor
// (phys_port_name pf<N>hpf): both exist only on the Arm (ECPF) side of a
// BlueField in DPU mode. From the host, a
// BlueField in NIC mode and one in DPU mode expose the same PCI id and
// sysfs, so mode="unknown" there; ConnectX devices are mode="nic".
//
// Thread-safety: the collector follows Collector.
#pragma once

#include <memory>
#include <string>

#include "collectors/collector.h"
#include "sources/nic_model.h"

namespace fabric {

std::unique_ptr<Collector> MakeNicIdentityCollector(
    const CollectorEnv& env, const CollectorConfig& config);
// The registry row: no settings of its own.
CollectorSpec NicIdentityCollectorSpec();

}  // namespace fabric
