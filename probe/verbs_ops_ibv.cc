// VerbsOps over libibverbs: each method is one or two verbs calls. Handles
// are the ibv objects' addresses, except CQs, which carry whether they were
// created with completion timestamps (ibv_wc_read_completion_ts may only be
// called on such a CQ). Compiled to a null factory when rdma-core is not
// built in (FABRICMON_HAVE_IBVERBS unset).
#include "probe/verbs_ops.h"

#if FABRICMON_HAVE_IBVERBS
#include <fcntl.h>
#include <infiniband/verbs.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

namespace fabric::rdma {
namespace {

std::error_code Errno(int e) {
  return std::error_code(e != 0 ? e : EIO, std::generic_category());
}

template <typename T>
T* As(Handle h) {
  return reinterpret_cast<T*>(static_cast<std::uintptr_t>(h));
}
template <typename T>
Handle Of(T* p) {
  return static_cast<Handle>(reinterpret_cast<std::uintptr_t>(p));
}

// An extended CQ, or (a provider without ibv_create_cq_ex) a plain one.
struct CqBox {
  ibv_cq_ex* cq = nullptr;
  ibv_cq* plain = nullptr;
  bool timestamps = false;
  ibv_cq* base() const {
    return plain != nullptr ? plain : ibv_cq_ex_to_cq(cq);
  }
};

ibv_qp_state ToIbv(QpState s) {
  switch (s) {
    case QpState::kReset:
      return IBV_QPS_RESET;
    case QpState::kInit:
      return IBV_QPS_INIT;
    case QpState::kRtr:
      return IBV_QPS_RTR;
    case QpState::kRts:
      return IBV_QPS_RTS;
    case QpState::kError:
      return IBV_QPS_ERR;
  }
  return IBV_QPS_ERR;
}

ibv_mtu ToIbvMtu(int bytes) {
  if (bytes >= 4096) return IBV_MTU_4096;
  if (bytes >= 2048) return IBV_MTU_2048;
  if (bytes >= 1024) return IBV_MTU_1024;
  if (bytes >= 512) return IBV_MTU_512;
  return IBV_MTU_256;
}

int MtuBytes(ibv_mtu mtu) {
  switch (mtu) {
    case IBV_MTU_256:
      return 256;
    case IBV_MTU_512:
      return 512;
    case IBV_MTU_1024:
      return 1024;
    case IBV_MTU_2048:
      return 2048;
    case IBV_MTU_4096:
      return 4096;
  }
  return 0;
}

ibv_ah_attr ToIbvAh(const AddressVector& av) {
  ibv_ah_attr ah{};
  ah.dlid = av.dlid;
  ah.sl = av.sl;
  ah.port_num = static_cast<std::uint8_t>(av.port);
  ah.is_global = av.global ? 1 : 0;
  if (av.global) {
    std::memcpy(ah.grh.dgid.raw, av.dgid.data(), av.dgid.size());
    ah.grh.sgid_index = static_cast<std::uint8_t>(av.sgid_index);
    ah.grh.hop_limit = av.hop_limit;
    ah.grh.traffic_class = av.traffic_class;
    ah.grh.flow_label = av.flow_label;
  }
  return ah;
}

WcOpcode FromIbv(ibv_wc_opcode op) {
  switch (op) {
    case IBV_WC_SEND:
      return WcOpcode::kSend;
    case IBV_WC_RECV:
      return WcOpcode::kRecv;
    case IBV_WC_RDMA_WRITE:
      return WcOpcode::kRdmaWrite;
    case IBV_WC_RECV_RDMA_WITH_IMM:
      return WcOpcode::kRecvRdmaWithImm;
    default:
      return WcOpcode::kOther;
  }
}

int PollPlain(ibv_cq* cq, int max, std::vector<Completion>* out) {
  ibv_wc wc[16];
  int total = 0;
  while (total < max) {
    int n = ibv_poll_cq(cq, std::min(max - total, 16), wc);
    if (n <= 0) break;
    for (int i = 0; i < n; ++i) {
      Completion c;
      c.wr_id = wc[i].wr_id;
      c.status = wc[i].status;
      if (c.status != IBV_WC_SUCCESS) {
        c.status_text = ibv_wc_status_str(wc[i].status);
      } else {
        c.opcode = FromIbv(wc[i].opcode);
        c.byte_len = wc[i].byte_len;
        if (wc[i].wc_flags & IBV_WC_WITH_IMM) {
          c.has_imm = true;
          c.imm = be32toh(wc[i].imm_data);
        }
        c.src_qp = wc[i].src_qp;
        c.slid = wc[i].slid;
        c.sl = wc[i].sl;
        c.grh = (wc[i].wc_flags & IBV_WC_GRH) != 0;
      }
      out->push_back(std::move(c));
    }
    total += n;
  }
  return total;
}

class IbverbsOps final : public VerbsOps {
 public:
  std::vector<std::string> DeviceNames(std::error_code* error) override {
    std::vector<std::string> names;
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (list == nullptr) {
      // ENOSYS: the kernel has no RDMA support, which is "no devices".
      if (errno != ENOSYS) *error = Errno(errno);
      return names;
    }
    for (int i = 0; i < n; ++i)
      names.emplace_back(ibv_get_device_name(list[i]));
    ibv_free_device_list(list);
    return names;
  }

  Handle Open(const std::string& name, std::error_code* error) override {
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (list == nullptr) {
      *error = Errno(errno);
      return 0;
    }
    ibv_context* ctx = nullptr;
    int e = ENODEV;
    for (int i = 0; i < n; ++i) {
      if (name == ibv_get_device_name(list[i])) {
        ctx = ibv_open_device(list[i]);
        e = errno;
        break;
      }
    }
    ibv_free_device_list(list);
    if (ctx == nullptr) *error = Errno(e);
    return Of(ctx);
  }

  void Close(Handle context) override {
    ibv_close_device(As<ibv_context>(context));
  }

  std::error_code QueryDevice(Handle context, DeviceAttr* attr) override {
    ibv_device_attr_ex ex{};
    int rc = ibv_query_device_ex(As<ibv_context>(context), nullptr, &ex);
    if (rc != 0) return Errno(rc);
    attr->node_guid = be64toh(ex.orig_attr.node_guid);
    attr->phys_port_cnt = ex.orig_attr.phys_port_cnt;
    attr->max_qp_wr = ex.orig_attr.max_qp_wr;
    attr->completion_timestamp_mask = ex.completion_timestamp_mask;
    attr->hca_core_clock_khz = ex.hca_core_clock;
    return {};
  }

  std::error_code QueryPort(Handle context, int port, PortAttr* attr) override {
    ibv_port_attr pa{};
    int rc = ibv_query_port(As<ibv_context>(context),
                            static_cast<std::uint8_t>(port), &pa);
    if (rc != 0) return Errno(rc);
    attr->state = pa.state;
    attr->link_layer = pa.link_layer == IBV_LINK_LAYER_ETHERNET
                           ? LinkLayer::kEthernet
                       : pa.link_layer == IBV_LINK_LAYER_INFINIBAND ||
                               pa.link_layer == IBV_LINK_LAYER_UNSPECIFIED
                           ? LinkLayer::kInfiniBand
                           : LinkLayer::kUnknown;
    attr->lid = pa.lid;
    attr->active_mtu_bytes = MtuBytes(pa.active_mtu);
    attr->gid_table_len = pa.gid_tbl_len;
    return {};
  }

  std::error_code QueryGid(Handle context, int port, int index,
                           GidEntry* entry) override {
    ibv_gid_entry ge{};
    int rc = ibv_query_gid_ex(As<ibv_context>(context),
                              static_cast<std::uint32_t>(port),
                              static_cast<std::uint32_t>(index), &ge, 0);
    if (rc != 0) return Errno(rc);
    entry->index = index;
    std::memcpy(entry->gid.data(), ge.gid.raw, entry->gid.size());
    entry->type = ge.gid_type == IBV_GID_TYPE_ROCE_V2   ? GidType::kRoceV2
                  : ge.gid_type == IBV_GID_TYPE_ROCE_V1 ? GidType::kRoceV1
                                                        : GidType::kIb;
    return {};
  }

  std::error_code ReadHcaClock(Handle context, std::uint64_t* cycles) override {
    ibv_values_ex v{};
    v.comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
    int rc = ibv_query_rt_values_ex(As<ibv_context>(context), &v);
    if (rc != 0) return Errno(rc);
    if ((v.comp_mask & IBV_VALUES_MASK_RAW_CLOCK) == 0)
      return Errno(EOPNOTSUPP);
    // Providers put the raw cycle count in the timespec (mlx5: all of it in
    // tv_nsec); seconds * 1e9 + nanoseconds recovers it either way.
    *cycles = static_cast<std::uint64_t>(v.raw_clock.tv_sec) * 1000000000ull +
              static_cast<std::uint64_t>(v.raw_clock.tv_nsec);
    return {};
  }

  Handle AllocPd(Handle context, std::error_code* error) override {
    ibv_pd* pd = ibv_alloc_pd(As<ibv_context>(context));
    if (pd == nullptr) *error = Errno(errno);
    return Of(pd);
  }
  void DeallocPd(Handle pd) override { ibv_dealloc_pd(As<ibv_pd>(pd)); }

  MrKeys RegMr(Handle pd, void* addr, std::size_t len, bool remote_write,
               std::error_code* error) override {
    int access = IBV_ACCESS_LOCAL_WRITE;
    if (remote_write) access |= IBV_ACCESS_REMOTE_WRITE;
    ibv_mr* mr = ibv_reg_mr(As<ibv_pd>(pd), addr, len, access);
    if (mr == nullptr) {
      *error = Errno(errno);
      return {};
    }
    return MrKeys{Of(mr), mr->lkey, mr->rkey};
  }
  void DeregMr(Handle mr) override { ibv_dereg_mr(As<ibv_mr>(mr)); }

  Handle CreateChannel(Handle context, int* fd,
                       std::error_code* error) override {
    ibv_comp_channel* ch = ibv_create_comp_channel(As<ibv_context>(context));
    if (ch == nullptr) {
      *error = Errno(errno);
      return 0;
    }
    // Non-blocking, so TakeCqEvent returns at once when nothing fired and
    // the fd can sit in an event loop.
    int flags = fcntl(ch->fd, F_GETFL);
    if (flags < 0 || fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
      *error = Errno(errno);
      ibv_destroy_comp_channel(ch);
      return 0;
    }
    *fd = ch->fd;
    return Of(ch);
  }
  void DestroyChannel(Handle channel) override {
    ibv_destroy_comp_channel(As<ibv_comp_channel>(channel));
  }

  Handle CreateCq(Handle context, int depth, bool timestamps, Handle channel,
                  std::error_code* error) override {
    auto box = std::make_unique<CqBox>();
    box->timestamps = timestamps;
    ibv_cq_init_attr_ex attr{};
    attr.cqe = static_cast<std::uint32_t>(depth);
    attr.cq_context = box.get();  // TakeCqEvent hands the box back
    attr.channel = As<ibv_comp_channel>(channel);
    attr.wc_flags = IBV_WC_STANDARD_FLAGS;
    if (timestamps) attr.wc_flags |= IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
    box->cq = ibv_create_cq_ex(As<ibv_context>(context), &attr);
    if (box->cq == nullptr && !timestamps) {
      // Older providers lack the extended CQ; without timestamps a plain
      // one does the same job.
      box->plain = ibv_create_cq(As<ibv_context>(context), depth, box.get(),
                                 As<ibv_comp_channel>(channel), 0);
    }
    if (box->cq == nullptr && box->plain == nullptr) {
      *error = Errno(errno);
      return 0;
    }
    return Of(box.release());
  }
  void DestroyCq(Handle cq) override {
    auto* box = As<CqBox>(cq);
    ibv_destroy_cq(box->base());
    delete box;
  }

  std::error_code ArmCq(Handle cq) override {
    int rc = ibv_req_notify_cq(As<CqBox>(cq)->base(), 0);
    return rc == 0 ? std::error_code{} : Errno(rc);
  }

  Handle TakeCqEvent(Handle channel) override {
    ibv_cq* cq = nullptr;
    void* user = nullptr;
    if (ibv_get_cq_event(As<ibv_comp_channel>(channel), &cq, &user) != 0) {
      return 0;
    }
    ibv_ack_cq_events(cq, 1);
    return Of(static_cast<CqBox*>(user));
  }

  int Poll(Handle cq, int max, std::vector<Completion>* out) override {
    auto* box = As<CqBox>(cq);
    if (box->plain != nullptr) return PollPlain(box->plain, max, out);
    ibv_poll_cq_attr attr{};
    int rc = ibv_start_poll(box->cq, &attr);
    if (rc != 0) return 0;  // ENOENT: empty
    int n = 0;
    do {
      Completion c;
      c.wr_id = box->cq->wr_id;
      c.status = box->cq->status;
      if (c.status != IBV_WC_SUCCESS) {
        c.status_text = ibv_wc_status_str(box->cq->status);
      } else {
        c.opcode = FromIbv(ibv_wc_read_opcode(box->cq));
        c.byte_len = ibv_wc_read_byte_len(box->cq);
        unsigned flags = ibv_wc_read_wc_flags(box->cq);
        if (flags & IBV_WC_WITH_IMM) {
          c.has_imm = true;
          c.imm = be32toh(ibv_wc_read_imm_data(box->cq));
        }
        c.src_qp = ibv_wc_read_src_qp(box->cq);
        c.slid = static_cast<std::uint16_t>(ibv_wc_read_slid(box->cq));
        c.sl = ibv_wc_read_sl(box->cq);
        c.grh = (flags & IBV_WC_GRH) != 0;
        if (box->timestamps) {
          c.has_timestamp = true;
          c.timestamp = ibv_wc_read_completion_ts(box->cq);
        }
      }
      out->push_back(std::move(c));
      ++n;
    } while (n < max && ibv_next_poll(box->cq) == 0);
    ibv_end_poll(box->cq);
    return n;
  }

  Handle CreateQp(Handle pd, QpType type, Handle send_cq, Handle recv_cq,
                  const QpCaps& caps, std::uint32_t* qpn,
                  std::error_code* error) override {
    ibv_qp_init_attr init{};
    init.send_cq = As<CqBox>(send_cq)->base();
    init.recv_cq = As<CqBox>(recv_cq)->base();
    init.qp_type = type == QpType::kUd ? IBV_QPT_UD : IBV_QPT_RC;
    init.cap.max_send_wr = static_cast<std::uint32_t>(caps.max_send_wr);
    init.cap.max_recv_wr = static_cast<std::uint32_t>(caps.max_recv_wr);
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    init.cap.max_inline_data = static_cast<std::uint32_t>(caps.max_inline_data);
    ibv_qp* qp = ibv_create_qp(As<ibv_pd>(pd), &init);
    if (qp == nullptr) {
      *error = Errno(errno);
      return 0;
    }
    *qpn = qp->qp_num;
    return Of(qp);
  }
  void DestroyQp(Handle qp) override { ibv_destroy_qp(As<ibv_qp>(qp)); }

  std::error_code ModifyQp(Handle qp, QpType type,
                           const QpTransition& t) override {
    ibv_qp_attr a{};
    a.qp_state = ToIbv(t.to);
    int mask = IBV_QP_STATE;
    switch (t.to) {
      case QpState::kInit:
        a.pkey_index = static_cast<std::uint16_t>(t.pkey_index);
        a.port_num = static_cast<std::uint8_t>(t.port);
        mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT;
        if (type == QpType::kUd) {
          a.qkey = t.qkey;
          mask |= IBV_QP_QKEY;
        } else {
          a.qp_access_flags = t.remote_write ? IBV_ACCESS_REMOTE_WRITE : 0;
          mask |= IBV_QP_ACCESS_FLAGS;
        }
        break;
      case QpState::kRtr:
        if (type == QpType::kRc) {
          a.ah_attr = ToIbvAh(t.path);
          a.path_mtu = ToIbvMtu(t.path_mtu_bytes);
          a.dest_qp_num = t.dest_qpn;
          a.rq_psn = t.rq_psn;
          a.max_dest_rd_atomic = 1;
          a.min_rnr_timer = 12;
          mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                  IBV_QP_MIN_RNR_TIMER;
        }
        break;
      case QpState::kRts:
        a.sq_psn = t.sq_psn;
        mask |= IBV_QP_SQ_PSN;
        if (type == QpType::kRc) {
          a.timeout = static_cast<std::uint8_t>(t.timeout);
          a.retry_cnt = static_cast<std::uint8_t>(t.retry_cnt);
          a.rnr_retry = static_cast<std::uint8_t>(t.rnr_retry);
          a.max_rd_atomic = 1;
          mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                  IBV_QP_MAX_QP_RD_ATOMIC;
        }
        break;
      case QpState::kReset:
      case QpState::kError:
        break;
    }
    int rc = ibv_modify_qp(As<ibv_qp>(qp), &a, mask);
    return rc == 0 ? std::error_code{} : Errno(rc);
  }

  Handle CreateAh(Handle pd, const AddressVector& av,
                  std::error_code* error) override {
    ibv_ah_attr attr = ToIbvAh(av);
    ibv_ah* ah = ibv_create_ah(As<ibv_pd>(pd), &attr);
    if (ah == nullptr) *error = Errno(errno);
    return Of(ah);
  }

  Handle CreateAhFromCompletion(Handle /*context*/, Handle pd, int port,
                                const Completion& c,
                                std::span<const std::uint8_t> grh,
                                std::error_code* error) override {
    ibv_wc wc{};
    wc.wr_id = c.wr_id;
    wc.status = IBV_WC_SUCCESS;
    wc.opcode = IBV_WC_RECV;
    wc.byte_len = c.byte_len;
    wc.src_qp = c.src_qp;
    wc.slid = c.slid;
    wc.sl = c.sl;
    wc.wc_flags = c.grh ? IBV_WC_GRH : 0;
    if (c.grh && grh.size() < sizeof(ibv_grh)) {
      *error = Errno(EINVAL);
      return 0;
    }
    ibv_grh header{};
    if (c.grh) std::memcpy(&header, grh.data(), sizeof(header));
    ibv_ah* ah = ibv_create_ah_from_wc(As<ibv_pd>(pd), &wc, &header,
                                       static_cast<std::uint8_t>(port));
    if (ah == nullptr) *error = Errno(errno);
    return Of(ah);
  }
  void DestroyAh(Handle ah) override { ibv_destroy_ah(As<ibv_ah>(ah)); }

  std::error_code PostRecv(Handle qp, std::uint64_t wr_id, std::uint64_t addr,
                           std::uint32_t len, std::uint32_t lkey) override {
    ibv_sge sge{addr, len, lkey};
    ibv_recv_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    // A receive that only collects an immediate needs no buffer.
    wr.num_sge = len > 0 ? 1 : 0;
    ibv_recv_wr* bad = nullptr;
    int rc = ibv_post_recv(As<ibv_qp>(qp), &wr, &bad);
    return rc == 0 ? std::error_code{} : Errno(rc);
  }

  std::error_code PostUdSend(Handle qp, const UdSend& s) override {
    ibv_sge sge{s.addr, s.len, s.lkey};
    ibv_send_wr wr{};
    wr.wr_id = s.wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = s.signaled ? IBV_SEND_SIGNALED : 0;
    wr.wr.ud.ah = As<ibv_ah>(s.ah);
    wr.wr.ud.remote_qpn = s.remote_qpn;
    wr.wr.ud.remote_qkey = s.qkey;
    ibv_send_wr* bad = nullptr;
    int rc = ibv_post_send(As<ibv_qp>(qp), &wr, &bad);
    return rc == 0 ? std::error_code{} : Errno(rc);
  }

  std::error_code PostWriteImm(Handle qp, const RcWriteImm& w) override {
    ibv_sge sge{w.addr, w.len, w.lkey};
    ibv_send_wr wr{};
    wr.wr_id = w.wr_id;
    wr.sg_list = &sge;
    wr.num_sge = w.len > 0 ? 1 : 0;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.send_flags = w.signaled ? IBV_SEND_SIGNALED : 0;
    wr.imm_data = htobe32(w.imm);
    wr.wr.rdma.remote_addr = w.remote_addr;
    wr.wr.rdma.rkey = w.rkey;
    ibv_send_wr* bad = nullptr;
    int rc = ibv_post_send(As<ibv_qp>(qp), &wr, &bad);
    return rc == 0 ? std::error_code{} : Errno(rc);
  }
};

}  // namespace

std::unique_ptr<VerbsOps> MakeIbverbsOps() {
  return std::make_unique<IbverbsOps>();
}

}  // namespace fabric::rdma

#else  // built without rdma-core

namespace fabric::rdma {

// No verbs: the host has no RDMA ports and the probe collector's `auto`
// transport uses UDP.
std::unique_ptr<VerbsOps> MakeIbverbsOps() { return nullptr; }

}  // namespace fabric::rdma

#endif
