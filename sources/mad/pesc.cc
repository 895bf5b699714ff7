#include "sources/mad/pesc.h"

namespace fabric::mad {

PescStart StartPesc(std::uint32_t capability_mask,
                    std::optional<std::uint16_t> capability_mask2,
                    const PmaClassPortInfo& pma) {
  if (!(capability_mask & kCapabilityHasExtendedSpeeds)) return {};
  const bool ask_extended =
      capability_mask2
          ? PescNeedsPortInfoExtended(capability_mask, *capability_mask2, pma)
          : pma.RsFecCountersSupported();
  if (ask_extended) {
    return {PescStart::Next::kPortInfoExtended, PescLayout::kNone};
  }
  return {PescStart::Next::kPesc,
          ChoosePescLayout(capability_mask, pma, std::nullopt)};
}

PescLayout LayoutAfterPortInfoExtended(std::uint32_t capability_mask,
                                       const PmaClassPortInfo& pma,
                                       std::optional<Bytes> answer) {
  std::optional<PortInfoExtended> ext;
  if (answer) {
    std::string ignored;  // undecodable: the original layout
    ext = DecodePortInfoExtended(*answer, &ignored);
  }
  return ChoosePescLayout(capability_mask, pma, ext);
}

std::optional<Mad> PortReader::Get(std::uint16_t dlid, const Mad& mad,
                                   const char* what, bool quiet) {
  const MadResult r = transport_.Send({.dlid = dlid, .mad = mad}, options_);
  if (r.ok()) return *r;
  if (!quiet) skip_(what, r.error().message());
  return std::nullopt;
}

std::optional<PortInfoReading> PortReader::OwnPortInfo() {
  const auto r = Get(0, DrSmpGet(kAttrPortInfo, port_, {}), "PortInfo",
                     /*quiet=*/false);
  if (!r) return std::nullopt;
  std::string error;
  auto info = DecodePortInfo(*r, &error);
  auto cap2 = DecodePortInfoCapabilityMask2(*r, &error);
  if (!info || !cap2) {
    skip_("PortInfo", error);
    return std::nullopt;
  }
  return PortInfoReading{*info, *cap2};
}

std::optional<PortInfo> PortReader::RemotePortInfo() {
  const DrPath path = {port_};
  const auto ni = Get(0, DrSmpGet(kAttrNodeInfo, 0, path), "remote NodeInfo",
                      /*quiet=*/true);
  if (!ni) return std::nullopt;
  std::string error;
  const auto node = DecodeNodeInfo(*ni, &error);
  if (!node) {
    skip_("remote NodeInfo", error);
    return std::nullopt;
  }
  const auto pi =
      Get(0,
          DrSmpGet(kAttrPortInfo, static_cast<std::uint32_t>(node->local_port),
                   path),
          "remote PortInfo", /*quiet=*/true);
  if (!pi) return std::nullopt;
  auto info = DecodePortInfo(*pi, &error);
  if (!info) skip_("remote PortInfo", error);
  return info;
}

std::optional<PescLayout> PortReader::ChooseLayout(const PortInfoReading& own) {
  const std::uint32_t cap = own.info.capability_mask;
  if (!(cap & kCapabilityHasExtendedSpeeds) || lid_ == 0) return std::nullopt;
  // A subnet manager on this port: never a PMA Get it might be handed
  // (sources/mad/sweep.h, docs/mad-broker.md "Never to a subnet manager").
  if (cap & kCapabilityIsSm) return std::nullopt;
  const auto r =
      Get(lid_, PmaClassPortInfoGet(), "PMA ClassPortInfo", /*quiet=*/true);
  std::string error;
  const auto cpi = r ? DecodePmaClassPortInfo(*r, &error) : std::nullopt;
  if (!cpi) return std::nullopt;
  const PescStart start = StartPesc(cap, own.capability_mask2, *cpi);
  if (start.next != PescStart::Next::kPortInfoExtended) return start.layout;
  const auto e = Get(0, DrSmpGet(kAttrPortInfoExtended, port_, {}),
                     "PortInfoExtended", /*quiet=*/true);
  return LayoutAfterPortInfoExtended(
      cap, *cpi, e ? std::optional<Bytes>(*e) : std::nullopt);
}

std::optional<PortExtendedSpeedsCounters> PortReader::Pesc(PescLayout layout) {
  const auto r = Get(lid_, PescGet(port_), "PortExtendedSpeedsCounters",
                     /*quiet=*/true);
  if (!r) return std::nullopt;
  std::string error;
  return DecodePortExtendedSpeedsCounters(*r, layout, &error);
}

}  // namespace fabric::mad
