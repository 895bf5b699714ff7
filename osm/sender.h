// Sender: hands event_wire datagrams from OpenSM's threads to the daemon's
// Unix socket without ever making those threads wait.
//
// Why a queue and a thread rather than one sendto() per event from
// report(): Linux caps an AF_UNIX datagram socket's receive queue at
// net.unix.max_dgram_qlen datagrams (10 by default) whatever its buffer
// size, so a PerfMgr sweep's burst (two events per port, microseconds
// apart) overflows it unless the daemon happens to be on a CPU at that
// moment. Measured with OpenSM 3.3.23 on ibsim: 8 of 24 events lost per
// sweep with a reader that merely printed them. Here Enqueue() copies the
// datagram into a fixed, preallocated lock-free ring (the burst's buffer)
// and the sender's own thread writes the ring to a connected socket,
// waiting in poll() when the daemon's queue is full. A full ring, an
// absent daemon or a send error drops the datagram and counts it; the count
// is patched into the header of the next datagram that gets through.
//
// The socket is connected to the path, and reconnected after any send
// error (the daemon restarted: ECONNREFUSED), so a restarted daemon
// receives events again without OpenSM restarting. While no daemon listens
// every datagram costs the thread one failed connect() (a path lookup, a
// few microseconds) and is dropped.
//
// Thread-safety: Enqueue() and CountDrop() from any number of threads
// (multi-producer ring, atomics); Create() and the destructor from one.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>

#include "osm/event_wire.h"

namespace fabric::osm {

class Sender {
 public:
  // `slots`: ring capacity in datagrams, rounded up to a power of two.
  // Returns null (and says why in *error) when the path does not fit a
  // sockaddr_un or the thread or eventfd cannot be created. Never throws.
  static std::unique_ptr<Sender> Create(std::string_view path,
                                        std::size_t slots, std::string* error);
  ~Sender();  // stops and joins the thread; queued datagrams are dropped
  Sender(const Sender&) = delete;
  Sender& operator=(const Sender&) = delete;

  // Never blocks and never allocates: queues a copy of `datagram` (at most
  // kMaxMessageSize bytes, with a kHeaderSize header) or counts a drop.
  void Enqueue(std::span<const uint8_t> datagram);
  // Counts an event that was not queued (e.g. OpenSM passed no data).
  void CountDrop() { dropped_.fetch_add(1, std::memory_order_relaxed); }

 private:
  struct Slot {
    std::atomic<std::size_t> seq{0};
    uint16_t len = 0;
    uint8_t bytes[kMaxMessageSize];
  };

  Sender() = default;
  bool Dequeue(uint8_t* out, std::size_t* len);
  void Run();
  void Sleep();
  bool Connect();
  void Deliver(uint8_t* bytes, std::size_t len);

  std::string path_;
  std::unique_ptr<Slot[]> slots_;
  std::size_t mask_ = 0;
  alignas(64) std::atomic<std::size_t> enqueue_pos_{0};
  alignas(64) std::size_t dequeue_pos_ = 0;  // the thread's alone
  std::atomic<uint64_t> dropped_{0};
  std::atomic<bool> sleeping_{false};
  std::atomic<bool> stop_{false};
  int wake_fd_ = -1;  // eventfd: Enqueue() wakes a sleeping thread
  int fd_ = -1;       // the thread's connected socket, -1 when not
  std::thread thread_;
};

}  // namespace fabric::osm
