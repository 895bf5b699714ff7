// The MAD options the operators' tools share (fabricmon-mad,
// fabricmon-locate): --ca, --port, --mad-timeout-ms, --mad-retries,
// --max-outstanding, --max-per-destination, and the transport they open
// with them: umad in process, behind the MAD broker's allow-list
// (AllowListed). Run by an operator, not exposed to the network, so the
// broker's process boundary would buy nothing there (docs/mad-broker.md);
// they still send only what the broker would.
//
// Thread-safety: plain values; OpenOperatorMad is for main(), one thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sources/mad/mad_transport.h"
#include "sources/mad/umad_transport.h"

namespace CLI {
class App;
}

namespace fabric::mad {

struct MadCli {
  std::string ca;  // empty: the first CA with an active port
  int port = 0;    // 0: the first active
  int timeout_ms = 500;
  int retries = 2;
  int max_outstanding = 64;
  int max_per_destination = 4;

  void AddTo(CLI::App& app);
  MadOptions Options() const;
};

// The allow-listed umad transport on the port `cli` names. nullptr and
// *error when there is none; `local` is set only when a port was picked,
// and `ports` (when given) gets libibumad's list, for an error message.
std::unique_ptr<MadTransport> OpenOperatorMad(
    const MadCli& cli, LocalPort* local, std::string* error,
    std::vector<LocalPort>* ports = nullptr);

}  // namespace fabric::mad
