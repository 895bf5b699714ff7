// The simulator's ethtool view: an EthtoolSource (collectors/
// ethtool_source.h) answering for the RoCE netdev of one simulated host
// (bond0 of mlx5_bond_0) with mlx5_core statistic names and the model's
// values: rx/tx_prioN_{bytes,packets,pause,pause_duration,pause_transition},
// tx_pause_storm_{warning,error}_events, rx_ecn_mark, rx_out_of_buffer,
// {rx,tx}_discards_phy, {rx,tx}_global_pause{,_duration} and the totals.
// Any other netdev, or the device while removed: ENODEV. The renderer also
// writes these statistics as `ethtool -S` text (EthtoolText) so a separate
// process can read them (sources/ethtool_file.h).
//
// Thread-safety: one Stats() at a time per instance; reads the model under
// the LiveRunner's lock (or, for a bare Cluster, the caller must not step it
// concurrently).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "simulator/model.h"
#include "sources/ethtool_source.h"

namespace fabric::sim {

class LiveRunner;

std::unique_ptr<EthtoolSource> MakeSimEthtoolSource(const Cluster& cluster,
                                                    int host);
std::unique_ptr<EthtoolSource> MakeSimEthtoolSource(const LiveRunner& runner,
                                                    int host);

// The statistics of `netdev` on `host` (exposed for tests).
EthtoolResult SimEthtoolStats(const Cluster& cluster, int host,
                              const std::string& netdev);

// `stats` as `ethtool -S` prints them ("NIC statistics:" and one
// "     name: value" line each): the dump the renderer writes per netdev
// (<host>/ethtool/<netdev>) for the daemon's file-backed EthtoolSource.
std::string EthtoolText(const EthtoolStats& stats);

// The link settings of `netdev` on `host` as `ethtool <netdev>` prints them
// (sources/ethtool_link.h ParseEthtoolLinkText reads it back): speed = the
// lanes the link runs x lane rate ("Unknown!" while down); this end and its
// link partner (the switch port) each advertise their nominal width at their
// lane rate and half of it. The renderer writes it to
// <host>/ethtool/<netdev>.link. nullopt for another host's netdev.
std::optional<std::string> SimEthtoolLinkText(const Cluster& cluster, int host,
                                              const std::string& netdev);

}  // namespace fabric::sim
