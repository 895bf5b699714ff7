#include "collectors/link_phy.h"

#include <array>
#include <string>

namespace fabric {
namespace {

std::string Name(const LinkPhyFamilies& f, const char* suffix) {
  return std::string(f.prefix) + suffix;
}

std::string Help(const LinkPhyFamilies& f, const char* rest) {
  return std::string(f.subject) + rest;
}

constexpr char kLanesHelp[] =
    " PortInfo LinkWidthActive in lanes (link up only).";
constexpr char kCapableLanesHelp[] =
    ": widest link width it supports and has enabled (PortInfo "
    "LinkWidthSupported & LinkWidthEnabled), in lanes.";
constexpr char kSpeedHelp[] =
    " active lane speed (PortInfo LinkSpeedExtActive, else LinkSpeedActive) "
    "in bytes/s, as the kernel's rate counts it: NDR 100 Gb/s, HDR 50, EDR "
    "25, FDR 14, QDR 10 (link up only).";
constexpr char kCapableSpeedHelp[] =
    ": fastest lane speed it supports and has enabled (PortInfo "
    "LinkSpeed[Ext]Supported & Enabled), bytes per second per lane.";
constexpr char kRateHelp[] =
    " data rate: active lanes x lane speed / 8 (as hosts' "
    "fabric_port_rate_bytes_per_second).";
constexpr char kSyncHelp[] =
    "PortExtendedSpeedsCounters SyncHeaderErrorCounter (16-bit, saturates).";
constexpr char kUnknownBlocksHelp[] =
    "PortExtendedSpeedsCounters UnknownBlockCounter (16-bit, saturates).";
constexpr char kCorrSymbolsHelp[] =
    "RS-FEC corrected symbols of the port (PESC RS-FEC layout "
    "PortFECCorrectedSymbolCounter): the pre-FEC errors a BER is computed "
    "from.";
constexpr char kCorrBlocksHelp[] =
    "FEC blocks (codewords) with errors the FEC corrected (PESC; original "
    "layout: the sum of the lanes).";
constexpr char kUncorrBlocksHelp[] =
    "FEC blocks (codewords) the FEC could not correct: lost packets (PESC; "
    "original layout: the sum of the lanes).";
constexpr char kLaneCorrSymbolsHelp[] =
    "RS-FEC corrected symbols per lane (PESC RS-FEC layout).";
constexpr char kLaneErrorsHelp[] =
    "Per-lane error detection counter (PESC original layout, 16-bit).";
constexpr char kLaneCorrBlocksHelp[] =
    "Per-lane FEC correctable blocks (PESC original layout).";
constexpr char kLaneUncorrBlocksHelp[] =
    "Per-lane FEC uncorrectable blocks (PESC original layout).";

constexpr int kPhysLinkUp = 5;

}  // namespace

int PescLanes(const mad::PortInfo* info) {
  return info && info->phys_state == kPhysLinkUp
             ? mad::WidthLanes(info->link_width_active)
             : 0;
}

void EmitLinkSpeed(MetricSink& sink, const LinkPhyFamilies& f,
                   const Labels& labels, const mad::PortInfo& info) {
  if (const int lanes = mad::CapableLanes(info); lanes > 0) {
    sink.Gauge(Name(f, "_link_width_capable_lanes"), Help(f, kCapableLanesHelp),
               labels, lanes);
  }
  if (const double gbps = mad::CapableLaneGbps(info); gbps > 0) {
    sink.Gauge(Name(f, "_lane_rate_capable_bytes_per_second"),
               Help(f, kCapableSpeedHelp), labels, gbps * 1e9 / 8);
  }
  if (info.phys_state != kPhysLinkUp) return;
  const int lanes = mad::WidthLanes(info.link_width_active);
  const double gbps =
      mad::LaneGbps(info.link_speed_active, info.link_speed_ext_active);
  if (gbps > 0) {
    sink.Gauge(Name(f, "_lane_rate_bytes_per_second"), Help(f, kSpeedHelp),
               labels, gbps * 1e9 / 8);
  }
  if (!f.active_width_and_rate) return;
  if (lanes > 0) {
    sink.Gauge(Name(f, "_link_width_lanes"), Help(f, kLanesHelp), labels,
               lanes);
  }
  if (lanes > 0 && gbps > 0) {
    sink.Gauge(Name(f, "_rate_bytes_per_second"), Help(f, kRateHelp), labels,
               lanes * gbps * 1e9 / 8);
  }
}

void EmitPesc(MetricSink& sink, const LinkPhyFamilies& f, const Labels& labels,
              const mad::PortExtendedSpeedsCounters& c, int lanes) {
  auto counter = [&](const char* suffix, const char* help, double v) {
    sink.Counter(Name(f, suffix), help, labels, v);
  };
  auto per_lane = [&](const char* suffix, const char* help,
                      const std::array<std::uint32_t, mad::kPescLanes>& v) {
    const std::string name = Name(f, suffix);
    for (int l = 0; l < mad::kPescLanes; ++l) {
      if (lanes > 0 ? l >= lanes : v[l] == 0) continue;
      Labels lane = labels;
      lane.insert(lane.begin(), {"lane", std::to_string(l)});
      sink.Counter(name, help, std::move(lane), static_cast<double>(v[l]));
    }
  };
  counter("_sync_header_errors_total", kSyncHelp, c.sync_header_errors);
  counter("_unknown_blocks_total", kUnknownBlocksHelp, c.unknown_blocks);
  if (c.layout == mad::PescLayout::kRsFec) {
    counter("_fec_corrected_symbols_total", kCorrSymbolsHelp,
            c.port_fec_corrected_symbols);
    counter("_fec_corrected_blocks_total", kCorrBlocksHelp,
            c.port_fec_correctable_blocks);
    counter("_fec_uncorrectable_blocks_total", kUncorrBlocksHelp,
            c.port_fec_uncorrectable_blocks);
    per_lane("_fec_lane_corrected_symbols_total", kLaneCorrSymbolsHelp,
             c.fec_corrected_symbols);
    return;
  }
  double corrected = 0, uncorrectable = 0;
  for (int l = 0; l < mad::kPescLanes; ++l) {
    corrected += c.fec_correctable_blocks[l];
    uncorrectable += c.fec_uncorrectable_blocks[l];
  }
  counter("_fec_corrected_blocks_total", kCorrBlocksHelp, corrected);
  counter("_fec_uncorrectable_blocks_total", kUncorrBlocksHelp, uncorrectable);
  per_lane("_phy_lane_errors_total", kLaneErrorsHelp, c.error_detection);
  per_lane("_fec_lane_corrected_blocks_total", kLaneCorrBlocksHelp,
           c.fec_correctable_blocks);
  per_lane("_fec_lane_uncorrectable_blocks_total", kLaneUncorrBlocksHelp,
           c.fec_uncorrectable_blocks);
}

}  // namespace fabric
