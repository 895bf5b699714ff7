// VerbsOps: the thin seam over the libibverbs calls the RDMA probe (UD) and
// bench (RC) transports make, in plain types, so their logic is tested with
// a fake (tests/support/fake_verbs.h) on machines without RDMA. The real
// implementation (MakeIbverbsOps, probe/verbs_ops_ibv.cc) exists only when
// rdma-core is built in (FABRICMON_WITH_RDMA); every method maps to one or
// two verbs calls and adds no policy.
//
// Handles are opaque numbers the implementation hands out (the real one: the
// ibv object's address); 0 is never a valid handle. Methods that can fail
// return an error code (std::errc values; the real one passes errno on) and
// never throw.
//
// Thread-safety: the real implementation is as thread-safe as libibverbs
// (calls on different objects may run concurrently; one poller per CQ).
// Users keep one thread per QP/CQ pair; fakes need not be thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <system_error>
#include <vector>

namespace fabric::rdma {

using Handle = std::uint64_t;

using Gid = std::array<std::uint8_t, 16>;

enum class LinkLayer { kInfiniBand, kEthernet, kUnknown };
// Which header a GID index puts on the wire (IBV_GID_TYPE_*).
enum class GidType { kIb, kRoceV1, kRoceV2 };

struct DeviceAttr {
  std::uint64_t node_guid = 0;  // host byte order
  int phys_port_cnt = 0;
  int max_qp_wr = 0;
  // Bits of the completion timestamp counter that are valid; 0 = the
  // device stamps no completions (soft-RoCE, older HCAs).
  std::uint64_t completion_timestamp_mask = 0;
  // The HCA's free-running clock in kHz; 0 = not reported.
  std::uint64_t hca_core_clock_khz = 0;
};

struct PortAttr {
  int state = 0;  // IBV_PORT_ACTIVE = 4
  LinkLayer link_layer = LinkLayer::kUnknown;
  std::uint16_t lid = 0;
  int active_mtu_bytes = 0;  // 256 .. 4096
  int gid_table_len = 0;
};

struct GidEntry {
  int index = 0;
  Gid gid{};
  GidType type = GidType::kIb;
};

// Where a packet goes: the fields of ibv_ah_attr the transports use.
struct AddressVector {
  int port = 1;
  std::uint16_t dlid = 0;  // IB only
  std::uint8_t sl = 0;
  bool global = false;  // a GRH: always on RoCE, across subnets on IB
  Gid dgid{};
  int sgid_index = 0;
  std::uint8_t hop_limit = 64;
  std::uint8_t traffic_class = 0;
  std::uint32_t flow_label = 0;
  bool operator==(const AddressVector&) const = default;
};

enum class QpType { kUd, kRc };
enum class QpState { kReset, kInit, kRtr, kRts, kError };

// One ibv_modify_qp: the target state and the attributes that transition
// needs (the real implementation picks the attribute mask from the QP type
// and the two states, as the IB spec's table of required attributes says).
struct QpTransition {
  QpState to = QpState::kInit;
  int port = 1;               // INIT
  int pkey_index = 0;         // INIT
  std::uint32_t qkey = 0;     // INIT (UD)
  bool remote_write = false;  // INIT (RC): let the peer RDMA WRITE to us
  // RTR (RC): the peer and its first packet sequence number.
  AddressVector path{};
  std::uint32_t dest_qpn = 0;
  std::uint32_t rq_psn = 0;
  int path_mtu_bytes = 1024;
  // RTS: our first packet sequence number (UD and RC).
  std::uint32_t sq_psn = 0;
  // RTS (RC): retries before the QP errors out; kept small so a dead peer
  // surfaces as an error, not as a minute of silent retransmission.
  int timeout = 14;  // 4.096 us * 2^timeout per try
  int retry_cnt = 3;
  int rnr_retry = 7;
};

struct QpCaps {
  int max_send_wr = 64;
  int max_recv_wr = 64;
  int max_inline_data = 0;
};

struct MrKeys {
  Handle mr = 0;
  std::uint32_t lkey = 0;
  std::uint32_t rkey = 0;
};

enum class WcOpcode { kSend, kRecv, kRdmaWrite, kRecvRdmaWithImm, kOther };

// One completion, read from an extended CQ.
struct Completion {
  std::uint64_t wr_id = 0;
  int status = 0;           // IBV_WC_SUCCESS = 0
  std::string status_text;  // ibv_wc_status_str when status != 0
  WcOpcode opcode = WcOpcode::kOther;
  std::uint32_t byte_len = 0;
  bool has_imm = false;
  std::uint32_t imm = 0;  // host byte order
  // Receive completions on UD: where it came from.
  std::uint32_t src_qp = 0;
  std::uint16_t slid = 0;
  std::uint8_t sl = 0;
  bool grh = false;  // the first 40 bytes of the buffer hold a GRH
  // Raw HCA clock cycles; valid when the CQ was created with timestamps.
  bool has_timestamp = false;
  std::uint64_t timestamp = 0;
};

// A UD send: `len` bytes at `addr` (registered under `lkey`) to `remote_qpn`
// through address handle `ah`.
struct UdSend {
  std::uint64_t wr_id = 0;
  Handle ah = 0;
  std::uint32_t remote_qpn = 0;
  std::uint32_t qkey = 0;
  std::uint64_t addr = 0;
  std::uint32_t len = 0;
  std::uint32_t lkey = 0;
  bool signaled = true;
};

// An RC RDMA WRITE with immediate: `len` bytes from `addr` into the peer's
// `remote_addr` (its `rkey`); the peer sees a receive completion with `imm`.
struct RcWriteImm {
  std::uint64_t wr_id = 0;
  std::uint64_t addr = 0;
  std::uint32_t len = 0;
  std::uint32_t lkey = 0;
  std::uint64_t remote_addr = 0;
  std::uint32_t rkey = 0;
  std::uint32_t imm = 0;
  bool signaled = true;
};

class VerbsOps {
 public:
  virtual ~VerbsOps() = default;

  // ibv_get_device_list: the names of the RDMA devices. Empty with no error
  // when the host has none (no RDMA in the kernel, no rdma_rxe link).
  virtual std::vector<std::string> DeviceNames(std::error_code* error) = 0;
  // ibv_open_device on the device named `name`.
  virtual Handle Open(const std::string& name, std::error_code* error) = 0;
  virtual void Close(Handle context) = 0;
  // ibv_query_device_ex.
  virtual std::error_code QueryDevice(Handle context, DeviceAttr* attr) = 0;
  // ibv_query_port.
  virtual std::error_code QueryPort(Handle context, int port,
                                    PortAttr* attr) = 0;
  // ibv_query_gid_ex; an empty slot of the table is an error (ENODATA).
  virtual std::error_code QueryGid(Handle context, int port, int index,
                                   GidEntry* entry) = 0;
  // ibv_query_rt_values_ex(IBV_VALUES_MASK_RAW_CLOCK): the HCA clock now, in
  // cycles. EOPNOTSUPP where the provider does not offer it.
  virtual std::error_code ReadHcaClock(Handle context,
                                       std::uint64_t* cycles) = 0;

  virtual Handle AllocPd(Handle context, std::error_code* error) = 0;
  virtual void DeallocPd(Handle pd) = 0;
  // ibv_reg_mr with local write, plus remote write when asked.
  virtual MrKeys RegMr(Handle pd, void* addr, std::size_t len,
                       bool remote_write, std::error_code* error) = 0;
  virtual void DeregMr(Handle mr) = 0;

  // ibv_create_comp_channel: its fd turns readable when a CQ armed with
  // ArmCq has a completion (so the caller sleeps in poll/epoll/asio).
  virtual Handle CreateChannel(Handle context, int* fd,
                               std::error_code* error) = 0;
  virtual void DestroyChannel(Handle channel) = 0;
  // ibv_create_cq_ex with the standard fields and, when `timestamps`,
  // IBV_WC_EX_WITH_COMPLETION_TIMESTAMP; `channel` may be 0. Without
  // timestamps, a provider that has no extended CQ gets a plain one
  // (ibv_create_cq, polled with ibv_poll_cq).
  virtual Handle CreateCq(Handle context, int depth, bool timestamps,
                          Handle channel, std::error_code* error) = 0;
  virtual void DestroyCq(Handle cq) = 0;
  // ibv_req_notify_cq(cq, 0).
  virtual std::error_code ArmCq(Handle cq) = 0;
  // ibv_get_cq_event + ibv_ack_cq_events after the channel's fd turned
  // readable; returns the CQ that fired (0 when none was pending).
  virtual Handle TakeCqEvent(Handle channel) = 0;
  // ibv_start_poll / ibv_next_poll / ibv_end_poll: up to `max` completions
  // appended to `out`; returns how many.
  virtual int Poll(Handle cq, int max, std::vector<Completion>* out) = 0;

  // ibv_create_qp with one CQ for sends and one for receives. `qpn` gets
  // the QP number the peer addresses.
  virtual Handle CreateQp(Handle pd, QpType type, Handle send_cq,
                          Handle recv_cq, const QpCaps& caps,
                          std::uint32_t* qpn, std::error_code* error) = 0;
  virtual void DestroyQp(Handle qp) = 0;
  virtual std::error_code ModifyQp(Handle qp, QpType type,
                                   const QpTransition& transition) = 0;

  virtual Handle CreateAh(Handle pd, const AddressVector& av,
                          std::error_code* error) = 0;
  // ibv_init_ah_from_wc + ibv_create_ah: the way back to the sender of a
  // UD receive, `grh` being the first 40 bytes of its buffer.
  virtual Handle CreateAhFromCompletion(Handle context, Handle pd, int port,
                                        const Completion& wc,
                                        std::span<const std::uint8_t> grh,
                                        std::error_code* error) = 0;
  virtual void DestroyAh(Handle ah) = 0;

  // ibv_post_recv of one buffer (none when `len` is 0: a receive that only
  // collects an RDMA WRITE's immediate).
  virtual std::error_code PostRecv(Handle qp, std::uint64_t wr_id,
                                   std::uint64_t addr, std::uint32_t len,
                                   std::uint32_t lkey) = 0;
  virtual std::error_code PostUdSend(Handle qp, const UdSend& send) = 0;
  virtual std::error_code PostWriteImm(Handle qp, const RcWriteImm& write) = 0;
};

// The libibverbs implementation; nullptr when fabricmon was built without
// rdma-core (then every host has "no RDMA ports").
std::unique_ptr<VerbsOps> MakeIbverbsOps();

}  // namespace fabric::rdma
