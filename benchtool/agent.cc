#include "benchtool/agent.h"

#include <openssl/rand.h>

#include <atomic>
#include <boost/asio.hpp>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <list>
#include <thread>

#include "auth/hmac.h"
#include "benchtool/patterns.h"
#include "benchtool/rdma_rc.h"
#include "benchtool/tcp_transport.h"
#include "benchtool/wire.h"
#include "core/thread_annotations.h"

namespace fabric::bench {

namespace asio = boost::asio;
using asio::ip::tcp;

TransportFactory DefaultTransportFactory() {
  return [](const std::string& name, const std::string& bind,
            std::string* why) -> std::unique_ptr<BulkTransport> {
    if (name == "tcp") return MakeTcpTransport({bind});
    if (name == "rdma") return MakeRdmaTransport(bind, why);
    *why = "unknown transport";
    return nullptr;
  };
}

struct Conn;

struct BenchAgent::State : std::enable_shared_from_this<State> {
  State(asio::io_context& io, AgentOptions o)
      : io(io), options(std::move(o)), hmac(options.key) {}
  asio::io_context& io;
  AgentOptions options;
  Hmac hmac;
  std::unique_ptr<tcp::acceptor> acceptor;
  std::atomic<std::uint16_t> port{0};

  mutable Mutex mu;
  AgentStats stats GUARDED_BY(mu);
  bool session_active GUARDED_BY(mu) = false;  // one session per agent
  int workers GUARDED_BY(mu) = 0;
  std::condition_variable workers_done;
  std::list<std::weak_ptr<Conn>> conns GUARDED_BY(mu);

  void Refuse(std::string_view reason) {
    MutexLock lock(mu);
    ++stats.refused[std::string(reason)];
  }
  void Accept();
};

namespace {

Bytes RandomBytes(std::size_t n) {
  Bytes b(n);
  if (RAND_bytes(b.data(), static_cast<int>(n)) != 1) {
    throw std::runtime_error("RAND_bytes failed");
  }
  return b;
}

}  // namespace

struct Conn : std::enable_shared_from_this<Conn> {
  Conn(std::shared_ptr<BenchAgent::State> s, tcp::socket sock)
      : state(std::move(s)), socket(std::move(sock)), hello_timer(state->io) {}

  std::shared_ptr<BenchAgent::State> state;
  tcp::socket socket;
  asio::steady_timer hello_timer;
  Nonces nonces;
  std::uint64_t last_seq = 0, send_seq = 0;
  Bytes header = Bytes(kHeaderBytes);
  Bytes body;
  std::deque<Bytes> writes;
  bool closed = false;
  bool worker_running = false;
  bool owns_session = false;
  bool ending = false;  // Stop or close seen: release after the worker
  // Touched by the worker only while worker_running; by io handlers
  // otherwise (Abort excepted: any thread).
  std::unique_ptr<BulkTransport> transport;
  SessionInfo session;
  Pattern pattern = Pattern::kAllreduceRing;
  int tp = 1;

  void Begin() {
    nonces.mine = RandomBytes(kNonceBytes);
    Send(MsgType::kHello, EncodeHello({nonces.mine}));
    hello_timer.expires_after(std::chrono::seconds(10));
    hello_timer.async_wait([self = shared_from_this()](auto ec) {
      if (!ec && self->nonces.theirs.empty()) self->Close();
    });
    ReadHeader();
  }

  void Send(MsgType type, Bytes payload) {
    if (closed) return;
    std::uint64_t seq = type == MsgType::kHello ? 0 : ++send_seq;
    writes.push_back(SealFrame(state->hmac, nonces, type, seq, payload));
    if (writes.size() == 1) WriteNext();
  }
  void WriteNext() {
    asio::async_write(socket, asio::buffer(writes.front()),
                      [self = shared_from_this()](auto ec, std::size_t) {
                        if (ec) return self->Close();
                        self->writes.pop_front();
                        if (!self->writes.empty()) self->WriteNext();
                      });
  }
  void SendError(int rank, std::string text) {
    Send(MsgType::kError, EncodeError({rank, std::move(text)}));
  }

  void ReadHeader() {
    asio::async_read(
        socket, asio::buffer(header),
        [self = shared_from_this()](auto ec, std::size_t) {
          if (ec) return self->Close();
          FrameHeader h;
          if (Refusal r = DecodeHeader(self->header, &h); r != Refusal::kNone) {
            return self->Refused(r);
          }
          self->body = self->header;
          self->body.resize(kHeaderBytes + h.payload_len + kMacBytes);
          self->ReadBody();
        });
  }
  void ReadBody() {
    asio::async_read(
        socket,
        asio::buffer(body.data() + kHeaderBytes, body.size() - kHeaderBytes),
        [self = shared_from_this()](auto ec, std::size_t) {
          if (ec) return self->Close();
          self->OnFrame();
        });
  }
  void Refused(Refusal r) {
    state->Refuse(RefusalName(r));
    Close();
  }

  void OnFrame() {
    FrameHeader h;
    Bytes payload;
    Refusal r = OpenFrame(state->hmac, nonces, body, &last_seq, &h, &payload);
    if (r != Refusal::kNone) return Refused(r);
    bool hello_done = !nonces.theirs.empty();
    if (h.type == MsgType::kHello) {
      auto m = DecodeHello(payload);
      if (hello_done || !m) return Refused(Refusal::kMalformed);
      nonces.theirs = m->nonce;
      hello_timer.cancel();
      return ReadHeader();
    }
    if (!hello_done) return Refused(Refusal::kMalformed);
    // One request at a time; only Stop may interrupt a running one.
    if (worker_running && h.type != MsgType::kStop) {
      return Refused(Refusal::kMalformed);
    }
    switch (h.type) {
      case MsgType::kPrepare: {
        auto m = DecodePrepare(payload);
        if (!m) return Refused(Refusal::kMalformed);
        OnPrepare(std::move(*m));
        break;
      }
      case MsgType::kConnect: {
        auto m = DecodeConnect(payload);
        if (!m || !transport || m->endpoints.size() != session.peers.size()) {
          return Refused(Refusal::kMalformed);
        }
        StartWorker([m = std::move(*m)](Conn& c) { c.DoConnect(m); });
        break;
      }
      case MsgType::kRun: {
        auto m = DecodeRun(payload);
        if (!m || !transport || m->size_bytes > max_size) {
          return Refused(Refusal::kMalformed);
        }
        StartWorker([m = *m](Conn& c) { c.DoRun(m); });
        break;
      }
      case MsgType::kStop:
        if (!payload.empty()) return Refused(Refusal::kMalformed);
        EndSession();
        Send(MsgType::kOk, {});
        break;
      default:
        return Refused(Refusal::kMalformed);
    }
    ReadHeader();
  }

  std::uint64_t max_size = 0;

  void OnPrepare(PrepareMsg m) {
    if (transport) return SendError(-1, "a session is already prepared");
    auto p = ParsePattern(m.pattern);
    if (!p) return SendError(-1, "unknown pattern '" + m.pattern + "'");
    if (auto why = CheckShape(*p, static_cast<int>(m.peers.size()),
                              static_cast<int>(m.tp))) {
      return SendError(-1, *why);
    }
    {
      MutexLock lock(state->mu);
      if (state->session_active) {
        ++state->stats.refused["busy"];
        return SendError(-1, "busy: another session is running here");
      }
      state->session_active = true;
      ++state->stats.sessions;
    }
    owns_session = true;
    boost::system::error_code ec;
    auto local = socket.local_endpoint(ec);
    std::string bind = ec ? "" : local.address().to_string();
    std::string why;
    transport = state->options.transports(m.transport, bind, &why);
    if (!transport) {
      EndSession();
      return SendError(-1, "transport '" + m.transport +
                               "' is not available on this host: " + why);
    }
    pattern = *p;
    tp = static_cast<int>(m.tp);
    max_size = m.max_size_bytes;
    session.session_id = m.session_id;
    session.token = m.token;
    session.rank = static_cast<int>(m.rank);
    session.peers = m.peers;
    session.io_timeout = std::chrono::milliseconds(m.io_timeout_ms);
    StartWorker([](Conn& c) { c.DoPrepare(); });
  }

  // Runs `work` on a worker thread; it replies through Post.
  template <typename F>
  void StartWorker(F work) {
    worker_running = true;
    {
      MutexLock lock(state->mu);
      ++state->workers;
    }
    std::thread([self = shared_from_this(), work = std::move(work)]() mutable {
      work(*self);
      auto st = self->state;
      MutexLock lock(st->mu);
      --st->workers;
      st->workers_done.notify_all();
    }).detach();
  }
  // From the worker: the reply, sent on the io thread when the work is done.
  void Reply(MsgType type, Bytes payload) {
    asio::post(state->io, [self = shared_from_this(), type,
                           p = std::move(payload)]() mutable {
      self->worker_running = false;
      self->Send(type, std::move(p));
      if (self->closed || self->ending) self->EndSession();
    });
  }
  void ReplyError(const TransportError& e) {
    Reply(MsgType::kError, EncodeError({e.rank, e.Message()}));
  }

  void DoPrepare() {
    TransportError err;
    auto ep = transport->Prepare(session, RegionBytes(max_size), &err);
    if (!ep) return ReplyError(err);
    PreparedMsg prepared{*ep, {}};
    if (state->options.rails) prepared.rails = state->options.rails();
    Reply(MsgType::kPrepared, EncodePrepared(prepared));
  }
  void DoConnect(const ConnectMsg& m) {
    Links l = LinksOf(pattern, session.rank, session.ranks(), tp);
    std::vector<int> to(l.send_to.begin(), l.send_to.end());
    std::vector<int> from(l.recv_from.begin(), l.recv_from.end());
    if (auto e = transport->Connect(m.endpoints, to, from)) {
      return ReplyError(*e);
    }
    Reply(MsgType::kOk, {});
  }
  void DoRun(const RunMsg& m) {
    auto steps = Plan(pattern, session.rank, session.ranks(), tp, m.size_bytes,
                      transport->PipelineSlice());
    std::uint64_t tx = 0, rx = 0;
    for (const Step& s : steps) {
      for (const Op& o : s.sends) tx += o.length;
      for (const Op& o : s.recvs) rx += o.length;
    }
    // Distinct values per rank so the reductions add real numbers.
    auto region = transport->Region();
    float value = static_cast<float>(session.rank + 1);
    for (std::size_t i = 0; i + 4 <= m.size_bytes; i += 4) {
      std::memcpy(region.data() + i, &value, 4);
    }
    RunResultMsg result;
    const auto& counters = state->options.counters;
    for (std::uint32_t i = 0; i < m.warmup + m.iterations; ++i) {
      bool measured = i >= m.warmup;
      CounterReading before;
      if (measured && counters) before = counters();
      auto t0 = std::chrono::steady_clock::now();
      if (auto e = Execute(*transport, steps)) return ReplyError(*e);
      auto t1 = std::chrono::steady_clock::now();
      {
        MutexLock lock(state->mu);
        state->stats.transmit_bytes += tx;
        state->stats.receive_bytes += rx;
      }
      if (!measured) continue;
      IterationSample s;
      s.nanoseconds =
          std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
      if (counters) {
        CounterReading after = counters();
        for (const auto& [name, v1] : after) {
          for (const auto& [bname, v0] : before) {
            if (bname == name && v1 >= v0 &&
                s.counters.size() < kMaxCountersPerIteration) {
              s.counters.emplace_back(name, v1 - v0);
            }
          }
        }
      }
      result.iterations.push_back(std::move(s));
    }
    Reply(MsgType::kRunResult, EncodeRunResult(result));
  }

  // Aborts the session's transport; releases it once no worker uses it.
  void EndSession() {
    ending = true;
    if (transport) transport->Abort();
    if (worker_running) return;  // Reply() calls back when it finishes
    if (transport) {
      transport->Close();
      transport.reset();
    }
    ending = false;
    if (owns_session) {
      owns_session = false;
      MutexLock lock(state->mu);
      state->session_active = false;
    }
  }

  void Close() {
    if (closed) return;
    closed = true;
    boost::system::error_code ec;
    hello_timer.cancel();
    socket.close(ec);
    EndSession();
  }
};

void BenchAgent::State::Accept() {
  acceptor->async_accept([self = shared_from_this()](
                             boost::system::error_code ec, tcp::socket sock) {
    if (!self->acceptor || !self->acceptor->is_open()) return;
    if (!ec) {
      auto c = std::make_shared<Conn>(self, std::move(sock));
      {
        MutexLock lock(self->mu);
        self->conns.remove_if([](auto& w) { return w.expired(); });
        self->conns.push_back(c);
      }
      c->Begin();
    }
    self->Accept();
  });
}

BenchAgent::BenchAgent(asio::io_context& io, AgentOptions options)
    : state_(std::make_shared<State>(io, std::move(options))) {}

BenchAgent::~BenchAgent() { Stop(); }

bool BenchAgent::Start(std::string* error) {
  std::string host;
  std::uint16_t port = 0;
  std::string addr = state_->options.listen_address;
  // ":port" = every address.
  if (!addr.empty() && addr.front() == ':') addr = "0.0.0.0" + addr;
  if (addr.rfind(":0") == addr.size() - 2) {
    host = addr.substr(0, addr.size() - 2);
  } else if (!SplitHostPort(addr, &host, &port)) {
    *error = "listen_address '" + state_->options.listen_address +
             "' is not host:port";
    return false;
  }
  if (host.size() >= 2 && host.front() == '[') {
    host = host.substr(1, host.size() - 2);
  }
  boost::system::error_code ec;
  auto ip = asio::ip::make_address(host, ec);
  if (ec) {
    *error = "listen_address '" + state_->options.listen_address +
             "': " + ec.message();
    return false;
  }
  auto acc = std::make_unique<tcp::acceptor>(state_->io);
  tcp::endpoint ep(ip, port);
  acc->open(ep.protocol(), ec);
  if (!ec) acc->set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acc->bind(ep, ec);
  if (!ec) acc->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    *error = "bench agent cannot listen on " + state_->options.listen_address +
             ": " + ec.message();
    return false;
  }
  state_->port = acc->local_endpoint().port();
  state_->acceptor = std::move(acc);
  {
    MutexLock lock(state_->mu);
    state_->stats.listening = true;
  }
  state_->Accept();
  return true;
}

void BenchAgent::Stop() {
  if (state_->acceptor) {
    boost::system::error_code ec;
    state_->acceptor->close(ec);
  }
  std::list<std::weak_ptr<Conn>> conns;
  {
    MutexLock lock(state_->mu);
    state_->stats.listening = false;
    conns.swap(state_->conns);
  }
  for (auto& w : conns) {
    if (auto c = w.lock()) {
      if (c->transport) c->transport->Abort();
      c->Close();
    }
  }
  // Workers end promptly once aborted; bounded so a stop never hangs.
  MutexLock lock(state_->mu);
  state_->workers_done.wait_for(
      lock.native(), std::chrono::seconds(5),
      [&]() REQUIRES(state_->mu) { return state_->workers == 0; });
}

std::uint16_t BenchAgent::port() const { return state_->port; }

AgentStats BenchAgent::Stats() const {
  MutexLock lock(state_->mu);
  return state_->stats;
}

}  // namespace fabric::bench
